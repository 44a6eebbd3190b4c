/**
 * The rank (token id) of a byte sequence, looked up without allocating. Built once from gpt-tokenizer's rank data
 * (an array indexed by rank whose entries are the token's text, or its bytes when they are not valid UTF-8), so no
 * new data ships with longrun.
 *
 * Two open-addressing hash tables: tokens of up to 8 bytes (three in four) are keys packed into two integers stored
 * beside their rank, so a lookup reads one cache line; longer tokens are compared with their bytes in one buffer.
 * The merge asks about pairs of adjacent tokens, and the same pairs recur (the bytes inside one CJK character, say):
 * a small direct-mapped cache keyed by the two ranks answers those without touching the tables.
 */
import { writeUtf8 } from './tokenizer-utf8.ts';

/** gpt-tokenizer's rank data: index = rank; a string (UTF-8 text) or the raw bytes; holes for unused ranks. */
export type RawRanks = readonly (string | readonly number[])[];

/** Longest token, in bytes, that the packed table holds. */
const PACKED_MAX = 8;
/** Int32s per packed slot: low 4 bytes, high 4 bytes, length (0: empty slot), rank. */
const STRIDE = 4;
const NONE = -1;
/** The pair cache has 2^PAIR_BITS slots of 3 Int32s (192 KB: small enough to stay in the CPU's cache). */
const PAIR_BITS = 14;

/** Bytes `[start, start + length)` (length ≤ 4) as one little-endian integer. */
function pack(bytes: Uint8Array, start: number, length: number): number {
  let word = 0;
  for (let i = 0; i < length; i++) word |= bytes[start + i]! << (i << 3);
  return word;
}

function hashPacked(low: number, high: number, length: number): number {
  const hash = Math.imul(low ^ Math.imul(high ^ length, 0x27d4eb2d), 0x9e3779b1);
  return hash ^ (hash >>> 15);
}

/** FNV-1a over `bytes[start, end)`. */
function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
  return hash ^ (hash >>> 15);
}

function tableSize(entries: number): number {
  let size = 1024;
  while (size < entries * 2) size *= 2;
  return size;
}

/** Token ranks by byte sequence. */
export class ByteRanks {
  /** Ranks of the 256 single bytes (every byte is a token in the encodings we load). */
  readonly byteRanks = new Int32Array(256);
  /** Left rank, right rank, and the rank of their concatenation (or -1) per slot; left -1 when empty. */
  private readonly pairs = new Int32Array((1 << PAIR_BITS) * 3).fill(NONE);
  private readonly packed: Int32Array;
  private readonly packedMask: number;
  private readonly bytes: Uint8Array;
  private readonly starts: Int32Array;
  private readonly long: Int32Array;
  private readonly longMask: number;

  constructor(raw: RawRanks) {
    let capacity = 0;
    for (const entry of raw) {
      if (entry !== undefined) capacity += typeof entry === 'string' ? entry.length * 3 : entry.length;
    }
    const bytes = new Uint8Array(capacity);
    this.starts = new Int32Array(raw.length + 1);
    let total = 0;
    let shortCount = 0;
    for (let rank = 0; rank < raw.length; rank++) {
      this.starts[rank] = total;
      const entry = raw[rank];
      if (entry === undefined) continue; // a hole: an unused rank of zero length, never in the tables
      const start = total;
      if (typeof entry === 'string') total += writeUtf8(entry, 0, entry.length, bytes, total);
      else for (const byte of entry) bytes[total++] = byte;
      if (total - start <= PACKED_MAX) shortCount++;
    }
    this.starts[raw.length] = total;
    this.bytes = bytes.slice(0, total);

    const packedSize = tableSize(shortCount);
    this.packedMask = packedSize - 1;
    this.packed = new Int32Array(packedSize * STRIDE);
    const longSize = tableSize(raw.length - shortCount);
    this.longMask = longSize - 1;
    this.long = new Int32Array(longSize).fill(NONE);
    for (let rank = 0; rank < raw.length; rank++) {
      const start = this.starts[rank]!;
      const end = this.starts[rank + 1]!;
      if (end === start) continue;
      if (end - start <= PACKED_MAX) this.insertPacked(start, end, rank);
      else {
        let slot = hashBytes(this.bytes, start, end) & this.longMask;
        while (this.long[slot] !== NONE) slot = (slot + 1) & this.longMask;
        this.long[slot] = rank;
      }
    }
    const single = new Uint8Array(1);
    for (let byte = 0; byte < 256; byte++) {
      single[0] = byte;
      this.byteRanks[byte] = this.rank(single, 0, 1);
      if (this.byteRanks[byte] === NONE) throw new Error(`rank data without the single byte ${byte}`);
    }
  }

