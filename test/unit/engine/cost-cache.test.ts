/**
 * Compaction that prices the prompt cache (issue 29, item 3): every automatic decision weighs what it saves over the
 * calls it expects against the cached prefix it throws away; the hard limit always compacts; a masking pass that
 * does not pay waits for the next compaction and goes with it; the request keeps what never changes first.
 */
import { describe, expect, it } from 'vitest';
import { applyPlan } from '../../../engine/apply.ts';
import { estimateCost } from '../../../engine/compaction-value.ts';
import { gateAfterPlanSkip, gateOf } from '../../../engine/gates.ts';
import { kindOf } from '../../../engine/messages.ts';
import type { MessageMeta } from '../../../engine/messages.ts';
import { planCompaction } from '../../../engine/planner/index.ts';
import type { Plan, PlanInput } from '../../../engine/planner/index.ts';
import { Board } from '../../../engine/planner/board.ts';
import { cachedPrefixOf } from '../../../engine/planner/prefix.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import { gateFiresWith, holdGrowth, NO_COOLDOWN } from '../../../engine/trigger.ts';
import { context } from '../../support/contexts.ts';
import type { ContextBuilder } from '../../support/contexts.ts';

const WINDOW = 64_000; // default: mask from 32,000, trigger 51,200, hard limit 60,800
const policy = resolvePolicy();

function plan(messages: readonly MessageMeta[], extra: Partial<PlanInput> = {}): Plan {
  return planCompaction({
    context: messages,
    policy,
    window: WINDOW,
    fixedTokens: 0,
    trigger: 'auto',
    cooldown: NO_COOLDOWN,
    summarizer: 'available',
    goalId: messages.find((m) => m.role === 'user')!.id,
    ...extra,
  });
}

/** One user message, then a loop of tool steps of 1,500 tokens each (1,530 with the call). */
const loop = (steps: number, c: ContextBuilder = context().system().user()) => {
  for (let i = 0; i < steps; i++) c.tools(1_500);
  return c;
};

const maskedIds = (p: Plan) => p.operations.filter((o) => o.op === 'mask').map((o) => o.id);

describe('the cost of a compaction, with the prompt cache', () => {
  const prices = { inputPerMillion: 1, summaryOutputPerMillion: 4 };

  it('prices cached input at 0.1× by default; priced as input, it is Octomind’s arithmetic whatever the prefix', () => {
    const cached = estimateCost(prices, 40_000, 30_000, 0, 0, 10, { cachedPrefixTokens: 2_000 });
    // Without: 10 calls of 40,000 cached. With: 2,000 cached and 28,000 full at the next call, then 9 of 30,000 cached.
    expect(cached.withoutCompaction).toBeCloseTo((10 * 40_000 * 0.1) / 1e6, 12);
    expect(cached.withCompaction).toBeCloseTo((2_000 * 0.1 + 28_000 + 9 * 30_000 * 0.1) / 1e6, 12);
    expect(cached).toMatchObject({ cachedPrefixTokens: 2_000, invalidatedTokens: 38_000 });
    expect(cached.netBenefit).toBeLessThan(0);
    const full = estimateCost({ ...prices, cachedInputPerMillion: 1 }, 40_000, 30_000, 1_000, 100, 10, {
      cachedPrefixTokens: 2_000,
    });
    expect(full.withoutCompaction).toBeCloseTo((10 * 40_000) / 1e6, 12);
    expect(full.withCompaction).toBeCloseTo((1_000 + 100 * 4 + 10 * 30_000) / 1e6, 12);
  });

  it('does not count what no request carried yet as thrown away: cutting the newest result pays at once', () => {
    // 20,000 tokens sent before; a new 12,000-token result cut to 3,000 (the prefix before it unchanged).
    const cut = estimateCost(prices, 32_000, 23_000, 0, 0, 1, { cachedPrefixTokens: 20_000, unsentTokens: 12_000 });
    expect(cut.invalidatedTokens).toBe(0);
    expect(cut.netBenefit).toBeCloseTo((12_000 - 3_000) / 1e6, 12);
  });
});

