/**
 * The token counts of recently seen pieces, looked up by a range of the text without slicing it: a direct-mapped
 * cache (one slot per hash; a newer piece replaces the older one in its slot) whose pieces are copied into one
 * fixed buffer of code units. Its size is fixed (about 1.6 MB), and neither a hit nor a miss allocates.
 */

/** Slots in the cache (a power of two). */
const MEMO_SLOTS = 1 << 15;

/** Pieces longer than this (in UTF-16 code units) are not remembered. */
export const MEMO_MAX_PIECE = 24;

/** Counts by piece, for pieces of 1 to {@link MEMO_MAX_PIECE} code units. */
export class PieceMemo {
  private readonly units = new Uint16Array(MEMO_SLOTS * MEMO_MAX_PIECE);
  private readonly lengths = new Uint8Array(MEMO_SLOTS);
  private readonly counts = new Int32Array(MEMO_SLOTS);

  private slotOf(text: string, start: number, end: number): number {
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    return (hash ^ (hash >>> 15)) & (MEMO_SLOTS - 1);
  }

  /** The remembered count of `text[start, end)`, or -1. */
  get(text: string, start: number, end: number): number {
    const slot = this.slotOf(text, start, end);
    const length = end - start;
    if (this.lengths[slot] !== length) return -1;
    const units = this.units;
    for (let i = 0, at = slot * MEMO_MAX_PIECE; i < length; i++, at++) {
      if (units[at] !== text.charCodeAt(start + i)) return -1;
    }
    return this.counts[slot]!;
  }

  /** Forgets every piece. */
  clear(): void {
    this.lengths.fill(0);
  }

  /** Remembers the count of `text[start, end)` (at most {@link MEMO_MAX_PIECE} code units). */
  set(text: string, start: number, end: number, count: number): void {
    const slot = this.slotOf(text, start, end);
    const units = this.units;
    for (let i = start, at = slot * MEMO_MAX_PIECE; i < end; i++, at++) units[at] = text.charCodeAt(i);
    this.lengths[slot] = end - start;
    this.counts[slot] = count;
  }
}
