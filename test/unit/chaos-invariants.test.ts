/** The chaos run's invariants catch what they name (each checked on a run that breaks it). */
import { describe, expect, it } from 'vitest';
import {
  eventsInStep,
  everyMessageOnce,
  noFailedWorkflow,
  referencedKeysExist,
  requestsValidAndCovered,
  sameAsWithoutFaults,
} from '../../bench/chaos/invariants.ts';
import type { AgentOutcome } from '../../bench/chaos/invariants.ts';
import { scriptedReply, taskMessage } from '../../bench/chaos/model.ts';

const user = (id: string, content: string) => ({ id, message: { role: 'user' as const, content } });
const agent = (extra: Partial<AgentOutcome> = {}): AgentOutcome => ({
  name: 'a1',
  script: ['one', 'two'],
  transcript: [user('m000001', 'one'), user('m000002', 'two')],
  context: [
    { id: 'm000001', key: 'k1' },
    { id: 'm000002', key: 'k2' },
  ],
  events: [],
  stateEvents: [],
  stateCompactions: 0,
  runs: [{ status: 'COMPLETED', workflowTaskFailures: 0 }],
  ...extra,
});

describe('chaos invariants', () => {
  it('hold on a clean outcome', () => {
    const clean = [agent()];
    for (const result of [
      everyMessageOnce(clean),
      requestsValidAndCovered(clean, []),
      eventsInStep(clean),
      noFailedWorkflow(clean),
      referencedKeysExist(clean, new Set(['k1', 'k2'])),
      sameAsWithoutFaults(clean, [agent()]),
    ]) {
      expect(result, result.name).toMatchObject({ passed: true, violations: [] });
    }
  });

  it('I1 counts a lost and a duplicated message', () => {
    const result = everyMessageOnce([agent({ transcript: [user('m000001', 'one'), user('m000002', 'one')] })]);
    expect(result).toMatchObject({ passed: false, lost: 1, duplicated: 1 });
  });

  it('I2 finds an unanswered tool call, a message in the context and in a summary, and one nowhere', () => {
    const call = { id: 'c1', type: 'function' as const, function: { name: 'work', arguments: '{}' } };
    const request = { messages: [{ role: 'assistant' as const, content: null, tool_calls: [call] }] };
    const removed = [{ id: 'm000001', replacedBy: 'summary' }];
    const broken = agent({
      context: [{ id: 'm000001', key: 'k1' }],
      events: [{ seq: 1, trigger: 'auto', strategies: ['summarize'], tokensBefore: 9, tokensAfter: 5, removed }],
    });
    const result = requestsValidAndCovered([broken], [request]);
    expect(result.violations).toEqual([
      'request 1: unanswered-call c1',
      'a1: m000001 is in the context and in a summary',
      'a1: m000002 reaches the model nowhere',
    ]);
  });

  it('I3 finds a gap, a count that differs, and a kept event unlike the stored one', () => {
    const event = (seq: number) => ({
      seq,
      trigger: 'auto',
      strategies: [],
      tokensBefore: 9,
      tokensAfter: seq,
      removed: [],
    });
    const result = eventsInStep([
      agent({ events: [event(1), event(3)], stateCompactions: 3, stateEvents: [{ seq: 1, tokensAfter: 7 }] }),
    ]);
    expect(result.violations).toEqual([
      'a1: event 2 in S3 has seq 3',
      'a1: the state counts 3 compactions, S3 holds 2',
      "a1: the state's event 1 differs from S3's",
    ]);
  });

  it('I4, I5 and I6 find a terminated run, a missing key, and a different transcript', () => {
    expect(noFailedWorkflow([agent({ runs: [{ status: 'TERMINATED', workflowTaskFailures: 2 }] })]).violations).toEqual(
      ['a1: run 1 ended TERMINATED', 'a1: run 1 has 2 failed workflow tasks'],
    );
    expect(referencedKeysExist([agent()], new Set(['k1'])).violations).toEqual(['a1: k2 is referenced, not stored']);
    const other = agent({ transcript: [user('m000001', 'one'), user('m000002', 'TWO')] });
    expect(sameAsWithoutFaults([other], [agent()]).passed).toBe(false);
  });
});

describe('the chaos model', () => {
  it('walks a task step by step from the request alone, then answers', () => {
    const first = scriptedReply([{ role: 'user', content: taskMessage('a2', 3, 2) }], false);
    expect(first).toMatchObject({ toolCalls: [{ id: 'a2-t3-s1', function: { name: 'work' } }] });
    const second = scriptedReply([{ role: 'tool', content: 'step 1 of 2 (task 3 of a2)\nabc' }], false);
    expect(second).toMatchObject({ toolCalls: [{ id: 'a2-t3-s2' }] });
    const done = scriptedReply([{ role: 'tool', content: 'step 2 of 2 (task 3 of a2)\nabc' }], false);
    expect(done).toEqual({ content: 'a2 task 3 done in 2 steps' });
  });
});