describe('the masking pass below the trigger, priced', () => {
  const afterCompaction = { cooldown: { consecutive: 1, lastTokensAfter: 0 } };

  it('waits when it does not pay: a pass right after a compaction saves too few calls for the cache it breaks', () => {
    const c = loop(22);
    expect(c.tokens).toBeGreaterThanOrEqual(32_000);
    expect(c.tokens).toBeLessThan(51_200);
    const p = plan(c.messages, { ...afterCompaction, callsSinceCompaction: 2 });
    expect(p.action).toBe('skip');
    expect(p.maskPass).toBe(true);
    expect(p.reason).toMatch(
      /^not worth it: .* over 2 remaining calls \(the session's pace; \d+ tokens out of the prompt cache/,
    );
    expect(p.cost!.netBenefit).toBeLessThan(0);
    expect(p.operations.every((o) => o.op === 'keep')).toBe(true);
    // Its skip holds back the pass alone: the trigger fires where it did.
    const gate = gateAfterPlanSkip(policy, WINDOW, afterCompaction.cooldown, { ...p, tokens: c.tokens }, 0.1);
    expect(gate.tokens).toBe(gateOf(policy, WINDOW, afterCompaction.cooldown).tokens);
    expect(gate.mask!.floor).toBe(Math.ceil(c.tokens * 1.1));
    const stats = { tokens: c.tokens, messages: c.messages.length, turns: 1 };
    expect(gateFiresWith({ gate, stats, consecutive: 1 })).toBeUndefined();
    expect(gateFiresWith({ gate, stats: { ...stats, tokens: 51_200 }, consecutive: 1 })?.kind).toBe('trigger');
  });

  it('runs when it pays: the same pass at the pace that filled the context', () => {
    const c = loop(22);
    const p = plan(c.messages, { ...afterCompaction, callsSinceCompaction: 22 });
    expect(p.action).toBe('compact');
    expect(p.maskPass).toBe(true);
    expect(p.steps.map((s) => s.strategy)).toEqual(['mask-tool-results']);
    expect(p.cost!.netBenefit).toBeGreaterThan(0);
  });

  it('a pass that waited goes with the next compaction: the trigger masks what it would have', () => {
    const c = loop(22);
    const waited = plan(c.messages, { ...afterCompaction, callsSinceCompaction: 2 });
    expect(waited.action).toBe('skip');
    const wouldHave = maskedIds(plan(c.messages, { ...afterCompaction, callsSinceCompaction: 22 }));
    loop(12, c); // 12 calls later, over the trigger
    expect(c.tokens).toBeGreaterThanOrEqual(51_200);
    const p = plan(c.messages, { ...afterCompaction, callsSinceCompaction: 14 });
    expect(p.action).toBe('compact');
    expect(p.maskPass).toBeUndefined();
    expect(p.reason).toBe(`tokens ${c.tokens} ≥ 51200`);
    // Oldest first, as far as its target asks.
    expect(p.steps[0]!.strategy).toBe('mask-tool-results');
    expect(maskedIds(p).slice(0, 8)).toEqual(wouldHave.slice(0, 8));
  });
});

describe('a tool result over the limit, priced', () => {
  // Cut once its turn has ended (chatgpt-on-wechat's timing): a 20,000-token result, then the next message's step.
  const cutPolicy = resolvePolicy({ toolResults: { olderTurnsOnly: true } });
  const c = context().system().user().tools(1_000).tools(20_000).reply().user().tools(500);
  const cutPlan = (calls: number) =>
    planCompaction({
      context: c.messages,
      policy: cutPolicy,
      window: WINDOW,
      fixedTokens: 0,
      trigger: 'auto',
      cooldown: NO_COOLDOWN,
      summarizer: 'available',
      goalId: c.messages[1]!.id,
      callsSinceCompaction: calls,
    });

  it('waits for the next compaction when the cache it breaks costs more than the calls it saves', () => {
    const p = cutPlan(1);
    expect(p.action).toBe('skip');
    expect(p.toolResultCut).toBe(true);
    expect(p.reason).toMatch(/^not worth it: /);
    // The gate stops looking for results to cut until the next compaction; the trigger stays where it was.
    const gate = gateAfterPlanSkip(cutPolicy, WINDOW, NO_COOLDOWN, { ...p, tokens: c.tokens }, holdGrowth(cutPolicy));
    expect(gate.toolResults).toBeUndefined();
    const { toolResults: _, ...unchanged } = gateOf(cutPolicy, WINDOW, NO_COOLDOWN);
    expect(gate).toEqual(unchanged);
  });

  it('is cut when it pays', () => {
    const p = cutPlan(40);
    expect(p.action).toBe('compact');
    expect(p.toolResultCut).toBe(true);
    expect(p.steps.map((s) => s.strategy)).toEqual(['truncate-tool-results']);
  });
});

describe('the hard limit', () => {
  // Turns of a user message, a 2,000-token result and a reply (2,160 tokens each).
  const turns = (n: number) => context().system().user().turns(n, 2_000);

  it('below it, an automatic compaction that does not pay waits', () => {
    const c = turns(28);
    expect(c.tokens).toBeGreaterThanOrEqual(51_200);
    expect(c.tokens).toBeLessThan(60_800);
    const p = plan(c.messages, { callsSinceCompaction: 1 });
    expect(p.action).toBe('skip');
    expect(p.reason).toMatch(/^not worth it: .*below the hard limit of 60800 tokens\)$/);
    // The plan's skip holds until the context grows (the hard limit fires before the hold ends).
    const gate = gateAfterPlanSkip(policy, WINDOW, NO_COOLDOWN, { ...p, tokens: c.tokens }, holdGrowth(policy));
    expect(gate.hard).toBe(60_800);
    expect(gate.floorAfterUser).toBeGreaterThan(60_800);
  });

  it('at it, the trigger always compacts, whatever the cost says', () => {
    const c = turns(29);
    expect(c.tokens).toBeGreaterThanOrEqual(60_800);
    const p = plan(c.messages, { callsSinceCompaction: 1 });
    expect(p.action).toBe('compact');
    expect(p.cost!.netBenefit).toBeLessThan(0);
    expect(p.after.tokens).toBeLessThanOrEqual(60_800);
  });

  it('a message or turn limit that fired compacts too (a bound of the policy, not a price)', () => {
    const c = turns(25);
    const p = planCompaction({
      context: c.messages,
      policy: resolvePolicy({ maxTurns: 20 }),
      window: 1_000_000,
      fixedTokens: 0,
      trigger: 'auto',
      cooldown: NO_COOLDOWN,
      summarizer: 'available',
      goalId: c.messages[1]!.id,
      callsSinceCompaction: 1,
    });
    expect(p.action).toBe('compact');
    expect(p.reason).toBe('turns 26 > 20');
  });
});

