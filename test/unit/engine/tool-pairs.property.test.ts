/** Property tests over random histories with tool chains. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toolPairViolations } from '../../../engine/tool-pairs.ts';
import type { PairView } from '../../../engine/tool-pairs.ts';
import { layoutSteps } from '../../../engine/turns.ts';

/** A turn: a user message, then steps that are a text reply or a call group (1–3 calls, answered in any order). */
const turnArb = fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3 })), { minLength: 1, maxLength: 4 });
const historyArb = fc.tuple(fc.boolean(), fc.array(turnArb, { minLength: 1, maxLength: 8 }), fc.nat());

function build([withSystem, turns, seed]: [boolean, number[][], number]): PairView[] {
  const view: PairView[] = withSystem ? [{ role: 'system' }] : [];
  let next = 0;
  for (const steps of turns) {
    view.push({ role: 'user' });
    for (const calls of steps) {
      if (calls === 0) {
        view.push({ role: 'assistant' });
        continue;
      }
      const ids = Array.from({ length: calls }, () => `call_${next++}`);
      view.push({ role: 'assistant', toolCallIds: ids });
      const order = [...ids].sort((a, b) => ((a.length + seed) % 3) - ((b.length + seed) % 3));
      for (const id of order) view.push({ role: 'tool', toolCallId: id });
    }
  }
  return view;
}

describe('tool pairs over random histories', () => {
  it('a well-formed history has no violation', () => {
    fc.assert(
      fc.property(historyArb, (history) => {
        expect(toolPairViolations(build(history))).toEqual([]);
      }),
    );
  });

  it('removing any one tool result is caught, naming its call', () => {
    fc.assert(
      fc.property(historyArb, fc.nat(), (history, pick) => {
        const view = build(history);
        const tools = view.flatMap((m, i) => (m.role === 'tool' ? [i] : []));
        fc.pre(tools.length > 0);
        const index = tools[pick % tools.length]!;
        const id = view[index]!.toolCallId!;
        const broken = view.filter((_, i) => i !== index);
        expect(toolPairViolations(broken)).toContainEqual(expect.objectContaining({ kind: 'unanswered-call', id }));
      }),
    );
  });

  it('removing any one call group but keeping its results is caught as orphans', () => {
    fc.assert(
      fc.property(historyArb, fc.nat(), (history, pick) => {
        const view = build(history);
        const callers = view.flatMap((m, i) => (m.toolCallIds?.length ? [i] : []));
        fc.pre(callers.length > 0);
        const index = callers[pick % callers.length]!;
        const ids = view[index]!.toolCallIds!;
        const violations = toolPairViolations(view.filter((_, i) => i !== index));
        for (const id of ids) expect(violations).toContainEqual(expect.objectContaining({ kind: 'orphan-result', id }));
      }),
    );
  });

  it('steps and turns cover the history exactly, and no step splits a call from its results', () => {
    fc.assert(
      fc.property(historyArb, (history) => {
        const view = build(history);
        const { steps, turns } = layoutSteps(view);
        let cursor = 0;
        for (const step of steps) {
          expect(step.start).toBe(cursor);
          // Each step is valid on its own: keeping or dropping it whole never breaks a pair.
          expect(toolPairViolations(view.slice(step.start, step.end))).toEqual([]);
          if (step.turn >= 0) expect(step.end).toBeLessThanOrEqual(turns[step.turn]!.end);
          cursor = step.end;
        }
        expect(cursor).toBe(view.length);
        for (const [t, turn] of turns.entries()) {
          expect(view[turn.start]!.role).toBe('user');
          expect(turn.end).toBe(turns[t + 1]?.start ?? view.length);
        }
      }),
    );
  });
});
