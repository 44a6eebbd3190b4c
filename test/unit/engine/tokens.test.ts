/**
 * Token accounting: production counts (longrun's tokenizer) give the same token ids as the reference, js-tiktoken,
 * on a varied corpus, in both encodings; special tokens are text; the chat overhead is OpenAI's. Random text, CJK
 * runs and the bench corpus: `tokens-conformance.test.ts`.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CHAT_OVERHEAD,
  countMessage,
  countRequest,
  countToolSchemas,
  ENCODINGS,
  loadTokenCounter,
} from '../../../engine/tokens.ts';
import type { EncodingName, TokenCounter } from '../../../engine/tokens.ts';

const reference: Record<EncodingName, Tiktoken> = {
  o200k_base: new Tiktoken(o200k),
  cl100k_base: new Tiktoken(cl100k),
};
const counters = {} as Record<EncodingName, TokenCounter>;
beforeAll(async () => {
  for (const encoding of ENCODINGS) counters[encoding] = await loadTokenCounter(encoding);
});

/** Prose, JSON, code, CJK, emoji, whitespace runs, numbers, special-token literals, mixed scripts. */
const CORPUS = [
  'The quick brown fox jumps over the lazy dog.',
  "Hello, world! It's 3:45pm — let's meet at the café on 5th Ave.",
  JSON.stringify({ id: 'call_8f2a', items: [1, 2.5, -3e10], nested: { ok: true, note: null, path: '/usr/local/bin' } }),
  'function add(a: number, b: number): number {\n  return a + b; // sum\n}\n\n\tconst x = [1,2,3].map((v) => v ** 2);',
  '人工智能正在改变世界。我们需要负责任地开发它，并且确保安全。',
  '日本語のテキストとカタカナ、ひらがな。한국어 문장도 있습니다.',
  'Emoji: 👍🏽 🧑‍💻 🇩🇪 ❤️‍🔥 — and a ZWJ family 👨‍👩‍👧‍👦',
  'Tool output: <|endoftext|> then <|im_start|>user<|im_end|> and <|fim_prefix|> literals.',
  '    leading spaces\n\n\n\ntrailing\t\t\ttabs   \r\n windows line',
  'Numbers 1234567890 3.14159 -0.0001 1e-9 0x1F 1,000,000 and ids a1b2c3d4-e5f6-7890-abcd-ef0123456789',
  'Ünïcödé àccents, Ελληνικά, русский текст, العربية, עברית, हिन्दी',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'SGVsbG8gV29ybGQhIFRoaXMgaXMgYmFzZTY0IGVuY29kZWQgdGV4dCB0byB0ZXN0IHRva2VuaXphdGlvbi4=',
  '-----------------------------------------------------------------------------------------------',
  'https://example.com/path/to/file.ts?query=1&b=two#frag and C:\\Users\\me\\file.txt',
  '',
];

describe('token counting', () => {
  it.each(ENCODINGS)('%s: identical token ids to js-tiktoken on a varied corpus', (encoding) => {
    for (const text of CORPUS) {
      expect(counters[encoding].encode(text), text).toEqual(reference[encoding].encode(text, [], []));
      expect(counters[encoding].count(text)).toBe(reference[encoding].encode(text, [], []).length);
    }
  });

  it('counts literal special tokens as ordinary text instead of throwing', () => {
    const counter = counters.o200k_base;
    expect(() => counter.count('<|endoftext|>')).not.toThrow();
    expect(counter.count('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('adds OpenAI chat overhead: 3 per message, 1 per name, 3 to prime the reply', () => {
    const counter = counters.o200k_base;
    const hello = counter.count('hello');
    const user = counter.count('user');
    expect(countMessage(counter, { role: 'user', content: 'hello' })).toBe(3 + user + hello);
    expect(countMessage(counter, { role: 'user', content: 'hello', name: 'bob' })).toBe(
      3 + user + hello + CHAT_OVERHEAD.perName + counter.count('bob'),
    );
    const messages = [
      { role: 'system' as const, content: 'be brief' },
      { role: 'user' as const, content: 'hello' },
    ];
    const schemas = [{ type: 'function', function: { name: 'add', parameters: { type: 'object' } } }];
    expect(countRequest(counter, messages, schemas)).toBe(
      countMessage(counter, messages[0]!) +
        countMessage(counter, messages[1]!) +
        3 +
        countToolSchemas(counter, schemas),
    );
  });

  it('counts tool calls and tool results, and applies a safety margin', () => {
    const counter = counters.o200k_base;
    const call = {
      role: 'assistant' as const,
      content: null,
      tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'add', arguments: '{"a":1,"b":2}' } }],
    };
    expect(countMessage(counter, call)).toBeGreaterThan(countMessage(counter, { role: 'assistant', content: null }));
    const plain = countMessage(counter, { role: 'tool', content: 'x'.repeat(100), tool_call_id: 'c1' });
    expect(countMessage(counter, { role: 'tool', content: 'x'.repeat(100), tool_call_id: 'c1' }, 1.2)).toBe(
      Math.ceil(plain * 1.2),
    );
  });
});
