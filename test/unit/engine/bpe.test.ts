/**
 * Both merges (the allocation-free scan for short pieces, the O(n log n) heap for long ones) give the reference's ids:
 * against a direct transcription of the reference algorithm on toy rank tables (property test), and against tiktoken
 * (OpenAI's Rust tokenizer, WASM build) on long unbroken inputs.
 */
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { heapMerge, shortMerge } from '../../../engine/bpe.ts';
import type { PairRanks } from '../../../engine/bpe.ts';
import { loadTokenCounter } from '../../../engine/tokens.ts';
import type { TokenCounter } from '../../../engine/tokens.ts';
import { pathologicalInputs } from '../../../bench/corpus.ts';

/** Rank of `bytes[start, end)`, or -1 when it is not a token. */
type RankOf = (bytes: Uint8Array, start: number, end: number) => number;

/** The reference merge: lowest rank, leftmost on ties, one scan per merge. */
function referenceMerge(piece: Uint8Array, rankOf: RankOf): number[] {
  const starts = Array.from({ length: piece.length + 1 }, (_, i) => i);
  const rankOrInfinity = (start: number, end: number) => {
    const rank = rankOf(piece, start, end);
    return rank < 0 ? Infinity : rank;
  };
  const rank = (i: number) => (i + 2 < starts.length ? rankOrInfinity(starts[i]!, starts[i + 2]!) : Infinity);
  for (;;) {
    let best = -1;
    let bestRank = Infinity;
    for (let i = 0; i + 2 < starts.length; i++) {
      const r = rank(i);
      if (r < bestRank) {
        bestRank = r;
        best = i;
      }
    }
    if (best === -1) break;
    starts.splice(best + 1, 1);
  }
  return starts.slice(0, -1).map((s, i) => rankOf(piece, s, starts[i + 1]!));
}

/** A toy encoding: every single byte is a token; some multi-byte sequences over a 3-letter alphabet are too. */
function toyRanks(seed: number): RankOf {
  const table = new Map<string, number>();
  for (let b = 0; b < 256; b++) table.set(String(b), b);
  let x = seed;
  const rand = () => (x = (x * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  for (let i = 0; i < 60; i++) {
    const length = 2 + Math.floor(rand() * 5);
    const bytes = Array.from({ length }, () => 97 + Math.floor(rand() * 3));
    const key = bytes.join(',');
    if (!table.has(key)) table.set(key, 256 + Math.floor(rand() * 1000));
  }
  return (bytes, start, end) =>
    table.get(end - start === 1 ? String(bytes[start]) : Array.from(bytes.subarray(start, end)).join(',')) ?? -1;
}

/** The toy encoding as {@link shortMerge} asks for it. */
function pairRanksOf(rankOf: RankOf): PairRanks {
  const byteRanks = Int32Array.from({ length: 256 }, (_, byte) => rankOf(Uint8Array.of(byte), 0, 1));
  return { byteRanks, pairRank: (_left, _right, bytes, start, end) => rankOf(bytes, start, end) };
}

describe('heap merge and short merge', () => {
  it('match the reference merge on random pieces and rank tables', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(97, 98, 99), { minLength: 1, maxLength: 300 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        (bytes, seed) => {
          const piece = Uint8Array.from(bytes);
          const rankOf = toyRanks(seed);
          const expected = referenceMerge(piece, rankOf);
          for (const merge of [heapMerge, shortMerge]) {
            const ids: number[] = [];
            expect(merge(piece, piece.length, pairRanksOf(rankOf), ids)).toBe(expected.length);
            expect(ids).toEqual(expected);
            expect(merge(piece, piece.length, pairRanksOf(rankOf))).toBe(expected.length);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('long unbroken inputs', () => {
  let counter: TokenCounter;
  let wasm: { encode(text: string, allowed: string[], disallowed: string[]): Uint32Array };
  beforeAll(async () => {
    counter = await loadTokenCounter('o200k_base');
    wasm = (createRequire(import.meta.url)('tiktoken') as { get_encoding(name: string): typeof wasm }).get_encoding(
      'o200k_base',
    );
  });

  it.each(Object.keys(pathologicalInputs()))(
    '%s: ids identical to tiktoken',
    (name) => {
      const text = pathologicalInputs()[name]!;
      expect(counter.encode(text)).toEqual(Array.from(wasm.encode(text, [], [])));
      expect(counter.count(text)).toBe(wasm.encode(text, [], []).length);
    },
    30_000,
  ); // tiktoken's own quadratic merge takes about a second on these, more on a busy machine

  it('random long pieces from small alphabets: ids identical to tiktoken', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('ab', 'aab1', 'xyz', '日本語', 'é😀', '=-', 'ACGT'),
        fc.integer({ min: 300, max: 3_000 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (alphabet, length, seed) => {
          const chars = [...alphabet];
          let x = seed;
          const text = Array.from({ length }, () => chars[(x = (x * 48271) % 2147483647) % chars.length]).join('');
          expect(counter.encode(text)).toEqual(Array.from(wasm.encode(text, [], [])));
        },
      ),
      { numRuns: 40 },
    );
  });
});
