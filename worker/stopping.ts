/**
 * How the main job stops on Ctrl-C (SIGINT) or SIGTERM, and what it says meanwhile.
 *
 * The first signal stops it gracefully: the worker finishes the work it has in flight (a model call may take up to
 * LONGRUN_MODEL_TIMEOUT_MS), then the servers stop; it says what it waits for, and again every few seconds. A second
 * signal stops it at once: the servers are stopped and the process exits with 130. The work in flight is abandoned,
 * and Temporal runs it again when a worker next starts (activities are retried after their heartbeat timeout, every
 * write is idempotent). A third exits without waiting for the servers: their supervisors stop them once we are gone.
 */
import type { WorkInFlight } from './in-process.ts';

/** Exit code after a second signal: 128 + SIGINT, as a shell reports a process stopped by Ctrl-C. */
export const STOPPED_AT_ONCE_EXIT_CODE = 130;

/** How often the main job repeats what it still waits for. */
export const STOP_REPORT_EVERY_MS = 5_000;

export interface StopSignals {
  /** Resolves with the first signal. */
  first: Promise<NodeJS.Signals>;
  /** Whether a signal came. */
  readonly requested: boolean;
  /** What the second signal does (the default: exit at once). */
  onSecond(handler: () => void): void;
  /** Stops listening. */
  dispose(): void;
}

/**
 * Signals this close together are one Ctrl-C. A terminal sends SIGINT to the whole process group, and a parent that
 * forwards signals to its child (npm running `npm start` or `npx longrun`) sends it a second time within
 * a few milliseconds: counted apart, that copy would make one Ctrl-C a stop at once. A person pressing again takes
 * longer.
 */
export const SAME_PRESS_MS = 150;

/** What a late copy of the stop signal does once the stop is under way: nothing. */
function ignoreLateSignal(): void {}

export function listenForStop(): StopSignals {
  let count = 0;
  let lastAt = -Infinity;
  let resolveFirst!: (signal: NodeJS.Signals) => void;
  const first = new Promise<NodeJS.Signals>((resolve) => (resolveFirst = resolve));
  let second: (() => void) | undefined;
  const handler = (signal: NodeJS.Signals) => {
    const now = Date.now();
    const samePress = now - lastAt < SAME_PRESS_MS;
    lastAt = now;
    if (samePress) return;
    count++;
    if (count === 1) resolveFirst(signal);
    else if (count === 2 && second) second();
    else process.exit(STOPPED_AT_ONCE_EXIT_CODE);
  };
  const signals = ['SIGINT', 'SIGTERM'] as const;
  for (const signal of signals) process.on(signal, handler);
  return {
    first,
    get requested() {
      return count > 0;
    },
    onSecond(handler) {
      second = handler;
    },
    dispose() {
      for (const signal of signals) process.off(signal, handler);
      // Once a stop is under way, a late copy of its signal (npm forwards the terminal's Ctrl-C, later than
      // SAME_PRESS_MS on a loaded machine) must not kill the process by default while it finishes.
      if (count === 0) return;
      for (const signal of signals) {
        if (!process.listeners(signal).includes(ignoreLateSignal)) process.on(signal, ignoreLateSignal);
      }
    },
  };
}

/** "1 activity (callModel for agent-trip, attempt 1, running 12 s) and 1 workflow task", or "nothing". */
export function describeInFlight(work: WorkInFlight, now = Date.now()): string {
  const parts: string[] = [];
  if (work.activities.length > 0) {
    const each = work.activities.map(
      (a) => `${a.type} for ${a.workflowId}, attempt ${a.attempt}, running ${Math.round((now - a.startedAt) / 1000)} s`,
    );
    parts.push(`${plural(work.activities.length, 'activity', 'activities')} (${each.join('; ')})`);
  }
  if (work.workflowTasks > 0) parts.push(plural(work.workflowTasks, 'workflow task', 'workflow tasks'));
  return parts.length > 0 ? parts.join(' and ') : 'nothing';
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}
