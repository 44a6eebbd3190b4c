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

/** What the merges ask of an encoding. */
export interface PairRanks {
  /** Ranks of the 256 single bytes. */
  readonly byteRanks: Int32Array;
  /** Rank of `bytes[start, end)`, which is token `left` followed by token `right`, or -1 when it is not a token. */
  pairRank(left: number, right: number, bytes: Uint8Array, start: number, end: number): number;
}

/** Pieces of this many bytes or more go to {@link heapMerge}; shorter ones to {@link shortMerge}. */
export const LONG_PIECE_BYTES = 256;

/** Above every rank, and a small integer for V8 (no boxing even in unoptimized code). */
const NO_PAIR = 0x3fffffff;

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

/** A binary min-heap of candidate merges (pair rank, position of the pair's first part) in typed arrays. */
class PairHeap {
  private readonly ranks: Int32Array;
  private readonly positions: Int32Array;
  size = 0;

  constructor(capacity: number) {
    this.ranks = new Int32Array(capacity);
    this.positions = new Int32Array(capacity);
  }

  /** Whether entry `a` comes before entry `b`: lower rank, then leftmost. */
  private before(a: number, b: number): boolean {
    const ranks = this.ranks;
    return ranks[a]! < ranks[b]! || (ranks[a] === ranks[b] && this.positions[a]! < this.positions[b]!);
  }

  private swap(a: number, b: number): void {
    const rank = this.ranks[a]!;
    const position = this.positions[a]!;
    this.ranks[a] = this.ranks[b]!;
    this.positions[a] = this.positions[b]!;
    this.ranks[b] = rank;
    this.positions[b] = position;
  }

  push(rank: number, position: number): void {
    let i = this.size++;
    this.ranks[i] = rank;
    this.positions[i] = position;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  /** The rank of the first entry; its position is {@link topPosition}. */
  topRank(): number {
    return this.ranks[0]!;
  }

  topPosition(): number {
    return this.positions[0]!;
  }

  /** Removes the first entry. */
  pop(): void {
    this.size--;
    this.swap(0, this.size);
    for (let i = 0; ;) {
      const left = 2 * i + 1;
      let first = i;
      if (left < this.size && this.before(left, first)) first = left;
      if (left + 1 < this.size && this.before(left + 1, first)) first = left + 1;
      if (first === i) break;
      this.swap(i, first);
      i = first;
    }
  }
}

/**
 * Merges `piece[0, length)` in the reference's order with a heap over adjacent pairs, in O(n log n). Returns the
 * number of tokens; when `out` is given, also appends their ranks to it.
 */
export function heapMerge(piece: Uint8Array, length: number, ranks: PairRanks, out?: number[]): number {
  // Parts are identified by the offset where they start: their rank, the next part's start (length at the end), the
  // previous part's start (-1 at the start), and the rank of the pair they begin (NO_PAIR when it is not a token).
  const parts = new Int32Array(length);
  const next = new Int32Array(length);
  const prev = new Int32Array(length);
  const pairs = new Int32Array(length);
  for (let i = 0; i < length; i++) {
    parts[i] = ranks.byteRanks[piece[i]!]!;
    next[i] = i + 1;
    prev[i] = i - 1;
  }
  // Every merge adds at most two candidates to the heap; a stale one is recognized by its rank (below).
  const heap = new PairHeap(3 * length);
  const schedule = (start: number): void => {
    const second = next[start]!;
    let rank = NO_PAIR;
    if (second < length) rank = ranks.pairRank(parts[start]!, parts[second]!, piece, start, next[second]!);
    if (rank < 0) rank = NO_PAIR;
    pairs[start] = rank;
    if (rank !== NO_PAIR) heap.push(rank, start);
  };
  for (let i = 0; i < length; i++) schedule(i);
  let count = length;
  while (heap.size > 0) {
    const rank = heap.topRank();
    const start = heap.topPosition();
    heap.pop();
    // Stale unless the part still begins a pair of that rank (a new pair of the same rank there is the same merge).
    if (pairs[start] !== rank) continue;
    const second = next[start]!;
    parts[start] = rank;
    next[start] = next[second]!;
    if (next[second]! < length) prev[next[second]!] = start;
    pairs[second] = NO_PAIR; // the second part is gone
    count--;
    schedule(start);
    if (prev[start]! >= 0) schedule(prev[start]!);
  }
  if (out) for (let start = 0; start < length; start = next[start]!) out.push(parts[start]!);
  return count;
}
