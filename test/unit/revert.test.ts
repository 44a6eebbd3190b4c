/** A revert as the workflow applies it (pure): the restored context swapped in, and the input's checks. */
import { describe, expect, it } from 'vitest';
import { Conversation } from '../../workflows/conversation.ts';
import type { CompactionEventSummary } from '../../contract/results.ts';
import type { ContextRecord } from '../../contract/records.ts';
import { InvalidInputError } from '../../contract/inputs.ts';
import { validateCompactInput, validateDraftInput, validateRevertInput } from '../../contract/input-checks.ts';
import { messageIdOf } from '../../contract/keys.ts';
import { EMPTY_LEDGER } from '../../engine/ledger.ts';
import { resolvePolicy } from '../../engine/presets.ts';
import { gateOf } from '../../engine/gates.ts';

const record = (seq: number, extra: Partial<ContextRecord> = {}): ContextRecord => ({
  id: messageIdOf(seq),
  role: 'assistant',
  tokens: 10,
  chars: 40,
  preview: '',
  ...extra,
});

const policy = resolvePolicy({ mask: { fromRatio: null } });

function event(seq: number, tokensBefore: number, tokensAfter: number): CompactionEventSummary {
  return {
    seq,
    trigger: 'revert',
    reason: 'revert to before event 1',
    at: '2026-01-01T00:00:00.000Z',
    strategies: ['revert'],
    notes: [],
    tokensBefore,
    tokensAfter,
    messagesBefore: 3,
    messagesAfter: 6,
    targetTokens: tokensAfter,
    reachedTarget: true,
    removedCount: 0,
    durationMs: 0,
    keys: { event: `e${seq}`, removed: `r${seq}`, context: `ctx${seq}` },
  };
}

/** An agent with 6 messages whose first 4 a compaction summarized into one record (its manifest: ctx1). */
function compacted(): Conversation {
  const c = Conversation.begin({ agentId: 'a1', model: 'gpt-4o-mini' }, undefined, 'run-1');
  c.describedAs({
    info: { window: 1000, encoding: 'o200k_base', margin: 0 } as never,
    fixedTokens: 5,
    policy,
    gate: gateOf(policy, 1000),
  });
  for (let i = 0; i < 6; i++) c.newMessageId();
  Object.assign(c.state, {
    messages: [{ ...record(0), id: 'c000001', kind: 'summary' }, record(5), record(6)],
    base: 'ctx1',
    baseLength: 1,
    tailFromSeq: 5,
    compactions: 1,
    stats: { count: 1, averageSizeRatio: 0.5, tokensSaved: 30 },
    ledger: { ...EMPTY_LEDGER, goal: 'after' },
  });
  return c;
}

describe('revert', () => {
  it('swaps the restored context in: the manifest part, then the tail, counted, and the coverage holds', () => {
    const c = compacted();
    const restored = [record(1, { role: 'user' }), record(2), record(3), record(4)];
    const cooldown = { consecutive: 1, lastTokensAfter: 65 };
    c.reverted({
      context: [...restored, record(5), record(6)],
      baseLength: 4,
      tailFromSeq: 5,
      ledger: { ...EMPTY_LEDGER, goal: 'before' },
      event: event(2, 35, 65),
      gate: gateOf(policy, 1000, cooldown),
      cooldown,
    });
    const s = c.state;
    expect(s.messages.map((m) => m.id)).toEqual([1, 2, 3, 4, 5, 6].map(messageIdOf));
    expect([s.base, s.baseLength, s.tailFromSeq, s.compactions]).toEqual(['ctx2', 4, 5, 2]);
    expect(s.contextTokens).toBe(65);
    expect(s.contextTurns).toBe(1);
    expect(s.ledger?.goal).toBe('before');
    expect(s.cooldown).toEqual(cooldown);
    // A revert is counted as such; the compactions' count and reductions stay, and what it put back is counted.
    expect(s.stats).toEqual({ count: 1, averageSizeRatio: 0.5, tokensSaved: 30, reverts: 1, tokensRestored: 30 });
    expect(s.events?.at(-1)?.trigger).toBe('revert');
    expect(c.coverage()).toEqual([]);
    expect(c.view()).toEqual({ base: 'ctx2', baseLength: 4, firstSeq: 5, lastSeq: 6 });
  });

  it('keeps the ledger it finds when the event stored none (an event of an earlier release)', () => {
    const c = compacted();
    const cooldown = { consecutive: 1, lastTokensAfter: 25 };
    c.reverted({
      context: [record(5), record(6)],
      baseLength: 0,
      tailFromSeq: 5,
      ledger: undefined,
      event: event(2, 35, 25),
      gate: gateOf(policy, 1000, cooldown),
      cooldown,
    });
    expect(c.state.ledger?.goal).toBe('after');
    expect(c.coverage()).toEqual([]);
  });

  it('refuses an event the agent does not have, naming the field and the range', () => {
    expect(() => validateRevertInput({ toEvent: 0 })).toThrow(/toEvent: must be an integer ≥ 1.*got 0/);
    expect(() => validateRevertInput({ toEvent: 1.5 })).toThrow(InvalidInputError);
    expect(() => validateRevertInput({ toEvent: '2' as unknown as number })).toThrow(/got "2"/);
    expect(() => validateRevertInput(null as never)).toThrow(/revert: input must be an object/);
    expect(() => validateRevertInput({ toEvent: 4 }, 3)).toThrow(
      /toEvent: 4 is not an event of this agent \(its events are 1 to 3\)/,
    );
    expect(() => validateRevertInput({ toEvent: 1 }, 0)).toThrow(/it has none yet/);
    expect(() => validateRevertInput({ toEvent: 3 }, 3)).not.toThrow();
  });

  it('checks draft input: the id, the edited summary, and that it is the pending draft', () => {
    expect(() => validateDraftInput({ draft: 'draft-2' })).not.toThrow();
    expect(() => validateDraftInput({ draft: '2' })).toThrow(/draft: must be a draft id like "draft-1" \(got "2"\)/);
    expect(() => validateDraftInput({ draft: 'draft-1', summary: ' ' })).toThrow(/summary: must be a non-empty string/);
    expect(() => validateDraftInput({ draft: 'draft-1', summary: 'x'.repeat(200_001) })).toThrow(
      /summary: 200001 characters is over the limit of 200000/,
    );
    expect(() => validateDraftInput({ draft: 'draft-1' }, null, 'draft-1 discarded')).toThrow(
      /draft: draft-1 is not pending: no draft is pending \(draft-1 discarded\)/,
    );
    expect(() => validateDraftInput({ draft: 'draft-1' }, { id: 'draft-2' })).toThrow(/the pending draft is draft-2/);
    expect(() => validateDraftInput({ draft: 'draft-2' }, { id: 'draft-2' })).not.toThrow();
    expect(() => validateCompactInput({ review: 'yes' as unknown as boolean })).toThrow(
      /review: must be true or false/,
    );
  });
});
