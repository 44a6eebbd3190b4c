/**
 * The fidelity corpus (test/fixtures/sessions) is usable by `npm run fidelity`: every session parses as a recorded
 * session, is a long agent loop (at least 100 assistant messages under a single user message), breaks no tool pair,
 * and comes with its must-keep facts, each of which occurs in the session as written.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pairViewOf, toolPairViolations } from '../../engine/tool-pairs.ts';
import { loadCorpus, SESSIONS_DIR } from '../../bench/fidelity/corpus.ts';
import { factsFound, messageText } from '../../bench/fidelity/measure.ts';

const corpus = loadCorpus();

describe('fidelity corpus', () => {
  it('has at least three sessions, each with a facts file and each facts file with its session', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(3);
    const files = existsSync(SESSIONS_DIR) ? readdirSync(SESSIONS_DIR) : [];
    for (const facts of files.filter((f) => f.endsWith('.facts.json'))) {
      expect(existsSync(join(SESSIONS_DIR, facts.replace(/\.facts\.json$/, '.jsonl'))), facts).toBe(true);
    }
  });

  for (const session of corpus) {
    describe(session.name, () => {
      it('is one user message followed by at least 100 assistant messages', () => {
        const users = session.messages.filter((m) => m.role === 'user');
        expect(users).toHaveLength(1);
        const firstUser = session.messages.indexOf(users[0]!);
        expect(session.messages.slice(0, firstUser).every((m) => m.role === 'system')).toBe(true);
        expect(session.steps).toBeGreaterThanOrEqual(100);
      });

      it('has no tool-pair violation', () => {
        expect(toolPairViolations(session.messages.map(pairViewOf))).toEqual([]);
      });

      it('has 10 to 30 must-keep facts, each found in the session as written', () => {
        expect(session.facts.length).toBeGreaterThanOrEqual(10);
        expect(session.facts.length).toBeLessThanOrEqual(30);
        const found = factsFound(session.facts, session.messages.map(messageText));
        expect(session.facts.filter((f) => !found.has(f))).toEqual([]);
      });
    });
  }
});
