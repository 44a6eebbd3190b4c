/**
 * The extractive summarizer: what stands in for the LLM when no summary model is configured (the offline demo, a
 * deployment without a second model). It writes no new sentences; it picks the user's words, the last answer, the
 * errors and the must-keep facts of the span into the five fields, and says that it is extractive.
 */
import { agentFirst, extractFacts, factLineFinder, MAX_FACT_CHARS } from './facts.ts';
import { textOf } from './messages.ts';
import type { MessageContent } from './messages.ts';
import { parseSummary } from './summary.ts';
import type { StructuredSummary } from './summary.ts';
import { clipLine, headOf } from './text.ts';

/** Characters kept of each user message and of the last answer. */
const QUOTE_CHARS = 400;
/** Facts listed per field, at most. */
const LISTED_FACTS = 40;
/** User messages quoted, at most (the newest). */
const USER_MESSAGES = 6;

const USER_QUOTE = '- user: ';
const CONTINUE = "Continue from the user's last request: ";
/** The next step when every request of the span was answered: the newest request is the one after the summary. */
export const ANSWERED_NEXT_STEP =
  'Every request summarized here was answered: go on with the newest request, in the messages after this summary.';
const LAST_ANSWER = 'Last answer: ';
const LATEST_STEP = 'Latest step';

export const EXTRACTIVE_LABEL = '(extractive summary: no summary model is configured; quoted, not rewritten)';

/**
 * The next step, from the newest request: the span's last user message while it is still being worked on (no answer
 * follows it in the span), else the newest request after the summary (the summarized ones were answered). A span with
 * no request of its own keeps the next step of the summary folded in.
 */
function nextStepsOf(span: readonly CallSource[], earlier: string | undefined): string {
  const last = span.findLastIndex((m) => m.role === 'user' && textOf(m.content).trim() !== '');
  if (last === -1) return earlier ?? '';
  // An answer is a text without tool calls: a text that came with calls opened or reported work still going on.
  const answered = span
    .slice(last + 1)
    .some((m) => m.role === 'assistant' && !m.tool_calls?.length && textOf(m.content).trim() !== '');
  return answered ? ANSWERED_NEXT_STEP : `${CONTINUE}${quote(span[last]!.content)}`;
}

/** A message's text (its text parts, for parts) on one line, cut with an ellipsis, never inside a character. */
function quote(content: MessageContent, chars = QUOTE_CHARS): string {
  return clipLine(textOf(content), chars);
}

/** The kinds of fact listed with the words of the clause they were read from. */
const LINED_KINDS = new Set(['path', 'url', 'identifier', 'quantity']);

/**
 * Where the span's work stands. Its last answer (an assistant message's text) when no tool call came after it; else
 * its newest step: the calls of the newest assistant message that made some, each with the head of its result, and
 * what that message said with them, if anything. An answer that only opened the work ("I will go through them one at
 * a time") is not the state once steps came after it. Undefined for a span without either.
 */
function latestStateOf(span: readonly CallSource[]): string | undefined {
  const said = (m: CallSource) => m.role === 'assistant' && textOf(m.content).trim() !== '';
  const lastAnswer = span.findLastIndex(said);
  const lastCaller = span.findLastIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
  if (lastCaller === -1 || lastAnswer > lastCaller) {
    return lastAnswer === -1 ? undefined : `${LAST_ANSWER}${quote(span[lastAnswer]!.content)}`;
  }
  // The newest step: its calls and the results right after them.
  const next = span.findIndex((m, i) => i > lastCaller && m.role !== 'tool');
  const step = span.slice(lastCaller, next === -1 ? span.length : next);
  const newest = toolCallLines(step).map((line) => line.replace(/^- /, ''));
  const calls = span.reduce((n, m) => n + (m.role === 'assistant' ? (m.tool_calls?.length ?? 0) : 0), 0);
  const words = lastAnswer === lastCaller ? ` (saying: ${quote(span[lastCaller]!.content)})` : '';
  return `${LATEST_STEP} (of ${calls} tool call${calls === 1 ? '' : 's'} here)${words}: ${newest.join('; ')}`;
}

/**
 * The five fields from the span's own words, within `maxChars` (the summary's budget: facts that do not fit are left
 * for the caller's fact check to pin). `previous` (an earlier summary folded in) starts the current state, and its
 * facts are carried forward with the span's: errors first, then the user's constraints, paths, URLs, identifiers and
 * quantities, each list with the agent's own actions first (the files it edited), then in order of first appearance.
 */
