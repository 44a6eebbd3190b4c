/**
 * The compaction decision before a plan is asked for: an automatic masking pass (below the trigger, from the policy's
 * mask threshold) that a plan would skip, told from the context's metadata alone. The pass is due on the policy's gate
 * under the cooldown; what it could save is what masking every tool result it may mask would save (an unprotected
 * tool result, normal or truncated, of at least `mask.minTokens` and more than a stub becomes a stub of `MASK_TOKENS`:
 * replacing.ts `maskToolResults`, over the same protection); under the pass's floor (`mask.atLeast`) it is skipped.
 * Priced, a pass that would not pay for the prompt cache it invalidates is skipped too. A skip says why and moves the
 * gate as the plan's own skip would (engine/gates.ts).
 *
 * One decision in one place: the workflow asks it before it schedules a plan (workflows/compaction-refs.ts), and the
 * planner asks it first (plan.ts), so the two cannot disagree on a pass that finds nothing. What it counts is an upper
 * bound of what the planner's pass masks (a tool's own `neverMask` or preview, which the planner honours, only lower
 * it): a pass it lets through may still be skipped by the plan, one it skips never does anything. A change to what it
 * decides changes which plans workflows schedule, and goes behind a patch of its own (docs/changing-workflows.md).
 * Pure: no I/O, no clock.
 */
import { estimateCost, paceOf } from '../compaction-value.ts';
import type { CostEstimate } from '../compaction-value.ts';
import { gateAfterMaskSkip, gateAfterSkippedPlan, gateOf } from '../gates.ts';
import type { MessageMeta } from '../messages.ts';
import { kindOf } from '../messages.ts';
import type { CompactionPolicy } from '../policy.ts';
import { compactionDue, countedMessages, holdGrowth } from '../trigger.ts';
import type { ContextStats, CooldownState, Gate } from '../trigger.ts';
import { protectionOf } from './protection.ts';
import { MASK_TOKENS } from './sizes.ts';

export interface PreflightInput {
  context: readonly MessageMeta[];
  policy: CompactionPolicy;
  window: number;
  cooldown: CooldownState;
  /** The request's tokens (fixed tokens included) and the context's turns, as the gate counts them. */
  stats: Pick<ContextStats, 'tokens' | 'turns'>;
  /** Tokens every request spends besides its messages (tool schemas, reply primer, pinned block): cached. */
  fixedTokens: number;
  goalId?: string | undefined;
  pinnedIds?: readonly string[] | undefined;
  /** Model calls since the last compaction: the pace the price assumes. */
  callsSinceCompaction?: number | undefined;
  /**
   * Until the pace is known, price the calls the context shows were made, as the plan does (default); `false`: 1
   * call, as workflows decided before the patch `pace-from-context` (workflows/compaction-refs.ts).
   */
  contextPace?: boolean | undefined;
  /** Price the pass against the prompt cache too (when the policy has a cost model). */
  priced: boolean;
}

/** A masking pass that a plan would skip: why, and the gate after the skip. */
export interface PreflightSkip {
  skipped: string;
  gate: Gate;
  /** Skipped because it would not pay: its price. */
  cost?: CostEstimate;
}

/** Undefined when a plan might find something (or nothing automatic is due as a masking pass). */
export function preflight(input: PreflightInput): PreflightSkip | undefined {
  const { policy, window, cooldown, context } = input;
  const gate = gateOf(policy, window, cooldown);
  const stats = { ...input.stats, messages: countedMessages(gate, context) };
  const due = compactionDue(gate, stats, cooldown.consecutive === 0, context);
  const atLeast = gate.mask?.atLeast;
  if (due?.kind !== 'mask' || atLeast === undefined) return undefined;
  const { saves, first } = maskSavings(input);
  if (saves < atLeast) {
    return {
      skipped: `${due.reason}: masking would save ${saves} tokens, less than ${atLeast}`,
      gate: gateAfterMaskSkip(policy, window, cooldown, stats.tokens, holdGrowth(policy)),
    };
  }
  if (!input.priced || !policy.cost) return undefined;
  // The pass's price against the prompt cache, as the plan prices it: the fixed tokens and the messages before the
  // first one masked stay cached; what the last reply brought was never sent; at the session's pace (until it is
  // known, the context's calls).
  const tokens = stats.tokens;
  const calls = input.callsSinceCompaction;
  const { contextCalls, tokensPerCall } = paceOf(context, tokens, cooldown.lastTokensAfter, calls);
  const cost = estimateCost(policy.cost, tokens, tokens - saves, 0, 0, calls, {
    cachedPrefixTokens: input.fixedTokens + sumTokens(context.slice(0, first)),
    unsentTokens: unsentTokensIn(context),
    tokensPerCall,
    ...(input.contextPace !== false ? { contextCalls } : {}),
  });
  if (cost.netBenefit >= 0) return undefined;
  // Where the calls came from is said when they are the context's (the other texts are as workflows recorded them).
  const over = `${cost.remainingTurns} calls${cost.remainingFrom === 'context' ? " (the context's)" : ''}`;
  return {
    skipped:
      `${due.reason}: not worth it, masking would save ${saves} tokens over ${over} and put ` +
      `${cost.invalidatedTokens} out of the prompt cache`,
    gate: gateAfterSkippedPlan(policy, window, cooldown, { maskPass: true, tokens, cost }, 'auto', calls),
    cost,
  };
}

/** What masking every tool result the pass may mask would save, and the index of the first one (-1: none). */
function maskSavings(input: PreflightInput): { saves: number; first: number } {
  const { context, policy, window } = input;
  const protect = protectionOf(context, policy, window, input.goalId, undefined, input.pinnedIds ?? []);
  let saves = 0;
  let first = -1;
  context.forEach((m, i) => {
    const kind = kindOf(m);
    if (m.role !== 'tool' || protect[i] !== 'none' || (kind !== 'normal' && kind !== 'truncated')) return;
    if (m.tokens < policy.mask.minTokens || m.tokens <= MASK_TOKENS) return;
    saves += m.tokens - MASK_TOKENS;
    if (first < 0) first = i;
  });
  return { saves, first };
}

/** Tokens of the context no request carried yet: its last reply and what came after it (the planner's `unsentTokensOf`). */
export function unsentTokensIn(context: readonly { role: string; tokens: number }[]): number {
  const lastReply = context.findLastIndex((m) => m.role === 'assistant');
  return sumTokens(context.slice(Math.max(0, lastReply)));
}

export function sumTokens(records: readonly { tokens: number }[]): number {
  return records.reduce((sum, m) => sum + m.tokens, 0);
}
