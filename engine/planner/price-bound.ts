/**
 * The price bound before an automatic plan (issue 42): whether any compaction of the context could pay for the prompt
 * cache it throws away, told from the context's metadata alone. For each message a compaction could change first, the
 * most it could save is everything a strategy may take from that message on (an unprotected message whole; a
 * protected tool result down to the policy's cut, or whole when protected messages may be offloaded), with no summary
 * written and no summary call paid, and the most it could keep cached is every message before it. When even the best
 * of those does not pay at the session's pace, no plan can (the planner's own price, last-word.ts, keeps less and
 * saves less), so the workflow skips the plan and holds its gate as the plan's own skip would (engine/gates.ts).
 *
 * It decides only what the cost decision decides: below the hard limit, within the context's message bound, with no
 * message or turn limit over; automatic triggers only. The workflow asks it behind the patch `plan-pays-first`
 * (workflows/compaction-pipeline.ts). Pure: no I/O, no clock.
 */
import { estimateCost, paceOf } from '../compaction-value.ts';
import type { CostEstimate } from '../compaction-value.ts';
import { gateAfterSkippedPlan } from '../gates.ts';
import type { MessageMeta } from '../messages.ts';
import { MAX_CONTEXT_MESSAGES } from '../policy.ts';
import type { Gate } from '../trigger.ts';
import { sumTokens, unsentTokensIn } from './preflight.ts';
import type { PreflightInput } from './preflight.ts';
import { protectionOf } from './protection.ts';

/** An automatic plan no compaction could make pay: why, the gate after it, and the best price found. */
export interface PriceBoundSkip {
  skipped: string;
  gate: Gate;
  cost: CostEstimate;
}

/** Undefined when some compaction might pay (or the cost decision does not decide here). */
export function priceBound(
  input: Omit<PreflightInput, 'priced'> & { trigger: 'auto' | 'background' },
): PriceBoundSkip | undefined {
  const { policy, window, cooldown, context, stats, trigger } = input;
  if (!policy.cost) return undefined;
  const hardLimit = Math.floor(window * policy.hardLimitRatio);
  const bounded =
    stats.tokens >= hardLimit ||
    context.length > (policy.maxMessages ?? MAX_CONTEXT_MESSAGES) ||
    (policy.maxTurns !== undefined && stats.turns > policy.maxTurns) ||
    (policy.maxTokens !== undefined && stats.tokens > policy.maxTokens);
  if (bounded) return undefined;
  const removable = removableTokens(input);
  const calls = input.callsSinceCompaction;
  const unsentTokens = unsentTokensIn(context);
  const { tokensPerCall, contextCalls } = paceOf(context, stats.tokens, cooldown.lastTokensAfter, calls);
  let best: CostEstimate | undefined;
  // From the newest message back: what a compaction that changes nothing before message i could take at most.
  let fromHere = 0;
  let before = input.fixedTokens + sumTokens(context);
  for (let i = context.length - 1; i >= 0; i--) {
    before -= context[i]!.tokens;
    fromHere += removable[i]!;
    if (removable[i] === 0) continue;
    const cost = estimateCost(policy.cost, stats.tokens, stats.tokens - fromHere, 0, 0, calls, {
      cachedPrefixTokens: before,
      unsentTokens,
      tokensPerCall,
      ...(input.contextPace !== false ? { contextCalls } : {}),
    });
    if (best === undefined || cost.netBenefit > best.netBenefit) best = cost;
  }
  if (best === undefined || best.netBenefit >= 0) return undefined;
  const over = `${best.remainingTurns} calls${best.remainingFrom === 'context' ? " (the context's)" : ''}`;
  return {
    skipped:
      `not worth it: no compaction could pay over ${over}, at best ${best.tokensBefore! - best.tokensAfter!} ` +
      `tokens saved for ${best.invalidatedTokens} out of the prompt cache (below the hard limit of ${hardLimit} tokens)`,
    gate: gateAfterSkippedPlan(policy, window, cooldown, { tokens: stats.tokens, cost: best }, trigger, calls),
    cost: best,
  };
}

/** Per message, the most tokens any strategy could take from it (its protection and the policy's cuts). */
function removableTokens(input: Omit<PreflightInput, 'priced'>): number[] {
  const { context, policy, window } = input;
  const protect = protectionOf(context, policy, window, input.goalId, undefined, input.pinnedIds ?? []);
  const { maxTokens, maxChars } = policy.toolResults;
  return context.map((m: MessageMeta, i) => {
    if (m.role === 'system') return 0;
    if (protect[i] === 'none' || policy.offload.includeProtected) return m.tokens;
    // A protected result over either of the cut's limits: at most all of it (what the cut keeps is not counted).
    return m.role === 'tool' && (m.tokens > maxTokens || m.chars > maxChars) ? m.tokens : 0;
  });
}
