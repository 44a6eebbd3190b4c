/**
 * A completion as the OpenAI Chat Completions API streams it (`stream: true`): `chat.completion.chunk` objects, sent
 * by the loopback chat server (chat-server.ts) as Server-Sent Events, `data: <chunk>` each, then `data: [DONE]`.
 *
 * The chunks, in the order OpenAI sends them:
 * - the role: `delta: { role: 'assistant', content: '' }` (`content: null` when the reply has no text);
 * - the text in pieces (words, a long word cut every {@link TEXT_PIECE_MAX_CHARS} characters): `delta: { content }`;
 * - each tool call in turn: a first piece with its `index`, `id`, `type` and `function.name` (and `arguments: ''`),
 *   then its arguments cut every {@link ARGUMENT_PIECE_CHARS} characters, `delta.tool_calls[0].function.arguments`;
 * - an empty delta with the `finish_reason` (`tool_calls` when the reply calls tools, otherwise `stop`);
 * - with `stream_options.include_usage`, a chunk with no choices and the `usage` (every other chunk then has
 *   `usage: null`, as OpenAI's do).
 * Joined back, the pieces are exactly the reply: the `openai` client's stream helper accumulates them into the same
 * message (content, tool call ids, names and arguments) as the completion that is not streamed.
 *
 * @example
 * for (const chunk of completionChunks({ id: 'chatcmpl-1', model: 'gpt-4o-mini' }, { content: 'Hi there' }, false))
 *   response.write(sseEvent(chunk));
 * response.end(SSE_DONE);
 */
import type { ToolCall } from '../engine/messages.ts';

/** The longest text piece: a longer word is cut (a token is a few characters; a URL is not one token). */
export const TEXT_PIECE_MAX_CHARS = 12;
/** Tool call arguments are streamed in pieces of this many characters (OpenAI's are a token or a few). */
export const ARGUMENT_PIECE_CHARS = 8;
/** The event that ends a stream. */
export const SSE_DONE = 'data: [DONE]\n\n';

/** What is streamed: the reply as the non-streamed completion has it. */
export interface StreamedReply {
  content: string | null;
  toolCalls?: ToolCall[];
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    /** Tokens of the prompt served from the cache (prompt-cache.ts), as OpenAI reports them. */
    prompt_tokens_details?: { cached_tokens: number };
  };
}

/** One `chat.completion.chunk`. */
export interface CompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: { index: 0; delta: Record<string, unknown>; logprobs: null; finish_reason: string | null }[];
  usage?: StreamedReply['usage'] | null;
}

/** Cuts `text` in pieces of at most `size` characters (code points: a pair of surrogates stays whole). */
function cut(text: string, size: number): string[] {
  const chars = Array.from(text);
  const pieces: string[] = [];
  for (let start = 0; start < chars.length; start += size) pieces.push(chars.slice(start, start + size).join(''));
  return pieces;
}

/**
 * The text in the pieces it is streamed in: each word with the whitespace after it (leading whitespace alone), a
 * word longer than {@link TEXT_PIECE_MAX_CHARS} cut. Joined, they are the text; an empty text has no piece.
 */
export function textPieces(text: string): string[] {
  return (text.match(/^\s+|\S+\s*/g) ?? []).flatMap((word) => cut(word, TEXT_PIECE_MAX_CHARS));
}

/** The chunks of a streamed completion, in order (the SSE framing is {@link sseEvent} and {@link SSE_DONE}). */
export function completionChunks(
  head: { id: string; model: string; created?: number },
  reply: StreamedReply,
  includeUsage: boolean,
): CompletionChunk[] {
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): CompletionChunk => ({
    id: head.id,
    object: 'chat.completion.chunk',
    created: head.created ?? 0,
    model: head.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  });
  // What a scripted reply holds that is not text (a test of the reply checks) is sent as it is, in one piece, as a
  // provider that breaks the format would: content that is not text, tool_calls that are not a list, arguments
  // that are a JSON value rather than its text.
  const textual = reply.content === null || typeof reply.content === 'string';
  const chunks = [chunk({ role: 'assistant', content: reply.content === null ? null : '' })];
  if (!textual) chunks.push(chunk({ content: reply.content }));
  for (const piece of textual ? textPieces(reply.content ?? '') : []) chunks.push(chunk({ content: piece }));
  if (reply.toolCalls !== undefined && !Array.isArray(reply.toolCalls))
    chunks.push(chunk({ tool_calls: reply.toolCalls }));
  for (const [index, call] of (Array.isArray(reply.toolCalls) ? reply.toolCalls : []).entries()) {
    const args: unknown = call.function.arguments;
    const first = { index, id: call.id, type: call.type, function: { name: call.function.name, arguments: '' } };
    chunks.push(chunk({ tool_calls: [first] }));
    if (typeof args !== 'string') {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: args } }] }));
      continue;
    }
    for (const piece of cut(args, ARGUMENT_PIECE_CHARS)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  }
  chunks.push(chunk({}, Array.isArray(reply.toolCalls) && reply.toolCalls.length ? 'tool_calls' : 'stop'));
  if (includeUsage) chunks.push({ ...chunk({}), choices: [], usage: reply.usage });
  return chunks;
}

/** One Server-Sent Event carrying `chunk` as JSON. */
export function sseEvent(chunk: CompletionChunk): string {
  return `data: ${JSON.stringify(chunk)}\n\n`;
}
