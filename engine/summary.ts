/**
 * The structured summary that replaces compacted turns: five fields (task overview, current state, important
 * discoveries, next steps, context to preserve), the prompt that asks for it (carrying the previous summary and the
 * task ledger, and a forced compaction's instructions), a JSON schema for structured output, a renderer into the
 * context message, and a parser that also accepts plain text from a provider that ignores the schema.
 */
import type { SummaryCoverage, SummaryForm } from './planner/index.ts';

export interface StructuredSummary {
  task_overview: string;
  current_state: string;
  important_discoveries: string;
  next_steps: string;
  context_to_preserve: string;
}

export const SUMMARY_FIELDS = [
  'task_overview',
  'current_state',
  'important_discoveries',
  'next_steps',
  'context_to_preserve',
] as const satisfies readonly (keyof StructuredSummary)[];

/** Headings used in the rendered message and recognised by the plain-text parser. */
export const SUMMARY_HEADINGS: Readonly<Record<keyof StructuredSummary, string>> = {
  task_overview: 'Task overview',
  current_state: 'Current state',
  important_discoveries: 'Important discoveries',
  next_steps: 'Next steps',
  context_to_preserve: 'Context to preserve',
};

/** The task ledger's lists a structured summary also returns (see `ledger.ts`). */
export const LEDGER_FIELDS = ['decisions', 'done', 'pending'] as const;

/** JSON schema for `response_format: { type: 'json_schema', json_schema: { name, strict: true, schema } }`. */
export const SUMMARY_JSON_SCHEMA = {
  name: 'context_summary',
  strict: true,
  schema: {
    type: 'object',
    additionalProperties: false,
    required: [...SUMMARY_FIELDS, ...LEDGER_FIELDS],
    properties: {
      task_overview: { type: 'string', description: "The user's goal and the constraints they set, in their words" },
      current_state: { type: 'string', description: 'What is done and what is in progress' },
      important_discoveries: {
        type: 'string',
        description: 'Findings, decisions and failed approaches, with specifics',
      },
      next_steps: { type: 'string', description: 'The exact next action, then what follows' },
      context_to_preserve: {
        type: 'string',
        description: 'Verbatim identifiers, paths, URLs, numbers and error messages that must survive',
      },
      decisions: {
        type: 'array',
        items: { type: 'string' },
        description: 'Decisions taken, one per item (task ledger)',
      },
      done: { type: 'array', items: { type: 'string' }, description: 'Work completed, one per item (task ledger)' },
      pending: { type: 'array', items: { type: 'string' }, description: 'Work still open, one per item (task ledger)' },
    },
  },
} as const;

export interface SummaryPromptInput {
  /** The transcript of the span being summarized, already rendered as text. */
  transcript: string;
  previousSummary?: string;
  /** The task ledger, carried verbatim: the summary must not contradict it. */
  ledger?: string;
  /** A forced compaction's instructions ("focus on the failing tests"). */
  instructions?: string;
  /** When the span reaches into the turn in progress: the steps of it the summary covers (1 to this). */
  stepsInProgress?: number;
  /** A summary of one span in its place: a run of tool calls, or a round (see `SummaryForm`). */
  form?: SummaryForm;
}

/** The summarizer's rules, as both kinds of summary request give them. */
const SUMMARIZER_RULES = [
  'You compact the older part of an AI agent’s working context so that the agent can continue its task without it.',
  'Write a summary with exactly these sections: task overview, current state, important discoveries, next steps,',
  'context to preserve. Keep the user’s goal and constraints in their own words. Keep every file path, URL,',
  'identifier, number with its unit and error message that may matter later, verbatim. Say what was tried and failed.',
  'State the exact next step. Write in the language the user writes in. Do not invent anything.',
].join(' ');

export const DEFAULT_SUMMARY_SYSTEM_PROMPT = [
  SUMMARIZER_RULES,
  'When answering in JSON, also list the decisions taken, the work done and the work pending (task ledger).',
].join(' ');

/** The user message of the summary call. */
export function summaryPrompt(input: SummaryPromptInput): string {
  const parts = [];
  if (input.previousSummary) parts.push(`## Previous summary (fold it in)\n${input.previousSummary}`);
  if (input.ledger) parts.push(ledgerSection(input.ledger));
  parts.push(`## Messages to summarize\n${input.transcript}`);
  parts.push(...requestSections(input));
  return parts.join('\n\n');
}

const ledgerSection = (ledger: string) => `## Task ledger (authoritative; do not contradict it)\n${ledger}`;

/** What both prompts add after the messages: the turn in progress, the summary's form, a compaction's instructions. */
function requestSections(input: Pick<SummaryPromptInput, 'stepsInProgress' | 'form' | 'instructions'>): string[] {
  const parts = [];
  if (input.stepsInProgress) {
    parts.push(
      `## The task in progress\nThese messages include steps 1–${input.stepsInProgress} of the task the agent is ` +
        'working on now (its request stays in the context verbatim, and its newest steps follow the summary). In ' +
        'current state and next steps, say exactly where the loop stands: the last action, its result, the next step.',
    );
  }
  if (input.form) parts.push(FORM_REQUESTS[input.form]);
  if (input.instructions) parts.push(`## Instructions for this compaction (follow them)\n${input.instructions}`);
  return parts;
}

