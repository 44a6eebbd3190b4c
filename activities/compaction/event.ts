/**
 * The event a compaction records (event.json, and its summary in the workflow's state): what it did and why, its
 * tokens and messages before and after, the summary's figures, the cost decision's estimate again, and the loop
 * guard's verdict, whose note says when it grew the context. Pure.
 */
import { estimateCost } from '../../engine/compaction-value.ts';
import { judgeCompaction, loopGuardNote } from '../../engine/loop-guard.ts';
import type { JudgedCompaction } from '../../engine/loop-guard.ts';
import type { LoopGuardVerdict } from '../../engine/trigger.ts';
import type { ApplyCompactionInput, SummaryOutcome } from '../../contract/compaction-activities.ts';
import type { MessageRecord } from '../../contract/records.ts';
import type { CompactionEvent } from '../../contract/results.ts';
import type { eventKeys, StoredPlan } from './stored-objects.ts';

/** What the event is written from: the apply step's input, its stored plan, what the compaction left, the summary. */
export interface AppliedCompaction {
  input: ApplyCompactionInput;
  stored: Pick<StoredPlan, 'plan' | 'policy' | 'trigger' | 'cooldown'>;
  /** The new context's records. */
  next: readonly MessageRecord[];
  tokensAfter: number;
  /** Breaks of the coverage invariant (recorded, when they do not fail the compaction). */
  violations: readonly string[];
  summary: SummaryOutcome | undefined;
  keys: ReturnType<typeof eventKeys>;
}

/** The compaction's event, and the loop guard's verdict (the cooldown after the compaction counts with it). */
export function compactionEventOf({
  input,
  stored: { plan, policy, trigger, cooldown },
  next,
  tokensAfter,
  violations,
  summary,
  keys,
}: AppliedCompaction): { event: CompactionEvent; verdict: LoopGuardVerdict | undefined } {
  const { seq } = input;
  // The cost decision's estimate again, from what the compaction left and what the summary call used.
  const llm = summary?.llm;
  const cost = policy.cost
    ? estimateCost(
        policy.cost,
        plan.before.tokens,
        tokensAfter,
        llm?.promptTokens ?? 0,
        llm?.completionTokens ?? 0,
        plan.cost?.remainingTurns, // the pace the plan priced
        plan.cost, // and the prompt cache it keeps
      )
    : undefined;
  // The loop guard's verdict (policy `loopGuard`): ineffective or not, how many in a row, a pause. A plan stored
  // before masking passes has no cooldown to judge from.
  const judged: JudgedCompaction = {
    trigger,
    routine: !!plan.maskPass || !!plan.toolResultCut,
    tokensBefore: plan.before.tokens,
    tokensAfter,
    ...(plan.target.messages !== undefined || plan.target.turns !== undefined
      ? { messages: { before: plan.before.messages, after: next.length } }
      : {}),
  };
  const verdict = cooldown ? judgeCompaction(policy, cooldown, judged) : undefined;
  const grew = tokensAfter > plan.before.tokens;
  const event: CompactionEvent = {
    seq,
    trigger,
    reason: plan.reason,
    at: input.at,
    strategies: plan.steps.map((s) => s.strategy),
    notes: [
      ...plan.steps.flatMap((s) => (s.note ? [`${s.strategy}: ${s.note}`] : [])),
      ...violations.map((problem) => `coverage invariant broken: ${problem}`),
      ...(input.review ? [`review: ${input.review}`] : []),
      // Never worse in silence: a compaction that grew the context says so (the guard's note says it too).
      ...(verdict?.ineffective ? [loopGuardNote(policy, verdict, judged)] : []),
      ...(grew && !verdict?.ineffective
        ? [`grew the context from ${plan.before.tokens} to ${tokensAfter} tokens`]
        : []),
    ],
    tokensBefore: plan.before.tokens,
    tokensAfter,
    messagesBefore: plan.before.messages,
    messagesAfter: next.length,
    targetTokens: plan.target.tokens,
    reachedTarget: tokensAfter <= plan.target.tokens && plan.reachedTarget,
    ...(plan.shortfall ? { shortfall: plan.shortfall } : {}),
    removedCount: plan.removed.length,
    removed: plan.removed,
    ...(summary
      ? {
          summaryTokens: summary.record.tokens + (summary.parts ?? []).reduce((sum, r) => sum + r.tokens, 0),
          summaryParsedAs: summary.parsedAs,
          responseFormat: summary.responseFormat,
          ...(summary.chunks && summary.chunks > 1 ? { summaryChunks: summary.chunks } : {}),
          facts: summary.facts,
          llm: summary.llm,
        }
      : {}),
    ...(cost ? { cost } : {}),
    ...(verdict ? { loopGuard: verdict } : {}),
    durationMs: Date.parse(input.at) - input.startedAt,
    keys,
    ...(input.instructions ? { instructions: input.instructions } : {}),
  };
  return { event, verdict };
}
