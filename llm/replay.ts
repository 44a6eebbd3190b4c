/**
 * The replayed model: answers from a recorded session (OpenAI chat messages as JSONL) instead of a provider. It is
 * what the worker talks to without OPENAI_API_KEY (llm/endpoint.ts), the offline model.
 *
 * Which recorded reply answers a request is read from the request itself, so a retried request gets the same answer
 * and compaction inside a turn (older steps dropped or summarized, a summary and the task ledger inserted as user
 * messages) does not shift it ({@link locateRecordedReply}): a request that continues a turn is placed by the tool
 * call ids of its newest step, and gets the next assistant message recorded in that turn; a turn's first call is
 * placed by the user's message, matched against the recording's user messages in order
 * ({@link turnOfUserMessage}). Past the end of the recording (no reply recorded for that position, or a message the
 * recording does not have) it never fails: it answers honestly, in text and without tool calls, that it is the
 * offline model and cannot answer, quoting the message it got (see {@link offlineReply}), for any number of turns.
 *
 * Every completion names its model `replayed:<requested model>` ({@link replayedModelName}), so a client in
 * another process can tell a replayed reply from a real one by the model that served it ({@link isReplayedModel}).
 *
 * @example
 * const server = await startChatServer(replayResponder(parseSessionJsonl(text), { source: 'demo/session.jsonl' }));
 */
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { LEDGER_HEADER } from '../engine/ledger.ts';
import type { Responder, ScriptedReply } from './chat-server.ts';

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/** Thrown for a recording that is not OpenAI chat messages as JSONL; names the line (when one line is at fault). */
export class SessionFormatError extends Error {
  constructor(line: number | undefined, message: string) {
    super(line === undefined ? message : `line ${line}: ${message}`);
    this.name = 'SessionFormatError';
  }
}

/**
 * What is wrong with an assistant message's `tool_calls`, if anything: a list of function calls, each with a
 * non-empty string `id`, and a `function` with a string `name` and string `arguments` (the JSON text), as the Chat
 * Completions API has them.
 */
function toolCallsProblem(calls: unknown): string | undefined {
  if (!Array.isArray(calls)) return 'tool_calls must be an array of function calls';
  for (const [i, call] of calls.entries()) {
    const what = `tool_calls[${i}]`;
    if (typeof call !== 'object' || call === null || Array.isArray(call)) return `${what} must be an object`;
    const { id, type, function: fn } = call as { id?: unknown; type?: unknown; function?: unknown };
    if (typeof id !== 'string' || id === '') return `${what}.id must be a non-empty string`;
    if (type !== undefined && type !== 'function') return `${what}.type must be "function"`;
    if (typeof fn !== 'object' || fn === null) return `${what}.function must be an object {name, arguments}`;
    const { name, arguments: args } = fn as { name?: unknown; arguments?: unknown };
    if (typeof name !== 'string') return `${what}.function.name must be a string`;
    if (typeof args !== 'string') return `${what}.function.arguments must be a string (the arguments as JSON text)`;
  }
  return undefined;
}

/**
 * What is wrong with an array content, if anything: each part must be an object with a string `type`; a text part
 * needs a string `text`, an image part an `image_url` with a string `url`. Other types are taken as they are.
 */
function partProblem(parts: unknown[]): string | undefined {
  for (const [i, part] of parts.entries()) {
    const what = `content part ${i + 1}`;
    if (typeof part !== 'object' || part === null || Array.isArray(part)) return `${what} must be an object`;
    const { type, text, image_url: image } = part as { type?: unknown; text?: unknown; image_url?: unknown };
    if (typeof type !== 'string') return `${what} must have a string type`;
    if (type === 'text' && typeof text !== 'string') return `${what} (text) must have a string text`;
    if (
      type === 'image_url' &&
      (typeof image !== 'object' || image === null || typeof (image as { url?: unknown }).url !== 'string')
    ) {
      return `${what} (image_url) must have an image_url with a string url`;
    }
  }
  return undefined;
}

/** Parses JSONL chat messages; content is a string, null or an array of parts; blank lines are skipped. */
export function parseSessionJsonl(text: string): ChatMessage[] {
  const messages: ChatMessage[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new SessionFormatError(index + 1, `not JSON (${(error as Error).message})`);
    }
    const message = value as Partial<ChatMessage>;
    if (typeof message !== 'object' || message === null || !ROLES.has(message.role as string)) {
      throw new SessionFormatError(index + 1, 'role must be one of system, user, assistant, tool');
    }
    const content: unknown = message.content;
    if (Array.isArray(content)) {
      const problem = partProblem(content);
      if (problem) throw new SessionFormatError(index + 1, problem);
    } else if (content !== null && content !== undefined && typeof content !== 'string') {
      throw new SessionFormatError(index + 1, 'content must be a string, an array of parts or null');
    }
    // What the replay sends back as a model's reply, and answers tool calls by.
    if (message.role === 'assistant' && message.tool_calls !== undefined && message.tool_calls !== null) {
      const problem = toolCallsProblem(message.tool_calls);
      if (problem) throw new SessionFormatError(index + 1, problem);
    }
    if (message.role === 'tool' && (typeof message.tool_call_id !== 'string' || message.tool_call_id === '')) {
      throw new SessionFormatError(index + 1, 'tool_call_id must be a non-empty string (the call it answers)');
    }
    messages.push({ ...message, content: message.content ?? null } as ChatMessage);
  });
  return messages;
}

