/**
 * The fidelity corpus: recorded sessions (`<name>.jsonl`, one chat message a line) with their must-keep facts
 * (`<name>.facts.json`, a list of strings), in test/fixtures/sessions. See the README there for the sources.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../config/settings.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { parseSessionJsonl } from '../../llm/replay.ts';

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

/** Every session of `dir` (sorted by name), with its facts. */
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
      return { name, file, messages, facts, steps: messages.filter((m) => m.role === 'assistant').length };
    });
}
