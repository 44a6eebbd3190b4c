/**
 * The extractive summarizer: what stands in for the LLM when no summary model is configured (the offline demo, a
 * deployment without a second model). It writes no new sentences; it picks the user's words, the last answer, the
 * errors and the must-keep facts of the span into the five fields, and says that it is extractive.
 */
import { extractFacts, MAX_FACT_CHARS } from './facts.ts';
import type { FactSource } from './facts.ts';
import { textOf } from './messages.ts';
import type { MessageContent } from './messages.ts';
import type { StructuredSummary } from './summary.ts';
import { clipLine, headOf } from './text.ts';

/** Characters kept of each user message and of the last answer. */
const QUOTE_CHARS = 400;
/** Facts listed per field, at most. */
const LISTED_FACTS = 40;
/** User messages quoted, at most (the newest). */
const USER_MESSAGES = 6;

export const EXTRACTIVE_LABEL = '(extractive summary: no summary model is configured; quoted, not rewritten)';

/** A message's text (its text parts, for parts) on one line, cut with an ellipsis, never inside a character. */
function quote(content: MessageContent, chars = QUOTE_CHARS): string {
  return clipLine(textOf(content), chars);
}

/** The five fields from the span's own words; `previous` (an earlier summary) is kept as the current state's start. */
export function extractiveSummary(span: readonly FactSource[], previous?: string): StructuredSummary {
  const users = span.filter((m) => m.role === 'user' && textOf(m.content).trim() !== '');
  const lastAnswer = [...span].reverse().find((m) => m.role === 'assistant' && textOf(m.content).trim() !== '');
  const facts = extractFacts(span);
  const list = (kinds: string[]) =>
    facts
      .filter((f) => kinds.includes(f.kind))
      .slice(0, LISTED_FACTS)
      .map((f) => `- ${headOf(f.text, MAX_FACT_CHARS)}`)
      .join('\n');
  return {
    task_overview: [EXTRACTIVE_LABEL, ...users.slice(-USER_MESSAGES).map((m) => `- user: ${quote(m.content)}`)].join(
      '\n',
    ),
    current_state: [
      previous ? quote(previous, 2 * QUOTE_CHARS) : '',
      lastAnswer ? `Last answer: ${quote(lastAnswer.content)}` : '',
    ]
      .filter(Boolean)
      .join('\n'),
    important_discoveries: list(['error']),
    next_steps: users.length ? `Continue from the user's last request: ${quote(users.at(-1)!.content)}` : '',
    context_to_preserve: list(['constraint', 'path', 'url', 'identifier', 'quantity']),
  };
}