export function extractiveSummary(
  span: readonly CallSource[],
  previous?: string,
  maxChars = Number.POSITIVE_INFINITY,
): StructuredSummary {
  const users = span.filter((m) => m.role === 'user' && textOf(m.content).trim() !== '');
  const facts = extractFacts([...(previous ? [{ role: 'assistant', content: previous }] : []), ...span]);
  // The previous summary is folded, not quoted whole (quoting nests every earlier summary inside the next): its
  // quotes of the user and its last answer carry over, a model's account of the state is quoted, and its facts are
  // listed with the span's.
  const earlier = previous ? parseSummary(previous).summary : undefined;
  const earlierWasExtractive = earlier?.task_overview.includes(EXTRACTIVE_LABEL) ?? false;
  const userQuotes = [
    ...new Set([
      ...(earlier?.task_overview.split('\n').filter((line) => line.startsWith(USER_QUOTE)) ?? []),
      ...users.map((m) => `${USER_QUOTE}${quote(m.content)}`),
    ]),
  ];
  const task_overview = [EXTRACTIVE_LABEL, ...userQuotes.slice(-USER_MESSAGES)].join('\n');
  const earlierState = earlier && !earlierWasExtractive ? clipLine(earlier.current_state, 2 * QUOTE_CHARS) : '';
  const earlierAnswer = earlierWasExtractive
    ? earlier?.current_state
        .split('\n')
        .findLast((line) => line.startsWith(LAST_ANSWER) || line.startsWith(LATEST_STEP))
    : undefined;
  const answer = latestStateOf(span) ?? earlierAnswer;
  const current_state = [earlierState, answer ?? ''].filter(Boolean).join('\n');
  const next_steps = nextStepsOf(span, earlier?.next_steps);
  let room = maxChars - task_overview.length - current_state.length - next_steps.length;
  const lineOf = factLineFinder([...(previous ? [previous] : []), ...span.map((m) => textOf(m.content))]);
  const quoted = [task_overview, current_state, next_steps].join('\n').toLowerCase();
  /** The facts of `kinds` as list items, while they fit the room left (a long one is skipped, a shorter may fit). */
  const list = (kinds: string[], share = 1) => {
    const items: string[] = [];
    let budget = Math.floor(room * share);
    for (const fact of agentFirst(facts.filter((f) => kinds.includes(f.kind)))) {
      if (items.length === LISTED_FACTS) break;
      if (quoted.includes(fact.text.toLowerCase())) continue; // in the fields above already, in its own words
      // A quantity or an identifier with the words of its clause: what it belongs to (errors, constraints are lines).
      const line = LINED_KINDS.has(fact.kind) ? lineOf(fact.text) : undefined;
      const item = `- ${line ?? headOf(fact.text, MAX_FACT_CHARS)}`;
      if (item.length + 1 > budget || items.some((listed) => listed.includes(item.slice(2)))) continue;
      // A clause that holds one listed before (`450 m of climbing, 4 hours` after `450 m of climbing`) takes its place.
      const held = items.findIndex((listed) => item.includes(listed.slice(2)));
      if (held !== -1) {
        budget += items[held]!.length + 1;
        items.splice(held, 1);
      }
      items.push(item);
      budget -= item.length + 1;
    }
    room -= items.reduce((sum, item) => sum + item.length + 1, 0);
    return items.join('\n');
  };
  const important_discoveries = list(['error'], 0.5);
  const context_to_preserve = [list(['constraint', 'path']), list(['url', 'identifier', 'quantity'])]
    .filter(Boolean)
    .join('\n');
  return { task_overview, current_state, important_discoveries, next_steps, context_to_preserve };
}

/** A tool call as the extractive summary lists it: its name and arguments, then the head of its result. */
export interface CallSource {
  role: string;
  content: MessageContent;
  tool_calls?: readonly { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

/** Characters of a call's arguments and of its result the extractive list keeps. */
const CALL_CHARS = 160;
const RESULT_CHARS = 240;

/**
 * The span's tool calls, one line each: `name(arguments) → the head of its result`, oldest first, within `maxChars`
 * (the newest kept when they do not all fit): what a run of tool calls did, quoted, for a summary in its place.
 */
export function toolCallLines(span: readonly CallSource[], maxChars = Number.POSITIVE_INFINITY): string[] {
  const results = new Map(span.filter((m) => m.tool_call_id !== undefined).map((m) => [m.tool_call_id!, m.content]));
  const lines = span.flatMap((m) =>
    (m.tool_calls ?? []).map((call) => {
      const result = results.get(call.id);
      const head = result !== undefined ? ` → ${quote(result, RESULT_CHARS)}` : '';
      return `- ${call.function.name}(${clipLine(call.function.arguments, CALL_CHARS)})${head}`;
    }),
  );
  const kept: string[] = [];
  let room = maxChars;
  for (const line of [...lines].reverse()) {
    if (line.length + 1 > room) break;
    kept.unshift(line);
    room -= line.length + 1;
  }
  return kept;
}
