/**
 * The offline model: what the worker talks to without OPENAI_API_KEY (llm/endpoint.ts), a responder that answers
 * from a recording (the placement rules are replayed-model.ts's) and never fails.
 *
 * - Where the recording has the reply, it sends it.
 * - Asides inside a recorded tool loop: a user message the recording does not have, sent while the loop was under
 *   way (a `steer`, or the text an `interrupt` opened the next turn with), comes right after a step's tool results.
 *   The loop goes on: the recording's next step answers (the same step again where a call of it was answered as
 *   interrupted: its result never came), and the reply says, first, that it noted the aside, quoted; the loop's
 *   final answer ends with a note that names what was said during the turn ({@link asidesOf}).
 * - Anything else it has no reply for: an honest text reply, without tool calls, that it is the offline model and
 *   cannot answer, quoting the message it got ({@link offlineReply}), for any number of turns.
 *
 * @example
 * const server = await startChatServer(replayResponder(parseSessionJsonl(text), { source: 'demo/session.jsonl' }));
 */
import { INTERRUPTED_CALL_TAG } from '../contract/results.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import type { Responder, ScriptedReply } from './chat-server.ts';
import {
  indexRecording,
  isCompactionMessage,
  locateRecordedReply,
  placeRequest,
  replayedModelName,
  replyOf,
  turnOfUserMessage,
} from './replayed-model.ts';
import type { RecordingIndex } from './replayed-model.ts';

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

/** A user message of the user's own: not one compaction put in the context (a summary, the task ledger). */
function isOwnUserMessage(message: ChatMessage): boolean {
  return message.role === 'user' && !isCompactionMessage(message);
}

/**
 * The request's asides (their indices): user messages of the user's own that come after a step's tool results, with
 * only user messages between. Inside a tool loop, that is a steer, or the text an interrupt opened the next turn
 * with; a message that opens a turn after an answer follows an assistant message instead.
 */
export function asidesOf(messages: readonly ChatMessage[]): number[] {
  const asides: number[] = [];
  let afterResults = false;
  messages.forEach((message, i) => {
    if (message.role === 'tool') afterResults = true;
    else if (message.role !== 'user') afterResults = false;
    else if (afterResults && isOwnUserMessage(message)) asides.push(i);
  });
  return asides;
}

/**
 * The recorded step that goes on with a tool loop after asides, for a request that ends with them: the step after
 * the one that made the request's newest calls, or that step again when a call of it was answered as interrupted.
 * Undefined when the request does not end with an aside or the recording did not make its newest calls.
 */
export function stepAfterAsides(index: RecordingIndex, messages: ChatMessage[]): ChatMessage | undefined {
  if (messages.length === 0 || asidesOf(messages).at(-1) !== messages.length - 1) return undefined;
  const caller = messages.findLastIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
  const at = caller === -1 ? undefined : placeRequest(index, messages)[caller];
  if (!at) return undefined;
  const results = messages.slice(caller + 1).filter((m) => m.role === 'tool');
  const interrupted = results.some((m) => textOf(m.content).startsWith(INTERRUPTED_CALL_TAG));
  return index.turns[at.turn]?.replies[interrupted ? at.step : at.step + 1];
}

const quoted = (messages: readonly ChatMessage[], indices: readonly number[]) =>
  indices.map((i) => `"${quoteOf(textOf(messages[i]!.content))}"`).join('; ');

/**
 * A recorded reply with what the request's asides call for: a step that goes on with the loop first says it noted
 * the asides since the model's last reply; the loop's final answer (a reply without tool calls) ends with a note of
 * every aside since the turn's opening message, which the recorded answer could not take into account.
 */
function withAsides(reply: ReturnType<typeof replyOf>, messages: ChatMessage[]): ReturnType<typeof replyOf> {
  const asides = asidesOf(messages);
  if (asides.length === 0) return reply;
  const recorded = reply.content ?? '';
  if (reply.toolCalls?.length) {
    const lastReply = messages.findLastIndex((m) => m.role === 'assistant');
    const fresh = asides.filter((i) => i > lastReply);
    if (fresh.length === 0) return reply;
    const noted =
      `[offline model] Noted: ${quoted(messages, fresh)}. I am the replayed model and cannot change the recorded ` +
      'plan: I go on with its remaining steps and come back to what you said in my answer.';
    return { ...reply, content: recorded ? `${noted}\n\n${recorded}` : noted };
  }
  const opening = messages.findLastIndex((m, i) => isOwnUserMessage(m) && !asides.includes(i));
  const during = asides.filter((i) => i > opening);
  if (during.length === 0) return reply;
  const note =
    `[offline model] You said during this turn: ${quoted(messages, during)}. I am the replayed model: the answer ` +
    'above is the recorded one, which a real model would have shaped to what you said (set OPENAI_API_KEY to use one).';
  return { ...reply, content: recorded ? `${recorded}\n\n${note}` : note };
}

/**
 * A responder that replays `session` (locateRecordedReply, the turn of a first call by turnOfUserMessage), goes on
 * with a recorded tool loop after asides ({@link stepAfterAsides}, {@link asidesOf}), and answers with
 * {@link offlineReply} where the recording has no reply; it never fails.
 */
export function replayResponder(session: ChatMessage[], options: ReplayOptions = {}): Responder {
  const index = indexRecording(session);
  return (request): ScriptedReply => {
    const messages = request.body.messages;
    const model = replayedModelName(request.body.model);
    const reply =
      locateRecordedReply(index, messages, () => turnOfUserMessage(index, messages))?.reply ??
      stepAfterAsides(index, messages);
    if (!reply) {
      const said = messages.findLast(isOwnUserMessage);
      return { content: offlineReply(textOf(said?.content), options.source), model };
    }
    return { ...withAsides(replyOf(reply), messages), model };
  };
}