/**
 * The first line of the instruction that ends a summary request in conversation mode (policy `summary.request`):
 * the agent's own request up to the end of the span, then this instruction as one user message.
 */
export const CONVERSATION_SUMMARY_TITLE = '[Compaction: summarize the messages named below; call no tool]';

/** Where the span is in the conversation a conversation-mode summary request repeats. */
export interface ConversationSpan {
  /** The span's first and last message, counted in the request's messages from 1 (the system prompt is 1). */
  from: number;
  to: number;
  /** Of them, the user's messages that stay in the context verbatim (not summarized away). */
  kept: number;
  /** The span holds an earlier summary: it is folded in. */
  foldsSummary: boolean;
}

/**
 * The instruction that ends a conversation-mode summary request: the summarizer's rules, which messages above leave
 * the context, then the ledger, the turn in progress, the form and a compaction's instructions as
 * {@link summaryPrompt} says them, and the answer asked for in plain text under the five headings (read by
 * {@link parseSummary}), with no tool call.
 */
export function conversationSummaryPrompt(
  input: Omit<SummaryPromptInput, 'transcript' | 'previousSummary'> & { span: ConversationSpan },
): string {
  const { span } = input;
  const which =
    `Messages ${span.from}–${span.to} of this conversation (the first message above is 1) leave the agent's ` +
    'working context now; the messages before them stay.' +
    (span.foldsSummary ? ' An earlier summary among them is folded into this one.' : '') +
    (span.kept > 0 ? ` The user's own messages among them (${span.kept}) stay verbatim beside the summary.` : '');
  const headings = SUMMARY_FIELDS.map((field) => `## ${SUMMARY_HEADINGS[field]}`).join(', ');
  return [
    CONVERSATION_SUMMARY_TITLE,
    SUMMARIZER_RULES,
    `## Messages to summarize\n${which}`,
    ...(input.ledger ? [ledgerSection(input.ledger)] : []),
    ...requestSections(input),
    `## How to answer\nDo not call any tool and do not go on with the task. Answer in plain text with exactly these ` +
      `headings, each on its own line: ${headings}.`,
  ].join('\n\n');
}

/** Whether `message` is a conversation-mode summary instruction ({@link conversationSummaryPrompt}). */
export function isConversationSummaryInstruction(message: { role: string; content?: unknown } | undefined): boolean {
  return (
    message?.role === 'user' &&
    typeof message.content === 'string' &&
    message.content.startsWith(CONVERSATION_SUMMARY_TITLE)
  );
}

/** What a summary of one span in its place is asked to be (AgentScope Java's strategies 1, 4 and 6). */
const FORM_REQUESTS: Readonly<Record<SummaryForm, string>> = {
  'tool-run':
    '## What this summary is\nThese messages are one run of consecutive tool calls and their results. The summary ' +
    'replaces the run in its place, as one assistant message: say which tools were called with which arguments and ' +
    'the key results of each (what was found, changed or failed), keeping paths, identifiers, numbers and error ' +
    'messages verbatim. Leave the task overview and next steps short.',
  round:
    "## What this summary is\nThese messages are one finished round of the conversation: the user's request (it " +
    "stays in the context verbatim, before this summary), the assistant's tool calls and its final answer. The " +
    'summary replaces the tool calls and the answer in their place, as one assistant message: say what was done, ' +
    'what was found, and what the answer said, keeping paths, identifiers, numbers and error messages verbatim.',
  'current-round':
    "## What this summary is\nThese messages are the steps of the request in progress so far (the user's request " +
    'stays in the context verbatim, before this summary; its newest step follows it). The summary replaces them in ' +
    'their place, as one assistant message: say which tools were called with which arguments and the key results of ' +
    'each, and where the work stands, keeping paths, identifiers, numbers and error messages verbatim.',
};

/** The first line of a summary of one span in its place. */
const FORM_TITLES: Readonly<Record<SummaryForm, string>> = {
  'tool-run': '[Compressed tool calls',
  round: '[Summary of this round',
  'current-round': '[Summary of this round so far',
};

/** The first line of every summary message; the title says what it covers after it. */
export const SUMMARY_TITLE = '[Summary of earlier conversation';

/**
 * The title line: the messages the summary stands for, and the steps of the turn in progress it covers; for a summary
 * of one span in its place, what it stands for (a run of tool calls, a round).
 */
export function summaryTitle(coverage?: SummaryCoverage, form?: SummaryForm): string {
  const title = form ? FORM_TITLES[form] : SUMMARY_TITLE;
  if (!coverage) return `${title}]`;
  const steps = coverage.currentTurn ? `; steps 1–${coverage.currentTurn.steps} of the request in progress` : '';
  return `${title}: ${coverage.firstId}–${coverage.lastId} (${coverage.messages} messages)${steps}]`;
}

