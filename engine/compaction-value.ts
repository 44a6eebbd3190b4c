/**
 * The cost-aware decision: is a compaction worth what it costs? Octomind's arithmetic, with the provider's prompt
 * cache. Without it, each remaining model call reads the whole current context, all of it a cached prefix (the
 * context only grows at its end). With it, the summary call is paid once; the next call reads the messages before the
 * first one the compaction changes from the cache and everything from there on at the full input price (the cached
 * prefix it throws away); each later call reads the smaller context from the cache. What the agent adds meanwhile is
 * the same either way, so it is not priced. The remaining calls are the cost model's fixed estimate, or the session's
 * pace: the calls it took to fill the context since the last compaction, which a compacted context serves again
 * before the next one; until that pace is known, the calls the context itself shows were made ({@link paceOf}: the
 * planner's last word and the workflow's preflight both price with it).
 *
 * With `cachedInputPerMillion` equal to `inputPerMillion` (nothing is cached) this is Octomind's arithmetic as its
 * document gives it: the remaining calls at the full input price without and with the compaction, plus the summary.
 *
 * This file decides whether a compaction pays for itself; what a model call costs at a model's price, and an agent's
 * calls summed, are pricing.ts's.
 *
 * @example
 *   // 40,000 tokens → 30,000, of which the first 2,000 stay cached, at the pace of 12 calls:
 *   estimateCost({ inputPerMillion: 3, summaryOutputPerMillion: 15 }, 40_000, 30_000, 0, 0, 12, {
 *     cachedPrefixTokens: 2_000,
 *   }).netBenefit;
 *   // 12 × 10,000 × 0.3 − 28,000 × 2.7 (per million): < 0, the pass waits
 */
import { kindOf } from './messages.ts';
import type { MessageMeta } from './messages.ts';
import { DEFAULT_CACHED_INPUT_SHARE } from './policy.ts';
import type { CostModel } from './policy.ts';

export interface CostEstimate {
  /** Cost of the expected remaining calls without compacting. */
  withoutCompaction: number;
  /** Cost of compacting (the summary call) plus the remaining calls on the smaller context. */
  withCompaction: number;
  /** withoutCompaction − withCompaction: positive means compacting saves money. */
  netBenefit: number;
  /** The remaining calls priced, and where the figure came from. */
  remainingTurns: number;
  /**
   * `policy`: its `expectedRemainingTurns`; `pace`: the calls since the last compaction; `estimate`: the policy's
   * `remainingTurnsUntilPace`, while no call has been counted since the last compaction; `context`: without that
   * estimate, the calls the context shows were made ({@link callsShownBy}).
   */
  remainingFrom: 'policy' | 'pace' | 'estimate' | 'context';
  /**
   * Tokens of the request that stay a cached prefix across the compaction: the tool schemas and the messages before
   * the first one it changes (absent in estimates made before the prompt cache was priced).
   */
  cachedPrefixTokens?: number;
  /** Tokens at the end of the context no request carried yet: read at the full price with or without compacting. */
  unsentTokens?: number;
  /**
   * Tokens of the prompt cache the compaction throws away: what earlier requests carried from its first change on,
   * which the next call reads at the full input price.
   */
  invalidatedTokens?: number;
  /** The context's tokens before and, as planned, after the compaction (absent in estimates of before). */
  tokensBefore?: number;
  tokensAfter?: number;
}

const PER_MILLION = 1_000_000;

/** The price per million cached input tokens: the model's, else {@link DEFAULT_CACHED_INPUT_SHARE} of the input's. */
export function cachedInputPerMillionOf(model: CostModel): number {
  return model.cachedInputPerMillion ?? model.inputPerMillion * DEFAULT_CACHED_INPUT_SHARE;
}

/**
 * The remaining calls to price: the policy's figure, else the session's pace once a call was counted since the last
 * compaction, else the policy's estimate until the pace is known (`remainingTurnsUntilPace`), else the calls the
 * context shows were made (`contextCalls`, {@link callsShownBy}), else 1.
 */
