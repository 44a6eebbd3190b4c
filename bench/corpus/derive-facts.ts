/**
 * Derives the must-keep facts of a recorded session (test/fixtures/sessions/<name>.jsonl) by three rules, so that
 * what counts as a fact is decided before any replay and never by how longrun fares:
 *
 * 1. **Files changed**: the paths of the patch the agent submitted (`diff --git a/<path>` headers in the session's
 *    last tool result, the submission).
 * 2. **Error lines**: the exception line of every Python traceback in a tool result (the first line after the
 *    `Traceback (most recent call last):` frames that names an exception, e.g. `TypeError: …`), and exception lines
 *    the user's message quotes. Lines that differ only in a temporary directory (`/tmp/tmpXXXX`) count once (the
 *    first, verbatim); lines are cut to {@link ERROR_LINE_CHARS} characters.
 * 3. **The user's constraints**: the sentences of the user's message that say MUST, DO NOT/Do NOT/Do not, CANNOT,
 *    EXACT, must or only, verbatim (list markers and `<TAG>` markup around them left out).
 *
 * Then the reviewed additions and removals of {@link REVIEW}, each with its reason, are applied. The result is
 * written to test/fixtures/sessions/<name>.facts.json, a JSON list of strings.
 *
 * Usage: node bench/corpus/derive-facts.ts [NAME ...]   (default: every session in test/fixtures/sessions)
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { parseSessionJsonl } from '../../llm/replayed-model.ts';
import { SESSIONS_DIR } from '../fidelity/corpus.ts';

/** Error lines longer than this are cut (the fact is then a prefix of the line). */
export const ERROR_LINE_CHARS = 200;

const EXCEPTION_LINE = /^(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning)(?::.*)?$/;
const CONSTRAINT_WORDS = /\b(?:MUST|DO NOT|Do NOT|Do not|CANNOT|EXACT|must|only)\b/;

/** Paths of a unified diff's `diff --git a/<path> b/<path>` headers, in order. */
export function patchedFiles(patch: string): string[] {
  return [...new Set([...patch.matchAll(/^diff --git a\/(\S+) b\//gm)].map((m) => m[1]!))];
}

/** The exception line of each traceback in `text`, in order. */
export function tracebackErrors(text: string): string[] {
  const errors: string[] = [];
  for (const block of text.split('Traceback (most recent call last):').slice(1)) {
    const line = block.split('\n').find((l) => !/^\s/.test(l) && EXCEPTION_LINE.test(l.trim()));
    if (line) errors.push(line.trim());
  }
  return errors;
}

/** Lines of `text` that are exception lines on their own (as a task quotes one). */
export function quotedErrors(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => EXCEPTION_LINE.test(l) && l.includes(': '));
}

/** The sentences of a message that state a requirement (see the module comment, rule 3). */
export function constraintSentences(text: string): string[] {
  const sentences: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw
      .replace(/<\/?[A-Za-z]+>/g, '')
      .replace(/^\s*(?:[-*]|\d+\.)\s+/, '')
      .trim();
    for (const sentence of line.split(/(?<=[.!?])\s+(?=[A-Z])/)) {
      if (CONSTRAINT_WORDS.test(sentence)) sentences.push(sentence.trim());
    }
  }
  return sentences;
}

/** A line cut to `limit` characters; lines that differ only in a temporary directory share a key. */
function errorFact(line: string): { fact: string; key: string } {
  const fact = line.length > ERROR_LINE_CHARS ? line.slice(0, ERROR_LINE_CHARS) : line;
  return { fact, key: fact.replace(/\/tmp\/tmp\w+/g, '/tmp/tmp*') };
}

/** The facts of a session by the three rules, before review. */
export function derivedFacts(session: ChatMessage[]): { files: string[]; errors: string[]; constraints: string[] } {
  const user = session.find((m) => m.role === 'user');
  const task = textOf(user?.content);
  const submission = textOf(session.findLast((m) => m.role === 'tool')?.content);
  const seen = new Set<string>();
  const errors: string[] = [];
  const lines = [
    ...quotedErrors(task),
    ...session.filter((m) => m.role === 'tool').flatMap((m) => tracebackErrors(textOf(m.content))),
  ];
  for (const line of lines) {
    const { fact, key } = errorFact(line);
    if (!seen.has(key)) {
      seen.add(key);
      errors.push(fact);
    }
  }
  return { files: patchedFiles(submission), errors, constraints: [...new Set(constraintSentences(task))] };
}

/** Reviewed by hand: facts added or left out of the derived ones, each with its reason. */
export const REVIEW: Record<string, { add?: [string, string][]; remove?: [string, string][] }> = {
  // The task template is the same for the three sessions: its central constraint names no rule word.
  '*': {
    add: [
      [
        'make changes to non-test files in the current directory',
        'the task’s own statement of what may change (rule 3 misses it: no rule word)',
      ],
      [
        'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt',
        'the exact submit command the task requires (a code line, not a sentence)',
      ],
    ],
  },
};

/** The reviewed facts of session `name`. */
export function sessionFacts(name: string, session: ChatMessage[]): string[] {
  const { files, errors, constraints } = derivedFacts(session);
  const review = [REVIEW['*'], REVIEW[name]].filter((r) => r !== undefined);
  const removed = new Set(review.flatMap((r) => (r.remove ?? []).map(([fact]) => fact)));
  const added = review.flatMap((r) => (r.add ?? []).map(([fact]) => fact));
  return [...new Set([...files, ...errors, ...constraints, ...added])].filter((fact) => !removed.has(fact));
}

if (import.meta.main) {
  const names = process.argv.slice(2);
  const all = readdirSync(SESSIONS_DIR)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => f.slice(0, -'.jsonl'.length));
  for (const name of names.length ? names : all) {
    const session = parseSessionJsonl(readFileSync(join(SESSIONS_DIR, `${name}.jsonl`), 'utf8'));
    const facts = sessionFacts(name, session);
    writeFileSync(join(SESSIONS_DIR, `${name}.facts.json`), `${JSON.stringify(facts, null, 2)}\n`);
    console.log(`${name}: ${facts.length} facts`);
  }
}
