/**
 * Hand-written pre-tokenizers: each returns where the piece starting at `start` ends, exactly as the first match of
 * the encoding's split regex at `start` would (js-tiktoken's patterns, the reference's), including the regex's
 * backtracking, but in one pass over char codes with table lookups: two to three times the speed of `matchAll`.
 *
 * o200k_base: `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(contraction)?`
 * `|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(contraction)?`
 * `|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
 *
 * cl100k_base: `(contraction)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
 *
 * where a contraction is `'s 't 're 've 'm 'll 'd` in either case.
 */
import { classAt, LETTER, LOWER, NEWLINE, NUMBER, SPACE, UPPER, widthOf } from './pretokenize-classes.ts';

/** The end (exclusive, in UTF-16 code units) of the piece that starts at `start` (< text.length). */
export type PieceScanner = (text: string, start: number) => number;

const APOSTROPHE = 0x27;
const SPACE_CHAR = 0x20;

/** The code unit at `i`, or -1 past the end (no out-of-bounds read, which would cost optimized code a deopt). */
function codeAt(text: string, i: number): number {
  return i < text.length ? text.charCodeAt(i) : -1;
}

/** `[^\r\n\p{L}\p{N}]`: what may precede a word. */
function isPrefix(bits: number): boolean {
  return (bits & (LETTER | NUMBER | NEWLINE)) === 0;
}

/** `[^\s\p{L}\p{N}]`: punctuation, symbols, marks, emoji. */
function isSymbol(bits: number): boolean {
  return (bits & (LETTER | NUMBER | SPACE)) === 0;
}

/** End of an optional contraction (`'s`, `'T`, `'re`, `'LL`, ...) at `i`: i + its length, or i. */
function afterContraction(text: string, i: number): number {
  if (codeAt(text, i) !== APOSTROPHE) return i;
  const first = codeAt(text, i + 1) | 0x20; // lower case for ASCII letters (-1 stays -1)
  if (first === 0x73 || first === 0x74 || first === 0x6d || first === 0x64) return i + 2; // s t m d
  const second = codeAt(text, i + 2) | 0x20;
  if ((first === 0x72 || first === 0x76) && second === 0x65) return i + 3; // re ve
  if (first === 0x6c && second === 0x6c) return i + 3; // ll
  return i;
}

/** End of a run of code points that all have one of `bits`, from `i`. */
function runEnd(text: string, i: number, bits: number): number {
  const n = text.length;
  while (i < n) {
    const at = classAt(text, i);
    if ((at & bits) === 0) break;
    i += widthOf(at);
  }
  return i;
}

/** o200k's first word alternative from `s`: `[Upper]*[Lower]+(contraction)?`, or -1. */
function o200kLowerWord(text: string, s: number): number {
  const n = text.length;
  let i = s;
  let lastLower = -1; // the last code point of the Upper run that is also Lower (Lm, Lo, M)
  let at = 0;
  while (i < n) {
    at = classAt(text, i);
    if ((at & UPPER) === 0) break;
    if (at & LOWER) lastLower = i;
    i += widthOf(at);
  }
  if (i < n && at & LOWER) return afterContraction(text, runEnd(text, i, LOWER)); // an Ll after the Upper run
  if (lastLower < 0) return -1;
  // Backtracking: Upper* gives back down to the last Lower code point, which alone is the Lower+ run.
  return afterContraction(text, lastLower + widthOf(classAt(text, lastLower)));
}

/** o200k's second word alternative from `s`: `[Upper]+[Lower]*(contraction)?`, or -1. */
function o200kUpperWord(text: string, s: number): number {
  const upperEnd = runEnd(text, s, UPPER);
  if (upperEnd === s) return -1;
  return afterContraction(text, runEnd(text, upperEnd, LOWER));
}

/** `\p{N}{1,3}` from `start`, whose code point is a number. */
function numberEnd(text: string, start: number, bits: number): number {
  let i = start + widthOf(bits);
  for (let k = 1; k < 3 && i < text.length; k++) {
    const at = classAt(text, i);
    if ((at & NUMBER) === 0) break;
    i += widthOf(at);
  }
  return i;
}

/** ` ?[^\s\p{L}\p{N}]+` then `[\r\n]*` (and `/` for o200k), or -1. */
function symbolsEnd(text: string, start: number, bits: number, slash: boolean): number {
  let i = start;
  if (text.charCodeAt(i) === SPACE_CHAR && i + 1 < text.length) i++;
  if (i !== start) bits = classAt(text, i);
  if (!isSymbol(bits)) return -1;
  const n = text.length;
  while (i < n) {
    const at = classAt(text, i);
    if (!isSymbol(at)) break;
    i += widthOf(at);
  }
  for (let c = codeAt(text, i); c === 0x0a || c === 0x0d || (slash && c === 0x2f); c = codeAt(text, i)) i++;
  return i;
}

