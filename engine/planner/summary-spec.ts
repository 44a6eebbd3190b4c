/**
 * The one summary a plan asks for: what every removing step dropped, with the previous summary folded in; the span the
 * summarizer reads, the user's messages kept verbatim beside it, where it goes, its size, its writer and what it
 * covers (the steps of the turn in progress included).
 */
import { isUserTurn } from '../messages.ts';
import type { Board } from './board.ts';
import { SUMMARY_FRAME_TOKENS } from './sizes.ts';
import type { PlanInput, PlanStep, SummaryCoverage, SummarySpec } from './types.ts';

/**
 * The summary spec of the board (undefined when nothing was summarized). Places it on the board (a summary prepended
 * to a kept user message adds no message) and hands it to every step that dropped a message into it.
 */
export function summarySpecOf(
  board: Board,
  { policy, summarizer, written }: Pick<PlanInput, 'policy' | 'summarizer' | 'written'>,
  steps: readonly PlanStep[],
): SummarySpec | undefined {
  if (board.summarizedCount === 0) return undefined;
  const { slots, opener, currentTurn } = board;
  const span = slots.filter((s) => s.summarized);
  const kept = slots.filter((s) => s.op.op !== 'drop');
  const lastSpanIndex = span.at(-1)!.index;
  const after = kept.filter((s) => s.index > lastSpanIndex);
  const keptUser = new Set(kept.filter((s) => isUserTurn(s.meta) && s.index < lastSpanIndex && s.protect === 'none'));
  const firstUserAfter = after.find((s) => isUserTurn(s.meta) && s.op.op === 'keep');
  const placement: SummarySpec['placement'] =
    policy.summary.placement === 'first-kept-user' && firstUserAfter
      ? { mode: 'prepend', id: firstUserAfter.meta.id }
      : { mode: 'message', ...(after[0] ? { beforeId: after[0].meta.id } : {}) };
  if (placement.mode === 'prepend') board.prependSummaryTo(firstUserAfter);
  // The span is final: the summary and the ledger as they will be written, when the plan activity counted them.
  if (written) board.useWritten(written);
  let currentTurnSpan: SummaryCoverage['currentTurn'];
  if (opener && span.some((s) => s.turn === currentTurn && s.index > opener.index)) {
    // Steps of the turn in progress: those an earlier summary of it covered, then the assistant messages now.
    const earlier = Math.max(
      0,
      ...span.filter((s) => s.meta.covers?.turnId === opener.meta.id).map((s) => s.meta.covers!.steps),
    );
    const now = span.filter((s) => s.turn === currentTurn && s.meta.role === 'assistant').length;
    currentTurnSpan = { turnId: opener.meta.id, steps: earlier + now };
  }
  // The summarizer reads the user's messages kept verbatim beside it too (their facts are not at risk).
  const read = slots.filter((s) => s.summarized || keptUser.has(s));
  const summary: SummarySpec = {
    spanIds: read.map((s) => s.meta.id),
    keptUserIds: [...keptUser].map((s) => s.meta.id),
    placement,
    estimatedTokens: board.summaryEstimate(),
    maxTokens: board.summaryBudget + SUMMARY_FRAME_TOKENS,
    writer: summarizer === 'available' ? 'model' : 'extractive',
    coverage: {
      firstId: span[0]!.meta.id,
      lastId: span.at(-1)!.meta.id,
      messages: span.length,
      ...(currentTurnSpan ? { currentTurn: currentTurnSpan } : {}),
    },
    fallback: policy.summary.fallback,
    ...(board.firstLedger > 0 ? { ledgerTokens: board.ledgerGrowth() } : {}),
  };
  for (const step of steps) {
    if (step.ids.some((id) => board.slotById.get(id)?.summarized)) step.summary = summary;
  }
  return summary;
}
