/**
 * A byte-pair tokenizer with the ids of OpenAI's tiktoken: a hand-written pre-tokenizer splits the text into pieces;
 * a piece that is one token is looked up directly; a piece of CJK characters is cut where no token can span the cut
 * (`tokenizer-joins.ts`); the rest is merged (`bpe.ts`). Counting never builds id arrays and remembers the counts of
 * recent pieces (words, punctuation, numbers and characters recur in any real conversation). Special tokens such as
 * `<|endoftext|>` are ordinary text here.
 */
import { heapMerge, LONG_PIECE_BYTES, shortMerge } from './bpe.ts';
import type { PieceScanner } from './pretokenize.ts';
import { CharJoins } from './tokenizer-joins.ts';
import { MEMO_MAX_PIECE, PieceMemo } from './tokenizer-memo.ts';
import { ByteRanks } from './tokenizer-ranks.ts';
import type { RawRanks } from './tokenizer-ranks.ts';
import { writeUtf8 } from './tokenizer-utf8.ts';
import { WARM_UP_ROUNDS, warmUpText } from './tokenizer-warmup.ts';

/** The UTF-8 bytes of one piece, written into a buffer reused across pieces. */
class Utf8Buffer {
  bytes = new Uint8Array(1024);

  /** Encodes `text[start, end)` and returns its length in bytes. */
  write(text: string, start: number, end: number): number {
    if (this.bytes.length < (end - start) * 3) this.bytes = new Uint8Array((end - start) * 6);
    return writeUtf8(text, start, end, this.bytes, 0);
  }
}

/** Whether `text[start, end)` has only characters of 3 UTF-8 bytes (U+0800 to U+FFFF, no surrogates). */
function allThreeBytes(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x800 || (c >= 0xd800 && c <= 0xdfff)) return false;
  }
  return true;
}

/** Encodes and counts text in one encoding. */
export class Tokenizer {
  private readonly ranks: ByteRanks;
  private readonly joins: CharJoins;
  private readonly pieceEnd: PieceScanner;
  private readonly utf8 = new Utf8Buffer();
  private readonly memo = new PieceMemo();

  /**
   * Builds the rank tables from `raw` (how long for o200k_base: see BENCHMARKS.md, Figures from earlier sessions);
   * `pieceEnd` is the encoding's split.
   */
  constructor(raw: RawRanks, pieceEnd: PieceScanner) {
    const ranks = new ByteRanks(raw);
    this.ranks = ranks;
    this.joins = new CharJoins((visit) => ranks.forEachToken(visit));
    this.pieceEnd = pieceEnd;
  }

  /**
   * Counts and encodes built-in text (`tokenizer-warmup.ts`) so that V8 optimizes the hot code now rather than during
   * the first real messages, then forgets those pieces: what it remembers afterwards comes from real text only.
   */
  warmUp(): void {
    for (let round = 0; round < WARM_UP_ROUNDS; round++) {
      const text = warmUpText(round);
      for (const line of text.split('\n')) this.count(line); // many calls, as with real messages
      this.count(text);
      if (round % 10 === 0) this.encode(text);
    }
    this.memo.clear();
    this.ranks.clearPairCache();
  }

  /** The token ids of `text`. */
  encode(text: string): number[] {
    const ids: number[] = [];
    for (let start = 0, end: number; start < text.length; start = end) {
      end = this.pieceEnd(text, start);
      let from = start;
      if (this.cuttable(text, start, end)) {
        for (let i = start + 1; i < end; i++) {
          if (this.joins.mayJoin(text.charCodeAt(i - 1), text.charCodeAt(i))) continue;
          this.mergeIds(text, from, i, ids);
          from = i;
        }
      }
      this.mergeIds(text, from, end, ids);
    }
    return ids;
  }

  /** The number of tokens of `text`: the length of {@link encode}'s result, without building it. */
  count(text: string): number {
    let tokens = 0;
    for (let start = 0, end: number; start < text.length; start = end) {
      end = this.pieceEnd(text, start);
      if (end - start === 1 && text.charCodeAt(start) < 0x80) {
        tokens++; // every ASCII character is a token
      } else if (end - start > MEMO_MAX_PIECE) {
        tokens += this.countParts(text, start, end);
      } else {
        let count = this.memo.get(text, start, end);
        if (count < 0) {
          count = this.countParts(text, start, end);
          this.memo.set(text, start, end, count);
        }
        tokens += count;
      }
    }
    return tokens;
  }

  /** Whether `text[start, end)` is made of 3-byte characters, which {@link CharJoins} may cut. */
  private cuttable(text: string, start: number, end: number): boolean {
    return end - start > 1 && allThreeBytes(text, start, end);
  }

  /** Tokens of a piece, cut where no token spans the cut; each part from the memo. */
  private countParts(text: string, start: number, end: number): number {
    if (!this.cuttable(text, start, end)) return this.mergeCount(text, start, end);
    let tokens = 0;
    let from = start;
    for (let i = start + 1; i < end; i++) {
      if (this.joins.mayJoin(text.charCodeAt(i - 1), text.charCodeAt(i))) continue;
      tokens += this.countPart(text, from, i);
      from = i;
    }
    return from === start ? this.mergeCount(text, start, end) : tokens + this.countPart(text, from, end);
  }

  /** Tokens of a part that cannot be cut further, from the memo when short enough. */
  private countPart(text: string, start: number, end: number): number {
    if (end - start > MEMO_MAX_PIECE) return this.mergeCount(text, start, end);
    let count = this.memo.get(text, start, end);
    if (count < 0) {
      count = this.mergeCount(text, start, end);
      this.memo.set(text, start, end, count);
    }
    return count;
  }

  private mergeCount(text: string, start: number, end: number): number {
    const length = this.utf8.write(text, start, end);
    const bytes = this.utf8.bytes;
    if (this.ranks.rank(bytes, 0, length) >= 0) return 1;
    if (length >= LONG_PIECE_BYTES) return heapMerge(bytes, length, this.ranks);
    return shortMerge(bytes, length, this.ranks);
  }

  private mergeIds(text: string, start: number, end: number, ids: number[]): void {
    const length = this.utf8.write(text, start, end);
    const bytes = this.utf8.bytes;
    const rank = this.ranks.rank(bytes, 0, length);
    if (rank >= 0) ids.push(rank);
    else if (length >= LONG_PIECE_BYTES) heapMerge(bytes, length, this.ranks, ids);
    else shortMerge(bytes, length, this.ranks, ids);
  }
}