export function remainingTurnsOf(
  model: CostModel,
  callsSinceCompaction: number | undefined,
  contextCalls?: number,
): { turns: number; from: CostEstimate['remainingFrom'] } {
  if (model.expectedRemainingTurns !== undefined) return { turns: model.expectedRemainingTurns, from: 'policy' };
  const paceKnown = callsSinceCompaction !== undefined && callsSinceCompaction > 0;
  if (paceKnown) return { turns: callsSinceCompaction, from: 'pace' };
  if (model.remainingTurnsUntilPace !== undefined) return { turns: model.remainingTurnsUntilPace, from: 'estimate' };
  if (contextCalls !== undefined) return { turns: Math.max(1, contextCalls), from: 'context' };
  return { turns: 1, from: 'pace' };
}

/**
 * The model calls the context shows were made: its assistant messages since the last summary (or since its start),
 * at least 1. A context of 13 turns took at least 13 calls to build, and compacted it serves about as many again:
 * what a first compaction prices before the session's pace is known.
 */
export function callsShownBy(context: readonly Pick<MessageMeta, 'role' | 'kind'>[]): number {
  let calls = 0;
  for (let i = context.length - 1; i >= 0 && kindOf(context[i]!) !== 'summary'; i--) {
    if (context[i]!.role === 'assistant') calls++;
  }
  return Math.max(1, calls);
}

/**
 * What a cost decision over `context` (at `tokens`, `lastTokensAfter` after the last compaction) knows of the
 * session's pace besides the calls counted since the last compaction: the tokens a call adds and the calls the
 * context shows were made. The one helper of both decisions that price a compaction before it is made, the planner's
 * last word (planner/last-word.ts) and the workflow's preflight of a masking pass (planner/preflight.ts), so they
 * price the same calls.
 */
export function paceOf(
  context: readonly Pick<MessageMeta, 'role' | 'kind'>[],
  tokens: number,
  lastTokensAfter: number,
  callsSinceCompaction: number | undefined,
): Pick<CacheSpan, 'tokensPerCall' | 'contextCalls'> {
  return {
    tokensPerCall: tokensPerCallOf(tokens, lastTokensAfter, callsSinceCompaction),
    contextCalls: callsShownBy(context),
  };
}

/**
 * What the plan knows of the prompt cache (the prefix it keeps, the newest tokens no request has sent yet) and of the
 * session's pace besides the calls since the last compaction ({@link paceOf}).
 */
export interface CacheSpan {
  /** Tokens of the request before the first message the compaction changes (tool schemas included). */
  cachedPrefixTokens?: number;
  /** Tokens at the end of the context no request carried yet (the last reply and what came after it). */
  unsentTokens?: number;
  /**
   * The tokens a call adds at the session's pace ({@link tokensPerCallOf}): with it, the remaining calls priced are at
   * least those the context takes to grow back by what the compaction removes.
   */
  tokensPerCall?: number;
  /** The calls the context shows were made ({@link callsShownBy}): priced while the session's pace is not known. */
  contextCalls?: number;
}

/**
 * Costs of compacting `tokensBefore` down to `tokensAfter`, when the summarizer reads `summaryInputTokens` and
 * writes `summaryOutputTokens` (0 and 0 for deterministic steps), over the remaining calls. `cache`: the first
 * `cachedPrefixTokens` of the request stay as they were (default 0: the compaction changes it from its start), and
 * the last `unsentTokens` of the context were never sent (default 0), so they are read at the full price either way;
 * the remaining calls are {@link remainingTurnsOf}'s, the context's `contextCalls` until the pace is known.
 */
