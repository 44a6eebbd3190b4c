/**
 * The scale benchmark's steers (`--steers-per-minute`, 20 by default; 0: none): evenly through the sending window, a
 * steer (`steerAgent`, an Update) to an active agent drawn at random among those in a turn at that moment (a message
 * sent, its reply not yet back), and the time until the steer's Update answers. A steer lands at the turn's next step
 * boundary, after the model call or tool in flight: when that call was the turn's last (a text reply), the turn ends
 * and the steer opens a turn of its own instead (`opened`), answered as that turn starts. Steers are sent without
 * waiting for those before them. `steerSummary` and `pickInTurn` are pure.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { steerAgent } from '../../client/control.ts';
import { seededRandom } from '../chaos/model.ts';
import { latencySummary } from './results.ts';
import type { SteerSummary } from './results.ts';
import { hashOf, steerSchedule, steerText } from './workload.ts';

export interface SteerRecord {
  latencyMs: number;
  /** It came after the turn's last step and opened a turn of its own. */
  opened: boolean;
}

/** An element of `inTurn` drawn with `draw` (uniform in [0, 1)), undefined when it is empty. */
export function pickInTurn(inTurn: ReadonlySet<number>, draw: () => number): number | undefined {
  if (inTurn.size === 0) return undefined;
  const candidates = [...inTurn];
  return candidates[Math.min(candidates.length - 1, Math.floor(draw() * candidates.length))];
}

/** What the run's steers came to. `errors` excludes steers cancelled at the end of the run (those are abandoned). */
export function steerSummary(
  perMinute: number,
  counts: { due: number; sent: number; skipped: number; errors: number },
  records: readonly SteerRecord[],
): SteerSummary {
  const opened = records.filter((r) => r.opened).length;
  return {
    perMinute,
    ...counts,
    answered: records.length,
    landed: records.length - opened,
    opened,
    abandoned: counts.sent - records.length - counts.errors,
    latencyMs: latencySummary(records.map((r) => r.latencyMs)),
  };
}

export interface SteerOptions {
  client: Client;
  perMinute: number;
  /** The sending window (ms since the epoch): steers are due evenly from `fromMs` until `untilMs`. */
  fromMs: number;
  untilMs: number;
  seed: number;
  /** The active agents in a turn now, by index (the driver keeps it). */
  inTurn: ReadonlySet<number>;
  agentIdOf: (index: number) => string;
  nameOf: (index: number) => string;
  /** Aborted at the end of the run: no more steers; those still out are cancelled (abandoned). */
  signal: AbortSignal;
  noteError: (error: unknown) => void;
}

/** Sends the steers through the window; `summary()` says what they came to so far. */
export function startSteers(options: SteerOptions): { done: Promise<void>; summary: () => SteerSummary } {
  const { client, signal } = options;
  const due = steerSchedule(options.perMinute, options.fromMs, options.untilMs);
  const draw = seededRandom(hashOf(`${options.seed}/steers`));
  const records: SteerRecord[] = [];
  const counts = { due: due.length, sent: 0, skipped: 0, errors: 0 };
  const out: Promise<void>[] = [];
  const send = (index: number, k: number) => {
    const agentId = options.agentIdOf(index);
    const sentAt = Date.now();
    counts.sent++;
    const steer = client.connection.withAbortSignal(signal, () =>
      steerAgent(client, agentId, steerText(options.nameOf(index), k), {
        updateId: `${agentId}-steer-${k}`,
        workerTimeoutMs: 300_000,
      }),
    );
    out.push(
      steer.then(
        (result) => void records.push({ latencyMs: Date.now() - sentAt, opened: result.opened }),
        (error: unknown) => {
          if (signal.aborted) return; // cancelled at the end of the run: abandoned
          counts.errors++;
          options.noteError(error);
        },
      ),
    );
  };
  const done = (async () => {
    for (const [i, at] of due.entries()) {
      await sleep(Math.max(0, at - Date.now()), undefined, { signal }).catch(() => {});
      if (signal.aborted) break;
      const index = pickInTurn(options.inTurn, draw);
      if (index === undefined) counts.skipped++;
      else send(index, i + 1);
    }
    await Promise.all(out);
  })();
  return { done, summary: () => steerSummary(options.perMinute, counts, records) };
}
