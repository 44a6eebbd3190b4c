/**
 * A small OpenAI-compatible Chat Completions server on loopback. A responder decides each reply; every request is
 * recorded. Tests script it; the offline demo replays a recorded session through it. Either way the agent talks to
 * it through the real `openai` client over real HTTP, exactly as it would to a provider.
 *
 * A request with `stream: true` gets its reply streamed as OpenAI streams it: Server-Sent Events of
 * `chat.completion.chunk` objects, the text and each tool call's arguments in pieces, the usage last with
 * `stream_options.include_usage`, then `data: [DONE]` (chat-stream.ts); `chunkDelayMs` spaces them in time. Scripted
 * errors are JSON errors either way, as a provider answers a stream it refuses.
 *
 * It caches prompts as OpenAI does (prompt-cache.ts; the response format first, then the tools, then the messages):
 * every completion's usage has
 * `prompt_tokens_details.cached_tokens`, the longest prefix shared with an earlier request within the time to live,
 * from 1,024 tokens in steps of 128, never more than the reported `prompt_tokens`. The reported prompt and completion
 * tokens are the scripted reply's `usage`, or 0 without one (longrun then counts the request itself, as it does for a
 * provider that reports none), unless the server is started with `countUsage: true`: then a reply without a scripted
 * usage reports the request's and the reply's tokens as the cache counts them. A scripted `usage` that has its own
 * `prompt_tokens_details` is sent as it is.
 *
 * The responder reads the conversation: a budget note at the end of a request (engine/budget-note.ts, policy
 * `budgetNote`) is taken off the request's messages into its `budgetNote`, as a model reads it as a side note, not as
 * the user's next words (the prompt cache counts the request as it came, the note included).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage, ToolCall } from '../engine/messages.ts';
import { loadTokenCounter } from '../engine/tokens.ts';
import { isBudgetNote } from '../engine/budget-note.ts';
import { isConversationSummaryInstruction } from '../engine/summary.ts';
import type { TokenCounter } from '../engine/tokens.ts';
import { completionChunks, SSE_DONE, sseEvent } from './chat-stream.ts';
import type { StreamedReply } from './chat-stream.ts';
import { cachedTokensFor, PromptCache, requestTokenIds } from './prompt-cache.ts';
import type { PromptCacheOptions } from './prompt-cache.ts';

/** A request as the server received it. */
export interface RecordedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: { model: string; messages: ChatMessage[]; [key: string]: unknown };
  /** The request's budget note, taken off `body.messages` (engine/budget-note.ts); absent: none. */
  budgetNote?: ChatMessage;
  /** Where the note was in the request's messages. */
  budgetNoteAt?: number;
}

/** What the responder wants sent back: a reply, or an HTTP error. */
export type ScriptedReply =
  | {
      content: string | null;
      toolCalls?: ToolCall[];
      usage?: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
      /** The model the completion says served it, as a provider names it (default: the requested model). */
      model?: string;
      /** Answer only after this many ms (to test the client's timeout); streamed, the first chunk waits as long. */
      delayMs?: number;
      /** Streamed only: this many ms between two chunks, so a client sees them arrive over time (default 0). */
      chunkDelayMs?: number;
      /**
       * Streamed only: drop the connection after this many chunks (after all of them if there are fewer), never
       * sending `[DONE]`: a stream cut mid-reply.
       */
      resetAfterChunks?: number;
    }
  | { status: number; error: string; headers?: Record<string, string> }
  /** Drop the connection without an answer (a connection reset). */
  | { reset: true }
  /**
   * Send this body as it is, with status 200 (a malformed or empty completion); to a streamed request, as the body of
   * its event stream (a broken stream).
   */
  | { raw: string };

export type Responder = (request: RecordedRequest, index: number) => ScriptedReply | Promise<ScriptedReply>;