export function estimateCost(
  model: CostModel,
  tokensBefore: number,
  tokensAfter: number,
  summaryInputTokens: number,
  summaryOutputTokens: number,
  callsSinceCompaction?: number,
  cache: CacheSpan = {},
): CostEstimate {
  const input = model.inputPerMillion / PER_MILLION;
  const cached = cachedInputPerMillionOf(model) / PER_MILLION;
  const paced = remainingTurnsOf(model, callsSinceCompaction, cache.contextCalls);
  const { from } = paced;
  // The saving lasts while the context grows back by what leaves it: after a small compaction (a masking pass) the
  // calls since it understate that for the next, larger one.
  const refill =
    from === 'pace' && cache.tokensPerCall !== undefined && cache.tokensPerCall > 0
      ? Math.floor(Math.max(0, tokensBefore - tokensAfter) / cache.tokensPerCall)
      : 0;
  const turns = Math.max(paced.turns, refill);
  const unsent = Math.max(0, Math.min(cache.unsentTokens ?? 0, tokensBefore));
  const sent = tokensBefore - unsent;
  // Of the prefix the compaction keeps, what an earlier request carried, so the cache holds it.
  const kept = Math.max(0, Math.min(cache.cachedPrefixTokens ?? 0, sent, tokensAfter));
  const summaryCall =
    (summaryInputTokens * (model.summaryInputPerMillion ?? model.inputPerMillion) +
      summaryOutputTokens * model.summaryOutputPerMillion) /
    PER_MILLION;
  // The next call: without compacting, what was sent from the cache and the new tokens at the full price; with it,
  // the kept prefix from the cache and everything after it at the full price. The later calls: all from the cache.
  const next = turns > 0 ? 1 : 0;
  const later = Math.max(0, turns - 1);
  const withoutCompaction = next * (sent * cached + unsent * input) + later * tokensBefore * cached;
  const withCompaction =
    summaryCall + next * (kept * cached + (tokensAfter - kept) * input) + later * tokensAfter * cached;
  return {
    withoutCompaction,
    withCompaction,
    netBenefit: withoutCompaction - withCompaction,
    remainingTurns: turns,
    remainingFrom: from,
    cachedPrefixTokens: kept,
    unsentTokens: unsent,
    invalidatedTokens: sent - kept,
    tokensBefore,
    tokensAfter,
  };
}

/**
 * After an automatic compaction that did not pay, the growth of the context (a share of `tokensBefore`) to wait for
 * before planning again: the calls it takes, at the session's pace, for the saving to cover what compacting costs
 * (the net benefit rises by `(tokensBefore − tokensAfter)` at the cached price with each call the pace adds), times
 * the tokens a call adds. Undefined when waiting does not change the decision (a fixed number of remaining calls, or
 * nothing saved), the calls priced are the context's (no pace to wait at: the fixed hold), it already pays, or the estimate predates its token counts. Planning again earlier only finds the same answer, at the price of a plan.
 *
 * @example
 *   // 12,000 → 7,000 tokens, net benefit −0.002 USD at cached input 0.125 per million: 4 more calls of 500 tokens
 *   growthUntilWorthIt({ netBenefit: -0.002, remainingFrom: 'pace', tokensBefore: 12_000, tokensAfter: 7_000, … },
 *     { inputPerMillion: 1.25, summaryOutputPerMillion: 10 }, 500)
 *   // ≈ 0.17
 */
export function growthUntilWorthIt(
  estimate: CostEstimate,
  model: CostModel,
  tokensPerCall: number,
): number | undefined {
  const { tokensBefore, tokensAfter } = estimate;
  if (tokensBefore === undefined || tokensAfter === undefined || tokensBefore <= 0) return undefined;
  if (estimate.remainingFrom !== 'pace' || estimate.netBenefit >= 0) return undefined;
  const perCall = ((tokensBefore - tokensAfter) * cachedInputPerMillionOf(model)) / PER_MILLION;
  if (perCall <= 0 || tokensPerCall <= 0) return undefined;
  const calls = Math.ceil(-estimate.netBenefit / perCall);
  return (calls * tokensPerCall) / tokensBefore;
}

/**
 * The tokens a model call adds to the context at the session's pace: the growth since the last compaction over the
 * calls it took (since the agent's start, the whole context over them).
 */
export function tokensPerCallOf(tokens: number, lastTokensAfter: number, callsSinceCompaction: number | undefined) {
  const calls = Math.max(1, callsSinceCompaction ?? 1);
  return Math.max(0, tokens - lastTokensAfter) / calls;
}
