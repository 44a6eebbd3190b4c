/**
 * Compaction as activities: **plan** (the engine's split over message metadata; the plan is stored, the workflow
 * gets a summary of it), **summarize** (the LLM, from stored bodies, heartbeating), and **apply** (store what
 * replaces each message, write the removed segment as JSONL and the new context manifest, record the event); a
 * **revert** to the context before an earlier event; the **review** of a draft (stored for the reviewer, a
 * reviewer's edit of its summary). Each writes under keys derived from the agent and the compaction's sequence
 * number, so a retry overwrites, never duplicates.
 *
 * One file a role, each a factory over the dependencies every role takes (`deps.ts`), with the stored-object helpers
 * and the records a plan stores (`stored-objects.ts`): `plan.ts`, which reads the context by reference
 * (`context-reading.ts`) and counts what the summary will write (`written-sizes.ts`); `summarize.ts`, whose inputs
 * and parts are `summary-parts.ts` and each summary `summary-writer.ts`, which reads the span (`span-reading.ts`) and
 * asks `chunk.ts` (a span too large for the summary model's window), `ask.ts` (the model: structured output,
 * plain-text fallback), `judge.ts` (the must-keep facts: check, re-prompt, pin) and `compose.ts` (the summary and
 * ledger messages, stored); `apply.ts`, which records the event `event.ts` writes; `revert.ts`; `review.ts`. The
 * activities' names are what recorded workflow histories schedule: they do not change.
 */
import { createApplyActivities } from './apply.ts';
import { createPlanActivities } from './plan.ts';
import { createReviewActivities } from './review.ts';
import { createRevertActivities } from './revert.ts';
import { sharedOf } from './deps.ts';
import type { CompactionDeps } from './deps.ts';
import { createSummarizeActivities } from './summarize.ts';

export type { CompactionDeps } from './deps.ts';
export type { StoredBefore } from './stored-objects.ts';
export { chunkByTokens, transcriptOf } from './chunk.ts';
export { EXTRACTIVE_MODEL } from './summary-writer.ts';

/**
 * The compaction activities over `deps`: planCompaction, summarizeSpan, storeDraft, reviseSummary, applyCompaction
 * and revertContext. Planning, applying and reverting heartbeat throughout; summarizing while the model is asked.
 */
export function createCompactionActivities(deps: CompactionDeps) {
  const shared = sharedOf(deps);
  return {
    ...createPlanActivities(shared),
    ...createSummarizeActivities(shared),
    ...createReviewActivities(shared),
    ...createApplyActivities(shared),
    ...createRevertActivities(shared),
  };
}
