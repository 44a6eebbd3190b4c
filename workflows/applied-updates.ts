/**
 * Updates already applied, by id, carried across continue-as-new: an Update delivered again to a later run (the
 * server's own deduplication is per run) is answered with its result instead of being applied twice.
 *
 * Pure bookkeeping, kept small because it is part of the workflow's state: the ids of the last
 * {@link APPLIED_UPDATES_KEPT} Updates, and their results while they fit {@link APPLIED_RESULTS_MAX_CHARS}, newest
 * first. The state is what the worker caches for every agent it holds and what continue-as-new carries (the server
 * refuses a payload over 2 MB), so a `send`'s reply, which can be long and is stored already, is kept by reference
 * (`replyStored`: the agent reads it back when the Update comes again). An Update whose result was let go is refused
 * when it comes again, not re-applied.
 */
import { summaryOfEvent } from '../contract/results.ts';
import type { KeptResult, UpdateResult } from '../contract/results.ts';

/** By Update id: its result as kept, or `null` once the result was let go. Oldest first. */
export type AppliedUpdates = Map<string, KeptResult | null>;

/** How many applied Update ids are kept. */
export const APPLIED_UPDATES_KEPT = 64;

/** How much of their results (JSON characters) is kept with them. */
export const APPLIED_RESULTS_MAX_CHARS = 128_000;

/**
 * Records `result` for `updateId`, then keeps the newest ids and, newest first, the results that fit the budget.
 * `replyStored`: a `send`'s reply is left out (it is stored under `replyId`); a reply that is not stored (a turn that
 * stopped at its budget) is kept. Agents recorded before this (the `reply-by-reference` patch) kept every reply.
 */
export function rememberApplied(
  applied: AppliedUpdates,
  updateId: string,
  result: UpdateResult,
  { ids = APPLIED_UPDATES_KEPT, chars: maxChars = APPLIED_RESULTS_MAX_CHARS, replyStored = false } = {},
): void {
  applied.delete(updateId);
  applied.set(updateId, replyStored ? withoutStoredReply(slimResult(result)) : slimResult(result));
  while (applied.size > ids) applied.delete(applied.keys().next().value!);
  let chars = 0;
  for (const [id, kept] of [...applied].reverse()) {
    if (kept === null) continue;
    chars += charsOf(kept);
    if (chars > maxChars) applied.set(id, null);
  }
}

/** JSON characters of each result, measured once (an Update's turn would otherwise re-measure all 64). */
const measured = new WeakMap<KeptResult, number>();

function charsOf(result: KeptResult): number {
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
export function appliedResult(applied: AppliedUpdates, updateId: string | undefined): KeptResult | undefined {
  if (updateId === undefined || !applied.has(updateId)) return undefined;
  const result = applied.get(updateId);
  if (result) return result;
  throw new Error(
    `update ${updateId}: already applied in an earlier run, and its result is no longer kept ` +
      '(it is not applied twice; read the state or the events)',
  );
}

/** The applied Updates a run starts with (carried by continue-as-new), in the current form. */
export function appliedFromCarry(carried: [string, KeptResult | null][] = []): AppliedUpdates {
  return new Map(carried.map(([id, result]) => [id, result && slimResult(result)]));
}

/** A kept `send` result whose reply is stored: the reply's id to read it back, or undefined for a whole result. */
export function storedReplyOf(result: KeptResult): string | undefined {
  return 'replyStored' in result ? result.replyId : undefined;
}

/** A `send`'s result without its reply when the reply is the stored one (not a stopped turn's note). */
function withoutStoredReply(result: KeptResult): KeptResult {
  if (!('reply' in result) || !('replyId' in result) || result.stopped || result.interrupted) return result;
  const { reply: _, ...rest } = result;
  return { ...rest, replyStored: true };
}

/**
 * A result as kept: a compaction's event without the removed items it may list (recorded before summaries), and
 * `compacted` under its name (a run before the rename said `compressed`).
 */
function slimResult(result: KeptResult): KeptResult {
  if ('compressed' in result) {
    const { compressed, ...rest } = result as UpdateResult & { compressed: boolean };
    result = { ...rest, compacted: compressed };
  }
  return 'event' in result && 'compacted' in result && result.event
    ? { ...result, event: summaryOfEvent(result.event) }
    : result;
}
