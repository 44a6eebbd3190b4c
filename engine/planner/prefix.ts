/**
 * The cached prefix a plan keeps: the provider's prompt cache matches a request's beginning up to its first changed
 * token, so everything from the first message a compaction changes on is read at the full input price at the next
 * call. The tool schemas come first in every request and never change; then the messages up to the first one the
 * plan replaces or drops, or before which it puts the summary (the summary and the task ledger, replaced by each
 * summary, end it too).
 */
import { kindOf } from '../messages.ts';
import type { Slot } from './board.ts';
import type { SummarySpec } from './types.ts';

/** Tokens of the request that stay a cached prefix after the plan: `fixedTokens` and the unchanged first messages. */
export function cachedPrefixOf(slots: readonly Slot[], fixedTokens: number, summary?: SummarySpec): number {
  let tokens = fixedTokens;
  for (const slot of slots) {
    if (slot.op.op !== 'keep') break;
    if (summary) {
      const { placement } = summary;
      if (placement.mode === 'message' && placement.beforeId === slot.meta.id) break;
      if (placement.mode === 'prepend' && placement.id === slot.meta.id) break;
      const kind = kindOf(slot.meta);
      if (kind === 'summary' || kind === 'ledger') break;
    }
    tokens += slot.tokens;
  }
  return tokens;
}

/**
 * Tokens at the end of the context that no request carried yet: the last reply (the previous call's output) and
 * what came after it (its tool results, a new user message); all of it when there is no reply.
 */
export function unsentTokensOf(slots: readonly Slot[]): number {
  let tokens = 0;
  for (let i = slots.length - 1; i >= 0; i--) {
    tokens += slots[i]!.tokens;
    if (slots[i]!.meta.role === 'assistant') break;
  }
  return tokens;
}
