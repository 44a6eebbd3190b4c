/**
 * Built-in text that exercises every path of the tokenizer once at load (ASCII words, capitals and contractions,
 * numbers, punctuation, whitespace runs, accented and non-Latin letters, CJK characters, emoji, a long piece), so that
 * V8 has compiled the hot code before the first real message instead of running it unoptimized for the first few
 * hundred kilobytes. The tokenizer forgets these pieces afterwards (its memo and pair cache are cleared).
 */

const PARTS = [
  "The quick brown fox doesn't jump; it's 3:45pm, let's meet at 5th Ave. HTTPServer iPhone camelCase",
  'function add(a: number, b: number): number {\n  return a + b; // sum\n}\n\n\tconst x = [1, 2, 3].map((v) => v ** 2);',
  JSON.stringify({ id: 'call_8f2a', items: [1, 2.5, -3e10], nested: { ok: true, note: null, path: '/usr/local/bin' } }),
  'Ünïcödé àccents, Ελληνικά, русский текст, العربية, עברית, हिन्दी, ไทย',
  '人工智能正在改变世界。我们需要负责任地开发它，并且确保安全。日本語のテキストとカタカナ、한국어 문장도 있습니다.',
  'Emoji: 👍🏽 🧑‍💻 🇩🇪 ❤️ ✅ 🎉 — and numbers 1234567890 3.14159 -0.0001 1e-9 0x1F',
  '    leading spaces\n\n\n\ntrailing\t\t\ttabs   \r\n windows line <|endoftext|> https://example.com/a?b=1',
];

/** Varied text (about 2 KB); `round` varies its identifiers and CJK characters, which the tokenizer has to merge. */
export function warmUpText(round: number): string {
  const han = Array.from({ length: 120 }, (_, i) => String.fromCharCode(0x4e00 + ((round * 977 + i * 7919) % 20000)));
  const ids = Array.from({ length: 24 }, (_, i) => ((round * 2654435761 + i * 40503) % 4294967296).toString(36));
  return [...PARTS, han.join(''), ids.join(' '), ids.join('_').repeat(8)].join('\n');
}

/** Rounds of {@link warmUpText} counted at load: enough for V8 to optimize the hot functions (a few ms). */
export const WARM_UP_ROUNDS = 60;
