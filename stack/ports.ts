/** Port selection for the embedded stack: free ports for tests, and a clear error when a standard port is taken. */
import { createServer } from 'node:net';

export const LOOPBACK = '127.0.0.1';

/** Thrown when a port the main job needs is in use. Names the variable that moves it. */
export class PortTakenError extends Error {
  readonly port: number;
  readonly variable: string;
  constructor(port: number, service: string, variable: string) {
    super(
      `Port ${port} (${service}) is already in use on ${LOOPBACK}. Another longrun or Temporal/MinIO may be running: ` +
        `stop it, or set ${variable} to another port.`,
    );
    this.name = 'PortTakenError';
    this.port = port;
    this.variable = variable;
  }
}

/** Can we listen on `port` on loopback right now? */
export function isPortFree(port: number, host = LOOPBACK): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port the OS reports free on loopback (for tests: each suite gets its own). */
export function freePort(host = LOOPBACK): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

/** `count` distinct free ports. */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** Throws {@link PortTakenError} for the first port in use. */
export async function assertPortsFree(wanted: { port: number; service: string; variable: string }[]): Promise<void> {
  for (const { port, service, variable } of wanted) {
    if (!(await isPortFree(port))) throw new PortTakenError(port, service, variable);
  }
}

/**
 * `count` distinct ports from `low` to `high` that are free on loopback now, probed in random order (below the OS's
 * ephemeral range, where `freePort` draws from, for servers that cannot take ports that high).
 */
export async function freePortsBetween(low: number, high: number, count: number): Promise<number[]> {
  const ports = new Set<number>();
  for (let tries = 0; ports.size < count; tries++) {
    if (tries >= 1_000) throw new Error(`no ${count} free ports between ${low} and ${high} on ${LOOPBACK}`);
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (!ports.has(port) && (await isPortFree(port))) ports.add(port);
  }
  return [...ports];
}
