/**
 * Unicode classes for the hand-written pre-tokenizers, taken from the JavaScript regex engine itself so that the
 * scanners agree with the split patterns (`\p{L}`, `\p{N}`, `\s`, ...) on every code point. The Basic Multilingual
 * Plane is one table built once at load (a few ms); astral code points are classified on first sight and remembered.
 */

/** `\p{L}`: a letter. */
export const LETTER = 1;
/** `\p{N}`: a number. */
export const NUMBER = 2;
/** `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`: o200k_base's "upper" letters (and marks). */
export const UPPER = 4;
/** `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`: o200k_base's "lower" letters (and marks). */
export const LOWER = 8;
/** `\s`: JavaScript whitespace. */
export const SPACE = 16;
/** `[\r\n]`. */
export const NEWLINE = 32;
/** Not a class: set by {@link classAt} when the code point takes two UTF-16 code units. */
export const ASTRAL = 64;

const CLASS_PATTERNS: readonly [number, string][] = [
  [LETTER, String.raw`\p{L}`],
  [NUMBER, String.raw`\p{N}`],
  [UPPER, String.raw`[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`],
  [LOWER, String.raw`[\p{Ll}\p{Lm}\p{Lo}\p{M}]`],
  [SPACE, String.raw`\s`],
  [NEWLINE, String.raw`[\r\n]`],
];

/** Class bits of every BMP code point; surrogates (alone, they match no class) stay 0. */
function buildBmpTable(): Uint8Array {
  const table = new Uint8Array(0x10000);
  const codes = new Uint16Array(0x10000);
  for (let cp = 0; cp < 0x10000; cp++) codes[cp] = cp >= 0xd800 && cp <= 0xdfff ? 0 : cp;
  const all = new TextDecoder('utf-16le').decode(codes);
  const members = new Uint8Array(0x10000);
  for (const [bit, pattern] of CLASS_PATTERNS) {
    // Runs of one class, with the string's index being the code point (every BMP code point is one code unit).
    members.fill(0);
    for (const match of all.matchAll(new RegExp(`(?:${pattern})+`, 'gu'))) {
      members.fill(1, match.index, match.index + match[0].length);
    }
    for (let cp = 0; cp < 0x10000; cp++) if (members[cp]) table[cp]! |= bit;
  }
  table[0] = 0; // the stand-in for surrogates; U+0000 itself is in no class either
  return table;
}

const BMP = buildBmpTable();
const ASTRAL_TESTS = CLASS_PATTERNS.map(([bit, pattern]) => [bit, new RegExp(`^${pattern}$`, 'u')] as const);
/** Class bits of astral code points by `cp - 0x10000`, filled on first sight (0: not classified yet). */
const astralClasses = new Uint8Array(0x100000);

function astralClass(cp: number): number {
  let bits = astralClasses[cp - 0x10000]!;
  if (bits === 0) {
    const char = String.fromCodePoint(cp);
    bits = ASTRAL;
    for (const [bit, test] of ASTRAL_TESTS) if (test.test(char)) bits |= bit;
    astralClasses[cp - 0x10000] = bits;
  }
  return bits;
}

/**
 * Class bits of the code point at `i` (which must be < text.length), with {@link ASTRAL} set when it is a surrogate
 * pair. A lone surrogate is a code point of its own in no class, as in a `u` regex.
 */
export function classAt(text: string, i: number): number {
  const unit = text.charCodeAt(i);
  if (unit < 0xd800 || unit > 0xdbff) return BMP[unit]!;
  const low = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
  if (!(low >= 0xdc00 && low <= 0xdfff)) return 0;
  return astralClass(((unit - 0xd800) << 10) + (low - 0xdc00) + 0x10000);
}

/** UTF-16 length of the code point whose class bits are `bits`. */
export function widthOf(bits: number): number {
  return bits & ASTRAL ? 2 : 1;
}
