/**
 * A synthetic fidelity session for `npm run fidelity -- --short` (and so `npm test`), which needs no recorded session
 * from outside the repository: a coding agent's loop under one user message, generated from a seeded PRNG, in the
 * corpus's shape (a system message, the task, then `steps` assistant messages each calling `bash` once, each answered
 * by its result of about 1.5 KB), with must-keep facts planted along the way (the task's constraints, the failing
 * test, an error message, paths and values found in results). It measures that the machinery works on every run; the
 * figures that matter come from the recorded corpus.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatMessage } from '../../engine/messages.ts';
import { seededRandom } from '../corpus.ts';

const WORDS = (
  'parse token value config loader schema field default error retry cache index offset buffer stream reader ' +
  'writer encode decode unicode escape literal number string list mapping key width column row'
).split(' ');

export interface SyntheticSession {
  name: string;
  messages: ChatMessage[];
  facts: string[];
}

/** The session: `steps` tool steps (at least 100, the corpus's minimum) from `seed`. */
export function syntheticSession(steps = 110, seed = 13): SyntheticSession {
  const next = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const module = (i: number) => `src/pkg/${WORDS[i % WORDS.length]}_${i}.py`;
  // Facts planted at fixed steps (each appears once, in the task or in one result or call).
  const planted = new Map<number, string>([
    [3, 'FAILED tests/test_reader.py::test_unicode_escape_42'],
    [9, "ValueError: invalid literal for int() with base 16: 'zz17'"],
    [17, 'the offset is computed in src/pkg/reader_core.py line 211'],
    [26, 'DEFAULT_WIDTH = 73'],
    [38, 'the cache key omits the encoding name'],
    [51, 'fixture data/escapes.bin (4,096 bytes)'],
    [64, 'decode_escape() returns a tuple (text, consumed)'],
    [77, 'regression introduced in commit 9f3e2ab'],
    [88, 'tests pass: 311 passed, 2 skipped'],
  ]);
  const task =
    'Fix the failing unicode escape test in the reader. Constraints: do not edit files under tests/; keep the ' +
    'public function read_escapes() signature unchanged.';
  const facts = [
    'do not edit files under tests/',
    'keep the public function read_escapes() signature unchanged',
    ...planted.values(),
    'git diff > patch.txt',
  ];
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are a coding agent. Use the bash tool; one command per step.' },
    { role: 'user', content: task },
  ];
  for (let step = 1; step <= steps; step++) {
    const file = module(Math.floor(next() * 40));
    const command = step === steps ? 'git diff > patch.txt && cat patch.txt' : `sed -n 1,60p ${file}`;
    const id = `call_${seed}_${step}`;
    messages.push({
      role: 'assistant',
      content: `Step ${step}: looking at ${file} for the ${pick(WORDS)} handling.`,
      tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } }],
    });
    const lines: string[] = [];
    const fact = planted.get(step);
    if (fact) lines.push(`# note: ${fact}`);
    while (lines.join('\n').length < 1_500) {
      const [a, b, c] = [pick(WORDS), pick(WORDS), Math.floor(next() * 1_000)];
      lines.push(`def ${a}_${b}_${c}(${pick(WORDS)}, ${pick(WORDS)}=${c}):  # ${pick(WORDS)} ${pick(WORDS)}`);
    }
    messages.push({ role: 'tool', tool_call_id: id, content: lines.join('\n') });
  }
  return { name: `synthetic-${seed}`, messages, facts };
}

/** Writes `session` as a corpus entry (`<name>.jsonl`, `<name>.facts.json`) into `dir`; returns the dir. */
export function writeSyntheticCorpus(dir: string, session: SyntheticSession = syntheticSession()): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${session.name}.jsonl`), `${session.messages.map((m) => JSON.stringify(m)).join('\n')}\n`);
  writeFileSync(join(dir, `${session.name}.facts.json`), `${JSON.stringify(session.facts, null, 2)}\n`);
  return dir;
}
