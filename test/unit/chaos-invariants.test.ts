/** The chaos run's invariants catch what they name (each checked on a run that breaks it). */
import { describe, expect, it } from 'vitest';
import {
  eventsInStep,
  everyMessageOnce,
  noFailedWorkflow,
  referencedKeysExist,
  requestsValidAndCovered,
  sameAsWithoutFaults,
  steersOnce,
  streamWhole,
} from '../../bench/chaos/invariants.ts';
import type { AgentOutcome, SteerSent, StreamAgentOutcome } from '../../bench/chaos/invariants.ts';
import type { StreamItem, StreamItemBody } from '../../contract/stream.ts';
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

/** A streaming agent: a task, a reply streamed twice (attempt 1 cut, attempt 2 whole), and a steer after it. */
function streaming(extra: Partial<StreamAgentOutcome> = {}, bodies?: (StreamItemBody & { id?: string })[]) {
  const items = (
    bodies ?? [
      { kind: 'model-start', call: 'm000002', attempt: 1, model: 'x' },
      { kind: 'text', call: 'm000002', attempt: 1, text: 'hel' },
      { kind: 'superseded', call: 'm000002', attempt: 2 },
      { kind: 'model-start', call: 'm000002', attempt: 2, model: 'x' },
      { kind: 'text', call: 'm000002', attempt: 2, text: 'hello ' },
      { kind: 'text', call: 'm000002', attempt: 2, text: 'world' },
      { kind: 'model-end', call: 'm000002', attempt: 2, toolCalls: 1 },
      { kind: 'steer', id: 'steer-m000003', text: 's1 steer 1', turn: 1, step: 2 },
    ]
  ).map((body, offset): StreamItem => ({ ...body, offset, at: '' }));
  const steer: SteerSent = {
    seq: 1,
    text: 's1 steer 1',
    updateId: 'u1',
    answered: { turn: 1, step: 2, messageId: 'm000003', opened: false },
    resent: [],
  };
  return {
    ...agent({
      name: 's1',
      transcript: [
        user('m000001', 's1 task 1: 3 steps'),
        { id: 'm000002', message: { role: 'assistant' as const, content: 'hello world' } },
        user('m000003', 's1 steer 1'),
      ],
      context: [
        { id: 'm000001', key: 'k1' },
        { id: 'm000002', key: 'k2' },
        { id: 'm000003', key: 'k3', steer: true },
      ],
    }),
    segments: [
      { start: 0, items: items.slice(0, 4) },
      { start: 4, items: items.slice(4) },
    ],
    steers: [steer],
    ...extra,
  } satisfies StreamAgentOutcome;
}

