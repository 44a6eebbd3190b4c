/**
 * Cutting text for a model without breaking it: JavaScript strings are UTF-16, and a cut between the two halves of a
 * surrogate pair (an emoji, a rare Han character, a math letter) leaves a lone surrogate, which is not valid
 * Unicode: `JSON.stringify` escapes it as `\udXXX` and most providers reject the request or garble it. Every place
 * that slices text the model will read (truncation, previews, offload, quotes, transcripts, reload pages) cuts here.
 */

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/**
 * `index` (clamped to `0..text.length`), moved back by one when it falls between the two halves of a surrogate
 * pair, so that cutting there splits no character. Adjacent slices cut at the same boundaries stay contiguous.
 */
export function cutIndex(text: string, index: number): number {
  const at = Math.max(0, Math.min(text.length, Math.floor(index)));
  return at > 0 && at < text.length && isHigh(text.charCodeAt(at - 1)) && isLow(text.charCodeAt(at)) ? at - 1 : at;
}

/** `text.slice(start, end)` with both ends moved by {@link cutIndex}: no surrogate pair is split by the cut. */
export function safeSlice(text: string, start: number, end = text.length): string {
  return text.slice(cutIndex(text, start), cutIndex(text, end));
}

/** The first `chars` UTF-16 units of `text` at most, never ending inside a surrogate pair. */
export function headOf(text: string, chars: number): string {
  return text.slice(0, cutIndex(text, chars));
}

/** The last `chars` UTF-16 units of `text` at most, never starting inside a surrogate pair. */
export function tailOf(text: string, chars: number): string {
  if (chars <= 0) return '';
  if (chars >= text.length) return text;
  const start = text.length - Math.floor(chars);
  const inside = isHigh(text.charCodeAt(start - 1)) && isLow(text.charCodeAt(start));
  return text.slice(inside ? start + 1 : start);
}

/** `text` on one line (runs of whitespace as one space), cut to `chars` with an ellipsis, never inside a pair. */
export function clipLine(text: string, chars: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= chars ? flat : `${headOf(flat, chars - 1)}…`;
}