  /** Empties the pair cache. */
  clearPairCache(): void {
    this.pairs.fill(NONE);
  }

  /** Calls `visit` with the bytes of every token. */
  forEachToken(visit: (bytes: Uint8Array, start: number, end: number) => void): void {
    for (let rank = 0; rank + 1 < this.starts.length; rank++) {
      if (this.starts[rank + 1]! > this.starts[rank]!) visit(this.bytes, this.starts[rank]!, this.starts[rank + 1]!);
    }
  }

  /**
   * The rank of `bytes[start, end)`, which is token `left` followed by token `right`, or -1 when it is not a token.
   * The answer depends on the two ranks alone, so it is cached by them.
   */
  pairRank(left: number, right: number, bytes: Uint8Array, start: number, end: number): number {
    const pairs = this.pairs;
    const at = ((Math.imul(left, 0x9e3779b1) ^ Math.imul(right, 0x85ebca6b)) >>> (32 - PAIR_BITS)) * 3;
    if (pairs[at] === left && pairs[at + 1] === right) return pairs[at + 2]!;
    const rank = this.rank(bytes, start, end);
    pairs[at] = left;
    pairs[at + 1] = right;
    pairs[at + 2] = rank;
    return rank;
  }

  private insertPacked(start: number, end: number, rank: number): void {
    const length = end - start;
    const low = pack(this.bytes, start, Math.min(length, 4));
    const high = length > 4 ? pack(this.bytes, start + 4, length - 4) : 0;
    let slot = hashPacked(low, high, length) & this.packedMask;
    while (this.packed[slot * STRIDE + 2] !== 0) slot = (slot + 1) & this.packedMask;
    const at = slot * STRIDE;
    this.packed[at] = low;
    this.packed[at + 1] = high;
    this.packed[at + 2] = length;
    this.packed[at + 3] = rank;
  }

  /** The rank of `bytes[start, end)`, or -1 when that sequence is not a token. */
  rank(bytes: Uint8Array, start: number, end: number): number {
    const length = end - start;
    if (length > PACKED_MAX) return this.longRank(bytes, start, end);
    let low: number;
    let high = 0;
    if (length >= 4) {
      low = bytes[start]! | (bytes[start + 1]! << 8) | (bytes[start + 2]! << 16) | (bytes[start + 3]! << 24);
      high = pack(bytes, start + 4, length - 4);
    } else {
      low = pack(bytes, start, length);
    }
    const table = this.packed;
    const mask = this.packedMask;
    for (let slot = hashPacked(low, high, length) & mask; ; slot = (slot + 1) & mask) {
      const at = slot * STRIDE;
      const stored = table[at + 2]!;
      if (stored === 0) return NONE;
      if (stored === length && table[at] === low && table[at + 1] === high) return table[at + 3]!;
    }
  }

  private longRank(bytes: Uint8Array, start: number, end: number): number {
    const length = end - start;
    const own = this.bytes;
    for (let slot = hashBytes(bytes, start, end) & this.longMask; ; slot = (slot + 1) & this.longMask) {
      const rank = this.long[slot]!;
      if (rank === NONE) return NONE;
      const at = this.starts[rank]!;
      if (this.starts[rank + 1]! - at !== length) continue;
      let i = 0;
      while (i < length && own[at + i] === bytes[start + i]) i++;
      if (i === length) return rank;
    }
  }
}
