/**
 * The cost-aware decision (after Octomind's): is a compression worth what it costs? Without it, the next turns
 * re-read the current prefix from the provider's prompt cache; with it, the summary call is paid once and the
 * shorter context is written to the cache again, then read by the turns after.
 */
import type { CostModel } from './policy.ts';

export interface CostEstimate {
  /** Cost of the expected remaining turns without compressing. */
  withoutCompression: number;
  /** Cost of compressing (summary call, cache rewrite) plus the remaining turns on the smaller context. */
  withCompression: number;
  /** withoutCompression − withCompression: positive means compressing saves money. */
  netBenefit: number;
}

const PER_MILLION = 1_000_000;

/**
 * Costs over `model.expectedRemainingTurns` turns of compressing `tokensBefore` down to `tokensAfter`, when the
 * summarizer reads `summaryInputTokens` and writes `summaryOutputTokens` (0 and 0 for deterministic steps).
 */
export function estimateCost(
  model: CostModel,
  tokensBefore: number,
  tokensAfter: number,
  summaryInputTokens: number,
  summaryOutputTokens: number,
): CostEstimate {
  const input = model.inputPerMillion / PER_MILLION;
  const turns = model.expectedRemainingTurns;
  const withoutCompression = turns * tokensBefore * input * model.cacheReadMultiplier;
  const summaryCall =
    (summaryInputTokens * (model.summaryInputPerMillion ?? model.inputPerMillion) +
      summaryOutputTokens * model.summaryOutputPerMillion) /
    PER_MILLION;
  const rewrite = turns > 0 ? tokensAfter * input * model.cacheWriteMultiplier : 0;
  const after = Math.max(0, turns - 1) * tokensAfter * input * model.cacheReadMultiplier;
  const withCompression = summaryCall + rewrite + after;
  return { withoutCompression, withCompression, netBenefit: withoutCompression - withCompression };
}