export interface ChatServer {
  /** Base URL for the openai client (OPENAI_BASE_URL), ending in /v1. */
  baseURL: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

type CompletionReply = Extract<ScriptedReply, { content: string | null }>;

/** What the server knows of a request's tokens: its token ids' count and the prefix the cache found. */
interface PromptTokens {
  tokens: number;
  prefix: number;
}

/**
 * The completion's usage: the scripted one (with the cached tokens the cache found, capped at its prompt tokens,
 * unless it gives its own), or the server's count with `countUsage`, or zeros.
 */
function usageOf(
  reply: CompletionReply,
  prompt: PromptTokens,
  completionTokens: number | undefined,
): StreamedReply['usage'] {
  const usage = reply.usage ?? {
    prompt_tokens: completionTokens === undefined ? 0 : prompt.tokens,
    completion_tokens: completionTokens ?? 0,
  };
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.prompt_tokens + usage.completion_tokens,
    prompt_tokens_details: usage.prompt_tokens_details ?? {
      cached_tokens: cachedTokensFor(prompt.prefix, usage.prompt_tokens),
    },
  };
}

/** Tokens of a reply as the cache counts them (its text and each tool call's name and arguments). */
function replyTokens(counter: TokenCounter, reply: CompletionReply): number {
  let tokens = reply.content ? counter.count(reply.content) : 0;
  for (const call of reply.toolCalls ?? []) {
    tokens += counter.count(call.function.name) + counter.count(call.function.arguments);
  }
  return tokens;
}

