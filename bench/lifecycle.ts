/**
 * How `npm run bench` stops on SIGINT or SIGTERM: at once, whatever step it is in. Each step registers what must not
 * outlive it (the embedded stack's servers, the model servers on loopback) with {@link onStop}; the first signal
 * runs those (for at most {@link STOP_DEADLINE_MS}) and exits with 128 + the signal's number, a second exits at once.
 * The Temporal runtime is installed without its own signal handling (it would stop the workers and leave the bench
 * waiting for them forever).
 */
import { constants } from 'node:os';

/** How long the cleanups may take after a signal before the process exits anyway. */
export const STOP_DEADLINE_MS = 15_000;

const cleanups = new Set<() => Promise<void>>();

/** Registers `cleanup` to run on a stop signal; call the returned function once it ran normally. */
export function onStop(cleanup: () => Promise<void>): () => void {
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

/** Installs the SIGINT / SIGTERM handlers; returns a function that removes them. */
export function stopOnSignals(log: (line: string) => void): () => void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    const code = 128 + (constants.signals[signal] ?? 15);
    if (stopping) process.exit(code);
    stopping = true;
    log(`[bench] ${signal}: stopping (${cleanups.size} servers to stop), the figures of this run are not written`);
    const all = Promise.allSettled([...cleanups].map((cleanup) => cleanup()));
    const deadline = new Promise((resolve) => setTimeout(resolve, STOP_DEADLINE_MS).unref());
    void Promise.race([all, deadline]).then(() => process.exit(code));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
