/**
 * Step and turn layout. A step is the unit of compaction: a user message, an assistant message that calls tools
 * together with the tool messages answering it (removed or kept whole, never half), or a final answer. One of the
 * user's own messages opens a turn; a long-running agent's turn holds hundreds of steps.
 */
import type { PairView } from './tool-pairs.ts';

/** A half-open range of message indexes, [start, end). */
export interface Span {
  start: number;
  end: number;
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

/** The fields of a message the step layout needs. */
export interface StepView extends PairView {
  kind?: string;
  ref?: string;
}

/**
 * Whether a message opens a turn: one of the user's own messages, or a user message a summary was prepended to (it
 * still carries the user's words). A summary message of its own and the task ledger do not.
 */
export function opensTurn(message: StepView): boolean {
  if (message.role !== 'user') return false;
  const kind = message.kind ?? 'normal';
  return kind === 'normal' || (kind === 'summary' && message.ref !== undefined);
}

/** One atomic step: a user message, an assistant message with all its tool calls' results, or a final answer. */
export interface Step extends Span {
  /** The turn it belongs to (index into `turns`), -1 before the first turn. */
  turn: number;
}

export interface StepLayout {
  steps: Step[];
  /** Each turn from the message that opened it to the next opener. */
  turns: Span[];
}

/**
 * The context as steps, the unit of compaction: a turn of a long-running agent holds hundreds of them. Messages
 * that are neither (a summary, the ledger, a system prompt) are steps of their own.
 */
export function layoutSteps(view: readonly StepView[]): StepLayout {
  const steps: Step[] = [];
  const turns: Span[] = [];
  for (const group of atomicGroups(view)) {
    if (opensTurn(view[group.start]!)) {
      const previous = turns.at(-1);
      if (previous) previous.end = group.start;
      turns.push({ start: group.start, end: view.length });
    }
    steps.push({ ...group, turn: turns.length - 1 });
  }
  return { steps, turns };
}
