/**
 * Where a piece of CJK (or any other 3-byte UTF-8) characters can be cut before merging without changing its tokens.
 *
 * If no token of the encoding spans a boundary of the piece, no merge can cross it (a merge across it would make such
 * a token), and the merges on either side run as they would on that side alone (the reference picks the lowest rank,
 * leftmost on ties, and a side's candidates do not depend on the other side): so the tokens of the piece are the
 * tokens of the left part followed by those of the right part. Cut at every such boundary, a random run of Han
 * characters falls apart into single characters and known words, which the memo already holds.
 *
 * A token spans the boundary between characters `a` and `b` when it holds `a` (or a suffix of its bytes) followed by
 * `b` (or a prefix of its bytes). Every such pair of fragments found inside a token is recorded at load; a boundary
 * whose fragments match none of them is cut.
 */

/** The bytes of every token: `forEach(bytes, start, end)`. */
export type ForEachToken = (visit: (bytes: Uint8Array, start: number, end: number) => void) => void;

/** Left fragments that are the last two bytes of a character: 0x10000 + their 12 payload bits. */
const LAST_TWO = 0x10000;
/** Right fragments that are the first two bytes of a character: 0x400 + their 10 payload bits (below U+0800). */
const FIRST_TWO = 0x400;

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/** Code point of the 3-byte UTF-8 sequence at `at`. */
function decode3(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! & 0x0f) << 12) | ((bytes[at + 1]! & 0x3f) << 6) | (bytes[at + 2]! & 0x3f);
}

/** The boundaries between 3-byte characters that some token spans. */
export class CharJoins {
  /** Pairs of (left key, right key); a left key of 0 marks an empty slot. */
  private readonly pairs: Int32Array;
  private readonly mask: number;
  /** Which left and right keys occur at all, to skip most lookups. */
  private readonly lefts = new Uint8Array(0x20000);
  private readonly rights = new Uint8Array(0x10000);

  constructor(forEachToken: ForEachToken) {
    const found: number[] = [];
    forEachToken((bytes, start, end) => {
      for (let k = start + 1; k < end; k++) {
        if ((bytes[k]! & 0xf0) !== 0xe0 || !isContinuation(bytes[k - 1]!)) continue; // a 3-byte character at k
        let first = k - 1; // where the character before k starts, or the token's start if it starts inside it
        while (first > start && isContinuation(bytes[first]!)) first--;
        let left: number;
        if ((bytes[first]! & 0xf0) === 0xe0 && k - first === 3) left = decode3(bytes, first);
        else if (isContinuation(bytes[first]!) && k - first === 1) left = bytes[k - 1]!;
        else if (isContinuation(bytes[first]!) && k - first === 2) {
          left = LAST_TWO | ((bytes[k - 2]! & 0x3f) << 6) | (bytes[k - 1]! & 0x3f);
        } else continue; // not the end of a 3-byte character
        let right: number;
        if (end - k >= 3 && isContinuation(bytes[k + 1]!) && isContinuation(bytes[k + 2]!)) right = decode3(bytes, k);
        else if (end - k === 1) right = bytes[k]!;
        else if (end - k === 2 && isContinuation(bytes[k + 1]!)) {
          right = FIRST_TWO | ((bytes[k]! & 0x0f) << 6) | (bytes[k + 1]! & 0x3f);
        } else continue;
        found.push(left, right);
      }
    });
    let size = 1024;
    while (size < found.length) size *= 2; // found.length / 2 pairs, at most half full
    this.mask = size - 1;
    this.pairs = new Int32Array(size * 2);
    for (let i = 0; i < found.length; i += 2) {
      const left = found[i]!;
      const right = found[i + 1]!;
      this.lefts[left] = 1;
      this.rights[right] = 1;
      if (!this.has(left, right)) {
        let slot = this.slotOf(left, right);
        while (this.pairs[slot * 2] !== 0) slot = (slot + 1) & this.mask;
        this.pairs[slot * 2] = left;
        this.pairs[slot * 2 + 1] = right;
      }
    }
  }

  private slotOf(left: number, right: number): number {
    const hash = Math.imul(left ^ Math.imul(right, 0x85ebca6b), 0x9e3779b1);
    return (hash ^ (hash >>> 15)) & this.mask;
  }

  private has(left: number, right: number): boolean {
    for (let slot = this.slotOf(left, right); ; slot = (slot + 1) & this.mask) {
      const stored = this.pairs[slot * 2]!;
      if (stored === 0) return false;
      if (stored === left && this.pairs[slot * 2 + 1] === right) return true;
    }
  }

  /** Whether some token may span the boundary between characters `left` and `right` (both 3 bytes in UTF-8). */
  mayJoin(left: number, right: number): boolean {
    // Fragments on the left: the character, its last byte, its last two bytes; on the right: the character, its
    // first byte, its first two bytes.
    const right1 = 0xe0 | (right >> 12);
    const right2 = FIRST_TWO | ((right >> 6) & 0x3ff);
    return (
      this.joinsFrom(left, right, right1, right2) ||
      this.joinsFrom(0x80 | (left & 0x3f), right, right1, right2) ||
      this.joinsFrom(LAST_TWO | (left & 0xfff), right, right1, right2)
    );
  }

  private joinsFrom(left: number, right: number, right1: number, right2: number): boolean {
    if (!this.lefts[left]) return false;
    return (
      (this.rights[right] === 1 && this.has(left, right)) ||
      (this.rights[right1] === 1 && this.has(left, right1)) ||
      (this.rights[right2] === 1 && this.has(left, right2))
    );
  }
}
