/**
 * The one summary a plan asks for: what every removing step dropped, with the previous summary folded in; the span the
 * summarizer reads, the user's messages kept verbatim beside it, where it goes, its size, its writer and what it
 * covers (the steps of the turn in progress included).
 */
import { isUserTurn } from '../messages.ts';
import { isSummary } from './board.ts';
import type { Board, Slot } from './board.ts';
import { SUMMARY_FRAME_TOKENS } from './sizes.ts';
import type { PlanInput, PlanStep, SummaryCoverage, SummaryPart, SummarySpec } from './types.ts';

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
  if (board.inPlaceParts) return inPlaceSpecOf(board, { policy, summarizer, written }, steps);
  const { slots } = board;
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
  const currentTurnSpan = currentTurnCoverage(board, span);
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

/**
 * The steps of the turn in progress a summary of `span` covers (undefined: it does not reach into it): those an earlier
 * summary of it covered, then the assistant messages of the span in it (not a summary in its place).
 */
function currentTurnCoverage(board: Board, span: readonly Slot[]): SummaryCoverage['currentTurn'] {
  const { opener, currentTurn } = board;
  if (!opener || !span.some((s) => s.turn === currentTurn && s.index > opener.index)) return undefined;
  const earlier = Math.max(
    0,
    ...span.filter((s) => s.meta.covers?.turnId === opener.meta.id).map((s) => s.meta.covers!.steps),
  );
  const now = span.filter((s) => s.turn === currentTurn && s.meta.role === 'assistant' && !isSummary(s)).length;
  return { turnId: opener.meta.id, steps: earlier + now };
}

/**
 * The spec of summaries in their places (AgentScope Java's strategies 1, 4 and 6): one part per span, each of its
 * form, read with the request of its round (kept verbatim before it) and placed where its span was; no task ledger. A
 * summary of the round in progress says which of its steps it covers.
 */
function inPlaceSpecOf(
  board: Board,
  { policy, summarizer, written }: Pick<PlanInput, 'policy' | 'summarizer' | 'written'>,
  steps: readonly PlanStep[],
): SummarySpec {
  const { slots } = board;
  // In context order (by index): each part's request and the message after it are found by a binary search.
  const kept = slots.filter((s) => s.op.op !== 'drop');
  const keptUser = kept.filter((s) => isUserTurn(s.meta));
  const spans = new Map<number, Slot[]>();
  for (const slot of slots) {
    if (!slot.summarized) continue;
    const span = spans.get(slot.part ?? 0);
    if (span) span.push(slot);
    else spans.set(slot.part ?? 0, [slot]);
  }
  if (written) board.useWritten(written);
  const parts: SummaryPart[] = [...spans.values()]
    .sort((a, b) => a[0]!.index - b[0]!.index)
    .map((span) => {
      const first = span[0]!;
      const last = span.at(-1)!;
      const form = board.formOf(first.part ?? 0)!;
      const currentTurn = form === 'current-round' ? currentTurnCoverage(board, span) : undefined;
      const roundStart = board.layout.turns[first.turn]?.start ?? first.index;
      const request = keptUser.slice(firstFrom(keptUser, roundStart), firstFrom(keptUser, first.index));
      const beforeId = kept[firstFrom(kept, last.index + 1)]?.meta.id;
      return {
        form,
        spanIds: [...request, ...span].map((s) => s.meta.id),
        keptUserIds: request.map((s) => s.meta.id),
        ...(beforeId !== undefined ? { beforeId } : {}),
        coverage: {
          firstId: first.meta.id,
          lastId: last.meta.id,
          messages: span.length,
          ...(currentTurn ? { currentTurn } : {}),
        },
        estimatedTokens: board.summaryTokensFor(span.reduce((sum, s) => sum + s.meta.tokens, 0)),
      };
    });
  const all = slots.filter((s) => s.summarized);
  const currentRound = parts.find((part) => part.coverage.currentTurn)?.coverage.currentTurn;
  const summary: SummarySpec = {
    form: parts[0]!.form,
    parts,
    spanIds: [...new Set(parts.flatMap((p) => p.spanIds))],
    keptUserIds: [...new Set(parts.flatMap((p) => p.keptUserIds))],
    placement: { mode: 'message', ...(parts[0]!.beforeId !== undefined ? { beforeId: parts[0]!.beforeId } : {}) },
    estimatedTokens: board.summaryEstimate(),
    maxTokens: board.summaryBudget + SUMMARY_FRAME_TOKENS,
    writer: summarizer === 'available' ? 'model' : 'extractive',
    coverage: {
      firstId: all[0]!.meta.id,
      lastId: all.at(-1)!.meta.id,
      messages: all.length,
      ...(currentRound ? { currentTurn: currentRound } : {}),
    },
    fallback: policy.summary.fallback,
  };
  for (const step of steps) {
    if (step.ids.some((id) => board.slotById.get(id)?.summarized)) step.summary = summary;
  }
  return summary;
}

/** The position of the first of `slots` (in context order) at or after the context's `index` (`slots.length`: none). */
function firstFrom(slots: readonly Slot[], index: number): number {
  let lo = 0;
  let hi = slots.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (slots[mid]!.index < index) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The spec of each summary a plan writes: the parts of summaries in their places, else the one summary. */
export function summarySpecsOf(spec: SummarySpec): SummarySpec[] {
  const { parts, ...one } = spec;
  if (!parts) return [spec];
  return parts.map(({ beforeId, form, ...part }) => ({
    ...one,
    ...part,
    // (A plan stored before each part had its own form: the spec's, the same for all.)
    form: form ?? one.form,
    placement: { mode: 'message', ...(beforeId !== undefined ? { beforeId } : {}) },
  }));
}