/**
 * A recorded assistant message as the reply a completion carries: its text (a reply recorded as parts is sent as
 * its text parts, since a completion's message content is text) and its tool calls.
 */
export function replyOf(message: ChatMessage): { content: string | null; toolCalls?: ChatMessage['tool_calls'] } {
  const content = Array.isArray(message.content) ? textOf(message.content) : message.content;
  return { content, ...(message.tool_calls ? { toolCalls: message.tool_calls } : {}) };
}

/** What a replayed model calls itself in a completion: the requested model's name behind this prefix. */
export const REPLAYED_MODEL_PREFIX = 'replayed:';

/** The model name a replayed completion carries, e.g. `replayed:gpt-4o-mini`. */
export function replayedModelName(requested: string): string {
  return `${REPLAYED_MODEL_PREFIX}${requested}`;
}

/**
 * Whether a model that served a reply (a `SendResult`'s `servedBy`) is a replayed one. The one rule for labelling
 * replies: the CLI and the demo print "(replayed model)" where it holds. A missing name (a result recorded before
 * results named their model, or a provider that names none) is not replayed.
 */
export function isReplayedModel(servedBy: string | undefined): boolean {
  return servedBy?.startsWith(REPLAYED_MODEL_PREFIX) ?? false;
}

/** How a reply from a replayed model is labelled where it is printed. */
export const REPLAYED_LABEL = '(replayed model)';

/** How much of the user's message the offline reply quotes, in characters. */
export const OFFLINE_QUOTE_CHARS = 200;

/** The message, on one line, cut to `limit` characters (an ellipsis marks the cut). */
function quoteOf(text: string, limit = OFFLINE_QUOTE_CHARS): string {
  const characters = Array.from(text.replace(/\s+/g, ' ').trim()); // by code point: never half an emoji
  return characters.length > limit ? `${characters.slice(0, limit - 1).join('')}…` : characters.join('');
}

/**
 * The offline model's answer past the end of its recording: it says what it is, that it cannot answer, quotes the
 * message (its first {@link OFFLINE_QUOTE_CHARS} characters) and says how to use a real model.
 */
export function offlineReply(lastUserMessage: string, source = 'a recorded session'): string {
  const quote = quoteOf(lastUserMessage);
  return (
    `[offline model] I am longrun's replayed model, not a real one: I answer from ${source}, ` +
    'which has no reply for this message, so I cannot really answer it.' +
    (quote ? ` You said: "${quote}".` : '') +
    ' To talk to a real model, set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible provider)' +
    ' and restart the worker.'
  );
}

export interface ReplayOptions {
  /** What the recording is called in the offline reply, e.g. its path (default: "a recorded session"). */
  source?: string;
}

/** How a summary that compaction put in the context begins (engine/summary.ts renderSummary). */
export const SUMMARY_PREFIX = '[Summary of earlier conversation';

/** A user message that compaction put in the context (a summary, the task ledger), not one the user sent. */
export function isCompactionMessage(message: ChatMessage): boolean {
  if (message.role !== 'user') return false;
  const text = textOf(message.content);
  return text.startsWith(SUMMARY_PREFIX) || text.startsWith(LEDGER_HEADER);
}

/** A place in a recording: a turn (0-based) and an assistant message of it (0-based, among the turn's replies). */
export interface RecordedStep {
  turn: number;
  step: number;
}

/** A recording indexed for replay. */
export interface RecordingIndex {
  /** Each user message, in order, with the assistant messages recorded after it and before the next one. */
  turns: { user: ChatMessage; replies: ChatMessage[] }[];
  /** Where each tool call id was made: the recorded assistant message that asked for it. */
  calls: Map<string, RecordedStep>;
}

/** Indexes a recording by turn and by tool call id (assistant messages before the first user message are left out). */
export function indexRecording(session: ChatMessage[]): RecordingIndex {
  const turns: RecordingIndex['turns'] = [];
  const calls = new Map<string, RecordedStep>();
  for (const message of session) {
    if (message.role === 'user') turns.push({ user: message, replies: [] });
    else if (message.role === 'assistant' && turns.length > 0) {
      const turn = turns.at(-1)!;
      for (const call of message.tool_calls ?? []) {
        if (!calls.has(call.id)) calls.set(call.id, { turn: turns.length - 1, step: turn.replies.length });
      }
      turn.replies.push(message);
    }
  }
  return { turns, calls };
}

