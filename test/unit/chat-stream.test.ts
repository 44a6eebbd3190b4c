/**
 * The loopback chat server streams (`stream: true`) as the OpenAI Chat Completions API does, and the real `openai`
 * client reads it: `chat.completions.create({ stream: true })` chunk by chunk and `chat.completions.stream(...)`'s
 * `finalChatCompletion()`, over loopback HTTP.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatServer, Responder } from '../../llm/chat-server.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { ARGUMENT_PIECE_CHARS, completionChunks, TEXT_PIECE_MAX_CHARS, textPieces } from '../../llm/chat-stream.ts';
import { DEMO_SESSION, DEMO_TOOL_SESSION } from '../../llm/endpoint.ts';
import { replayResponder } from '../../llm/offline-model.ts';
import { parseSessionJsonl } from '../../llm/replayed-model.ts';
import type { ToolCall } from '../../engine/messages.ts';

const TEXT = 'The trip starts in Lyon on Monday, then three days in the Alps: Chamonix-Mont-Blanc, Annecy and back.';
const CALLS: ToolCall[] = [
  { id: 'call_weather', type: 'function', function: { name: 'weather', arguments: '{"city":"Chamonix","days":3}' } },
  { id: 'call_trains', type: 'function', function: { name: 'trains', arguments: '{"from":"Lyon","to":"Annecy"}' } },
];
const USAGE = { prompt_tokens: 120, completion_tokens: 34 };
const ask = [{ role: 'user' as const, content: 'Plan my trip' }];

let server: ChatServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(responder: Responder): Promise<OpenAI> {
  server = await startChatServer(responder);
  // logLevel off: the client would log the broken stream it is sent on purpose.
  return new OpenAI({ apiKey: 'test', baseURL: server.baseURL, maxRetries: 0, logLevel: 'off' });
}

/** Every chunk of a streamed request, with the ms (since the request) it reached the client. */
async function chunksOf(client: OpenAI, extra: { stream_options?: { include_usage: boolean } } = {}) {
  const started = performance.now();
  const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: ask, stream: true, ...extra });
  const chunks: { chunk: ChatCompletionChunk; atMs: number }[] = [];
  for await (const chunk of stream) chunks.push({ chunk, atMs: performance.now() - started });
  return chunks;
}

describe('textPieces and completionChunks', () => {
  it('cut any text in pieces that join back to it, none longer than the limit, surrogate pairs whole', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => {
        const pieces = textPieces(text);
        expect(pieces.join('')).toBe(text);
        for (const piece of pieces) {
          expect(piece.length).toBeGreaterThan(0);
          expect(Array.from(piece).length).toBeLessThanOrEqual(TEXT_PIECE_MAX_CHARS);
          expect(piece).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
        }
      }),
    );
    expect(textPieces('Hello there,  world')).toEqual(['Hello ', 'there,  ', 'world']);
    expect(textPieces('')).toEqual([]);
  });

  it('stream each tool call as OpenAI does: id, type and name first, then its arguments in pieces', () => {
    const usage = { ...USAGE, total_tokens: 154 };
    const chunks = completionChunks({ id: 'chatcmpl-9', model: 'm' }, { content: null, toolCalls: CALLS, usage }, true);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: null });
    const deltas = chunks.flatMap((c) => c.choices.flatMap((choice) => (choice.delta.tool_calls as object[]) ?? []));
    expect(deltas[0]).toEqual({
      index: 0,
      id: 'call_weather',
      type: 'function',
      function: { name: 'weather', arguments: '' },
    });
    const pieces = deltas.filter((d) => !('id' in d)) as { index: number; function: { arguments: string } }[];
    expect(pieces.every((p) => Array.from(p.function.arguments).length <= ARGUMENT_PIECE_CHARS)).toBe(true);
    for (const [index, call] of CALLS.entries()) {
      const own = pieces.filter((p) => p.index === index);
      expect(own.length).toBeGreaterThan(1);
      expect(own.map((p) => p.function.arguments).join('')).toBe(call.function.arguments);
    }
    expect(chunks.at(-2)!.choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' });
    expect(chunks.at(-1)).toEqual({
      id: 'chatcmpl-9',
      object: 'chat.completion.chunk',
      created: 0,
      model: 'm',
      choices: [],
      usage,
    });
    expect(chunks.slice(0, -1).every((c) => c.usage === null && c.id === 'chatcmpl-9')).toBe(true);
  });
});

