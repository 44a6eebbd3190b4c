/**
 * The loop guard (policy `loopGuard`), rule by rule with its numbers: ineffective compactions counted, the largest
 * items offloaded after two, automatic compaction paused after three until the context grows, and what resets it.
 */
import { describe, expect, it } from 'vitest';
import type { PlanInput } from '../../../engine/planner/index.ts';
import { DEFAULT_LOOP_GUARD, PolicyError } from '../../../engine/policy.ts';
import { PRESET_NAMES, resolvePolicy } from '../../../engine/presets.ts';
import { gateAfterSkip, gateOf } from '../../../engine/gates.ts';
import { judgeCompaction, loopGuardNote, offloadsLargest } from '../../../engine/loop-guard.ts';
import type { JudgedCompaction } from '../../../engine/loop-guard.ts';
import { backgroundFires, compactionDue, cooldownAfter, gateFires, NO_COOLDOWN } from '../../../engine/trigger.ts';
import type { CooldownState, Trigger } from '../../../engine/trigger.ts';
import { context, planFor } from '../../support/contexts.ts';
import type { ContextBuilder } from '../../support/contexts.ts';

const WINDOW = 64_000;
const policy = resolvePolicy();

/** A compaction of a 50,000-token context that left `after` tokens. */
const done = (after: number, trigger: Trigger = 'auto', extra: Partial<JudgedCompaction> = {}): JudgedCompaction => ({
  trigger,
  routine: false,
  tokensBefore: 50_000,
  tokensAfter: after,
  ...extra,
});

/** The cooldown after a compaction, as the apply activity and the workflow both compute it. */
function after(before: CooldownState, compaction: JudgedCompaction): CooldownState {
  const guard = judgeCompaction(policy, before, compaction);
  return cooldownAfter(before, { trigger: compaction.trigger, tokensAfter: compaction.tokensAfter, guard });
}

describe('the policy', () => {
  it('every preset has the guard: 10% of the context, offload the largest after 2, pause after 3', () => {
    expect(DEFAULT_LOOP_GUARD).toEqual({ minSavingRatio: 0.1, offloadAfter: 2, pauseAfter: 3 });
    for (const preset of PRESET_NAMES) expect(resolvePolicy({ preset }).loopGuard).toEqual(DEFAULT_LOOP_GUARD);
  });

  it('takes fields in part, turns off with null, and names the field and the range of a bad value', () => {
    expect(resolvePolicy({ loopGuard: { minSavingRatio: 0.2 } }).loopGuard).toEqual({
      ...DEFAULT_LOOP_GUARD,
      minSavingRatio: 0.2,
    });
    expect(resolvePolicy({ loopGuard: null }).loopGuard).toBeUndefined();
    const bad: [unknown, string][] = [
      [{ minSavingRatio: 0 }, 'loopGuard.minSavingRatio: 0 is not allowed (a number > 0 and ≤ 0.9)'],
      [{ minSavingRatio: 1 }, 'loopGuard.minSavingRatio: 1 is not allowed (a number > 0 and ≤ 0.9)'],
      [{ offloadAfter: 0 }, 'loopGuard.offloadAfter: 0 is not allowed (an integer from 1 to 100)'],
      [{ pauseAfter: 2 }, 'loopGuard.pauseAfter: 2 is not allowed (an integer from 3 to 101)'],
      [{ pauseAfter: 2.5 }, 'loopGuard.pauseAfter: 2.5 is not allowed (an integer from 3 to 101)'],
      [
        { stopAfter: 3 },
        'loopGuard.stopAfter: 3 is not allowed (not a loop guard field (minSavingRatio, offloadAfter, pauseAfter))',
      ],
    ];
    for (const [loopGuard, message] of bad) {
      expect(() => resolvePolicy({ loopGuard } as never)).toThrow(PolicyError);
      expect(() => resolvePolicy({ loopGuard } as never)).toThrow(message);
    }
  });
});

