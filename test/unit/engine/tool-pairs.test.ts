import { describe, expect, it } from 'vitest';
import { assertToolPairs, pairViewOf, ToolPairError, toolPairViolations } from '../../../engine/tool-pairs.ts';
import type { PairView } from '../../../engine/tool-pairs.ts';
import { atomicGroups, layoutSteps } from '../../../engine/turns.ts';

const sys: PairView = { role: 'system' };
const user: PairView = { role: 'user' };
const text: PairView = { role: 'assistant' };
const calls = (...ids: string[]): PairView => ({ role: 'assistant', toolCallIds: ids });
const result = (id: string): PairView => ({ role: 'tool', toolCallId: id });

describe('tool-pair validator', () => {
  it('accepts calls answered right after them, in any order', () => {
    expect(toolPairViolations([sys, user, calls('a', 'b'), result('b'), result('a'), text, user, text])).toEqual([]);
  });

  it('names an orphan tool result', () => {
    expect(toolPairViolations([user, result('x'), text])).toEqual([{ kind: 'orphan-result', id: 'x', index: 1 }]);
  });

  it('names an unanswered call, also one answered only after another message', () => {
    expect(toolPairViolations([user, calls('a', 'b'), result('a'), text])).toEqual([
      { kind: 'unanswered-call', id: 'b', index: 1 },
    ]);
    expect(toolPairViolations([user, calls('a'), user, result('a')])).toEqual([
      { kind: 'unanswered-call', id: 'a', index: 1 },
      { kind: 'orphan-result', id: 'a', index: 3 },
    ]);
    expect(toolPairViolations([user, calls('z')])).toEqual([{ kind: 'unanswered-call', id: 'z', index: 1 }]);
  });

  it('names a duplicate result', () => {
    expect(toolPairViolations([user, calls('a'), result('a'), result('a')])).toEqual([
      { kind: 'duplicate-result', id: 'a', index: 3 },
    ]);
  });

  it('throws an error naming the offending ids', () => {
    expect(() => assertToolPairs([user, calls('call_1'), result('call_9')])).toThrow(ToolPairError);
    expect(() => assertToolPairs([user, calls('call_1'), result('call_9')])).toThrow(
      'tool call/result pairs broken: orphan-result call_9 (message 2), unanswered-call call_1 (message 1)',
    );
  });

  it('reads chat messages as sent to the model', () => {
    const view = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1' }] },
      { role: 'tool', content: '1', tool_call_id: 'c1' },
    ].map(pairViewOf);
    expect(toolPairViolations(view)).toEqual([]);
  });
});

describe('step and turn layout', () => {
  it('a user message opens a turn; a call and its results form one atomic step', () => {
    const view = [sys, user, calls('a', 'b'), result('a'), result('b'), text, user, text];
    expect(layoutSteps(view)).toEqual({
      steps: [
        { start: 0, end: 1, turn: -1 },
        { start: 1, end: 2, turn: 0 },
        { start: 2, end: 5, turn: 0 },
        { start: 5, end: 6, turn: 0 },
        { start: 6, end: 7, turn: 1 },
        { start: 7, end: 8, turn: 1 },
      ],
      turns: [
        { start: 1, end: 6 },
        { start: 6, end: 8 },
      ],
    });
  });

  it('a summary or the ledger (user messages of the engine) opens no turn; a view without a user message has none', () => {
    const summary = { role: 'user', kind: 'summary' };
    const ledger = { role: 'user', kind: 'ledger' };
    expect(layoutSteps([sys, ledger, user, summary, text]).turns).toEqual([{ start: 2, end: 5 }]);
    expect(layoutSteps([sys, text])).toEqual({
      steps: [
        { start: 0, end: 1, turn: -1 },
        { start: 1, end: 2, turn: -1 },
      ],
      turns: [],
    });
  });

  it('atomic groups cover a range exactly', () => {
    const view = [calls('a'), result('a'), text, calls('b', 'c'), result('c'), result('b')];
    expect(atomicGroups(view)).toEqual([
      { start: 0, end: 2 },
      { start: 2, end: 3 },
      { start: 3, end: 6 },
    ]);
  });
});
