/**
 * The loopback chat server's prompt cache against OpenAI's documented rules (llm/prompt-cache.ts): nothing below
 * 1,024 tokens of common prefix, then steps of 128, only an exact prefix, within a time to live; and its usage as the
 * real `openai` client reads it, in a completion and in a stream's last chunk.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatServer } from '../../llm/chat-server.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { cachedTokensFor, PROMPT_CACHE, PromptCache, requestTokenIds } from '../../llm/prompt-cache.ts';
import { loadTokenCounter } from '../../engine/tokens.ts';
import type { ChatMessage } from '../../engine/messages.ts';

/** `n` token ids starting at `from` (distinct from any other run's). */
const ids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

describe('cachedTokensFor (the rule)', () => {
  it('0 below 1,024; 1,024 + 128 × floor((prefix - 1,024) / 128) above; never more than the prompt', () => {
    expect(cachedTokensFor(0, 5_000)).toBe(0);
    expect(cachedTokensFor(1_023, 5_000)).toBe(0);
    expect(cachedTokensFor(1_024, 5_000)).toBe(1_024);
    expect(cachedTokensFor(1_024 + 127, 5_000)).toBe(1_024);
    expect(cachedTokensFor(1_024 + 128, 5_000)).toBe(1_152);
    expect(cachedTokensFor(1_024 + 300, 5_000)).toBe(1_280);
    expect(cachedTokensFor(5_000, 1_100)).toBe(1_024);
    expect(cachedTokensFor(5_000, 900)).toBe(0);
  });
});

describe('PromptCache', () => {
  it('a first request caches nothing; the same request again is cached up to its last whole block', () => {
    const cache = new PromptCache();
    const request = ids(3_000);
    expect(cache.use(request)).toBe(0);
    expect(cache.use(request)).toBe(cachedTokensFor(3_000, 3_000));
    expect(cache.use(request)).toBe(2_944);
  });

  it('a common prefix below 1,024 tokens caches nothing', () => {
    const cache = new PromptCache();
    cache.use([...ids(1_023), ...ids(2_000, 10_000)]);
    expect(cache.use([...ids(1_023), ...ids(2_000, 20_000)])).toBe(0);
  });

  it('1,024 + 127 common tokens → 1,024; 1,024 + 128 → 1,152', () => {
    const cache = new PromptCache();
    cache.use([...ids(1_024 + 127), ...ids(1_000, 10_000)]);
    expect(cache.use([...ids(1_024 + 127), ...ids(1_000, 20_000)])).toBe(1_024);
    const other = new PromptCache();
    other.use([...ids(1_024 + 128), ...ids(1_000, 10_000)]);
    expect(other.use([...ids(1_024 + 128), ...ids(1_000, 20_000)])).toBe(1_152);
  });

  it('a prefix that differs at its first token → 0, however much follows is equal', () => {
    const cache = new PromptCache();
    cache.use(ids(4_000));
    expect(cache.use([99_999, ...ids(3_999, 1)])).toBe(0);
  });

  it('the longest prefix across all earlier requests, not only the last one', () => {
    const cache = new PromptCache();
    cache.use(ids(2_000));
    cache.use(ids(1_100, 50_000));
    expect(cache.use([...ids(1_600), ...ids(500, 90_000)])).toBe(1_536);
  });

  it('an entry expires a time to live after its last use; each use renews it', () => {
    let now = 0;
    const cache = new PromptCache({ ttlMs: 1_000, now: () => now });
    cache.use(ids(2_000));
    now = 999;
    expect(cache.use(ids(2_000))).toBe(1_920); // renewed at 999
    now = 1_998;
    expect(cache.use(ids(2_000))).toBe(1_920); // renewed at 1,998
    now = 2_998;
    expect(cache.use(ids(2_000))).toBe(0); // 1,000 ms after its last use: gone
    now = 10_000;
    expect(cache.size).toBe(0);
  });

  it('a bad time to live is refused, naming the field', () => {
    expect(() => new PromptCache({ ttlMs: 0 })).toThrow(/ttlMs must be a number of ms > 0, got 0/);
    expect(() => new PromptCache({ ttlMs: Number.NaN })).toThrow(/ttlMs/);
    expect(PROMPT_CACHE.ttlMs).toBeGreaterThanOrEqual(5 * 60_000);
  });
});

