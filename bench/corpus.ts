/** A deterministic mixed corpus for the counting benchmark: prose, JSON, code, CJK and emoji, about 1 MB. */

const PROSE =
  'The agent read the failing test, found the off-by-one in the pagination helper, and proposed a fix. ' +
  'Before applying it, the user asked to keep the public API unchanged and to add a regression test. ';
const CODE =
  'export function paginate<T>(items: T[], page: number, size = 20): T[] {\n' +
  '  if (page < 1) throw new RangeError(`page must be >= 1, got ${page}`);\n' +
  '  return items.slice((page - 1) * size, page * size);\n}\n';
const CJK =
  '人工智能代理需要在很长的对话中保持上下文。压缩历史时不能丢失任务、约束和下一步。日本語の文章も含まれます。';
const EMOJI = 'Status: ✅ tests pass 🎉 — deploy 🚀 at 17:00 🇩🇪 👩🏽‍💻 ';

function json(i: number): string {
  return JSON.stringify({
    id: `call_${(i * 2654435761) % 4294967296}`,
    tool: 'search_files',
    args: { query: `TODO item ${i}`, paths: ['src/', 'test/'], limit: i % 50 },
    result: { matches: i % 7, files: [`src/module${i % 13}.ts`, `test/case${i % 11}.test.ts`] },
  });
}

/** One "message" of each kind, cycling, until `bytes` UTF-8 bytes. */
export function mixedMessages(bytes: number): string[] {
  const messages: string[] = [];
  let total = 0;
  for (let i = 0; total < bytes; i++) {
    const kind = i % 5;
    const text =
      kind === 0 ? PROSE.repeat(1 + (i % 3)) : kind === 1 ? json(i) : kind === 2 ? CODE : kind === 3 ? CJK : EMOJI;
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
