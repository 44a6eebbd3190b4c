/**
 * Updates already applied, by id, carried across continue-as-new: an Update delivered again to a later run (the
 * server's own deduplication is per run) is answered with its result instead of being applied twice.
 *
 * Pure bookkeeping, kept small because it is part of the workflow's state: the ids of the last
 * {@link APPLIED_UPDATES_KEPT} Updates, and their results while they fit {@link APPLIED_RESULTS_MAX_CHARS}, newest
 * first. A reply can be long, and the state is what the worker caches and what continue-as-new carries (the server
 * refuses a payload over 2 MB). An Update whose result was let go is refused when it comes again, not re-applied.
 */
import { summaryOfEvent } from '../contract/agent.ts';
import type { UpdateResult } from '../contract/agent.ts';

/** By Update id: its result, or `null` once the result was let go. Oldest first. */
export type AppliedUpdates = Map<string, UpdateResult | null>;

/** How many applied Update ids are kept. */
export const APPLIED_UPDATES_KEPT = 64;

/** How much of their results (JSON characters) is kept with them. */
export const APPLIED_RESULTS_MAX_CHARS = 128_000;

/** Records `result` for `updateId`, then keeps the newest ids and, newest first, the results that fit the budget. */
export function rememberApplied(
  applied: AppliedUpdates,
  updateId: string,
  result: UpdateResult,
  limits = { ids: APPLIED_UPDATES_KEPT, chars: APPLIED_RESULTS_MAX_CHARS },
): void {
  applied.delete(updateId);
  applied.set(updateId, slimResult(result));
  while (applied.size > limits.ids) applied.delete(applied.keys().next().value!);
  let chars = 0;
  for (const [id, kept] of [...applied].reverse()) {
    if (kept === null) continue;
    chars += charsOf(kept);
    if (chars > limits.chars) applied.set(id, null);
  }
}

/** JSON characters of each result, measured once (an Update's turn would otherwise re-measure all 64). */
const measured = new WeakMap<UpdateResult, number>();

function charsOf(result: UpdateResult): number {
  let chars = measured.get(result);
  if (chars === undefined) {
    chars = JSON.stringify(result).length;
    measured.set(result, chars);
  }
  return chars;
}

/**
 * The result of an Update already applied, or undefined for one that was not. Throws for one whose result was let
 * go: it must not be applied twice, and its answer is no longer known.
 */
export function appliedResult(applied: AppliedUpdates, updateId: string | undefined): UpdateResult | undefined {
  if (updateId === undefined || !applied.has(updateId)) return undefined;
  const result = applied.get(updateId);
  if (result) return result;
  throw new Error(
    `update ${updateId}: already applied in an earlier run, and its result is no longer kept ` +
      '(it is not applied twice; read the state or the events)',
  );
}

/** The applied Updates a run starts with (carried by continue-as-new), in the current form. */
export function appliedFromCarry(carried: [string, UpdateResult | null][] = []): AppliedUpdates {
  return new Map(carried.map(([id, result]) => [id, result && slimResult(result)]));
}

/**
 * A result as kept: a compaction's event without the removed items it may list (recorded before summaries), and
 * `compacted` under its name (a run before the rename said `compressed`).
 */
function slimResult(result: UpdateResult): UpdateResult {
  if ('compressed' in result) {
    const { compressed, ...rest } = result as UpdateResult & { compressed: boolean };
    result = { ...rest, compacted: compressed };
  }
  return 'compacted' in result && result.event ? { ...result, event: summaryOfEvent(result.event) } : result;
}
