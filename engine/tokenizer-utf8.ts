/**
 * UTF-8 encoding of part of a string into a caller's buffer, without allocating: the byte-pair merge works on bytes,
 * and encoding each piece with TextEncoder would allocate an array per piece.
 */

/**
 * Writes the UTF-8 bytes of `text[start, end)` into `out` from `at` (lone surrogates as U+FFFD, like TextEncoder)
 * and returns how many were written. `out` must have room for 3 bytes per UTF-16 code unit.
 */
export function writeUtf8(text: string, start: number, end: number, out: Uint8Array, at: number): number {
  let n = at;
  for (let i = start; i < end; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      out[n++] = c;
    } else if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 0x3f);
    } else {
      if (c >= 0xd800 && c <= 0xdfff) {
        const low = i + 1 < end ? text.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
          const cp = ((c - 0xd800) << 10) + (low - 0xdc00) + 0x10000;
          out[n++] = 0xf0 | (cp >> 18);
          out[n++] = 0x80 | ((cp >> 12) & 0x3f);
          out[n++] = 0x80 | ((cp >> 6) & 0x3f);
          out[n++] = 0x80 | (cp & 0x3f);
          i++;
          continue;
        }
        c = 0xfffd;
      }
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    }
  }
  return n - at;
}