describe('ineffective compactions, counted', () => {
  it('saving less than 10% of the context is ineffective; growing it too; 10% or more is not', () => {
    expect(judgeCompaction(policy, NO_COOLDOWN, done(45_001))).toMatchObject({ ineffective: true, inARow: 1 });
    expect(judgeCompaction(policy, NO_COOLDOWN, done(45_000))).toEqual({
      ineffective: false,
      savedShare: 0.1,
      inARow: 0,
    });
    const grew = judgeCompaction(policy, NO_COOLDOWN, done(51_000))!;
    expect(grew).toMatchObject({ ineffective: true, inARow: 1 });
    expect(grew.savedShare).toBeCloseTo(-0.02);
  });

  it('without a guard in the policy there is no verdict, and the count starts over', () => {
    const off = resolvePolicy({ loopGuard: null });
    expect(judgeCompaction(off, NO_COOLDOWN, done(49_000))).toBeUndefined();
    const before = { consecutive: 1, lastTokensAfter: 10, ineffective: 2 };
    expect(cooldownAfter(before, { trigger: 'auto', tokensAfter: 100 })).toEqual({
      consecutive: 2,
      lastTokensAfter: 100,
    });
  });

  it('a message or turn limit that fired is met by fewer messages: a share of them removed counts as saved', () => {
    const byCount = done(49_000, 'auto', { messages: { before: 1_001, after: 500 } });
    expect(judgeCompaction(policy, NO_COOLDOWN, byCount)!.ineffective).toBe(false);
    const fewer = done(49_000, 'auto', { messages: { before: 1_001, after: 950 } });
    expect(judgeCompaction(policy, NO_COOLDOWN, fewer)!.ineffective).toBe(true);
  });

  it('an effective compaction of any trigger resets the count; an ineffective forced or overflow one leaves it', () => {
    const two: CooldownState = { consecutive: 0, lastTokensAfter: 0, ineffective: 2 };
    expect(judgeCompaction(policy, two, done(20_000, 'forced'))!.inARow).toBe(0);
    expect(judgeCompaction(policy, two, done(20_000, 'background'))!.inARow).toBe(0);
    expect(judgeCompaction(policy, two, done(49_000, 'forced'))).toMatchObject({ ineffective: true, inARow: 2 });
    expect(judgeCompaction(policy, two, done(49_000, 'overflow'))).toMatchObject({ ineffective: true, inARow: 2 });
    expect(judgeCompaction(policy, two, done(49_000, 'background'))).toMatchObject({ inARow: 3, paused: true });
  });

  it('routine compactions (a masking pass, a tool-result cut) neither count nor reset', () => {
    const two: CooldownState = { consecutive: 0, lastTokensAfter: 0, ineffective: 2 };
    const routine = (tokensAfter: number) => done(tokensAfter, 'auto', { routine: true });
    expect(judgeCompaction(policy, two, routine(49_000))).toMatchObject({ ineffective: true, inARow: 2 });
    expect(judgeCompaction(policy, two, routine(20_000))).toMatchObject({ ineffective: false, inARow: 2 });
  });
});

