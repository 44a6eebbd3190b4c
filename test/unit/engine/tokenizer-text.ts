/**
 * Random text for the tokenizer's property tests: fragments from a varied alphabet (letters of several scripts and
 * cases, modifier letters, combining marks, digits of several kinds, CJK, emoji with modifiers and joiners,
 * contractions, whitespace runs with \r\n, punctuation, lone surrogates, special-token literals), and arbitrary code
 * points.
 */
import fc from 'fast-check';

const FRAGMENTS = [
  // Latin letters in both cases, words, title case, long s, ligatures, sharp s
  ...'aAbBzZ',
  'hello',
  'World',
  'HTTPServer',
  'camelCase',
  'iPhone',
  'ǅ',
  'ǈ',
  'ſ',
  'ﬁ',
  'ß',
  'é',
  'É',
  'ñ',
  // other scripts
  'Ελληνικά',
  'σς',
  'русский',
  'ЁЖ',
  'العربية',
  'עברית',
  'हिन्दी',
  'ไทย',
  '한국어',
  '日本語',
  'ひらがな',
  'カタカナー',
  '人工智能',
  '。',
  '、',
  // modifier letters and combining marks, alone and after letters
  'ʰ',
  'ˈ',
  '\u0301',
  'e\u0301',
  '\u0308',
  '\u093f',
  '\u20dd',
  // digits and numbers of several kinds
  ...'0123456789',
  '١٢٣',
  '४२',
  'Ⅻ',
  '½',
  '²',
  '𝟘𝟙',
  '123456',
  // astral letters
  '𝐀',
  '𝐚',
  '𠀀',
  '𝒜𝓁',
  // emoji, modifiers, joiners, flags, keycaps, variation selectors
  '😀',
  '👍🏽',
  '👩‍💻',
  '🇩🇪',
  '❤️',
  '1️⃣',
  '\u200d',
  '\ufe0f',
  // contractions and apostrophes
  "'s",
  "'S",
  "'t",
  "'T",
  "'re",
  "'rE",
  "'Re",
  "'ve",
  "'VE",
  "'m",
  "'ll",
  "'Ll",
  "'d",
  "'D",
  "'x",
  "'",
  '’s',
  // whitespace
  ' ',
  '  ',
  '   ',
  '\t',
  '\n',
  '\n\n',
  '\r\n',
  '\r',
  ' \n',
  '\n ',
  '\u00a0',
  '\u3000',
  '\u2028',
  '\u0085',
  '\ufeff',
  '\v',
  '\f',
  // punctuation and symbols
  ...'.,;:!?-_/\\()[]{}"`@#$%^&*+=<>|~',
  '...',
  '//',
  '/\n',
  '€',
  '©',
  '™',
  '→',
  '—',
  '\0',
  // lone surrogates
  '\ud800',
  '\udfff',
  // special-token literals
  '<|endoftext|>',
  '<|im_start|>',
];

/** Text of up to `maxLength` fragments from the varied alphabet, or arbitrary code points. */
export function variedText(maxLength = 40): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.array(fc.constantFrom(...FRAGMENTS), { maxLength }).map((parts) => parts.join('')) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength }) },
  );
}
