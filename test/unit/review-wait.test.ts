/**
 * Automatic compactions that wait for review (policy `review`), the pure parts: the policy option and its errors,
 * the gate after a discard (nothing automatic until the context grows), the conversation's pause, the progress
 * query's review and how `longrun watch` reads it, and `longrun start`'s flags.
 */
import { describe, expect, it } from 'vitest';
import { phaseOf, renderChange } from '../../commands/watch.ts';
import { run, UsageError } from '../../commands/cli/main.ts';
import { describeReview } from '../../contract/progress.ts';
import type { ContextRecord } from '../../contract/records.ts';
import type { Draft } from '../../contract/results.ts';
import type { Prepared, WorkflowState } from '../../contract/state.ts';
import { DEFAULT_REVIEW, PolicyError } from '../../engine/policy.ts';
import { PRESET_NAMES, resolvePolicy } from '../../engine/presets.ts';
import { gateOf } from '../../engine/gates.ts';
import { backgroundFires, gateAfterDiscard, gateFires } from '../../engine/trigger.ts';
import { Conversation } from '../../workflows/conversation.ts';
import { Progress, progressOf, reviewOf } from '../../workflows/progress.ts';

const WINDOW = 100_000;

describe('the review policy option', () => {
  it('is off in every preset (absent: no existing policy changes)', () => {
    for (const preset of PRESET_NAMES) expect(resolvePolicy({ preset }).review).toBeUndefined();
  });

  it('given in part takes the defaults: 10 minutes, then applied; null turns it off', () => {
    expect(resolvePolicy({ review: { automatic: true } }).review).toEqual({ ...DEFAULT_REVIEW, automatic: true });
    expect(resolvePolicy({ review: { automatic: true, timeoutSeconds: 30, onTimeout: 'discard' } }).review).toEqual({
      automatic: true,
      timeoutSeconds: 30,
      onTimeout: 'discard',
    });
    expect(resolvePolicy({ review: null }).review).toBeUndefined();
  });

  it('refuses bad values with the field and the limit', () => {
    const refused = (review: unknown) => () => resolvePolicy({ review: review as never });
    expect(refused({ automatic: 'yes' })).toThrow(new PolicyError('review.automatic', 'yes', 'true or false'));
    expect(refused({ automatic: true, timeoutSeconds: 0 })).toThrow(
      'review.timeoutSeconds: 0 is not allowed (an integer from 1 to 2592000)',
    );
    expect(refused({ automatic: true, timeoutSeconds: 2_592_001 })).toThrow(/review\.timeoutSeconds: 2592001/);
    expect(refused({ automatic: true, timeoutSeconds: 1.5 })).toThrow(/review\.timeoutSeconds: 1\.5/);
    expect(refused({ automatic: true, onTimeout: 'fallback' })).toThrow(
      'review.onTimeout: "fallback" is not allowed (one of apply, discard)',
    );
    expect(refused({ automatic: true, after: 3 })).toThrow(
      'review.after: 3 is not allowed (not a review field (automatic, timeoutSeconds, onTimeout))',
    );
    expect(refused(7)).toThrow(/^review: 7 is not allowed/);
  });
});

describe('the gate after a discard', () => {
  const policy = resolvePolicy({ maxTurns: 4 }); // cooldown [0.1, …]: the context must grow by 10%
  const gate = gateOf(policy, WINDOW);

  it('holds every automatic trigger until the context has grown by the cooldown share', () => {
    const stats = { tokens: 96_000, messages: 40, turns: 5 }; // past the trigger (80,000) and the hard limit (95,000)
    expect(gateFires(gate, stats, true)).toBeDefined();
    const { gate: paused, until } = gateAfterDiscard(policy, gate, stats);
    expect(until).toBe(105_600);
    expect(paused).toMatchObject({ pausedUntil: until, floorAfterUser: until, floorWithoutUser: until, hard: until });
    expect(paused.turns).toBe(6); // 5 turns, grown by 10%: at least one more
    expect(paused.toolResults).toBeUndefined();
    expect(gateFires(paused, stats, true)).toBeUndefined();
    expect(gateFires(paused, { ...stats, turns: 6 }, true)).toBeUndefined();
    expect(gateFires(paused, { ...stats, turns: 7 }, true)).toBe('turns 7 > 6');
    expect(gateFires(paused, { ...stats, tokens: until }, true)).toBe(`tokens ${until} ≥ 80000`);
    expect(backgroundFires({ ...paused, background: 70_000 }, { ...stats, tokens: 100_000 }, true)).toBeUndefined();
  });

  it('never lifts the message limit past the policy’s (the state’s bound)', () => {
    const stats = { tokens: 10_000, messages: 1_001, turns: 2 };
    const { gate: paused } = gateAfterDiscard(policy, gate, stats);
    expect(paused.messages).toBe(1_000);
    const roomy = gateAfterDiscard(policy, gate, { ...stats, messages: 500 }).gate;
    expect(roomy.messages).toBe(1_000); // below the limit: the limit stays
  });
});

