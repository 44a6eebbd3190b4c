/**
 * A server process of the embedded stack: started under `supervisor.ts` (so it dies with us, even on kill -9),
 * logging to a file, stopped gracefully, and waited for until a health check passes.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync } from 'node:fs';
import { dirname } from 'node:path';
import { modulePath } from '../config/settings.ts';
import { tailOfFile } from './logs.ts';

const SUPERVISOR = modulePath(import.meta.url, './supervisor');
const STOP_TIMEOUT_MS = 10_000;
const POLL_MS = 100;

/** Thrown when a server exits or stays unhealthy during start; carries the end of its log. */
export class ServerStartError extends Error {
  readonly logPath: string;
  constructor(name: string, reason: string, logPath: string) {
    super(`${name} did not start: ${reason}.\nLast lines of ${logPath}:\n${tailOfFile(logPath, 20) || '    (empty)'}`);
    this.name = 'ServerStartError';
    this.logPath = logPath;
  }
}

export interface ServerProcessOptions {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  logPath: string;
  /** Resolves true once the server answers. */
  healthy: () => Promise<boolean>;
  startTimeoutMs: number;
  /** The signal that asks the server to stop (default SIGTERM); SIGKILL follows if it lingers. */
  stopSignal?: NodeJS.Signals;
}

export class ServerProcess {
  readonly name: string;
  readonly logPath: string;
  private readonly child: ChildProcess;
  /** Resolves with the exit code once the server (its supervisor) has exited. */
  readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;
  /** Why the process could not be started (spawn's error), if so. */
  private spawnError: string | undefined;

  private constructor(options: ServerProcessOptions) {
    this.name = options.name;
    this.logPath = options.logPath;
    mkdirSync(dirname(options.logPath), { recursive: true });
    const logFd = openSync(options.logPath, 'a');
    // Own process group: a Ctrl-C in the terminal reaches us, and we stop the servers in order.
    const stopSignal = options.stopSignal ? [`--stop-signal=${options.stopSignal}`] : [];
    this.child = spawn(process.execPath, [SUPERVISOR, ...stopSignal, options.command, ...options.args], {
      env: options.env ?? process.env,
      stdio: ['pipe', logFd, logFd],
      detached: true,
    });
    closeSync(logFd);
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code) => {
        this.exitCode = code;
        resolve(code);
      });
      // A spawn that fails emits 'error' and no 'exit': without a listener, an uncaught error of the harness.
      this.child.on('error', (error) => {
        if (this.child.pid !== undefined) return; // a signal that could not be sent: it still exits or runs
        this.spawnError = error.message;
        this.exitCode = null;
        resolve(null);
      });
    });
    // The supervisor's stdin: a write to it after it died (EPIPE) must not be an uncaught error either.
    this.child.stdin?.on('error', () => undefined);
    // Our stdin pipe to the supervisor must not keep this process alive by itself.
    (this.child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.child.unref();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Starts the server and waits until `healthy()` passes; on failure stops it and throws {@link ServerStartError}. */
  static async start(options: ServerProcessOptions): Promise<ServerProcess> {
    const server = new ServerProcess(options);
    const deadline = Date.now() + options.startTimeoutMs;
    while (Date.now() < deadline) {
      if (server.exitCode !== undefined) {
        const reason = server.spawnError ?? `it exited with code ${server.exitCode}`;
        throw new ServerStartError(options.name, reason, options.logPath);
      }
      if (await options.healthy().catch(() => false)) return server;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    await server.stop();
    throw new ServerStartError(options.name, `no answer within ${options.startTimeoutMs / 1000}s`, options.logPath);
  }

  /** SIGTERM through the supervisor, then SIGKILL to the whole group if it lingers. */
  async stop(): Promise<void> {
    if (this.exitCode !== undefined || this.child.pid === undefined) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => {
      try {
        process.kill(-this.child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, STOP_TIMEOUT_MS);
    await this.exited;
    clearTimeout(timer);
  }
}