function completion(requested: string, index: number, reply: CompletionReply, usage: StreamedReply['usage']) {
  const message = {
    role: 'assistant',
    content: reply.content,
    ...(reply.toolCalls?.length ? { tool_calls: reply.toolCalls } : {}),
  };
  return {
    id: `chatcmpl-${index + 1}`,
    object: 'chat.completion',
    created: 0,
    model: reply.model ?? requested,
    choices: [{ index: 0, message, finish_reason: reply.toolCalls?.length ? 'tool_calls' : 'stop' }],
    usage,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Streams `reply` as Server-Sent Events, `chunkDelayMs` apart; stops writing when the client is gone (an abort, a
 * timeout, the server closing).
 */
async function streamCompletion(
  response: ServerResponse,
  body: RecordedRequest['body'],
  index: number,
  reply: CompletionReply,
  usage: StreamedReply['usage'],
): Promise<void> {
  const gap = reply.chunkDelayMs ?? 0;
  if (!Number.isFinite(gap) || gap < 0) {
    throw new Error(`scripted reply: chunkDelayMs must be a number of ms >= 0, got ${String(reply.chunkDelayMs)}`);
  }
  const cutAt = reply.resetAfterChunks;
  if (cutAt !== undefined && !(Number.isSafeInteger(cutAt) && cutAt >= 0)) {
    throw new Error(`scripted reply: resetAfterChunks must be a whole number >= 0, got ${String(cutAt)}`);
  }
  const options = body.stream_options as { include_usage?: unknown } | undefined;
  const chunks = completionChunks(
    { id: `chatcmpl-${index + 1}`, model: reply.model ?? body.model },
    { content: reply.content, toolCalls: reply.toolCalls, usage },
    options?.include_usage === true,
  );
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  response.flushHeaders();
  // Resolves when the last chunk written has reached the socket: a cut must not drop what was sent before it.
  let written = Promise.resolve();
  const sent = cutAt === undefined ? chunks : chunks.slice(0, cutAt);
  for (const [i, chunk] of sent.entries()) {
    if (i > 0 && gap > 0) await sleep(gap);
    if (response.destroyed) return;
    written = new Promise((resolve) => response.write(sseEvent(chunk), () => resolve()));
  }
  if (gap > 0) await sleep(gap);
  if (cutAt === undefined) {
    if (!response.destroyed) response.end(SSE_DONE);
    return;
  }
  await written;
  await new Promise((resolve) => setImmediate(resolve));
  response.socket?.destroy();
}

export interface ChatServerOptions {
  /** The loopback port to listen on (default: a free one); a test brings an endpoint it stopped back on its port. */
  port?: number;
  /** `false` keeps no request (`requests` stays empty): a long benchmark sends more than memory should hold. */
  record?: boolean;
  /** The prompt cache's options (its time to live; prompt-cache.ts). */
  promptCache?: PromptCacheOptions;
  /** A reply without a scripted usage reports the request's and the reply's tokens as counted (default: zeros). */
  countUsage?: boolean;
  /**
   * Called once a request is answered (its response ended, or its connection dropped), with its index and the time
   * from its arrival: the model's own time, which a benchmark takes off a step's wall time.
   */
  onAnswered?: (index: number, ms: number) => void;
}

/**
 * Whether a request asks for a compaction summary: with structured output (a summary in transcript mode), or ending
 * with the instruction of a summary in conversation mode (engine/summary.ts `conversationSummaryPrompt`), which
 * repeats the agent's own request before it. What scripted models tell summaries from the agent's steps by.
 */
export function asksForSummary(body: RecordedRequest['body']): boolean {
  if (body.response_format !== undefined) return true;
  return Array.isArray(body.messages) && isConversationSummaryInstruction(body.messages.at(-1));
}

/**
 * The request with its budget note, if it has one (at the end, or before the person's words that end it), taken off
 * its messages into `budgetNote`, and where it was into `budgetNoteAt`.
 */
export function withoutBudgetNote(request: RecordedRequest): RecordedRequest {
  const messages = Array.isArray(request.body.messages) ? request.body.messages : [];
  const at = messages.findLastIndex(isBudgetNote);
  if (at < 0) return request;
  const rest = [...messages.slice(0, at), ...messages.slice(at + 1)];
  return { ...request, body: { ...request.body, messages: rest }, budgetNote: messages[at]!, budgetNoteAt: at };
}

/** Starts the server on 127.0.0.1 and a free port (or `options.port`). */
export async function startChatServer(responder: Responder, options: ChatServerOptions = {}): Promise<ChatServer> {
  const requests: RecordedRequest[] = [];
  const cache = new PromptCache(options.promptCache);
  // Every request goes through the cache in the order it arrived, whatever its tokenizing awaits.
  let counted: Promise<unknown> = Promise.resolve();
  const promptTokens = (body: RecordedRequest['body']): Promise<PromptTokens> => {
    const result = counted.then(async () => {
      const counter = await loadTokenCounter('o200k_base');
      const tools = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
      const messages = Array.isArray(body.messages) ? body.messages : [];
      const ids = requestTokenIds(counter, messages, tools, body.response_format);
      return { tokens: ids.length, prefix: cache.use(ids) };
    });
    counted = result.catch(() => undefined);
    return result;
  };
  let received = 0;
  const server = createServer((request, response) => {
    const arrived = Date.now();
    let index = -1;
    if (options.onAnswered) {
      const onAnswered = options.onAnswered;
      response.once('close', () => {
        if (index >= 0) onAnswered(index, Date.now() - arrived);
      });
    }
    void (async () => {
      const path = request.url ?? '/';
      if (request.method !== 'POST' || !/^(\/v1)?\/chat\/completions$/.test(path)) {
        sendJson(response, 404, {
          error: { message: `no route ${request.method} ${path}`, type: 'invalid_request_error' },
        });
        return;
      }
      const body = JSON.parse(await readBody(request)) as RecordedRequest['body'];
      const streamed = body.stream === true;
      const recorded = withoutBudgetNote({ path, headers: request.headers, body });
      index = received++;
      if (options.record !== false) requests.push(recorded);
      const prompt = promptTokens(body);
      prompt.catch(() => undefined);
      const reply = await responder(recorded, index);
      if ('reset' in reply) {
        request.socket.destroy();
      } else if ('raw' in reply) {
        response.writeHead(200, { 'content-type': streamed ? 'text/event-stream; charset=utf-8' : 'application/json' });
        response.end(reply.raw);
      } else if ('status' in reply) {
        sendJson(response, reply.status, { error: { message: reply.error, type: 'scripted_error' } }, reply.headers);
      } else {
        if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
        if (response.destroyed) return;
        const counter = options.countUsage ? await loadTokenCounter('o200k_base') : undefined;
        const usage = usageOf(reply, await prompt, counter ? replyTokens(counter, reply) : undefined);
        if (streamed) await streamCompletion(response, body, index, reply, usage);
        else sendJson(response, 200, completion(body.model, index, reply, usage));
      }
    })().catch((error: unknown) => {
      // The client may be gone (a reset, a timeout) or the answer begun: then there is nobody to tell, and a write
      // would throw here, an unhandled rejection of whoever runs the server.
      if (response.headersSent || response.destroyed) response.destroy();
      else sendJson(response, 500, { error: { message: `chat server: ${String(error)}`, type: 'server_error' } });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject); // the port taken
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