/** Where a request sits in the recording, the reply it gets (if the recording has one), and how it was placed. */
export interface LocatedReply {
  at: RecordedStep;
  reply?: ChatMessage;
  /** `tool-calls`: by its newest step's call ids; `first-call`: a turn's first call; `count`: ids not recorded. */
  placedBy: 'tool-calls' | 'first-call' | 'count';
}

/**
 * The recorded reply that answers a request, robust to compaction inside the turn. Compaction may drop or
 * summarize older steps of the turn in progress and insert a summary and the task ledger as user messages, so
 * neither counting user messages nor counting assistant messages after the last one places a request. The newest
 * step is always kept, so:
 *
 * - when the request's last assistant message with tool calls comes after its last user message of the user's own
 *   (not a summary or the ledger, {@link isCompactionMessage}), the request continues a turn: the recorded assistant
 *   message that made the same tool call ids is found, and the next assistant message recorded in its turn answers
 *   (`reply` absent when the turn has no further one);
 * - otherwise it is a turn's first call (no assistant message after the turn's user message, or that message is the
 *   last one): `firstCallTurn` says which turn, and the turn's first recorded reply answers;
 * - tool call ids the recording does not have: the turn from `firstCallTurn`, the step by counting the assistant
 *   messages after the user's last message (the rule before compaction inside turns).
 *
 * Undefined when `firstCallTurn` cannot place the request.
 */
export function locateRecordedReply(
  index: RecordingIndex,
  messages: ChatMessage[],
  firstCallTurn: () => number | undefined,
): LocatedReply | undefined {
  const lastUser = messages.findLastIndex((m) => m.role === 'user' && !isCompactionMessage(m));
  const lastCaller = messages.findLastIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
  const located = (at: RecordedStep, placedBy: LocatedReply['placedBy']): LocatedReply => {
    const reply = index.turns[at.turn]?.replies[at.step];
    return { at, placedBy, ...(reply ? { reply } : {}) };
  };
  if (lastCaller > lastUser) {
    const made = messages[lastCaller]!.tool_calls!.map((call) => index.calls.get(call.id)).find(Boolean);
    if (made) return located({ turn: made.turn, step: made.step + 1 }, 'tool-calls');
    const turn = firstCallTurn();
    if (turn === undefined) return undefined;
    const step = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
    return located({ turn, step }, 'count');
  }
  const turn = firstCallTurn();
  return turn === undefined ? undefined : located({ turn, step: 0 }, 'first-call');
}

/**
 * The recorded turn a request's first call belongs to, without a counter (the offline model serves any client): its
 * last user message of the user's own, matched against the recording's user messages in order. Where the recording
 * has that text more than once, the newest step before it that the recording made (a tool call id) bounds the turns
 * it can be, and the k-th occurrence of the text in the request since then picks the k-th recorded one. Undefined
 * for a message the recording does not have there.
 */
export function turnOfUserMessage(index: RecordingIndex, messages: ChatMessage[]): number | undefined {
  const users = messages.flatMap((m, i) => (m.role === 'user' && !isCompactionMessage(m) ? [i] : []));
  const last = users.at(-1);
  if (last === undefined) return undefined;
  const text = textOf(messages[last]!.content);
  let afterTurn = -1;
  let from = -1;
  for (let i = last - 1; i >= 0 && from === -1; i--) {
    const made = messages[i]!.tool_calls?.map((call) => index.calls.get(call.id)).find(Boolean);
    if (made) [afterTurn, from] = [made.turn, i];
  }
  const candidates = index.turns.flatMap((t, turn) =>
    turn > afterTurn && textOf(t.user.content) === text ? [turn] : [],
  );
  const occurrence = users.filter((i) => i > from && textOf(messages[i]!.content) === text).length;
  return candidates[occurrence - 1];
}

/**
 * A responder that replays `session` ({@link locateRecordedReply}, the turn of a first call by
 * {@link turnOfUserMessage}), and answers with {@link offlineReply} where the recording has no reply; it never fails.
 */
export function replayResponder(session: ChatMessage[], options: ReplayOptions = {}): Responder {
  const index = indexRecording(session);
  return (request): ScriptedReply => {
    const messages = request.body.messages;
    const model = replayedModelName(request.body.model);
    const reply = locateRecordedReply(index, messages, () => turnOfUserMessage(index, messages))?.reply;
    if (!reply) {
      const said = messages.findLast((m) => m.role === 'user' && !isCompactionMessage(m));
      return { content: offlineReply(textOf(said?.content), options.source), model };
    }
    return { ...replyOf(reply), model };
  };
}
