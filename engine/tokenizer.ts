/**
 * A byte-pair tokenizer with the ids of OpenAI's tiktoken: a hand-written pre-tokenizer splits the text into pieces;
 * a piece that is one token is looked up directly; others are merged (see `bpe.ts`). Counting never builds id arrays
 * and remembers the count of recent pieces (words, punctuation and numbers recur in any real conversation).
 * Special tokens such as `<|endoftext|>` are ordinary text here.
 */
import { heapMerge, LONG_PIECE_BYTES, shortMerge } from './bpe.ts';
import type { RankOf } from './bpe.ts';
import type { PieceScanner } from './pretokenize.ts';
import { MEMO_MAX_PIECE, PieceMemo } from './tokenizer-memo.ts';
import { ByteRanks } from './tokenizer-ranks.ts';
import type { RawRanks } from './tokenizer-ranks.ts';
import { writeUtf8 } from './tokenizer-utf8.ts';

/** The UTF-8 bytes of one piece, written into a buffer reused across pieces. */
class Utf8Buffer {
  bytes = new Uint8Array(1024);

  /** Encodes `text[start, end)` and returns its length in bytes. */
  write(text: string, start: number, end: number): number {
    if (this.bytes.length < (end - start) * 3) this.bytes = new Uint8Array((end - start) * 6);
    return writeUtf8(text, start, end, this.bytes, 0);
  }
}

/** Encodes and counts text in one encoding. */
export class Tokenizer {
  private readonly ranks: ByteRanks;
  private readonly pieceEnd: PieceScanner;
  private readonly rankOf: RankOf;
  private readonly utf8 = new Utf8Buffer();
  private readonly memo = new PieceMemo();

  /** Builds the rank table from `raw` (about 0.1 s for o200k_base); `pieceEnd` is the encoding's split. */
  constructor(raw: RawRanks, pieceEnd: PieceScanner) {
    const ranks = new ByteRanks(raw);
    this.ranks = ranks;
    this.pieceEnd = pieceEnd;
    this.rankOf = (bytes, start, end) => ranks.rank(bytes, start, end);
  }

  /** The token ids of `text`. */
  encode(text: string): number[] {
    const ids: number[] = [];
    for (let start = 0, end: number; start < text.length; start = end) {
      end = this.pieceEnd(text, start);
      const length = this.utf8.write(text, start, end);
      const bytes = this.utf8.bytes;
      const rank = this.ranks.rank(bytes, 0, length);
      if (rank >= 0) ids.push(rank);
      else if (length >= LONG_PIECE_BYTES) for (const id of heapMerge(bytes, this.rankOf, length)) ids.push(id);
      else shortMerge(bytes, length, this.ranks, ids);
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
        tokens += this.countPiece(text, start, end);
      } else {
        let count = this.memo.get(text, start, end);
        if (count < 0) {
          count = this.countPiece(text, start, end);
          this.memo.set(text, start, end, count);
        }
        tokens += count;
      }
    }
    return tokens;
  }

  private countPiece(text: string, start: number, end: number): number {
    const length = this.utf8.write(text, start, end);
    const bytes = this.utf8.bytes;
    if (this.ranks.rank(bytes, 0, length) >= 0) return 1;
    if (length >= LONG_PIECE_BYTES) return heapMerge(bytes, this.rankOf, length).length;
    return shortMerge(bytes, length, this.ranks);
  }
}
