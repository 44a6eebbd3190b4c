/**
 * The scale benchmark's idle agents (`--registered N`): before the timed run, agents `--agents`+1 … N are started and
 * each sent one short message, its reply waited for, so that each has a real context and a stored history; then they
 * are left alone for the run. A bounded number are registered at a time (`--register-concurrency`), and a start or
 * message the server refuses with RESOURCE_EXHAUSTED is tried again after a pause. The pool, the retry and the
 * progress line are pure or take their sleep as an argument (unit-tested); `registerIdle` is the I/O.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { sendMessage, startAgent } from '../../client/agents.ts';
import type { RegistrationSummary } from './results.ts';
import { agentName, agentStart, registrationMessage } from './workload.ts';

/** gRPC's RESOURCE_EXHAUSTED: the server's rate limits, or too many Updates in flight. */
const RESOURCE_EXHAUSTED = 8;

/** True when the error, or one in its chain of causes, is RESOURCE_EXHAUSTED (by its gRPC code or its name). */
export function isResourceExhausted(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const { code, message, cause } = current as { code?: unknown; message?: unknown; cause?: unknown };
    if (code === RESOURCE_EXHAUSTED) return true;
    if (typeof message === 'string' && /RESOURCE_EXHAUSTED|ResourceExhausted/.test(message)) return true;
    current = cause;
  }
  return false;
}

/** Pauses before each retry on RESOURCE_EXHAUSTED, ms: the client's own retries (10, with backoff) come first. */
export const EXHAUSTED_BACKOFF_MS = [2_000, 5_000, 10_000, 20_000, 40_000] as const;

/**
 * `call`, tried again after each pause of `backoffMs` while it fails with RESOURCE_EXHAUSTED; any other error, or the
 * last one, is thrown. `retried` is told of each retry.
 */
export async function retryExhausted<T>(
  call: () => Promise<T>,
  options: {
    backoffMs?: readonly number[];
    pause?: (ms: number) => Promise<unknown>;
    retried?: (error: unknown) => void;
  } = {},
): Promise<T> {
  const { backoffMs = EXHAUSTED_BACKOFF_MS, pause = (ms: number) => sleep(ms), retried } = options;
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= backoffMs.length || !isResourceExhausted(error)) throw error;
      retried?.(error);
      await pause(backoffMs[attempt]!);
    }
  }
}

/**
 * Runs `task` on each of `items`, at most `concurrency` at a time, in order of the items; stops taking new items once
 * `stop()` says so. Resolves when every task taken has settled (a task's rejection is its own to handle: it is not
 * caught here).
 */
export async function runPool<T>(
  items: readonly T[],
  concurrency: number,
  task: (item: T) => Promise<void>,
  stop: () => boolean = () => false,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length && !stop()) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, lane));
}

/** The progress line: registered of total, failures, the rate so far and the time left at that rate. */
export function registrationLine(done: number, failed: number, total: number, elapsedMs: number): string {
  const rate = elapsedMs > 0 ? (done + failed) / (elapsedMs / 1_000) : 0;
  const left = rate > 0 ? (total - done - failed) / rate : undefined;
  const leftText =
    left === undefined ? '' : `, about ${left >= 90 ? `${(left / 60).toFixed(0)} min` : `${left.toFixed(0)} s`} left`;
  return (
    `[scale] registered ${done} of ${total} idle agents (${failed} failed) in ${(elapsedMs / 1_000).toFixed(0)} s, ` +
    `${rate.toFixed(1)}/s${leftText}`
  );
}

export interface RegisterOptions {
  client: Client;
  taskQueue: string;
  /** Agent ids are `${prefix}${agentName(index)}`. */
  prefix: string;
  /** Indexes `from` … `to` − 1 (the active agents are 0 … from − 1). */
  from: number;
  to: number;
  concurrency: number;
  window: number;
  log: (line: string) => void;
  /** A progress line every this many agents. */
  every?: number;
  signal?: AbortSignal;
}

/** Starts the idle agents and sends each its one message (waiting for the reply), `concurrency` at a time. */
export async function registerIdle(
  options: RegisterOptions,
): Promise<Omit<RegistrationSummary, 'peakRssMb' | 'rssAtEndMb' | 'clientRpcs'>> {
  const { client, taskQueue, prefix, from, to, concurrency, log, signal } = options;
  const every = options.every ?? 500;
  const total = to - from;
  const began = Date.now();
  let registered = 0;
  let failed = 0;
  let exhaustedRetries = 0;
  const errorSample: string[] = [];
  const retried = () => exhaustedRetries++;
  const indexes = Array.from({ length: total }, (_, i) => from + i);
  log(`[scale] registering ${total} idle agents (${concurrency} at a time; each started and sent one message)`);
  await runPool(
    indexes,
    concurrency,
    async (index) => {
      const name = agentName(index);
      const agentId = `${prefix}${name}`;
      // Ctrl-C: a start or message still out is cancelled.
      const cancellable = <T>(call: () => Promise<T>) =>
        signal ? client.connection.withAbortSignal(signal, call) : call();
      try {
        await retryExhausted(
          () => cancellable(() => startAgent(client, agentStart(agentId, name, taskQueue, options.window))),
          { retried },
        );
        await retryExhausted(
          () =>
            cancellable(() =>
              sendMessage(client, agentId, registrationMessage(name), {
                updateId: `${agentId}-1`,
                workerTimeoutMs: 300_000,
              }),
            ),
          { retried },
        );
        registered++;
      } catch (error) {
        failed++;
        if (errorSample.length < 5)
          errorSample.push(`${name}: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300));
      }
      if ((registered + failed) % every === 0 || registered + failed === total) {
        log(registrationLine(registered, failed, total, Date.now() - began));
      }
    },
    () => signal?.aborted ?? false,
  );
  const ms = Date.now() - began;
  return {
    agents: total,
    registered,
    failed,
    concurrency,
    exhaustedRetries,
    ms,
    perSec: (registered * 1_000) / Math.max(1, ms),
    errorSample,
  };
}
