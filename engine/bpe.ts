/**
 * Byte-pair merging in O(n log n). The reference algorithm (tiktoken's, and every JS port's) scans all adjacent pairs
 * for the lowest rank after each merge: quadratic in the length of one pre-tokenized piece, so 64 KB of one letter
 * or of unbroken Han characters stalls a worker for seconds to minutes. This merge keeps the candidate pairs in a
 * binary heap ordered by (rank, position): the lowest rank first and the leftmost on ties, which is exactly the order
 * in which the reference merges, so the token ids are identical (tested against tiktoken).
 */

/** Rank of a byte sequence in the encoding, or undefined when it is not a token. */
export type RankOf = (bytes: Uint8Array) => number | undefined;

/** Pieces shorter than this go to the library's own merge (faster on short input, and identical). */
export const LONG_PIECE_BYTES = 256;

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

/**
 * The token ranks of one piece, merged as the reference does: repeatedly merge the adjacent pair of parts whose
 * concatenation has the lowest rank (leftmost on ties) until no adjacent pair is a token.
 */
export function heapMerge(piece: Uint8Array, rankOf: RankOf): number[] {
  const n = piece.length;
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
    return rankOf(piece.subarray(start, next[second])) ?? Infinity;
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
    const rank = rankOf(piece.subarray(start, next[start]));
    if (rank === undefined) throw new Error(`byte sequence at ${start} is not a token`);
    tokens.push(rank);
  }
  return tokens;
}
