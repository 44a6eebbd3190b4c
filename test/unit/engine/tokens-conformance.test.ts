/**
 * The production counter's ids and counts against the references, in both encodings: js-tiktoken (the reference)
 * on random text from a varied alphabet and on the bench corpus; tiktoken (OpenAI's Rust tokenizer, WASM build) on
 * the same random text, except for U+FEFF and U+0085, the two characters on which the two references disagree
 * (JavaScript's `\s` has U+FEFF and not U+0085, Rust's the other way round); production follows js-tiktoken.
 */
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { beforeAll, describe, expect, it } from 'vitest';
import raw from 'gpt-tokenizer/bpeRanks/o200k_base';
import { mixedMessages } from '../../../bench/corpus.ts';
import { ENCODINGS, loadTokenCounter } from '../../../engine/tokens.ts';
import type { EncodingName, TokenCounter } from '../../../engine/tokens.ts';
import { variedText } from './tokenizer-text.ts';

interface WasmEncoding {
  encode(text: string, allowed: string[], disallowed: string[]): Uint32Array;
}

const reference: Record<EncodingName, Tiktoken> = {
  o200k_base: new Tiktoken(o200k),
  cl100k_base: new Tiktoken(cl100k),
};
const wasm = createRequire(import.meta.url)('tiktoken') as { get_encoding(name: string): WasmEncoding };
const counters = {} as Record<EncodingName, TokenCounter>;
beforeAll(async () => {
  for (const encoding of ENCODINGS) counters[encoding] = await loadTokenCounter(encoding);
});

const referenceIds = (encoding: EncodingName, text: string) => reference[encoding].encode(text, [], []);

/** Multi-character CJK tokens of o200k_base (words the merge must not cut), and single characters of several blocks. */
const CJK_WORDS = raw.filter(
  (token): token is string => typeof token === 'string' && /^[\u3000-\u9fff\uac00-\ud7af]{2,}$/u.test(token),
);
const cjkText = fc
  .array(
    fc.oneof(
      fc.constantFrom(...CJK_WORDS),
      fc.integer({ min: 0x3000, max: 0x9fff }).map((cp) => String.fromCodePoint(cp)),
      fc.integer({ min: 0xac00, max: 0xd7af }).map((cp) => String.fromCodePoint(cp)),
      fc.constantFrom('。', '，', '、', ' ', 'a'),
    ),
    { maxLength: 30 },
  )
  .map((parts) => parts.join(''));

// Thousands of property runs each: on a loaded 2-core machine one took over the default 5 s. The bound is on a hang,
// not on speed (the tokenizer's speed is the bench's).
describe.each(ENCODINGS)('%s', { timeout: 60_000 }, (encoding) => {
  it('random text: ids and counts identical to js-tiktoken', () => {
    fc.assert(
      fc.property(variedText(), (text) => {
        const expected = referenceIds(encoding, text);
        expect(counters[encoding].encode(text)).toEqual(expected);
        expect(counters[encoding].count(text)).toBe(expected.length);
        expect(counters[encoding].count(text)).toBe(expected.length); // again, from the memo
      }),
      { numRuns: 3_000 },
    );
  });

  it('random text without U+FEFF and U+0085: ids identical to tiktoken (WASM)', () => {
    const tiktoken = wasm.get_encoding(encoding);
    fc.assert(
      fc.property(
        variedText().filter((text) => !/[\ufeff\x85]/.test(text)),
        (text) => {
          expect(counters[encoding].encode(text)).toEqual(Array.from(tiktoken.encode(text, [], [])));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('CJK runs of words and random characters (cut where no token spans): ids and counts identical to js-tiktoken', () => {
    expect(CJK_WORDS.length).toBeGreaterThan(1_000);
    fc.assert(
      fc.property(cjkText, (text) => {
        const expected = referenceIds(encoding, text);
        expect(counters[encoding].encode(text)).toEqual(expected);
        expect(counters[encoding].count(text)).toBe(expected.length);
      }),
      { numRuns: 2_000 },
    );
  });

  it('the bench corpus: ids and counts identical to js-tiktoken', () => {
    for (const text of mixedMessages(128 * 1024, 7)) {
      const expected = referenceIds(encoding, text);
      expect(counters[encoding].encode(text)).toEqual(expected);
      expect(counters[encoding].count(text)).toBe(expected.length);
    }
  });

  it('long mixed pieces (past the memo and the short merge): counts identical to js-tiktoken', () => {
    fc.assert(
      fc.property(fc.constantFrom('abc', 'xyzXYZ', 'éàü', 'одиндва', '日本語中文'), fc.nat(400), (word, extra) => {
        const text = word.repeat(1 + Math.floor(extra / word.length));
        const expected = referenceIds(encoding, text);
        expect(counters[encoding].encode(text)).toEqual(expected);
        expect(counters[encoding].count(text)).toBe(expected.length);
      }),
      { numRuns: 100 },
    );
  });
});