/** Where an agent loop stands at the end of a summarized span of its turn. */
export interface LoopPosition {
  /** The summary covers steps 1 to this of the turn in progress. */
  steps: number;
  /** The last tool call summarized, as `name(arguments)`, and a preview of its result. */
  lastAction?: string;
  lastResult?: string;
  nextStep?: string;
}

/** The block that tells the agent where its loop stands, for a summary of part of the turn in progress. */
export function loopPositionBlock(position: LoopPosition): string {
  return [
    '## Where the loop stands',
    `Steps 1–${position.steps} of the request in progress are summarized here; the newest steps follow below.`,
    ...(position.lastAction ? [`Last action summarized (step ${position.steps}): ${position.lastAction}`] : []),
    ...(position.lastResult ? [`Its result: ${position.lastResult}`] : []),
    ...(position.nextStep ? [`Next step: ${position.nextStep}`] : []),
  ].join('\n');
}

/** Message ids as ranges: m000002–m000005, m000009. Ids that are not `<letter><digits>` are listed as they are. */
export function idRanges(ids: readonly string[]): string {
  const parts: string[] = [];
  let run: { prefix: string; width: number; from: number; to: number } | undefined;
  const flush = () => {
    if (!run) return;
    const name = (n: number) => `${run!.prefix}${String(n).padStart(run!.width, '0')}`;
    parts.push(run.from === run.to ? name(run.from) : `${name(run.from)}–${name(run.to)}`);
    run = undefined;
  };
  for (const id of ids) {
    const match = /^([a-z]+)(\d+)$/.exec(id);
    if (!match) {
      flush();
      parts.push(id);
      continue;
    }
    const [, prefix, digits] = match;
    const n = Number(digits);
    if (run && run.prefix === prefix && run.width === digits!.length && n === run.to + 1) {
      run.to = n;
      continue;
    }
    flush();
    run = { prefix: prefix!, width: digits!.length, from: n, to: n };
  }
  flush();
  return parts.join(', ');
}

/** The line that lists what left the context with this summary and where each original is stored. */
export function removedLine(ids: readonly string[], keyPattern: string): string {
  return (
    `[Removed from the context and summarized above: ${idRanges(ids)}. Each original is stored as ${keyPattern}; ` +
    'read one with context_reload.]'
  );
}

/** The summary as the message that stands for the removed turns in the context. */
export function renderSummary(summary: StructuredSummary, title = summaryTitle()): string {
  return [
    title,
    ...SUMMARY_FIELDS.filter((field) => summary[field].trim() !== '').map(
      (field) => `## ${SUMMARY_HEADINGS[field]}\n${summary[field].trim()}`,
    ),
  ].join('\n\n');
}

/** How a summary reply was read: the structured path, the plain-text headings, or the whole text as one field. */
export type SummaryParse = 'json' | 'headings' | 'text';

/** A heading line: `## Next steps`, `**Next steps:**`, `Next steps:` … */
const HEADING_LINE = /^\s*(?:#{1,6}\s*|\*\*)?\s*([A-Za-z][A-Za-z ]+?)\s*:?\s*(?:\*\*)?\s*:?\s*$/;

function headingField(line: string): keyof StructuredSummary | undefined {
  const match = HEADING_LINE.exec(line);
  if (!match) return undefined;
  const name = match[1]!.toLowerCase().replace(/\s+/g, ' ');
  return SUMMARY_FIELDS.find((field) => SUMMARY_HEADINGS[field].toLowerCase() === name);
}

/** The JSON object a reply holds (bare or in a code fence), or undefined when it holds none. */
export function jsonObjectOf(reply: string): Record<string, unknown> | undefined {
  const text = reply.trim();
  const json = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(text)?.[1] ?? text;
  try {
    const value: unknown = JSON.parse(json);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads a summary reply: JSON with the five fields (possibly in a code fence), else text with the five headings,
 * else the whole text as the current state. Never throws: an empty reply gives empty fields.
 */
export function parseSummary(reply: string): { summary: StructuredSummary; parsedAs: SummaryParse } {
  const empty: StructuredSummary = {
    task_overview: '',
    current_state: '',
    important_discoveries: '',
    next_steps: '',
    context_to_preserve: '',
  };
  const text = reply.trim();
  const value = jsonObjectOf(text);
  if (value && SUMMARY_FIELDS.some((field) => typeof value[field] === 'string')) {
    const summary = { ...empty };
    for (const field of SUMMARY_FIELDS) if (typeof value[field] === 'string') summary[field] = value[field];
    return { summary, parsedAs: 'json' };
  }
  // not JSON: read the headings
  const summary = { ...empty };
  let current: keyof StructuredSummary | undefined;
  const lines: Partial<Record<keyof StructuredSummary, string[]>> = {};
  for (const line of text.split('\n')) {
    const field = headingField(line);
    if (field) {
      current = field;
      lines[field] = [];
    } else if (current) {
      lines[current]!.push(line);
    }
  }
  if (Object.keys(lines).length > 0) {
    for (const field of SUMMARY_FIELDS) summary[field] = (lines[field] ?? []).join('\n').trim();
    return { summary, parsedAs: 'headings' };
  }
  return { summary: { ...summary, current_state: text }, parsedAs: 'text' };
}