describe('two ineffective in a row: the largest items offloaded; three: paused until the context grows', () => {
  it('walks the streak: count 1, 2, offload, pause with the floor at 10% growth; a user message does not lift it', () => {
    let cooldown: CooldownState = NO_COOLDOWN;
    cooldown = after(cooldown, done(48_000));
    expect(cooldown).toMatchObject({ ineffective: 1 });
    expect(offloadsLargest(policy, cooldown, 'auto')).toBe(false);
    cooldown = { ...after(cooldown, done(48_000)), consecutive: 0 }; // a user message resets the cooldown's step only
    expect(cooldown).toMatchObject({ ineffective: 2 });
    expect(offloadsLargest(policy, cooldown, 'auto')).toBe(true);
    expect(offloadsLargest(policy, cooldown, 'background')).toBe(true);
    expect(offloadsLargest(policy, cooldown, 'forced')).toBe(false); // a forced compaction runs as asked
    const third = judgeCompaction(policy, cooldown, done(48_000))!;
    expect(third).toMatchObject({ ineffective: true, inARow: 3, paused: true, pausedUntil: 52_800 }); // 48,000 × 1.1
    cooldown = cooldownAfter(cooldown, { trigger: 'auto', tokensAfter: 48_000, guard: third });
    expect(cooldown).toEqual({ consecutive: 1, lastTokensAfter: 48_000, ineffective: 3, pausedUntil: 52_800 });
    expect(offloadsLargest(policy, cooldown, 'auto')).toBe(false);

    const gate = gateOf(policy, WINDOW, cooldown);
    expect(gate.pausedUntil).toBe(52_800);
    const stats = (tokens: number) => ({ tokens, messages: 100, turns: 3 });
    // Over the trigger (51,200), a user message or not: nothing until 52,800.
    expect(gateFires(gate, stats(52_799), true)).toBeUndefined();
    expect(gateFires(gate, stats(52_799), false)).toBeUndefined();
    expect(gateFires(gate, stats(52_800), true)).toBe('tokens 52800 ≥ 51200');
    // The soft threshold (which moves up with the floor, its head start below it), the masking pass and the
    // tool-result cut pause too.
    expect(backgroundFires(gate, stats(52_799), true)).toBeUndefined();
    expect(backgroundFires(gate, stats(52_800), true)).toMatch(/^tokens 52800 ≥ soft threshold/);
    expect(gate.toolResults).toBeUndefined();
    expect(gate.mask!.floor).toBe(54_400); // its own floor (48,000 + 6,400 it must save) is past the pause's
    const huge = [{ id: 'm000009', role: 'tool', tokens: 20_000, chars: 80_000 }];
    expect(compactionDue(gate, stats(52_799), true, huge)).toBeUndefined();
  });

  it('the hard limit still fires while paused (a request must fit the window), and a pause may reach past it', () => {
    const paused: CooldownState = { consecutive: 1, lastTokensAfter: 58_000, ineffective: 3, pausedUntil: 63_800 };
    const gate = gateOf(policy, WINDOW, paused);
    expect(gateFires(gate, { tokens: 60_799, messages: 10, turns: 1 }, true)).toBeUndefined();
    expect(gateFires(gate, { tokens: 60_800, messages: 10, turns: 1 }, true)).toBe('tokens 60800 ≥ hard limit 60800');
  });

  it('after the pause (growth, or the hard limit) the count starts over; an effective compaction lifts it at once', () => {
    const paused: CooldownState = { consecutive: 1, lastTokensAfter: 48_000, ineffective: 3, pausedUntil: 52_800 };
    expect(judgeCompaction(policy, paused, done(49_000))).toMatchObject({ inARow: 1 });
    expect(after(paused, done(49_000))).toEqual({ consecutive: 2, lastTokensAfter: 49_000, ineffective: 1 });
    expect(after(paused, done(20_000, 'forced'))).toEqual({ consecutive: 0, lastTokensAfter: 20_000 });
    // A forced compaction that saved nothing leaves the pause as it was.
    expect(after(paused, done(49_000, 'forced'))).toMatchObject({ ineffective: 3, pausedUntil: 52_800 });
    // So does a forced request that found nothing to do (its gate holds until the pause's end, or its own growth).
    expect(gateAfterSkip(policy, WINDOW, 40_000, 0.1, paused)).toMatchObject({
      floorAfterUser: 52_800,
      floorWithoutUser: 52_800,
      pausedUntil: 52_800,
    });
  });

  it('a masking pass keeps the count and the pause', () => {
    const paused: CooldownState = { consecutive: 1, lastTokensAfter: 48_000, ineffective: 3, pausedUntil: 52_800 };
    expect(cooldownAfter(paused, { trigger: 'auto', maskPass: true, tokensAfter: 40_000 })).toEqual({
      ...paused,
      maskedTokensAfter: 40_000,
    });
  });

  it('the event says what happened, in words', () => {
    const one = judgeCompaction(policy, NO_COOLDOWN, done(48_000))!;
    expect(loopGuardNote(policy, one, done(48_000))).toBe(
      'loop guard: ineffective, saved 2000 of 50000 tokens (4.0%), less than 10.0%; 1 in a row',
    );
    const two = judgeCompaction(policy, { ...NO_COOLDOWN, ineffective: 1 }, done(51_000))!;
    expect(loopGuardNote(policy, two, done(51_000))).toBe(
      'loop guard: ineffective, grew the context from 50000 to 51000 tokens, less than 10.0%; 2 in a row: ' +
        'the next automatic compaction offloads the largest items instead',
    );
    const three = judgeCompaction(policy, { ...NO_COOLDOWN, ineffective: 2 }, done(48_000))!;
    expect(loopGuardNote(policy, three, done(48_000))).toBe(
      'loop guard: ineffective, saved 2000 of 50000 tokens (4.0%), less than 10.0%; 3 ineffective automatic ' +
        'compactions in a row: automatic compaction paused until the context reaches 52800 tokens (the hard limit ' +
        'still compacts; a forced compaction runs)',
    );
  });
});

