/**
 * The replayed model: answers from a recorded session (OpenAI chat messages as JSONL) instead of a provider. It is
 * what the worker talks to without OPENAI_API_KEY (llm/endpoint.ts), the offline model.
 *
 * A request with k user messages, of which the last is followed by j assistant messages, gets the (j+1)-th
 * assistant message recorded after the k-th user message, so a retried request gets the same answer. Past the end
 * of the recording (no reply recorded for that position) it never fails: it answers honestly, in text and without
 * tool calls, that it is the offline model and cannot answer, quoting the message it got (see {@link offlineReply}),
 * for any number of turns.
 *
 * Every completion names its model `replayed:<requested model>` ({@link replayedModelName}), so a client in
 * another process can tell a replayed reply from a real one by the model that served it ({@link isReplayedModel}).
 *
 * @example
 * const server = await startChatServer(replayResponder(parseSessionJsonl(text), { source: 'demo/session.jsonl' }));
 */
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import type { Responder, ScriptedReply } from './chat-server.ts';

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/** Thrown for a recording that is not OpenAI chat messages as JSONL; names the line. */
export class SessionFormatError extends Error {
  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.name = 'SessionFormatError';
  }
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
    messages.push({ ...message, content: message.content ?? null } as ChatMessage);
  });
  return messages;
}

/** The assistant replies recorded after each user message, by turn (0-based). */
function repliesByTurn(session: ChatMessage[]): ChatMessage[][] {
  const turns: ChatMessage[][] = [];
  for (const message of session) {
    if (message.role === 'user') turns.push([]);
    else if (message.role === 'assistant' && turns.length > 0) turns[turns.length - 1]!.push(message);
  }
  return turns;
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

/** A responder that replays `session` by position, then answers with {@link offlineReply}; it never fails. */
export function replayResponder(session: ChatMessage[], options: ReplayOptions = {}): Responder {
  const turns = repliesByTurn(session);
  return (request): ScriptedReply => {
    const messages = request.body.messages;
    const model = replayedModelName(request.body.model);
    const userCount = messages.filter((message) => message.role === 'user').length;
    const lastUser = messages.findLastIndex((message) => message.role === 'user');
    const answered = messages.slice(lastUser + 1).filter((message) => message.role === 'assistant').length;
    const reply = turns[userCount - 1]?.[answered];
    if (!reply) {
      return { content: offlineReply(textOf(messages[lastUser]?.content), options.source), model };
    }
    return { ...replyOf(reply), model };
  };
}