/** A conversation past its trigger, with a draft of an automatic compaction waiting. */
function waiting(): Conversation {
  const policy = resolvePolicy({ maxTurns: 4, review: { automatic: true, timeoutSeconds: 60 } });
  const conversation = Conversation.begin({ agentId: 'a1', model: 'gpt-4o-mini' }, undefined, 'run-1');
  conversation.describedAs({
    info: { window: WINDOW, encoding: 'o200k_base', margin: 0 } as never,
    fixedTokens: 100,
    policy,
    gate: gateOf(policy, WINDOW),
  });
  const records: ContextRecord[] = Array.from({ length: 10 }, (_, i) => ({
    id: `m00000${i}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    tokens: 1_000,
    chars: 4_000,
    preview: `message ${i}`,
  }));
  conversation.append(...records);
  const info: Omit<Draft, 'summary'> = {
    id: 'draft-1',
    seq: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    reason: 'turns 5 > 4',
    steps: [{ strategy: 'summarize', tokensSaved: 7_000 }],
    planKey: 'k',
    tokensBefore: 10_100,
    tokensAfter: 3_100,
    madeFor: { compactions: 0, messages: 10 },
    waits: { until: '2026-01-01T00:01:00.000Z', timeoutSeconds: 60, onTimeout: 'apply' },
  };
  conversation.drafted(info, { made: conversation.snapshot() } as Prepared); // only `made` is read before it is applied
  return conversation;
}

describe('a draft that waits', () => {
  it('is in the progress query, and longrun watch says how long it waits and what then', () => {
    const conversation = waiting();
    const review = reviewOf(conversation.state)!;
    expect(review).toEqual({
      draft: 'draft-1',
      seq: 1,
      tokensBefore: 10_100,
      tokensAfter: 3_100,
      until: '2026-01-01T00:01:00.000Z',
      onTimeout: 'apply',
    });
    expect(progressOf(conversation.state, new Progress(), 2)).toMatchObject({ review, queued: 2 });
    const now = Date.parse('2026-01-01T00:00:15.000Z');
    expect(describeReview(review, now)).toBe('awaiting review of draft-1 (times out in 45 s, then applied)');
    expect(describeReview({ ...review, until: '2026-01-01T00:05:00.000Z', onTimeout: 'discard' }, now)).toBe(
      'awaiting review of draft-1 (times out in 4 min 45 s, then discarded)',
    );
    expect(phaseOf({ review })).toBe(
      'awaiting review of draft-1 (times out at 2026-01-01T00:01:00.000Z, then applied)',
    );
    expect(phaseOf({ turn: { turn: 5, step: 1, began: '2026-01-01T00:00:00.000Z' }, review }, now)).toBe(
      'turn 5 · model call 1 · 15 s | awaiting review of draft-1 (times out in 45 s, then applied)',
    );
    // In a pipe: the time left, not the time spent.
    expect(renderChange({ type: 'phase', review }, 'a1', now)).toBe(
      'awaiting review of draft-1 (times out in 45 s, then applied)',
    );
    // A manual draft (compact with review: true) does not wait: nothing to show.
    const state: WorkflowState = {
      ...conversation.state,
      draft: { ...conversation.state.draft!, info: { ...conversation.state.draft!.info, waits: undefined } },
    };
    expect(reviewOf(state)).toBeUndefined();
  });

  it('discarded, pauses automatic compaction from the context as it is, with the reason', () => {
    const conversation = waiting();
    conversation.draftEnded('draft-1 discarded');
    const until = conversation.pausedAfterDiscard('draft-1 discarded');
    const { state } = conversation;
    expect(until).toBe(Math.ceil(state.contextTokens * 1.1));
    expect(state.cooldown).toMatchObject({ pausedUntil: until, pausedFor: 'draft-1 discarded' });
    expect(state.gate!.turns).toBe(6);
    expect(conversation.compactionDue()).toBeUndefined();
    expect(progressOf(state, new Progress(), 0)).toMatchObject({ pausedUntil: until, pausedFor: 'draft-1 discarded' });
    expect(state.draft).toBeUndefined();
    expect(state.lastDraft).toBe('draft-1 discarded');
  });
});

describe('longrun start --await-review', () => {
  it('needs SECONDS in range, and --on-review-timeout goes with it, as apply or discard', async () => {
    await expect(run(['start', 'a1', '--on-review-timeout', 'discard'])).rejects.toThrow(
      new UsageError('--on-review-timeout goes with --await-review SECONDS'),
    );
    await expect(run(['start', 'a1', '--await-review', '0'])).rejects.toThrow(
      '--await-review: must be an integer from 1 to 2592000 (got "0")',
    );
    await expect(run(['start', 'a1', '--await-review', '60', '--on-review-timeout', 'later'])).rejects.toThrow(
      '--on-review-timeout: must be apply or discard (got "later")',
    );
  });

  it('is a setting --reopen refuses', async () => {
    await expect(
      run(['start', 'a1', '--reopen', '--await-review', '60', '--on-review-timeout', 'apply']),
    ).rejects.toThrow(
      new UsageError('--reopen continues the agent as it was: it cannot go with --await-review, --on-review-timeout'),
    );
  });
});