describe('the planner under the guard', () => {
  // Unpriced: at a first compaction's pace, offloading from the start of the context would not pay for the prompt
  // cache it throws away (the cost decision has its own tests, cost-cache.test.ts).
  const plan = (c: ContextBuilder, extra: Partial<PlanInput> = {}, window = WINDOW) =>
    planFor(c, resolvePolicy({ mask: { fromRatio: null }, cost: null }), window, extra);

  it("after two ineffective ones, offloads the largest items (recent ones too) instead of the policy's strategies", () => {
    // Over the trigger (51,200): five results of 9,000 to 13,000 tokens, the newest step a small one.
    const c = context().system(100).user(100).tools(13_000).tools(9_000).tools(11_000).tools(10_000).tools(12_000);
    c.reply(100).user(50).tools(500);
    const normal = plan(c);
    expect(normal.steps.map((s) => s.strategy)).not.toContain('offload-largest');
    const guarded = plan(c, { cooldown: { consecutive: 0, lastTokensAfter: 0, ineffective: 2 } });
    expect(guarded.action).toBe('compact');
    expect(guarded.steps.map((s) => s.strategy)).toEqual(['offload-largest']);
    const step = guarded.steps[0]!;
    expect(step.note).toBe(
      "loop guard: 2 ineffective compactions in a row, so the largest items are offloaded instead of the policy's strategies",
    );
    // Largest first (13,000, then 12,000), until under the target (32,000).
    const tokensOf = (id: string) => c.messages.find((m) => m.id === id)!.tokens;
    expect(step.ids.map(tokensOf)).toEqual([13_000, 12_000]);
    expect(guarded.after.tokens).toBeLessThanOrEqual(guarded.target.tokens);
    expect(guarded.summary).toBeUndefined();
  });

  it('with nothing large to offload, the attempt runs the policy as before (so it still makes an event)', () => {
    const c = context().system(100).user(100);
    for (let i = 0; i < 400; i++) c.reply(130);
    c.user(50);
    const guarded = plan(c, { cooldown: { consecutive: 0, lastTokensAfter: 0, ineffective: 2 } });
    expect(guarded.action).toBe('compact');
    expect(guarded.steps.map((s) => s.strategy)).toContain('summarize');
  });

  it('the known case (a forced compaction of a small context grew it 606 → 841 tokens): auto refuses, forced says nothing to gain unless asked', () => {
    // System prompt, goal and four short exchanges: the summary's frame and the first task ledger outweigh the span.
    const c = context()
      .system(120)
      .user(60)
      .reply(20)
      .user(10)
      .reply(25)
      .user(10)
      .reply(30)
      .user(10)
      .reply(20)
      .user(10);
    const window = Math.floor(c.tokens / 0.8); // the trigger fires now (0.8 × 393 = 314.4, reached at 315)
    const auto = plan(c, {}, window);
    expect(auto.action).toBe('skip');
    expect(auto.reason).toBe('would not shrink the context: 315 tokens, 538 expected after [truncate-rounds, halve]');
    expect(auto.noGain).toEqual({ tokensBefore: 315, tokensAfter: 538 });
    // A forced one says there is nothing to gain, with the plan's estimate…
    const refused = plan(c, { trigger: 'forced' }, window);
    expect(refused.action).toBe('skip');
    expect(refused.noGain).toEqual({ tokensBefore: 315, tokensAfter: 538 });
    expect(refused.reason).toMatch(/^nothing to gain \(315 → ~538 tokens\): \[truncate-rounds, halve\] would leave/);
    expect(refused.operations.every((o) => o.op === 'keep')).toBe(true);
    // …and with evenIfLarger runs as asked. The plan counts the first ledger: the goal (60) and its frame (64).
    const forced = plan(c, { trigger: 'forced', evenIfLarger: true }, window);
    expect(forced.action).toBe('compact');
    expect(forced.summary!.ledgerTokens).toBe(124);
    expect(forced.after.tokens).toBe(538);
    // …and what it did is judged on what it left: ineffective, its event saying it grew the context.
    const grew: JudgedCompaction = { trigger: 'forced', routine: false, tokensBefore: 606, tokensAfter: 841 };
    const verdict = judgeCompaction(policy, NO_COOLDOWN, grew)!;
    expect(verdict).toMatchObject({ ineffective: true, inARow: 0 });
    expect(loopGuardNote(policy, verdict, grew)).toBe(
      'loop guard: ineffective, grew the context from 606 to 841 tokens, less than 10.0%',
    );
  });
});
