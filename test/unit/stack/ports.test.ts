import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { assertPortsFree, freePort, freePorts, isPortFree, PortTakenError } from '../../../stack/ports.ts';

const held: Server[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function hold(port: number): Promise<void> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  held.push(server);
}

describe('port selection', () => {
  it('freePort returns a loopback port that can be bound', async () => {
    const port = await freePort();
    expect(port).toBeGreaterThan(0);
    expect(await isPortFree(port)).toBe(true);
  });

  it('freePorts returns distinct ports', async () => {
    const ports = await freePorts(4);
    expect(new Set(ports).size).toBe(4);
  });

  it('sees a port in use as taken', async () => {
    const port = await freePort();
    await hold(port);
    expect(await isPortFree(port)).toBe(false);
  });

  it('a taken standard port is an error naming the service and the variable that moves it', async () => {
    const port = await freePort();
    await hold(port);
    const check = assertPortsFree([{ port, service: 'Temporal server', variable: 'LONGRUN_TEMPORAL_PORT' }]);
    await expect(check).rejects.toBeInstanceOf(PortTakenError);
    await expect(
      assertPortsFree([{ port, service: 'Temporal server', variable: 'LONGRUN_TEMPORAL_PORT' }]),
    ).rejects.toThrow(
      `Port ${port} (Temporal server) is already in use on 127.0.0.1. Another longrun or Temporal/MinIO may be running: stop it, or set LONGRUN_TEMPORAL_PORT to another port.`,
    );
  });
});