describe('the chat server, streaming', () => {
  it('streams text in several chunks that join to the reply, role first, then stop, then [DONE]', async () => {
    const client = await serve(() => ({ content: TEXT, usage: USAGE }));
    const chunks = (await chunksOf(client)).map(({ chunk }) => chunk);
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '');
    expect(content.filter((piece) => piece !== '').length).toBeGreaterThan(5);
    expect(content.join('')).toBe(TEXT);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]!.finish_reason)).toEqual([
      ...Array.from({ length: chunks.length - 1 }, () => null),
      'stop',
    ]);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === 'chatcmpl-1')).toBe(true);
    expect(chunks.every((c) => c.model === 'gpt-4o-mini' && !('usage' in c))).toBe(true);

    // On the wire: an event stream that ends with [DONE]; the request is recorded like any other.
    const raw = await fetch(`${server!.baseURL}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: ask, stream: true }),
    });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = (await raw.text()).split('\n\n');
    expect(events.at(-1)).toBe('');
    expect(events.at(-2)).toBe('data: [DONE]');
    expect(events.slice(0, -2).every((event) => event.startsWith('data: {"id":"chatcmpl-2"'))).toBe(true);
    expect(server!.requests.map((r) => r.body.stream)).toEqual([true, true]);
    expect(server!.requests[0]!.body.messages).toEqual(ask);
  });

  it('streams tool calls that accumulate to the ids, names and arguments of the reply not streamed', async () => {
    const client = await serve(() => ({ content: 'Checking two things.', toolCalls: CALLS, usage: USAGE }));
    const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: ask });
    const stream = client.chat.completions.stream({ model: 'gpt-4o-mini', messages: ask });
    const argumentDeltas: string[] = [];
    stream.on('chunk', (chunk) => {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) argumentDeltas.push(call.function?.arguments ?? '');
    });
    const streamed = await stream.finalChatCompletion();
    expect(argumentDeltas.filter((piece) => piece !== '').length).toBeGreaterThan(CALLS.length);
    expect(plain.choices[0]!.message.tool_calls).toEqual(CALLS);
    expect(streamed.choices[0]!.message.tool_calls).toEqual(plain.choices[0]!.message.tool_calls);
    expect(streamed.choices[0]!.message.content).toBe('Checking two things.');
    expect(streamed.choices[0]!.finish_reason).toBe('tool_calls');
    expect(plain.choices[0]!.finish_reason).toBe('tool_calls');

    // Tool calls alone: content null, as the completion not streamed has it.
    await server!.close();
    const alone = await serve(() => ({ content: null, toolCalls: CALLS }));
    const final = await alone.chat.completions.stream({ model: 'gpt-4o-mini', messages: ask }).finalChatCompletion();
    expect(final.choices[0]!.message.content).toBeNull();
    expect(final.choices[0]!.message.tool_calls).toEqual(CALLS);
  });

  it('sends the usage last with stream_options.include_usage, as the completion not streamed counts it', async () => {
    const client = await serve(() => ({ content: TEXT, usage: USAGE, model: 'served-model' }));
    const chunks = (await chunksOf(client, { stream_options: { include_usage: true } })).map(({ chunk }) => chunk);
    // The prompt is shorter than 1,024 tokens: nothing of it is cached (test/unit/prompt-cache.test.ts).
    const usage = {
      ...USAGE,
      total_tokens: USAGE.prompt_tokens + USAGE.completion_tokens,
      prompt_tokens_details: { cached_tokens: 0 },
    };
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual(usage);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.slice(0, -1).every((c) => c.usage === null && c.model === 'served-model')).toBe(true);

    const final = await client.chat.completions
      .stream({ model: 'gpt-4o-mini', messages: ask, stream_options: { include_usage: true } })
      .finalChatCompletion();
    const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: ask });
    expect(final.usage).toEqual(plain.usage);
    expect(final.usage).toEqual(usage);
    expect(final.model).toBe('served-model');
    expect(final.choices[0]!.message.content).toBe(TEXT);
  });

  it('spaces the chunks chunkDelayMs apart: the first arrives well before the last', async () => {
    const gapMs = 40;
    const client = await serve(() => ({ content: TEXT, chunkDelayMs: gapMs }));
    const chunks = await chunksOf(client);
    const withText = chunks.filter(({ chunk }) => chunk.choices[0]?.delta.content);
    expect(withText.length).toBeGreaterThan(10);
    const first = withText[0]!.atMs;
    const last = withText.at(-1)!.atMs;
    // The server waits gapMs between two writes; a busy machine may bunch a few arrivals, never shorten the span much.
    expect(last - first).toBeGreaterThanOrEqual((withText.length - 1) * gapMs * 0.75);
    expect(first).toBeLessThan((last - first) / 4);
    expect(withText.map(({ chunk }) => chunk.choices[0]!.delta.content).join('')).toBe(TEXT);
  });

  it('streams the replayed model: the recorded reply, and the recorded tool loop with its tool calls', async () => {
    const session = [DEMO_SESSION, DEMO_TOOL_SESSION].flatMap((path) => parseSessionJsonl(readFileSync(path, 'utf8')));
    const client = await serve(replayResponder(session, { source: 'demo recordings' }));
    const firstUser = session.find((m) => m.role === 'user')!;
    const recorded = session[session.indexOf(firstUser) + 1]!;
    const chunks = (await chunksOf(client)).map(({ chunk }) => chunk);
    expect(chunks.length).toBeGreaterThan(3);
    expect(ask[0]!.content).not.toBe(firstUser.content); // `ask` is not recorded: the offline answer, streamed
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toMatch(/offline/i);

    const messages = [{ role: 'system' as const, content: 'You plan trips.' }, firstUser] as never;
    const final = await client.chat.completions.stream({ model: 'gpt-4o-mini', messages }).finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(recorded.content);
    expect(final.model).toBe('replayed:gpt-4o-mini');

    const toolUser = parseSessionJsonl(readFileSync(DEMO_TOOL_SESSION, 'utf8'))[0]!;
    const toolMessages = [toolUser] as never;
    const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: toolMessages });
    const streamed = await client.chat.completions
      .stream({ model: 'gpt-4o-mini', messages: toolMessages })
      .finalChatCompletion();
    expect(plain.choices[0]!.message.tool_calls?.length).toBeGreaterThan(0);
    expect(streamed.choices[0]!.message.tool_calls).toEqual(plain.choices[0]!.message.tool_calls);
    expect(streamed.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('answers a scripted error to a streamed request as a JSON error, and records the request', async () => {
    const client = await serve(() => ({ status: 429, error: 'slow down', headers: { 'retry-after': '1' } }));
    const failure = await chunksOf(client).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((failure as Error).message).toContain('slow down');
    expect(server!.requests).toHaveLength(1);
    expect(server!.requests[0]!.body.stream).toBe(true);
  });

  it('names chunkDelayMs when it is not a number of ms, and sends a raw body as a broken stream', async () => {
    const client = await serve((_request, index) =>
      index === 0 ? { content: 'x', chunkDelayMs: -5 } : { raw: 'data: {broken\n\n' },
    );
    const bad = await chunksOf(client).catch((error: unknown) => error);
    expect((bad as InstanceType<typeof OpenAI.APIError>).status).toBe(500);
    expect((bad as Error).message).toContain('chunkDelayMs must be a number of ms >= 0, got -5');
    await expect(chunksOf(client)).rejects.toThrow(/malformed server-sent event JSON/);
  });

  it('takes a client that leaves mid-stream in its stride: the next request is answered whole', async () => {
    const client = await serve(() => ({ content: TEXT, chunkDelayMs: 20 }));
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: ask, stream: true });
    let seen = 0;
    for await (const _chunk of stream) if (++seen === 3) break;
    expect(seen).toBe(3);
    const next = await client.chat.completions.stream({ model: 'gpt-4o-mini', messages: ask }).finalChatCompletion();
    expect(next.choices[0]!.message.content).toBe(TEXT);
  });

  it('cuts the stream after resetAfterChunks chunks: the client has those, then fails', async () => {
    const client = await serve((_request, index) => ({ content: TEXT, resetAfterChunks: index === 0 ? 4 : 500 }));
    for (const expected of [4, textPieces(TEXT).length + 2]) {
      const seen: ChatCompletionChunk[] = [];
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: ask, stream: true });
      const failure = await (async () => {
        for await (const chunk of stream) seen.push(chunk);
      })().catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(Error);
      expect(seen).toHaveLength(expected);
    }
    const bad = await serve(() => ({ content: 'x', resetAfterChunks: 1.5 }));
    await expect(chunksOf(bad)).rejects.toThrow('resetAfterChunks must be a whole number >= 0, got 1.5');
  });

  it('keeps the completion not streamed byte for byte as it was', async () => {
    await serve(() => ({ content: 'Hi', toolCalls: [CALLS[0]!], usage: USAGE }));
    const raw = await fetch(`${server!.baseURL}/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: ask }),
    });
    expect(raw.headers.get('content-type')).toBe('application/json');
    expect(await raw.text()).toBe(
      '{"id":"chatcmpl-1","object":"chat.completion","created":0,"model":"gpt-4o-mini","choices":[{"index":0,' +
        '"message":{"role":"assistant","content":"Hi","tool_calls":[{"id":"call_weather","type":"function",' +
        '"function":{"name":"weather","arguments":"{\\"city\\":\\"Chamonix\\",\\"days\\":3}"}}]},' +
        '"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":34,"total_tokens":154,' +
        '"prompt_tokens_details":{"cached_tokens":0}}}',
    );
  });
});
