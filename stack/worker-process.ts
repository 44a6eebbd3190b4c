/**
 * A worker as a child Node process of a harness (the chaos run, the scale benchmark): started from an entry script
 * with its own environment, waited for until it prints that it polls, signalled, killed and stopped. The chaos run
 * kills and starts it many times; the scale benchmark restarts it and reads its memory and CPU by pid.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from '../config/settings.ts';
import type { S3Target } from '../storage/s3.ts';

/**
 * The environment that points a worker process (or any longrun process) at these servers: Temporal by address and
 * namespace, S3 by endpoint, credentials and bucket.
 */
export function serversEnv(temporal: { address: string; namespace: string }, s3: S3Target): NodeJS.ProcessEnv {
  return {
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    ...(s3.endpoint ? { AWS_ENDPOINT_URL_S3: s3.endpoint } : {}),
    ...(s3.region ? { AWS_REGION: s3.region } : {}),
    ...(s3.credentials
      ? { AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey }
      : {}),
    LONGRUN_S3_BUCKET: s3.bucket,
  };
}

/** Processes stopped or killed on purpose: their exit is not a crash. */
const stopping = new WeakSet<ChildProcess>();

/** How long a graceful stop (SIGTERM) may take before the process is killed. */
const STOP_GRACE_MS = 15_000;

export class WorkerProcess {
  child: ChildProcess | undefined;
  private readonly entry: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly ready: string;
  /**
   * How the running process ended when nobody stopped or killed it (a crash, an out-of-memory kill), with the end of
   * its output; undefined while it runs or after a stop. Cleared by the next start.
   */
  crashed: string | undefined;

  /** `entry`: the script to run; `ready`: the text its output contains once it polls. */
  constructor(entry: string, env: NodeJS.ProcessEnv, ready: string) {
    this.entry = entry;
    this.env = env;
    this.ready = ready;
  }

  /** The running process's id (undefined before the first start). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the process and resolves once it polls; rejects with the end of its output if it exits first. */
  async start(): Promise<void> {
    const child = spawn(process.execPath, [this.entry], {
      cwd: PROJECT_ROOT,
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.crashed = undefined;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-8_000);
        if (output.includes(this.ready)) resolve();
      });
      child.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8_000)));
      child.on('exit', (code, signal) => {
        const ended = `worker ${this.entry} (pid ${child.pid}) exited (${code ?? signal}):\n${output}`;
        if (!stopping.has(child)) this.crashed = ended;
        reject(new Error(ended));
      });
      // Without these listeners a spawn that fails (EAGAIN, ENOMEM) or a broken pipe would be an uncaught error of
      // the harness: the start fails with it instead.
      child.on('error', (error) => {
        this.crashed ??= `worker ${this.entry} (pid ${child.pid}): ${error.message}`;
        reject(new Error(`worker ${this.entry} (pid ${child.pid}): ${error.message}`, { cause: error }));
      });
      child.stdout.on('error', () => undefined);
      child.stderr.on('error', () => undefined);
    });
  }

  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** SIGKILL, and waits for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    stopping.add(child);
    child.kill('SIGKILL');
    await exited;
  }

  /** SIGTERM (after SIGCONT, in case it is frozen): the worker finishes its tasks in flight; SIGKILL if it lingers. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    stopping.add(child);
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    await Promise.race([
      exited,
      sleep(STOP_GRACE_MS).then(() => {
        child.kill('SIGKILL');
        return exited;
      }),
    ]);
  }
}
