/**
 * The hard-limit fit: every request fits. Over the hard limit, after the policy's strategies, the older steps (recent
 * ones included) go into the summary, oldest first, down to the newest step (`fit-window`); what is still over is cut,
 * the largest messages first, to head and tail with the reference to the original (`truncate-oversized`).
 */
import { kindOf } from '../messages.ts';
import { isSummary } from './board.ts';
import type { Board, StepResult } from './board.ts';
import { EMERGENCY_MIN_TOKENS, STUB_TOKENS } from './sizes.ts';

/** Summarizes the older steps, oldest first, until the board is at or under `limit` tokens. */
export function fitWindow(board: Board, hardLimit: number, limit: number): StepResult {
  const overLimit = () => board.stats().tokens > limit;
  const ids: string[] = [];
  for (const s of board.removableSteps('recent')) {
    if (!overLimit()) break;
    ids.push(...board.summarizeSteps([s]));
  }
  return {
    ids,
    note: `over the hard limit (${hardLimit} tokens): the older steps summarized down to the newest one`,
  };
}

/**
 * Cuts the largest messages (never the system prompt, a summary, the ledger or a pinned message) to head and tail, keeping at least
 * {@link EMERGENCY_MIN_TOKENS} of each, until the board is at or under `limit` tokens.
 */
export function truncateOversized(board: Board, hardLimit: number, limit: number): StepResult {
  const ids: string[] = [];
  const candidates = board.slots
    .filter((s) => s.op.op !== 'drop')
    .filter(
      (s) => s.meta.role !== 'system' && !isSummary(s) && kindOf(s.meta) !== 'ledger' && !board.pinned.has(s.meta.id),
    )
    .filter((s) => s.tokens > EMERGENCY_MIN_TOKENS && (s.op.op === 'keep' || s.op.op === 'truncate'))
    .sort((a, b) => b.tokens - a.tokens || a.index - b.index);
  for (const slot of candidates) {
    const excess = board.stats().tokens - limit;
    if (excess <= 0) break;
    const keepTokens = Math.max(EMERGENCY_MIN_TOKENS, slot.tokens - excess - STUB_TOKENS);
    const chars = slot.meta.chars;
    const keepChars = Math.floor((chars * keepTokens) / Math.max(1, slot.meta.tokens));
    if (keepTokens + STUB_TOKENS >= slot.tokens) continue;
    const head = Math.ceil(keepChars * 0.7);
    board.replace(
      slot,
      {
        op: 'truncate',
        id: slot.meta.id,
        headChars: head,
        tailChars: keepChars - head,
        maxTokens: keepTokens + STUB_TOKENS,
      },
      keepTokens + STUB_TOKENS,
    );
    ids.push(slot.meta.id);
  }
  return { ids, note: `over the hard limit (${hardLimit} tokens): the largest messages cut to head and tail` };
}
