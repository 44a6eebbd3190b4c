/**
 * The fidelity corpus: recorded sessions (`<name>.jsonl`, one chat message a line) with their must-keep facts
 * (`<name>.facts.json`, a list of strings), in test/fixtures/sessions. The facts are in the repository; the sessions
 * are public trajectories built from their source by the commands in the README there, and kept out of it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../config/settings.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { pairViewOf, toolPairViolations } from '../../engine/tool-pairs.ts';
import { parseSessionJsonl } from '../../llm/replayed-model.ts';
import { factsFound, messageText } from './measure.ts';

export const SESSIONS_DIR = join(PROJECT_ROOT, 'test', 'fixtures', 'sessions');

export interface CorpusSession {
  name: string;
  file: string;
  messages: ChatMessage[];
  facts: string[];
  /** Assistant messages: the model calls the recording answers. */
  steps: number;
}

/** Thrown for a corpus entry that cannot be used: names the file and what is wrong. */
export class CorpusError extends Error {
  constructor(file: string, message: string) {
    super(`${file}: ${message}`);
    this.name = 'CorpusError';
  }
}

function readFacts(file: string): string[] {
  if (!existsSync(file)) throw new CorpusError(file, 'missing (every session needs its must-keep facts)');
  const facts = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  if (!Array.isArray(facts) || facts.some((f) => typeof f !== 'string' || f.trim() === '')) {
    throw new CorpusError(file, 'must be a JSON list of non-empty strings');
  }
  return facts as string[];
}

/** Steps a corpus session has at least: the long agent loop under one user message that the corpus is for. */
export const MIN_STEPS = 100;

/**
 * Throws {@link CorpusError} unless `session` is usable: one user message (after any system messages) followed by
 * at least {@link MIN_STEPS} assistant messages, no tool-pair violation, and 10 to 30 must-keep facts, each found
 * in the session as written.
 */
export function checkSession(session: CorpusSession): void {
  const fail = (message: string) => {
    throw new CorpusError(session.file, message);
  };
  const users = session.messages.filter((m) => m.role === 'user');
  if (users.length !== 1) fail(`has ${users.length} user messages, not one`);
  const first = session.messages.indexOf(users[0]!);
  if (!session.messages.slice(0, first).every((m) => m.role === 'system')) fail('has messages before the user message');
  if (session.steps < MIN_STEPS) fail(`has ${session.steps} assistant messages, fewer than ${MIN_STEPS}`);
  const violations = toolPairViolations(session.messages.map(pairViewOf));
  if (violations.length > 0) fail(`breaks tool pairs: ${violations.map((v) => `${v.kind} ${v.id}`).join(', ')}`);
  if (session.facts.length < 10 || session.facts.length > 30) fail(`has ${session.facts.length} facts, not 10 to 30`);
  const found = factsFound(session.facts, session.messages.map(messageText));
  const absent = session.facts.filter((f) => !found.has(f));
  if (absent.length > 0)
    fail(`facts not found in the session as written: ${absent.map((f) => JSON.stringify(f)).join(', ')}`);
}

/**
 * The sessions `dir` has facts for but not the session itself (`<name>.jsonl`, which the README there builds from its
 * source): their paths, sorted (none when `dir` does not exist).
 */
export function missingSessions(dir: string = SESSIONS_DIR): string[] {
  if (!existsSync(dir)) return [];
  const files = new Set(readdirSync(dir));
  return [...files]
    .filter((f) => f.endsWith('.facts.json'))
    .map((f) => `${f.slice(0, -'.facts.json'.length)}.jsonl`)
    .filter((f) => !files.has(f))
    .sort()
    .map((f) => join(dir, f));
}

/** Every session of `dir` (sorted by name), with its facts, each checked ({@link checkSession}). */
export function loadCorpus(dir: string = SESSIONS_DIR): CorpusSession[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => {
      const name = f.slice(0, -'.jsonl'.length);
      const file = join(dir, f);
      const messages = parseSessionJsonl(readFileSync(file, 'utf8'));
      const facts = readFacts(join(dir, `${name}.facts.json`));
      const session = { name, file, messages, facts, steps: messages.filter((m) => m.role === 'assistant').length };
      checkSession(session);
      return session;
    });
}
