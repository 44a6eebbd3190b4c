import { describe, expect, it } from 'vitest';
import { appliedFromCarry, appliedResult, rememberApplied, storedReplyOf } from '../../workflows/applied-updates.ts';
import type { AppliedUpdates } from '../../workflows/applied-updates.ts';
import { summaryOfEvent } from '../../contract/results.ts';
import type { CompactionEvent, SendResult, UpdateResult } from '../../contract/results.ts';

const reply = (turn: number, chars: number): SendResult => ({
  turn,
  reply: 'x'.repeat(chars),
  messageId: `m${turn}a`,
  replyId: `m${turn}b`,
  toolCalls: 0,
  steps: 1,
});

const event: CompactionEvent = {
  seq: 3,
  trigger: 'forced',
  reason: 'forced',
  at: '2026-11-22T00:00:00.000Z',
  strategies: ['truncate-rounds'],
  notes: [],
  tokensBefore: 900,
  tokensAfter: 300,
  messagesBefore: 12,
  messagesAfter: 4,
  targetTokens: 400,
  reachedTarget: true,
  removedCount: 2,
  removed: [
    { id: 'm000001', role: 'user', tokens: 10, key: 'agents/a/messages/m000001.json', by: 'truncate-rounds' },
    { id: 'm000002', role: 'assistant', tokens: 5, key: 'agents/a/messages/m000002.json', by: 'truncate-rounds' },
  ],
  durationMs: 12,
  keys: { event: 'e', removed: 'r', context: 'c' },
};

describe('compaction event summaries', () => {
  it('leave the removed items out and count them', () => {
    const summary = summaryOfEvent(event);
    expect(summary).not.toHaveProperty('removed');
    expect(summary).toEqual({ ...summary, removedCount: 2, seq: 3, tokensAfter: 300 });
  });

  it('count the removed items of an event recorded before summaries (no removedCount)', () => {
    const { removedCount: _, ...old } = event;
    expect(summaryOfEvent(old as CompactionEvent).removedCount).toBe(2);
  });

  it('pass a summary through unchanged', () => {
    const summary = summaryOfEvent(event);
    expect(summaryOfEvent(summary)).toEqual(summary);
  });
});

describe('applied Updates carried across continue-as-new', () => {
  it('answer an Update applied before, and nothing for a new one', () => {
    const applied: AppliedUpdates = new Map();
    rememberApplied(applied, 'u1', reply(1, 10));
    expect(appliedResult(applied, 'u1')).toEqual(reply(1, 10));
    expect(appliedResult(applied, 'u2')).toBeUndefined();
    expect(appliedResult(applied, undefined)).toBeUndefined();
  });

  it('keep the newest ids only', () => {
    const applied: AppliedUpdates = new Map();
    for (let i = 1; i <= 5; i++) rememberApplied(applied, `u${i}`, reply(i, 10), { ids: 3, chars: 1_000_000 });
    expect([...applied.keys()]).toEqual(['u3', 'u4', 'u5']);
  });

  it('keep results newest first while they fit the budget; an older one keeps its id and is refused, not re-applied', () => {
    const applied: AppliedUpdates = new Map();
    const limits = { ids: 10, chars: 2 * JSON.stringify(reply(1, 1_000)).length };
    for (let i = 1; i <= 4; i++) rememberApplied(applied, `u${i}`, reply(i, 1_000), limits);
    expect([...applied.entries()].map(([id, r]) => [id, r === null])).toEqual([
      ['u1', true],
      ['u2', true],
      ['u3', false],
      ['u4', false],
    ]);
    expect(appliedResult(applied, 'u4')).toEqual(reply(4, 1_000));
    expect(() => appliedResult(applied, 'u1')).toThrow(
      'update u1: already applied in an earlier run, and its result is no longer kept',
    );
    const chars = [...applied.values()].reduce((sum, r) => sum + (r ? JSON.stringify(r).length : 0), 0);
    expect(chars).toBeLessThanOrEqual(limits.chars);
  });

  it('keep a compaction result with its event summary, from a carry made before summaries too', () => {
    const applied = appliedFromCarry([
      ['c1', { compacted: true, reason: 'forced', event }],
      ['c2', null],
    ]);
    const kept = appliedResult(applied, 'c1');
    expect(kept).toEqual({ compacted: true, reason: 'forced', event: summaryOfEvent(event) });
    expect(() => appliedResult(applied, 'c2')).toThrow(/no longer kept/);
    rememberApplied(applied, 'c3', { compacted: true, reason: 'forced', event });
    expect((appliedResult(applied, 'c3') as { event: object }).event).not.toHaveProperty('removed');
  });

  it('keep a compaction result carried under its former name (`compressed`) as `compacted`', () => {
    const carried = { compressed: false, reason: 'not due' } as unknown as UpdateResult;
    const applied = appliedFromCarry([['c1', carried]]);
    expect(appliedResult(applied, 'c1')).toEqual({ compacted: false, reason: 'not due' });
  });

  it('keep a `send` result without its stored reply (`replyStored`): the reply is read back by its id', () => {
    const applied: AppliedUpdates = new Map();
    rememberApplied(applied, 'u1', reply(1, 50_000), { replyStored: true });
    const kept = appliedResult(applied, 'u1')!;
    const { reply: _, ...rest } = reply(1, 50_000);
    expect(kept).toEqual({ ...rest, replyStored: true });
    expect(storedReplyOf(kept)).toBe('m1b');
    expect(JSON.stringify([...applied]).length).toBeLessThan(300);
  });

  it('keep the results of 64 long replies by reference, none let go, where whole they would not fit', () => {
    const applied: AppliedUpdates = new Map();
    for (let i = 1; i <= 64; i++) rememberApplied(applied, `u${i}`, reply(i, 10_000), { replyStored: true });
    expect([...applied.values()].every((kept) => kept !== null && storedReplyOf(kept) !== undefined)).toBe(true);
    const whole: AppliedUpdates = new Map();
    for (let i = 1; i <= 64; i++) rememberApplied(whole, `u${i}`, reply(i, 10_000));
    expect([...whole.values()].filter((kept) => kept === null).length).toBeGreaterThan(50);
  });

  it("keep a stopped turn's reply whole (it is a note, not the stored reply), and a carry's whole results as carried", () => {
    const stopped: SendResult = {
      ...reply(2, 0),
      reply: 'stopped at its budget',
      stopped: { by: 'steps', limit: 3, used: 3 },
    };
    const applied = appliedFromCarry([['u1', reply(1, 100)]]);
    rememberApplied(applied, 'u2', stopped, { replyStored: true });
    expect(appliedResult(applied, 'u2')).toEqual(stopped);
    expect(storedReplyOf(appliedResult(applied, 'u2')!)).toBeUndefined();
    expect(appliedResult(applied, 'u1')).toEqual(reply(1, 100));
  });
});
