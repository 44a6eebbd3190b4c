/**
 * The planner's triggers and their numbers: the token, message and turn limits, forced and overflow targets, a tool
 * result over the limit under no pressure, the masking pass below the trigger, the one decision's order, the cooldown
 * and pressure levels.
 */
import { describe, expect, it } from 'vitest';
import { protectionOf } from '../../../engine/planner/index.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import { toolPairViolations } from '../../../engine/tool-pairs.ts';
import { gateAfterMaskSkip, gateAfterSkip, gateOf } from '../../../engine/gates.ts';
import { compactionDue, gateFiresWith, NO_COOLDOWN, oversizedResult } from '../../../engine/trigger.ts';
import { context } from '../../support/contexts.ts';
import { plan, sized, strategiesOf, WINDOW } from './planner-support.ts';

describe('triggers', () => {
  it('skips below 0.8 × window and compacts at it', () => {
    // 51,200 = 0.8 × 64,000
    const below = sized(51_199);
    expect(below.tokens).toBe(51_199);
    const noMaskPass = { mask: { fromRatio: null } };
    expect(plan(below, noMaskPass).action).toBe('skip');
    expect(plan(below, noMaskPass).reason).toMatch(/below the trigger/);
    const at = sized(51_200);
    expect(at.tokens).toBe(51_200);
    const p = plan(at);
    expect(p.action).toBe('compact');
    expect(p.reason).toBe('tokens 51200 ≥ 51200');
    expect(p.target.tokens).toBe(32_000);
  });

  it('counts the tool schemas and reply primer (fixed tokens) toward the trigger', () => {
    const c = context().system(100).user(100).turns(19, 2_400);
    expect(c.tokens).toBeLessThan(51_200);
    const noMaskPass = { mask: { fromRatio: null } };
    expect(plan(c, noMaskPass).action).toBe('skip');
    expect(plan(c, noMaskPass, { fixedTokens: 51_200 - c.tokens }).action).toBe('compact');
  });

  it('fires on a message-count limit and aims at half of it', () => {
    const c = context().system().turns(20, 10); // 1 + 20 × 4 = 81 messages, few tokens
    const p = plan(c, { maxMessages: 60 });
    expect(p.reason).toBe('messages 81 > 60');
    expect(p.target.messages).toBe(30);
    expect(p.after.messages).toBeLessThanOrEqual(30);
    expect(p.reachedTarget).toBe(true);
  });

  it('fires on a turn-count limit and aims at half of it', () => {
    const c = context().system().turns(25, 10);
    const p = plan(c, { maxTurns: 20 });
    expect(p.reason).toBe('turns 25 > 20');
    expect(p.target.turns).toBe(10);
    expect(p.after.turns).toBeLessThanOrEqual(10);
  });

  it('a forced compaction runs below the trigger and aims at half the tokens', () => {
    const c = context().system().turns(10, 500); // ≈ 6.7k tokens, far below the trigger
    const p = plan(c, {}, { trigger: 'forced' });
    expect(p.action).toBe('compact');
    expect(p.reason).toBe('forced by request');
    expect(p.target.tokens).toBe(Math.floor(c.tokens / 2));
    expect(p.after.tokens).toBeLessThanOrEqual(p.target.tokens);
  });

  it('an overflow halves the target on each further attempt', () => {
    const c = context().system().turns(60, 1_000);
    expect(plan(c, {}, { trigger: 'overflow', attempt: 1 }).target.tokens).toBe(32_000);
    expect(plan(c, {}, { trigger: 'overflow', attempt: 2 }).target.tokens).toBe(16_000);
    expect(plan(c, {}, { trigger: 'overflow', attempt: 3 }).target.tokens).toBe(8_000);
  });
});

describe('a tool result over the limit, under no pressure', () => {
  it('is cut right after its call (the newest step), and nothing else is done', () => {
    const c = context().system().user().tools(200).tools([9_000, 36_000]);
    const policy = resolvePolicy();
    const gate = gateOf(policy, WINDOW);
    expect(oversizedResult(gate, c.messages)?.id).toBe(c.messages.at(-1)!.id);
    const p = plan(c);
    expect(p.action).toBe('compact');
    expect(p.reason).toBe(`tool result ${c.messages.at(-1)!.id} over the limit (9000 tokens, 36000 chars)`);
    expect(strategiesOf(p)).toEqual(['truncate-tool-results']);
    expect(p.operations.filter((o) => o.op !== 'keep').map((o) => o.id)).toEqual([c.messages.at(-1)!.id]);
    expect(p.reachedTarget).toBe(true);
  });

  it('once its turn has ended, when the policy cuts the results of earlier turns only (chatgpt-on-wechat)', () => {
    const policy = resolvePolicy({ preset: 'chatgpt-on-wechat' });
    const gate = gateOf(policy, WINDOW);
    const c = context().system().user().tools([6_000, 24_000]);
    expect(oversizedResult(gate, c.messages)).toBeUndefined(); // the newest: the model has not seen it yet
    c.tools(100);
    expect(oversizedResult(gate, c.messages)).toBeUndefined(); // the turn in progress keeps its results
    c.reply().user().tools(100);
    expect(oversizedResult(gate, c.messages)?.id).toBe(c.messages[3]!.id);
    const p = plan(c, { preset: 'chatgpt-on-wechat' });
    expect(strategiesOf(p)).toEqual(['truncate-tool-results']);
    // After a plan that found nothing to cut, the gate no longer looks (no plan on every call).
    expect(gateAfterSkip(policy, WINDOW, 1_000, 0.05).toolResults).toBeUndefined();
  });
});

