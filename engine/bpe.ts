/**
 * Byte-pair merging, as the reference does it (tiktoken's algorithm, and every JS port's): repeatedly merge the
 * adjacent pair of parts whose concatenation has the lowest rank, leftmost on ties, until no adjacent pair is a token.
 *
 * Two implementations of that one order. {@link shortMerge} scans all pairs after each merge, in typed arrays without
 * allocating: quadratic, and the fastest for the short pieces of ordinary text. {@link heapMerge} keeps the candidate
 * pairs in a binary heap ordered by (rank, position), in O(n log n), for long pieces: 64 KB of one letter or of
 * unbroken Han characters would otherwise stall a worker for seconds to minutes. Both give identical ids (tested
 * against tiktoken and against a transcription of the reference).
 */

/** Rank of `bytes[start, end)` in the encoding, or -1 when that sequence is not a token. */
export type RankOf = (bytes: Uint8Array, start: number, end: number) => number;

/** What {@link shortMerge} asks of an encoding. */
export interface PairRanks {
  /** Ranks of the 256 single bytes. */
  readonly byteRanks: Int32Array;
  /** Rank of `bytes[start, end)`, which is token `left` followed by token `right`, or -1 when it is not a token. */
  pairRank(left: number, right: number, bytes: Uint8Array, start: number, end: number): number;
}

/** Pieces of this many bytes or more go to {@link heapMerge}; shorter ones to {@link shortMerge}. */
export const LONG_PIECE_BYTES = 256;

const NO_PAIR = 0x7fffffff;

/** Scratch arrays of {@link shortMerge}, grown on demand: part starts, part ranks, ranks of adjacent pairs. */
let scratchStarts = new Int32Array(LONG_PIECE_BYTES + 1);
let scratchParts = new Int32Array(LONG_PIECE_BYTES);
let scratchPairs = new Int32Array(LONG_PIECE_BYTES);

/** Rank of merging part `i` with part `i + 1`, or NO_PAIR. */
function pairAt(ranks: PairRanks, piece: Uint8Array, starts: Int32Array, parts: Int32Array, i: number): number {
  const rank = ranks.pairRank(parts[i]!, parts[i + 1]!, piece, starts[i]!, starts[i + 2]!);
  return rank < 0 ? NO_PAIR : rank;
}

/**
 * Merges `piece[0, length)` by scanning every pair after each merge. Returns the number of tokens; when `out` is
 * given, also appends their ranks to it.
 */
export function shortMerge(piece: Uint8Array, length: number, ranks: PairRanks, out?: number[]): number {
  if (scratchStarts.length <= length) {
    scratchStarts = new Int32Array(length + 1);
    scratchParts = new Int32Array(length);
    scratchPairs = new Int32Array(length);
  }
  const starts = scratchStarts;
  const parts = scratchParts;
  const pairs = scratchPairs;
  const byteRanks = ranks.byteRanks;
  for (let i = 0; i < length; i++) {
    starts[i] = i;
    parts[i] = byteRanks[piece[i]!]!;
  }
  starts[length] = length;
  for (let i = 0; i + 1 < length; i++) pairs[i] = pairAt(ranks, piece, starts, parts, i);
  let count = length;
  while (count > 1) {
    let best = NO_PAIR;
    let at = -1;
    for (let i = 0; i + 1 < count; i++) {
      if (pairs[i]! < best) {
        best = pairs[i]!;
        at = i;
      }
    }
    if (at < 0) break;
    // Part at+1 joins part at: shift the later parts (and their pairs) down by one.
    parts[at] = best;
    count--;
    for (let i = at + 1; i < count; i++) {
      starts[i] = starts[i + 1]!;
      parts[i] = parts[i + 1]!;
      pairs[i] = pairs[i + 1]!;
    }
    starts[count] = length;
    pairs[at] = at + 1 < count ? pairAt(ranks, piece, starts, parts, at) : NO_PAIR;
    if (at > 0) pairs[at - 1] = pairAt(ranks, piece, starts, parts, at - 1);
  }
  if (out) for (let i = 0; i < count; i++) out.push(parts[i]!);
  return count;
}

/** A min-heap of (rank, position, stamp) triples in parallel arrays. */
class PairHeap {
  private ranks: number[] = [];
  private positions: number[] = [];
  private stamps: number[] = [];

  get size(): number {
    return this.ranks.length;
  }

  private less(a: number, b: number): boolean {
    return (
      this.ranks[a]! < this.ranks[b]! || (this.ranks[a] === this.ranks[b] && this.positions[a]! < this.positions[b]!)
    );
  }

  private swap(a: number, b: number): void {
    [this.ranks[a], this.ranks[b]] = [this.ranks[b]!, this.ranks[a]!];
    [this.positions[a], this.positions[b]] = [this.positions[b]!, this.positions[a]!];
    [this.stamps[a], this.stamps[b]] = [this.stamps[b]!, this.stamps[a]!];
  }

  push(rank: number, position: number, stamp: number): void {
    this.ranks.push(rank);
    this.positions.push(position);
    this.stamps.push(stamp);
    let i = this.ranks.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** Removes the smallest entry; returns [rank, position, stamp]. */
  pop(): [number, number, number] {
    const top: [number, number, number] = [this.ranks[0]!, this.positions[0]!, this.stamps[0]!];
    const last = this.ranks.length - 1;
    this.swap(0, last);
    this.ranks.pop();
    this.positions.pop();
    this.stamps.pop();
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < this.ranks.length && this.less(left, smallest)) smallest = left;
      if (right < this.ranks.length && this.less(right, smallest)) smallest = right;
      if (smallest === i) break;
      this.swap(i, smallest);
      i = smallest;
    }
    return top;
  }
}

/** The token ranks of `piece[0, length)`, merged in the reference's order with a heap over adjacent pairs. */
export function heapMerge(piece: Uint8Array, rankOf: RankOf, length = piece.length): number[] {
  const n = length;
  // Parts are identified by their start offset; next[start] is the start of the following part (n at the end).
  const next = new Int32Array(n + 1);
  const prev = new Int32Array(n + 1);
  const alive = new Uint8Array(n + 1);
  const stamp = new Int32Array(n + 1);
  for (let i = 0; i <= n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
    alive[i] = 1;
  }
  const heap = new PairHeap();
  /** Rank of merging the part at `start` with the next one, or Infinity. */
  const pairRank = (start: number): number => {
    const second = next[start]!;
    if (second >= n) return Infinity;
    const rank = rankOf(piece, start, next[second]!);
    return rank < 0 ? Infinity : rank;
  };
  const schedule = (start: number) => {
    stamp[start]!++;
    const rank = pairRank(start);
    if (rank !== Infinity) heap.push(rank, start, stamp[start]!);
  };
  for (let i = 0; i < n; i++) schedule(i);

  while (heap.size > 0) {
    const [, start, seen] = heap.pop();
    if (!alive[start] || stamp[start] !== seen) continue; // stale: the part changed since it was scheduled
    const second = next[start]!;
    // Merge `second` into `start`.
    alive[second] = 0;
    next[start] = next[second]!;
    prev[next[second]!] = start;
    schedule(start);
    if (prev[start]! >= 0) schedule(prev[start]!);
  }

  const tokens: number[] = [];
  for (let start = 0; start < n; start = next[start]!) {
    const rank = rankOf(piece, start, next[start]!);
    if (rank < 0) throw new Error(`byte sequence at ${start} is not a token`);
    tokens.push(rank);
  }
  return tokens;
}