/** `\s*[\r\n]+|\s+(?!\S)|\s+` from `start`, whose code point is whitespace (always one code unit). */
function spacesEnd(text: string, start: number): number {
  const n = text.length;
  let i = start;
  let lastNewline = -1;
  while (i < n) {
    const at = classAt(text, i);
    if ((at & SPACE) === 0) break;
    if (at & NEWLINE) lastNewline = i;
    i++;
  }
  if (lastNewline >= 0) return lastNewline + 1; // \s*[\r\n]+ backtracks to the last newline of the run
  if (i === n || i - start === 1) return i; // \s+(?!\S) at the end of the text, or \s+ for one character
  return i - 1; // \s+(?!\S) leaves the last space to the next piece
}

/** `[A-Z]`. */
function isAsciiUpper(c: number): boolean {
  return c >= 0x41 && c <= 0x5a;
}

/** `[a-z]`. */
function isAsciiLower(c: number): boolean {
  return c >= 0x61 && c <= 0x7a;
}

/**
 * The fast path for ASCII words: an optional ASCII prefix (not a letter, digit, \r or \n), then ASCII letters:
 * `[A-Z]*[a-z]*` when `cased` (o200k_base), `[A-Za-z]*` otherwise, at least one. Returns the end of those letters,
 * or -1 when the piece is not such a word or when a non-ASCII code point follows (it may be a letter or a mark that
 * belongs to the word): the general path decides then.
 */
function asciiWordEnd(text: string, start: number, c: number, cased: boolean): number {
  let i = start;
  if (!isAsciiUpper(c) && !isAsciiLower(c)) {
    if ((c >= 0x30 && c <= 0x39) || c === 0x0a || c === 0x0d) return -1;
    i++;
  }
  const letters = i;
  let next = codeAt(text, i);
  if (cased) {
    while (isAsciiUpper(next)) next = codeAt(text, ++i);
    while (isAsciiLower(next)) next = codeAt(text, ++i);
  } else {
    while (isAsciiUpper(next) || isAsciiLower(next)) next = codeAt(text, ++i);
  }
  if (i === letters || next >= 0x80) return -1;
  return i;
}

/** The o200k_base split. */
export const o200kPieceEnd: PieceScanner = (text, start) => {
  const first = text.charCodeAt(start);
  if (first < 0x80) {
    // ASCII: with only A-Z and a-z, [Upper]*[Lower]+ and [Upper]+[Lower]* come down to [A-Z]*[a-z]* (non-empty).
    const word = asciiWordEnd(text, start, first, true);
    if (word >= 0) return afterContraction(text, word);
  }
  const bits = classAt(text, start);
  const prefixed = isPrefix(bits);
  const next = start + widthOf(bits);
  let end = prefixed && next < text.length ? o200kLowerWord(text, next) : -1;
  if (end < 0 && bits & (UPPER | LOWER)) end = o200kLowerWord(text, start);
  if (end < 0 && prefixed && next < text.length) end = o200kUpperWord(text, next);
  if (end < 0 && bits & UPPER) end = o200kUpperWord(text, start);
  if (end >= 0) return end;
  if (bits & NUMBER) return numberEnd(text, start, bits);
  end = symbolsEnd(text, start, bits, true);
  if (end >= 0) return end;
  return spacesEnd(text, start);
};

/** The cl100k_base split. */
export const cl100kPieceEnd: PieceScanner = (text, start) => {
  const contraction = afterContraction(text, start);
  if (contraction !== start) return contraction;
  const first = text.charCodeAt(start);
  if (first < 0x80) {
    const word = asciiWordEnd(text, start, first, false); // [^\r\n\p{L}\p{N}]?\p{L}+ on ASCII letters
    if (word >= 0) return word;
  }
  const bits = classAt(text, start);
  const next = start + widthOf(bits);
  if (isPrefix(bits) && next < text.length && classAt(text, next) & LETTER) return runEnd(text, next, LETTER);
  if (bits & LETTER) return runEnd(text, start, LETTER);
  if (bits & NUMBER) return numberEnd(text, start, bits);
  const end = symbolsEnd(text, start, bits, false);
  if (end >= 0) return end;
  return spacesEnd(text, start);
};
