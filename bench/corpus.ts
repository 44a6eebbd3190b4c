/**
 * A deterministic mixed corpus for the counting benchmark: prose, JSON, code, CJK and emoji, about 1 MB, generated
 * from a seeded PRNG so that no tokenizer's cache sees the same text twice more than real text would allow.
 */

/** A small seeded PRNG (mulberry32), so the corpus is the same on every run but not a repeated template. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'agent context window summary turn tool result call retry worker queue history compact offload reload token ' +
  'budget ledger task goal constraint decision pending next step file path error stack trace test suite deploy ' +
  'the a of to and in is it for on with as was at by an be this that from or which are not have has had but ' +
  'pagination helper consumer producer timeout latency throughput memory cache index schema migration request'
).split(' ');
const CODE_TOKENS = [
  'const',
  'let',
  'return',
  'if',
  'else',
  'for',
  'await',
  'async',
  'function',
  '=>',
  '===',
  '{',
  '}',
  '(',
  ')',
  ';',
  '[',
  ']',
  '.',
  ',',
];
const EMOJI = ['✅', '🎉', '🚀', '🇩🇪', '👩🏽‍💻', '🔥', '❤️', '🤖', '📦', '⚠️'];

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)]!;
}

function prose(next: () => number): string {
  const words = Array.from({ length: 20 + Math.floor(next() * 60) }, () =>
    next() < 0.08 ? String(Math.floor(next() * 100_000)) : pick(next, WORDS),
  );
  return `${words.join(' ')}.`;
}

function json(next: () => number): string {
  const id = Math.floor(next() * 2 ** 32).toString(16);
  return JSON.stringify({
    id: `call_${id}`,
    tool: pick(next, WORDS),
    args: { query: prose(next).slice(0, 40), limit: Math.floor(next() * 100), path: `src/${pick(next, WORDS)}.ts` },
    result: { matches: Math.floor(next() * 50), score: Math.round(next() * 1e4) / 1e4 },
  });
}

function code(next: () => number): string {
  return Array.from({ length: 30 + Math.floor(next() * 50) }, () =>
    next() < 0.3 ? `${pick(next, WORDS)}${Math.floor(next() * 10)}` : pick(next, CODE_TOKENS),
  ).join(' ');
}

function cjk(next: () => number): string {
  return Array.from({ length: 20 + Math.floor(next() * 60) }, (_, i) =>
    i % 12 === 11 ? '。' : String.fromCharCode(0x4e00 + Math.floor(next() * 3000)),
  ).join('');
}

function emoji(next: () => number): string {
  return Array.from({ length: 5 + Math.floor(next() * 10) }, () => `${pick(next, EMOJI)} ${pick(next, WORDS)}`).join(
    ' ',
  );
}

/** Messages of prose, JSON, code, CJK and emoji in turn, from a seeded PRNG, until `bytes` UTF-8 bytes. */
export function mixedMessages(bytes: number, seed = 42): string[] {
  const next = seededRandom(seed);
  const kinds = [prose, json, code, cjk, emoji];
  const messages: string[] = [];
  let total = 0;
  for (let i = 0; total < bytes; i++) {
    const text = kinds[i % kinds.length]!(next);
    messages.push(text);
    total += Buffer.byteLength(text);
  }
  return messages;
}

/** The long unbroken inputs where JS tokenizers slow down: one piece of 64 KB. */
export function pathologicalInputs(): Record<string, string> {
  const kb64 = 64 * 1024;
  let base64 = '';
  for (let i = 0; base64.length < kb64; i++) base64 += ((i * 2654435761) % 4294967296).toString(36);
  return {
    'han-64KB': Array.from({ length: kb64 / 3 }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919) % 20000))).join(''),
    'letter-64KB': 'a'.repeat(kb64),
    'base64-64KB': Buffer.from(base64).toString('base64').slice(0, kb64),
  };
}