describe('the request keeps what never changes first', () => {
  const meta = (id: string, kind: 'summary' | 'ledger', tokens: number): MessageMeta => ({
    id,
    role: 'user',
    tokens,
    chars: tokens * 4,
    key: `k/${id}`,
    kind,
  });

  /** A forced compaction that summarizes, carried out with a summary and a ledger of its own. */
  function compactOnce(messages: MessageMeta[], seq: number): { plan: Plan; next: MessageMeta[] } {
    const p = plan(messages, { trigger: 'forced', strategies: ['summarize'] });
    expect(p.summary).toBeDefined();
    return {
      plan: p,
      next: applyPlan(messages, p, {}, meta(`s${seq}`, 'summary', 300), meta(`l${seq}`, 'ledger', 200)),
    };
  }

  it('system prompt and goal, then summary and ledger; the prefix stays across compactions', () => {
    // An agent loop: one user message (the goal), then tool steps.
    const c = loop(20, context().system(500).user(100));
    const [system, goal] = c.messages;
    const first = compactOnce(c.messages, 1).next;
    expect(first.slice(0, 4).map((m) => (kindOf(m) === 'normal' ? m.id : kindOf(m)))).toEqual([
      system!.id,
      goal!.id,
      'summary',
      'ledger',
    ]);
    // Twenty more steps, and the next compaction: the system prompt and the goal are still the request's beginning.
    const more = loop(20, context()).messages.map((m) => ({
      ...m,
      id: `n${m.id}`,
      ...(m.toolCallIds ? { toolCallIds: m.toolCallIds.map((id) => `n${id}`) } : {}),
      ...(m.toolCallId ? { toolCallId: `n${m.toolCallId}` } : {}),
    }));
    const grown = [...first, ...more];
    const { plan: second, next } = compactOnce(grown, 2);
    expect(next.slice(0, 4).map((m) => m.id)).toEqual([system!.id, goal!.id, 's2', 'l2']);
    expect(next.filter((m) => kindOf(m) === 'ledger')).toHaveLength(1);
    // What the cost decision counts as kept in the cache: the tool schemas, the system prompt and the goal.
    const board = new Board({ context: grown, policy, window: WINDOW, fixedTokens: 700, goalId: goal!.id });
    second.operations.forEach((op, i) => (board.slots[i]!.op = op));
    expect(cachedPrefixOf(board.slots, 700, second.summary)).toBe(700 + 500 + 100);
    expect(second.cost!.cachedPrefixTokens).toBe(500 + 100);
  });

  it('a ledger of before (right after the system prompt) moves after the summary at the next compaction', () => {
    const c = loop(20, context().system(500).user(100));
    const old = [c.messages[0]!, meta('l0', 'ledger', 200), ...c.messages.slice(1)];
    const next = compactOnce(old, 1).next;
    expect(next.slice(0, 4).map((m) => m.id)).toEqual([c.messages[0]!.id, c.messages[1]!.id, 's1', 'l1']);
  });
});
