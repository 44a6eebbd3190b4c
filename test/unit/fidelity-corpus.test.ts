/**
 * What makes a fidelity corpus session usable (`checkSession`, run on every session `npm run fidelity` loads): one
 * user message then at least 100 model calls, no tool-pair violation, 10 to 30 must-keep facts each found as
 * written. The sessions themselves are public trajectories built from their source (test/fixtures/sessions/README.md)
 * and kept out of the repository, so this tests the check on sessions made here.
 */
import { describe, expect, it } from 'vitest';
import { checkSession, CorpusError, MIN_STEPS } from '../../bench/fidelity/corpus.ts';
import type { CorpusSession } from '../../bench/fidelity/corpus.ts';
import type { ChatMessage } from '../../engine/messages.ts';

const FACTS = Array.from({ length: 12 }, (_, i) => `src/file_${i}.py`);

function session(steps: number, options: { facts?: string[]; users?: number; orphan?: boolean } = {}): CorpusSession {
  const messages: ChatMessage[] = [{ role: 'system', content: 'You are a coding agent.' }];
  for (let u = 0; u < (options.users ?? 1); u++)
    messages.push({ role: 'user', content: 'Fix the bug. Do not edit tests.' });
  for (let i = 0; i < steps; i++) {
    const id = `call_${i}`;
    const command = JSON.stringify({ command: `cat src/file_${i % 12}.py` });
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: command } }],
    });
    if (!(options.orphan && i === 3))
      messages.push({ role: 'tool', tool_call_id: id, content: `contents of src/file_${i % 12}.py` });
  }
  return { name: 's', file: 's.jsonl', messages, facts: options.facts ?? FACTS, steps };
}

describe('a fidelity corpus session', () => {
  it(`is usable with one user message, ${MIN_STEPS}+ steps, whole tool pairs and facts found as written`, () => {
    expect(() => checkSession(session(MIN_STEPS))).not.toThrow();
  });

  it.each([
    ['too few steps', session(MIN_STEPS - 1), `has ${MIN_STEPS - 1} assistant messages, fewer than ${MIN_STEPS}`],
    ['two user messages', session(MIN_STEPS, { users: 2 }), 'has 2 user messages, not one'],
    ['a call without its result', session(MIN_STEPS, { orphan: true }), 'breaks tool pairs: unanswered-call call_3'],
    ['too few facts', session(MIN_STEPS, { facts: FACTS.slice(0, 9) }), 'has 9 facts, not 10 to 30'],
    [
      'a fact not in it',
      session(MIN_STEPS, { facts: [...FACTS, 'src/nowhere.py'] }),
      'facts not found in the session as written: "src/nowhere.py"',
    ],
  ])('is refused with %s, naming the file', (_, s, message) => {
    expect(() => checkSession(s)).toThrow(CorpusError);
    expect(() => checkSession(s)).toThrow(`s.jsonl: ${message}`);
  });
});
