/**
 * Turn grouping. A user message opens a turn. Inside a turn, an assistant message that calls tools and the tool
 * messages answering it form one atomic group: compression removes or keeps it whole, never half.
 */
import type { PairView } from './tool-pairs.ts';

/** A half-open range of message indexes, [start, end). */
export interface Span {
  start: number;
  end: number;
}

export interface Turn extends Span {
  /** Atomic groups of the turn, in order, covering it exactly. */
  groups: Span[];
}

export interface TurnLayout {
  /** Messages before the first user message (system prompt, summary, ledger). */
  preamble: Span;
  turns: Turn[];
}

/** Atomic groups of `view[start, end)`: an assistant message with tool calls takes the tool messages after it. */
export function atomicGroups(view: readonly PairView[], start = 0, end = view.length): Span[] {
  const groups: Span[] = [];
  let i = start;
  while (i < end) {
    let j = i + 1;
    if (view[i]!.role === 'assistant' && (view[i]!.toolCallIds?.length ?? 0) > 0) {
      while (j < end && view[j]!.role === 'tool') j++;
    }
    groups.push({ start: i, end: j });
    i = j;
  }
  return groups;
}

export function groupTurns(view: readonly PairView[]): TurnLayout {
  const firstUser = view.findIndex((message) => message.role === 'user');
  const preambleEnd = firstUser === -1 ? view.length : firstUser;
  const turns: Turn[] = [];
  let start = preambleEnd;
  while (start < view.length) {
    let end = start + 1;
    while (end < view.length && view[end]!.role !== 'user') end++;
    turns.push({ start, end, groups: atomicGroups(view, start, end) });
    start = end;
  }
  return { preamble: { start: 0, end: preambleEnd }, turns };
}
