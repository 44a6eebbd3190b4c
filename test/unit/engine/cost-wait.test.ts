/**
 * What an automatic compaction that does not pay waits for, and what it may not do to reach its target (issue 29):
 * the remaining calls a compaction serves are at least those the context takes to grow back by what it removes; a
 * plan that did not pay holds until it would, at the session's pace; a background compaction that did not pay is
 * left to the trigger; halving, which breaks the protection of the newest steps, runs for an automatic compaction
 * only while the context is still at or above its trigger.
 */
import { describe, expect, it } from 'vitest';
import { estimateCost, growthUntilWorthIt, tokensPerCallOf } from '../../../engine/compaction-value.ts';
import { gateAfterSkippedPlan, gateOf } from '../../../engine/gates.ts';
import type { PolicyOverrides } from '../../../engine/policy.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import { holdGrowth, NO_COOLDOWN } from '../../../engine/trigger.ts';
import { context } from '../../support/contexts.ts';
import { plan, strategiesOf } from './planner-support.ts';

const prices = { inputPerMillion: 1.25, summaryOutputPerMillion: 10 }; // cached input 0.125 (the default 0.1×)

describe('the remaining calls a compaction serves', () => {
  it('are at least the calls the context takes to grow back by what leaves it', () => {
    // A masking pass 3 calls ago: the pace alone says 3 calls; at 500 tokens a call, 5,000 tokens take 10 to return.
    const paced = estimateCost(prices, 12_000, 7_000, 0, 0, 3, { cachedPrefixTokens: 1_000 });
    const refilled = estimateCost(prices, 12_000, 7_000, 0, 0, 3, { cachedPrefixTokens: 1_000, tokensPerCall: 500 });
    expect(paced.remainingTurns).toBe(3);
    expect(refilled.remainingTurns).toBe(10);
    expect(refilled.netBenefit).toBeGreaterThan(paced.netBenefit);
    // Never fewer than the pace: at 5,000 tokens a call it is 1, the pace's 3 stand.
    expect(estimateCost(prices, 12_000, 7_000, 0, 0, 3, { tokensPerCall: 5_000 }).remainingTurns).toBe(3);
    // A fixed figure in the cost model is what it says.
    const fixed = estimateCost({ ...prices, expectedRemainingTurns: 4 }, 12_000, 7_000, 0, 0, 3, { tokensPerCall: 1 });
    expect(fixed).toMatchObject({ remainingTurns: 4, remainingFrom: 'policy' });
  });

  it('tokensPerCallOf: the growth since the last compaction over the calls it took', () => {
    expect(tokensPerCallOf(12_000, 7_000, 10)).toBe(500);
    expect(tokensPerCallOf(12_000, 0, undefined)).toBe(12_000);
    expect(tokensPerCallOf(6_000, 7_000, 4)).toBe(0); // smaller than after the last one (a revert): no growth known
  });
});

describe('an automatic compaction that does not pay waits until it would', () => {
  it('growthUntilWorthIt: the calls until the saving covers the cost, times the tokens a call adds', () => {
    const cost = estimateCost(prices, 12_000, 7_000, 0, 0, 2, { cachedPrefixTokens: 1_000 });
    expect(cost.netBenefit).toBeLessThan(0);
    const growth = growthUntilWorthIt(cost, prices, 500)!;
    const calls = Math.ceil(-cost.netBenefit / ((5_000 * 0.125) / 1e6));
    expect(growth).toBeCloseTo((calls * 500) / 12_000, 12);
    // That many calls later, at the same sizes, it pays; one fewer, it does not.
    const at = (n: number) => estimateCost(prices, 12_000, 7_000, 0, 0, n, { cachedPrefixTokens: 1_000 }).netBenefit;
    expect(at(2 + calls)).toBeGreaterThanOrEqual(0);
    expect(at(2 + calls - 1)).toBeLessThan(0);
    // Nothing to wait for: it pays, the remaining calls are fixed, or nothing is saved.
    expect(growthUntilWorthIt({ ...cost, netBenefit: 0.001 }, prices, 500)).toBeUndefined();
    expect(growthUntilWorthIt({ ...cost, remainingFrom: 'policy' }, prices, 500)).toBeUndefined();
    expect(growthUntilWorthIt({ ...cost, tokensAfter: 12_000 }, prices, 500)).toBeUndefined();
  });

  it('the gate after such a skip holds every trigger until then, and the soft threshold until the next compaction', () => {
    const policy = resolvePolicy();
    const window = 16_000;
    const cooldown = { consecutive: 1, lastTokensAfter: 7_000 };
    const cost = estimateCost(policy.cost!, 9_000, 7_500, 0, 0, 2, { cachedPrefixTokens: 1_000 });
    expect(cost.netBenefit).toBeLessThan(0);
    const growth = growthUntilWorthIt(cost, policy.cost!, tokensPerCallOf(9_000, 7_000, 2))!;
    expect(growth).toBeGreaterThan(holdGrowth(policy));
    const skipped = { tokens: 9_000, cost };
    const background = gateAfterSkippedPlan(policy, window, cooldown, skipped, 'background', 2);
    expect(background.floorWithoutUser).toBe(Math.ceil(9_000 * (1 + growth)));
    expect(background.background).toBeUndefined();
    const auto = gateAfterSkippedPlan(policy, window, cooldown, skipped, 'auto', 2);
    expect(auto.floorWithoutUser).toBe(Math.ceil(9_000 * (1 + growth)));
    expect(auto.background).toBe(gateOf(policy, window).background);
    // A skip for another reason (nothing to compact) holds for the fixed share, the soft threshold kept.
    const nothing = gateAfterSkippedPlan(policy, window, NO_COOLDOWN, { tokens: 9_000 }, 'background', 2);
    expect(nothing.floorWithoutUser).toBe(Math.ceil(9_000 * (1 + holdGrowth(policy))));
    expect(nothing.background).toBe(gateOf(policy, window).background);
  });
});

describe('halving, which breaks the protection of the newest steps', () => {
  // A goal of `goal` tokens (fixed: never compacted), then `steps` tool steps of 1,530 tokens, over the trigger
  // (51,200 of 64,000). The newest 4 steps are protected (and the reserve, 6,400 tokens).
  const loop = (goal: number, steps: number) => {
    const c = context().system().user(goal);
    for (let i = 0; i < steps; i++) c.tools(1_500);
    return c;
  };
  const overrides: PolicyOverrides = { cost: null, strategies: ['summarize', 'halve'] };

  it('does not run for an automatic compaction the summary brought under the trigger: it stops short instead', () => {
    // 30,100 fixed + 16 steps: the summary of the unprotected ones leaves about 38,500, over the target (32,000).
    const c = loop(30_000, 16);
    expect(c.tokens).toBeGreaterThan(51_200);
    const p = plan(c, overrides);
    expect(p.action).toBe('compact');
    expect(strategiesOf(p)).toEqual(['summarize']);
    expect(p.reachedTarget).toBe(false);
    expect(p.after.tokens).toBeGreaterThan(p.target.tokens);
    expect(p.after.tokens).toBeLessThan(51_200);
    expect(p.shortfall).toBeDefined();
  });

  it('still runs for a forced compaction, and for an automatic one the summary left at its trigger', () => {
    expect(strategiesOf(plan(loop(30_000, 16), overrides, { trigger: 'forced' }))).toEqual(['summarize', 'halve']);
    // 45,100 fixed + 8 steps: what the summary leaves is still over the trigger.
    const still = plan(loop(45_000, 8), overrides);
    expect(strategiesOf(still)).toEqual(['summarize', 'halve']);
  });
});