describe('the masking pass below the trigger (default: from 0.5 × window, saving at least 0.1 × window)', () => {
  // One user message, then a loop of tool steps: 64,000 × 0.5 = 32,000 tokens; at least 6,400 saved.
  const loop = (steps: number) => {
    const c = context().system().user();
    for (let i = 0; i < steps; i++) c.tools(1_500);
    return c;
  };

  it('masks every old tool result at once, outside the protected steps, and does nothing else', () => {
    const c = loop(22);
    expect(c.tokens).toBeGreaterThanOrEqual(32_000);
    expect(c.tokens).toBeLessThan(51_200);
    const gate = gateOf(resolvePolicy(), WINDOW);
    expect(gate.mask).toEqual({ tokens: 32_000, atLeast: 6_400, floor: 6_400 });
    const p = plan(c);
    expect(p.action).toBe('compact');
    expect(p.reason).toBe(`tokens ${c.tokens} ≥ 32000: mask the old tool results`);
    expect(strategiesOf(p)).toEqual(['mask-tool-results']);
    expect(p.summary).toBeUndefined();
    const protect = protectionOf(c.messages, resolvePolicy(), WINDOW, c.messages[1]!.id);
    p.operations.forEach((op, i) => {
      const m = c.messages[i]!;
      // Every tool result the protection leaves open is masked; nothing else changes.
      if (m.role === 'tool' && protect[i] === 'none') expect(op.op).toBe('mask');
      else expect(op.op).toBe('keep');
    });
    expect(p.before.tokens - p.after.tokens).toBeGreaterThanOrEqual(6_400);
    expect(toolPairViolations(c.messages.filter((_, i) => p.operations[i]!.op !== 'drop'))).toEqual([]);
  });

  it('is a skip that says why when it would save less than its minimum, and does not run below its threshold', () => {
    // The user's long request is fixed; 8 small results, 4 of them protected, leave less than 6,400 to save.
    const small = context().system().user(24_000);
    for (let i = 0; i < 8; i++) small.tools(1_000);
    expect(small.tokens).toBeGreaterThanOrEqual(32_000);
    const skipped = plan(small);
    expect(skipped.action).toBe('skip');
    expect(skipped.reason).toMatch(/mask the old tool results: masking would save \d+ tokens, less than 6400$/);
    expect(skipped.operations.every((o) => o.op === 'keep')).toBe(true);
    expect(plan(loop(18)).action).toBe('skip'); // under 32,000 tokens
    expect(plan(loop(18)).reason).toMatch(/below the trigger/);
  });

  it('is off in the seed presets and with fromRatio: null; it runs again only once the context has grown by its minimum', () => {
    for (const preset of ['astrbot', 'chatgpt-on-wechat', 'agentscope', 'agentscope-java', 'octomind']) {
      expect(gateOf(resolvePolicy({ preset }), WINDOW).mask).toBeUndefined();
    }
    expect(gateOf(resolvePolicy({ mask: { fromRatio: null } }), WINDOW).mask).toBeUndefined();
    expect(() => resolvePolicy({ mask: { fromRatio: 1.5 } })).toThrow(/mask.fromRatio: 1.5 is not allowed/);
    const stats = { tokens: 40_000, messages: 10, turns: 1 };
    const fresh = gateOf(resolvePolicy(), WINDOW);
    expect(gateFiresWith({ gate: fresh, stats, consecutive: 0 })?.reason).toBe(
      'tokens 40000 ≥ 32000: mask the old tool results',
    );
    // After a compaction that left 34,000 tokens: not before 40,400, whatever the cooldown's step.
    const after = gateOf(resolvePolicy(), WINDOW, { consecutive: 0, lastTokensAfter: 34_000 });
    expect(after.mask!.floor).toBe(40_400);
    expect(gateFiresWith({ gate: after, stats, consecutive: 0 })?.reason).toBeUndefined();
    expect(gateFiresWith({ gate: after, stats: { ...stats, tokens: 40_400 }, consecutive: 3 })?.reason).toMatch(
      /mask the old/,
    );
    // After a skip at 40,000 (it found less than its minimum to mask): held until the skip's growth.
    const skipped = gateAfterSkip(resolvePolicy(), WINDOW, 40_000, 0.05);
    expect(
      gateFiresWith({ gate: skipped, stats: { ...stats, tokens: 41_999 }, consecutive: 1 })?.reason,
    ).toBeUndefined();
    expect(gateFiresWith({ gate: skipped, stats: { ...stats, tokens: 42_000 }, consecutive: 1 })?.reason).toMatch(
      /mask/,
    );
    // A masking pass's own skip holds back only the pass: the token trigger still fires at 51,200.
    const maskSkipped = gateAfterMaskSkip(resolvePolicy(), WINDOW, NO_COOLDOWN, 40_000, 0.05);
    expect(
      gateFiresWith({ gate: maskSkipped, stats: { ...stats, tokens: 41_999 }, consecutive: 0 })?.reason,
    ).toBeUndefined();
    expect(gateFiresWith({ gate: maskSkipped, stats: { ...stats, tokens: 51_200 }, consecutive: 0 })?.reason).toBe(
      'tokens 51200 ≥ 51200',
    );
  });
});

