/**
 * A plan's last word: a compaction that would not shrink the context (the ledger and the summary's frame can outweigh
 * a small span), or that would cost more than it saves with the prompt cache it invalidates, is a skip. Asked by the
 * planner (plan.ts) once its steps and summary are planned; the plan activity's first pass goes without it
 * (`lastWord: false`).
 */
import { estimateCost, paceOf } from '../compaction-value.ts';
import type { CostEstimate } from '../compaction-value.ts';
import { MAX_CONTEXT_MESSAGES } from '../policy.ts';
import { isAutomatic } from '../trigger.ts';
import type { ContextStats } from '../trigger.ts';
import type { Target } from '../target.ts';
import type { Board } from './board.ts';
import { cachedPrefixOf, unsentTokensOf } from './prefix.ts';
import type { Plan, PlanInput, PlanStep } from './types.ts';

/** What the plan made, as its last word reads it. */
export interface Made {
  base: Pick<Plan, 'trigger' | 'target' | 'before' | 'summary' | 'removed' | 'steps'>;
  before: ContextStats;
  after: ContextStats;
  target: Target;
  steps: PlanStep[];
  summary: Plan['summary'];
  oversized: boolean;
  maskPass: string | undefined;
  hardLimit: number;
}

/** The skip the plan comes to, or what the compaction is expected to cost (when the policy prices). */
export function lastWordOf(input: PlanInput, board: Board, made: Made): { skip: Plan } | { cost?: CostEstimate } {
  const { policy, trigger } = input;
  const { slots } = board;
  const { base, before, after, target, steps, summary, oversized, maskPass, hardLimit } = made;
  // A compaction that would leave as many tokens as it found is not made (the ledger and the summary's frame can
  // outweigh a small span): an automatic one holds until the context grows, as a skip does; a forced one says there
  // is nothing to gain, and is made only when asked for even so (`evenIfLarger`). A message or turn limit that fired
  // is met by fewer messages, whatever the tokens; an overflow must fit, whatever it costs.
  const countsMet =
    (target.messages !== undefined && after.messages < before.messages) ||
    (target.turns !== undefined && after.turns < before.turns);
  const noGain = after.tokens >= before.tokens && !countsMet && trigger !== 'overflow';
  const decides = input.lastWord !== false;
  if (decides && noGain && (isAutomatic(trigger) || (trigger === 'forced' && !input.evenIfLarger))) {
    const strategies = steps.map((s) => s.strategy).join(', ');
    return {
      skip: {
        ...base,
        action: 'skip',
        ...(oversized ? { toolResultCut: true as const } : {}),
        reason: isAutomatic(trigger)
          ? `would not shrink the context: ${before.tokens} tokens, ${after.tokens} expected after [${strategies}]`
          : noGainReason(before.tokens, after.tokens, strategies),
        noGain: { tokensBefore: before.tokens, tokensAfter: after.tokens },
        after: before,
        reachedTarget: false,
        operations: slots.map((s) => ({ op: 'keep', id: s.meta.id })),
      },
    };
  }

  let cost: CostEstimate | undefined;
  if (policy.cost) {
    // The summary call costs what the summary model reads and writes; the extractive summarizer costs nothing.
    const summaryCall = summary?.writer === 'model';
    cost = estimateCost(
      policy.cost,
      before.tokens,
      after.tokens,
      summaryCall ? board.summarizedTokens : 0,
      summaryCall ? summary.estimatedTokens : 0,
      input.callsSinceCompaction,
      {
        cachedPrefixTokens: cachedPrefixOf(slots, input.fixedTokens, summary),
        unsentTokens: unsentTokensOf(slots),
        // The pace as the workflow's preflight prices it (compaction-value.ts): this runs in the plan activity, so
        // what it decides needs no patch; the preflight's use in the workflow has its own (`pace-from-context`).
        ...paceOf(input.context, before.tokens, input.cooldown.lastTokensAfter, input.callsSinceCompaction),
      },
    );
    // The hard limit, the bound on the context's messages and a message or turn limit that fired override the cost
    // decision: a request that would not fit is never sent. Below them, an automatic compaction that does not pay
    // waits (a masking pass or a cut goes with the next compaction that does).
    const bounded =
      before.tokens >= hardLimit ||
      before.messages > (policy.maxMessages ?? MAX_CONTEXT_MESSAGES) ||
      target.messages !== undefined ||
      target.turns !== undefined;
    if (decides && isAutomatic(trigger) && cost.netBenefit < 0 && !bounded) {
      return {
        skip: {
          ...base,
          action: 'skip',
          ...(maskPass ? { maskPass: true as const } : {}),
          ...(oversized ? { toolResultCut: true as const } : {}),
          reason:
            `not worth it: compacting would cost ${cost.withCompaction.toFixed(4)} against ` +
            `${cost.withoutCompaction.toFixed(4)} without over ${cost.remainingTurns} remaining calls ` +
            `(${REMAINING_FROM[cost.remainingFrom]}; ${cost.invalidatedTokens} tokens ` +
            `out of the prompt cache from its first change on; below the hard limit of ${hardLimit} tokens)`,
          after: before,
          reachedTarget: false,
          operations: slots.map((s) => ({ op: 'keep', id: s.meta.id })),
          cost,
        },
      };
    }
  }
  return cost ? { cost } : {};
}

/** Where the remaining calls a cost decision priced came from, as its reason says it. */
const REMAINING_FROM: Record<CostEstimate['remainingFrom'], string> = {
  pace: "the session's pace",
  policy: 'the policy',
  estimate: "the policy's estimate until the session's pace is known",
  context: "the context's: the calls it shows since its last summary, until the session's pace is known",
};

/** Why a forced compaction whose plan expects no gain is not made (the CLI and the client print it as it is). */
export function noGainReason(before: number, after: number, strategies: string): string {
  return (
    `nothing to gain (${before} → ~${after} tokens): [${strategies}] would leave the context larger, the summary's ` +
    'frame and the task ledger outweighing what leaves; not compacted'
  );
}