describe('requestTokenIds (what the cache compares)', () => {
  const long = Array.from({ length: 300 }, (_, i) => `Rule ${i}: answer in the order the steps came.`).join('\n');
  const messages = [
    { role: 'system', content: long },
    { role: 'user', content: 'Summarize the run.' },
  ] satisfies ChatMessage[];
  const tools = [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } }];
  const schema = { type: 'json_schema', json_schema: { name: 'context_summary', strict: true, schema: {} } };

  it('the response format first (OpenAI: the schema "serves as a prefix to the system message"), then tools, then messages', async () => {
    const counter = await loadTokenCounter('o200k_base');
    const plain = requestTokenIds(counter, messages, tools);
    const structured = requestTokenIds(counter, messages, tools, schema);
    // The same tools and messages after it: the request with the schema ends as the one without it, and begins with it.
    expect(structured.slice(-plain.length)).toEqual(plain);
    expect(structured.length).toBeGreaterThan(plain.length);
    expect(structured[0]).not.toBe(plain[0]);
    // Without one (or null): as before, the tools first.
    expect(requestTokenIds(counter, messages, tools, undefined)).toEqual(plain);
    expect(requestTokenIds(counter, messages, tools, null)).toEqual(plain);
    expect(plain.slice(0, counter.encode(JSON.stringify(tools)).length)).toEqual(counter.encode(JSON.stringify(tools)));
  });

  it('a request with a response format shares no prefix with one without it, nor with one of another schema', async () => {
    const counter = await loadTokenCounter('o200k_base');
    const cache = new PromptCache();
    const plain = requestTokenIds(counter, messages, tools);
    const structured = requestTokenIds(counter, messages, tools, schema);
    const other = requestTokenIds(counter, messages, tools, { ...schema, json_schema: { name: 'other', schema: {} } });
    expect(plain.length).toBeGreaterThan(2_000);
    expect(cache.use(plain)).toBe(0);
    expect(cache.use(structured)).toBe(0); // same tools and messages, a schema before them: nothing cached
    expect(cache.use(other)).toBe(0);
    // The same schema again: cached as any repeated prefix.
    expect(cache.use(structured)).toBe(cachedTokensFor(structured.length, structured.length));
    expect(cache.use(plain)).toBe(cachedTokensFor(plain.length, plain.length));
  });

  it('the loopback server counts the response format of what it receives', async () => {
    const server = await startChatServer(() => ({ content: 'ok' }), { countUsage: true });
    try {
      const client = new OpenAI({ apiKey: 'test', baseURL: server.baseURL, maxRetries: 0 });
      const counter = await loadTokenCounter('o200k_base');
      const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
      expect(plain.usage?.prompt_tokens).toBe(requestTokenIds(counter, messages).length);
      const structured = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages,
        response_format: { type: 'json_schema', json_schema: { name: 'context_summary', schema: {} } },
      });
      expect(structured.usage).toMatchObject({
        prompt_tokens: requestTokenIds(counter, messages, [], {
          type: 'json_schema',
          json_schema: { name: 'context_summary', schema: {} },
        }).length,
        prompt_tokens_details: { cached_tokens: 0 }, // the same messages, but the schema comes first
      });
    } finally {
      await server.close();
    }
  });
});

describe('the loopback chat server reports cached tokens', () => {
  let server: ChatServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const system = {
    role: 'system' as const,
    content: Array.from({ length: 400 }, (_, i) => `Rule ${i}: keep the ledger of step ${i} in order.`).join('\n'),
  };
  const first = [system, { role: 'user', content: 'Plan the trip to Lyon.' }] satisfies ChatMessage[];
  const second = [
    ...first,
    { role: 'assistant', content: 'Done.' },
    { role: 'user', content: 'And?' },
  ] satisfies ChatMessage[];

  it('non-streamed and streamed (include_usage): the prefix shared with the earlier request, by the rules', async () => {
    server = await startChatServer(() => ({ content: 'ok' }), { countUsage: true });
    const client = new OpenAI({ apiKey: 'test', baseURL: server.baseURL, maxRetries: 0 });
    const counter = await loadTokenCounter('o200k_base');
    const firstIds = requestTokenIds(counter, first);
    const secondIds = requestTokenIds(counter, second);
    expect(firstIds.length).toBeGreaterThan(1_500);

    const a = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: first });
    expect(a.usage).toMatchObject({ prompt_tokens: firstIds.length, prompt_tokens_details: { cached_tokens: 0 } });
    const b = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: second });
    expect(b.usage).toMatchObject({
      prompt_tokens: secondIds.length,
      completion_tokens: counter.count('ok'),
      prompt_tokens_details: { cached_tokens: cachedTokensFor(firstIds.length, secondIds.length) },
    });
    expect(b.usage!.prompt_tokens_details!.cached_tokens).toBeGreaterThanOrEqual(1_024);

    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: second,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)!.usage).toMatchObject({
      prompt_tokens: secondIds.length,
      prompt_tokens_details: { cached_tokens: cachedTokensFor(secondIds.length, secondIds.length) },
    });
  });

  it('a scripted usage wins, capped cached tokens added; its own cached tokens are sent as they are', async () => {
    const replies = [
      { content: 'a', usage: { prompt_tokens: 5_000, completion_tokens: 3 } },
      { content: 'b', usage: { prompt_tokens: 5_000, completion_tokens: 3 } },
      { content: 'c', usage: { prompt_tokens: 200, completion_tokens: 3 } },
      { content: 'd', usage: { prompt_tokens: 9, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 7 } } },
      { content: 'e' },
    ];
    server = await startChatServer((_, i) => replies[i]!);
    const client = new OpenAI({ apiKey: 'test', baseURL: server.baseURL, maxRetries: 0 });
    const counter = await loadTokenCounter('o200k_base');
    const firstIds = requestTokenIds(counter, first);
    const usages = [];
    for (let i = 0; i < replies.length; i++) {
      usages.push((await client.chat.completions.create({ model: 'gpt-4o-mini', messages: first })).usage);
    }
    expect(usages[0]).toMatchObject({ prompt_tokens: 5_000, prompt_tokens_details: { cached_tokens: 0 } });
    expect(usages[1]).toMatchObject({
      prompt_tokens: 5_000,
      completion_tokens: 3,
      total_tokens: 5_003,
      prompt_tokens_details: { cached_tokens: cachedTokensFor(firstIds.length, 5_000) },
    });
    expect(usages[2]).toMatchObject({ prompt_tokens: 200, prompt_tokens_details: { cached_tokens: 0 } });
    expect(usages[3]).toMatchObject({ prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 7 } });
    // Without countUsage and without a scripted usage: zeros, as before (longrun counts the request itself).
    expect(usages[4]).toMatchObject({
      prompt_tokens: 0,
      completion_tokens: 0,
      prompt_tokens_details: { cached_tokens: 0 },
    });
  });
});
