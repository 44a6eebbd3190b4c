/**
 * The rank tables answer for every token of both encodings (short tokens in the packed table, long ones in the byte
 * table, holes skipped), say no for sequences that are not tokens, and the pair cache agrees with a direct lookup.
 */
import cl100k from 'gpt-tokenizer/bpeRanks/cl100k_base';
import o200k from 'gpt-tokenizer/bpeRanks/o200k_base';
import { describe, expect, it } from 'vitest';
import { ByteRanks } from '../../../engine/tokenizer-ranks.ts';
import type { RawRanks } from '../../../engine/tokenizer-ranks.ts';

const bytesOf = (entry: string | readonly number[]) =>
  typeof entry === 'string' ? new TextEncoder().encode(entry) : Uint8Array.from(entry);

describe.each([
  ['o200k_base', o200k],
  ['cl100k_base', cl100k],
] as [string, RawRanks][])('%s rank tables', (_name, raw) => {
  const ranks = new ByteRanks(raw);

  it('find every token at its rank', () => {
    let checked = 0;
    raw.forEach((entry, rank) => {
      const bytes = bytesOf(entry);
      if (ranks.rank(bytes, 0, bytes.length) !== rank) throw new Error(`token ${rank} not found`);
      checked++;
    });
    expect(checked).toBeGreaterThan(100_000);
  });

  it('find tokens inside a larger buffer, and nothing for sequences that are not tokens', () => {
    const text = new TextEncoder().encode('xx hello world, 人工智能 \u0000\u00ff');
    const hello = ranks.rank(new TextEncoder().encode(' hello'), 0, 6);
    expect(hello).toBeGreaterThanOrEqual(0);
    expect(ranks.rank(text, 2, 8)).toBe(hello);
    expect(ranks.rank(new TextEncoder().encode('qzxqzxqzxqzx'), 0, 12)).toBe(-1);
    expect(ranks.rank(new TextEncoder().encode('hello world, this is no single token'), 0, 35)).toBe(-1);
    expect(ranks.rank(Uint8Array.of(0xff, 0xfe, 0xfd, 0xfc), 0, 4)).toBe(-1);
  });

  it('answer pairs of tokens from the cache as a direct lookup does', () => {
    const tokens = raw.filter((entry) => entry !== undefined).map(bytesOf);
    for (let i = 0; i < 20_000; i++) {
      const left = tokens[(i * 7919) % tokens.length]!;
      const right = tokens[(i * 104_729 + 13) % 1_000]!; // short, frequent tokens on the right
      const both = new Uint8Array(left.length + right.length);
      both.set(left);
      both.set(right, left.length);
      const expected = ranks.rank(both, 0, both.length);
      const leftRank = ranks.rank(left, 0, left.length);
      const rightRank = ranks.rank(right, 0, right.length);
      for (let repeat = 0; repeat < 2; repeat++) {
        expect(ranks.pairRank(leftRank, rightRank, both, 0, both.length)).toBe(expected);
      }
    }
  });
});
