/**
 * The compaction planner: given the working context (metadata only), the policy and a trigger, a deterministic
 * plan of what to do and the tokens expected after it. Strategies run cheapest first and stop once under the
 * target; each records only what it actually changed. The plan never throws on an agent in trouble: when even the
 * emergency steps cannot reach the target, it says so and what it did instead.
 *
 * The unit is the step, not the turn: a long-running agent spends hundreds of steps inside one user message, so the
 * older steps of the turn in progress are compactable like any others. Protection, strongest first: `fixed` (system
 * prompt, task ledger, summaries, the user's first message — the goal — and the message that opened the turn in
 * progress) is never touched by a regular strategy; `newest` (the newest step: results the model has not seen yet)
 * only by truncating tool results, with a reload reference; `recent` (the newest N steps, the last N messages, the
 * reserve, the user's messages and final answers of the last N turns) only by truncation, offloading and supersession
 * (a tool result replaced by a marker naming a newer result of the same call); the rest by everything. Strategies that remove messages remove whole steps, so no plan separates a tool call from its result,
 * and whatever they remove goes into one summary (the model's, or the extractive one) that names what it covers:
 * nothing leaves the context without a trace. When the plan still falls short of the hard limit, the older steps
 * are summarized down to the newest one, and if that is not enough the largest messages are cut to fit.
 *
 * The files, by role: `plan.ts` (the orchestration), `board.ts` (the slots and running totals), `protection.ts`,
 * `replacing.ts` and `removing.ts` (the strategies, named in `strategies.ts`), `fit.ts` (the hard-limit fit),
 * `summary-spec.ts`, `report.ts` (removed items, shortfall), `types.ts` and `sizes.ts`.
 */
export { planCompaction } from './plan.ts';
export { protectionOf } from './protection.ts';
export type { Protection } from './protection.ts';
export {
  EMERGENCY_MIN_TOKENS,
  LEDGER_FRAME_TOKENS,
  MASK_TOKENS,
  STUB_TOKENS,
  SUMMARY_FRAME_TOKENS,
  SUMMARY_WINDOW_SHARE,
  SUPERSEDED_TOKENS,
} from './sizes.ts';
export { toolLimitsOf } from './replacing.ts';
export { summarySpecsOf } from './summary-spec.ts';
export { REPLACED_KIND } from './types.ts';
export type {
  Operation,
  Plan,
  PlanInput,
  PlanStep,
  PlanStepName,
  RemovedItem,
  SummaryCoverage,
  SummaryForm,
  SummaryPart,
  SummarySpec,
  WrittenSizes,
} from './types.ts';
