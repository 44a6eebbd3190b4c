/**
 * The cost-aware decision, with Octomind's arithmetic: is a compaction worth what it costs? Without it, each
 * remaining model call reads the whole current context at the full input price; with it, the summary call is paid
 * once and each remaining call reads the smaller context. The remaining calls are the cost model's fixed estimate, or
 * the session's pace: the calls it took to fill the context since the last compaction, which a compacted context
 * serves again before the next one.
 */
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
  remainingFrom: 'policy' | 'pace';
}

const PER_MILLION = 1_000_000;

/** The remaining calls to price: the policy's figure, else the session's pace (at least 1). */
export function remainingTurnsOf(
  model: CostModel,
  callsSinceCompaction: number | undefined,
): { turns: number; from: 'policy' | 'pace' } {
  if (model.expectedRemainingTurns !== undefined) return { turns: model.expectedRemainingTurns, from: 'policy' };
  return { turns: Math.max(1, callsSinceCompaction ?? 1), from: 'pace' };
}

/**
 * Costs of compacting `tokensBefore` down to `tokensAfter`, when the summarizer reads `summaryInputTokens` and
 * writes `summaryOutputTokens` (0 and 0 for deterministic steps), over the remaining calls.
 */
export function estimateCost(
  model: CostModel,
  tokensBefore: number,
  tokensAfter: number,
  summaryInputTokens: number,
  summaryOutputTokens: number,
  callsSinceCompaction?: number,
): CostEstimate {
  const input = model.inputPerMillion / PER_MILLION;
  const { turns, from } = remainingTurnsOf(model, callsSinceCompaction);
  const withoutCompaction = turns * tokensBefore * input;
  const summaryCall =
    (summaryInputTokens * (model.summaryInputPerMillion ?? model.inputPerMillion) +
      summaryOutputTokens * model.summaryOutputPerMillion) /
    PER_MILLION;
  const withCompaction = summaryCall + turns * tokensAfter * input;
  return {
    withoutCompaction,
    withCompaction,
    netBenefit: withoutCompaction - withCompaction,
    remainingTurns: turns,
    remainingFrom: from,
  };
}