describe('compactionDue: the one decision, in one order', () => {
  it('the trigger first, then a tool result over its limit, then the masking pass', () => {
    const gate = gateOf(resolvePolicy(), WINDOW);
    const big = context().system().user().tools(200).tools([9_000, 36_000]).messages;
    const stats = (tokens: number) => ({ tokens, messages: 10, turns: 1 });
    expect(compactionDue(gate, stats(51_200), true, big)).toEqual({ kind: 'trigger', reason: 'tokens 51200 ≥ 51200' });
    expect(compactionDue(gate, stats(40_000), true, big)).toMatchObject({
      kind: 'tool-result',
      result: { id: big.at(-1)!.id },
    });
    expect(compactionDue(gate, stats(40_000), true)).toMatchObject({ kind: 'mask' });
    expect(compactionDue(gate, stats(20_000), true, big.slice(0, -2))).toBeUndefined();
  });
});

describe('cooldown', () => {
  it('holds back an automatic compaction until the context grew by 10%, 20%, 40%, 80%, 100%', () => {
    const c = sized(56_000); // over the trigger (51,200), under the hard limit (60,800)
    for (const [consecutive, growth] of [
      [1, 0.1],
      [2, 0.2],
      [3, 0.4],
      [4, 0.8],
      [5, 1],
      [9, 1],
    ] as const) {
      const lastTokensAfter = Math.floor(c.tokens / (1 + growth)) + 1; // just short of the required growth
      // (The masking pass below the trigger has its own floor: it is off here.)
      const held = plan(c, { mask: { fromRatio: null } }, { cooldown: { consecutive, lastTokensAfter } });
      expect(held.action, `consecutive ${consecutive}`).toBe('skip');
      const passes = plan(c, {}, { cooldown: { consecutive, lastTokensAfter: Math.floor(c.tokens / (1 + growth)) } });
      expect(passes.action, `consecutive ${consecutive}`).toBe('compact');
    }
  });

  it('a user message (consecutive = 0) resets it, and a forced compaction bypasses it', () => {
    const c = context().system().user().turns(30, 2_000);
    expect(plan(c, {}, { cooldown: { consecutive: 0, lastTokensAfter: c.tokens } }).action).toBe('compact');
    expect(plan(c, {}, { cooldown: { consecutive: 3, lastTokensAfter: c.tokens }, trigger: 'forced' }).action).toBe(
      'compact',
    );
  });
});

describe('pressure levels (Octomind)', () => {
  const at = (tokens: number, consecutive = 0) =>
    plan(sized(tokens), { preset: 'octomind' }, { window: 400_000, cooldown: { consecutive, lastTokensAfter: 0 } });

  it('60k → 2×, 120k → 4×, 160k → 8×', () => {
    expect(at(59_999).action).toBe('skip');
    expect(at(60_000).target).toMatchObject({ tokens: 30_000, level: 0 });
    expect(at(120_000).target).toMatchObject({ tokens: 30_000, level: 1 });
    expect(at(160_000).target).toMatchObject({ tokens: 20_000, level: 2 });
  });

  it('escalates with consecutive compactions, round-robin through the levels', () => {
    expect(at(60_000, 1).target).toMatchObject({ tokens: 15_000, level: 1 });
    expect(at(60_000, 2).target).toMatchObject({ tokens: 7_500, level: 2 });
    expect(at(60_000, 3).target).toMatchObject({ tokens: 30_000, level: 0 });
  });
});