describe('chaos invariants of the streaming run (F9)', () => {
  it('hold on a clean streaming outcome, and count its items and superseded attempts', () => {
    expect(streamWhole([streaming()])).toMatchObject({
      passed: true,
      violations: [],
      items: 8,
      gaps: 0,
      duplicates: 0,
      supersededAttempts: 1,
    });
    expect(steersOnce([streaming()])).toMatchObject({ passed: true, sent: 1, answered: 1, applied: 1, lost: 0 });
  });

  it("I7 takes a tool call's callId in each attempt's first argument piece for no duplicate, a piece twice for one", () => {
    const head = (attempt: number) =>
      ({
        kind: 'tool-call-delta',
        call: 'm000002',
        attempt,
        index: 0,
        callId: 's1-t1-s1',
        name: 'work',
        arguments: '',
      }) as const;
    const retried = streaming({}, [
      { kind: 'model-start', call: 'm000002', attempt: 1, model: 'x' },
      head(1),
      { kind: 'superseded', call: 'm000002', attempt: 2 },
      { kind: 'model-start', call: 'm000002', attempt: 2, model: 'x' },
      { kind: 'text', call: 'm000002', attempt: 2, text: 'hello world' },
      head(2),
      { kind: 'model-end', call: 'm000002', attempt: 2, toolCalls: 1 },
    ]);
    expect(streamWhole([retried])).toMatchObject({ passed: true, duplicates: 0 });
    const twice = streaming({}, [...retried.segments.flatMap((s) => s.items), head(2)]);
    expect(streamWhole([twice]).violations).toEqual(['s1: tool call head m000002#2#0 is in the stream twice']);
  });

  it('I7 counts a gap and an overlap between segments', () => {
    const clean = streaming();
    const [first, second] = clean.segments as [StreamAgentOutcome['segments'][0], StreamAgentOutcome['segments'][0]];
    const moved = (start: number) => ({
      start,
      items: second.items.map((item, i) => ({ ...item, offset: start + i })),
    });
    const gap = streamWhole([{ ...clean, segments: [first, moved(5)] }]);
    expect(gap).toMatchObject({ passed: false, gaps: 1, duplicates: 0 });
    expect(gap.violations).toContain('s1: offsets 4 to 4 are in no segment');
    const overlap = streamWhole([{ ...clean, segments: [first, moved(3)] }]);
    expect(overlap).toMatchObject({ passed: false, gaps: 0, duplicates: 1 });
  });

  it('I7 finds an item twice, an attempt not superseded first, and shown text that is not the stored reply', () => {
    const twice = streaming({}, [
      { kind: 'model-start', call: 'm000002', attempt: 1, model: 'x' },
      { kind: 'text', call: 'm000002', attempt: 1, text: 'hello world' },
      { kind: 'model-end', call: 'm000002', attempt: 1, toolCalls: 1 },
      { kind: 'model-end', call: 'm000002', attempt: 1, toolCalls: 1 },
      { kind: 'steer', id: 'steer-m000003', text: 's1 steer 1', turn: 1, step: 2 },
      { kind: 'steer', id: 'steer-m000003', text: 's1 steer 1', turn: 1, step: 2 },
    ]);
    const result = streamWhole([twice]);
    expect(result).toMatchObject({ passed: false, duplicates: 2 });
    expect(result.violations).toEqual([
      's1: item id steer-m000003 is in the stream twice',
      's1: model-end m000002#1 is in the stream twice',
    ]);
    const unannounced = streaming({}, [
      { kind: 'model-start', call: 'm000002', attempt: 1, model: 'x' },
      { kind: 'text', call: 'm000002', attempt: 1, text: 'hel' },
      { kind: 'model-start', call: 'm000002', attempt: 2, model: 'x' },
      { kind: 'text', call: 'm000002', attempt: 2, text: 'hello world' },
      { kind: 'model-end', call: 'm000002', attempt: 2, toolCalls: 1 },
    ]);
    expect(streamWhole([unannounced]).violations).toContain(
      's1: attempt 2 of m000002 writes at 2, not superseded first',
    );
    const other = streaming({
      transcript: [{ id: 'm000002', message: { role: 'assistant' as const, content: 'hello there' } }],
    });
    expect(streamWhole([other]).violations).toEqual([
      's1: reply m000002: the stream shows "hello world", stored "hello there"',
    ]);
  });

  it('I8 finds a steer applied twice, one lost, one out of order, one not marked, and a resend that differs', () => {
    const clean = streaming();
    const twice = steersOnce([{ ...clean, transcript: [...clean.transcript, user('m000009', 's1 steer 1')] }]);
    expect(twice).toMatchObject({ passed: false, duplicated: 1 });
    const lost = steersOnce([{ ...clean, transcript: clean.transcript.slice(0, 2) }]);
    expect(lost).toMatchObject({ passed: false, lost: 1, applied: 0 });
    const unmarked = steersOnce([{ ...clean, context: clean.context.map(({ steer: _s, ...r }) => r) }]);
    expect(unmarked.violations).toEqual(['s1: m000003 (s1 steer 1) is not marked steer']);
    const steer = clean.steers[0]!;
    const resent = steersOnce([
      { ...clean, steers: [{ ...steer, resent: [{ answered: { ...steer.answered!, messageId: 'm000007' } }] }] },
    ]);
    expect(resent.violations).toEqual(['s1: s1 steer 1 sent again answered m000007, first m000003']);
    // Two steers, the second stored (and streamed) before the first.
    const second: SteerSent = {
      seq: 2,
      text: 's1 steer 2',
      updateId: 'u2',
      answered: { turn: 1, step: 2, messageId: 'm000004', opened: false },
      resent: [],
    };
    const reversed = steersOnce([
      {
        ...clean,
        transcript: [...clean.transcript.slice(0, 2), user('m000003', 's1 steer 2'), user('m000004', 's1 steer 1')],
        steers: [
          { ...steer, answered: { ...steer.answered!, messageId: 'm000004' } },
          { ...second, answered: { ...second.answered!, messageId: 'm000003' } },
        ],
      },
    ]);
    expect(reversed.violations).toContain('s1: steers applied in the order 2, 1');
  });

  it('I8 takes a steer whose Update failed as applied at most once', () => {
    const clean = streaming();
    const failed = { ...clean.steers[0]!, answered: undefined, error: 'lost' };
    expect(steersOnce([{ ...clean, steers: [failed] }])).toMatchObject({ passed: true, answered: 0, applied: 1 });
    const absent = steersOnce([{ ...clean, steers: [failed], transcript: clean.transcript.slice(0, 2) }]);
    expect(absent).toMatchObject({ passed: true, applied: 0, lost: 0 });
  });
});
