/** The planner's rules, each with its numbers. */
import { describe, expect, it } from 'vitest';
import { planCompaction, protectionOf, STUB_TOKENS } from '../../../engine/planner/index.ts';
import type { PlanInput } from '../../../engine/planner/index.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import type { PolicyOverrides } from '../../../engine/policy.ts';
import { toolPairViolations } from '../../../engine/tool-pairs.ts';
import { gateAfterMaskSkip, gateAfterSkip, gateOf } from '../../../engine/gates.ts';
import { compactionDue, gateFiresWith, NO_COOLDOWN, oversizedResult } from '../../../engine/trigger.ts';
import { context } from '../../support/contexts.ts';
import type { ContextBuilder } from '../../support/contexts.ts';

const WINDOW = 64_000;

function plan(
  c: ContextBuilder,
  overrides: PolicyOverrides & { preset?: string } = {},
  extra: Partial<PlanInput> = {},
) {
  const firstUser = c.messages.find((m) => m.role === 'user');
  return planCompaction({
    context: c.messages,
    policy: resolvePolicy(overrides),
    window: WINDOW,
    fixedTokens: 0,
    trigger: 'auto',
    cooldown: NO_COOLDOWN,
    summarizer: 'available',
    ...(firstUser ? { goalId: firstUser.id } : {}),
    ...extra,
  });
}

/** A context of exactly `tokens` tokens: system 100, goal 100, one tool call, a 100-token reply. */
function sized(tokens: number) {
  const c = context().system(100).user(100);
  return c.tools(tokens - c.tokens - 30 - 100).reply(100);
}

const strategiesOf = (p: ReturnType<typeof plan>) => p.steps.map((s) => s.strategy);

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

describe('strategies, cheapest first', () => {
  it('truncates an oversized tool result to head and tail, even in the current round', () => {
    const c = context().system().user().tools(40_000).reply().user().tools(60_000);
    const p = plan(c, {}, { trigger: 'forced' });
    expect(strategiesOf(p)[0]).toBe('truncate-tool-results');
    const op = p.operations.find((o) => o.id === c.messages.at(-1)!.id)!;
    expect(op).toMatchObject({ op: 'truncate', id: c.messages.at(-1)!.id, headChars: 8_000, tailChars: 4_000 });
  });

  it('keeps fewer characters of a dense result, so the cut result fits the token limit', () => {
    // 60,000 tokens in 60,000 characters: 8,000 tokens (the limit) is 8,000 characters, split 2:1 head to tail.
    const c = context().system().user().tools([60_000, 60_000]);
    const p = plan(c, {}, { trigger: 'forced' });
    const op = p.operations.find((o) => o.id === c.messages.at(-1)!.id)!;
    expect(op).toMatchObject({ op: 'truncate', id: c.messages.at(-1)!.id, headChars: 5_333, tailChars: 2_667 });
    // Never over the per-result limit: the marker's tokens are inside it, and the apply step cuts by counting.
    expect(op).toMatchObject({ maxTokens: 8_000 });
    expect(p.after.tokens - 100 - 50 - 30).toBe(8_000);
  });

  it('masks old tool results oldest first and stops at the target, before any summary', () => {
    const c = context().system().user().turns(30, 2_000); // 64,950 tokens
    const p = plan(c);
    expect(strategiesOf(p)).toEqual(['mask-tool-results']);
    expect(p.after.tokens).toBeLessThanOrEqual(32_000);
    expect(p.after.tokens).toBeGreaterThan(32_000 - 2_000);
    const masked = p.operations.filter((o) => o.op === 'mask').map((o) => o.id);
    const toolIds = c.messages.filter((m) => m.role === 'tool').map((m) => m.id);
    expect(masked).toEqual(toolIds.slice(0, masked.length)); // the oldest ones
    expect(p.removed.every((r) => r.replacedBy === 'masked' && r.key.startsWith('agents/t/messages/'))).toBe(true);
  });

  it('never masks a tool result of the protected recent turns or the current round', () => {
    const c = context().system().user().turns(30, 2_000);
    const protect = protectionOf(c.messages, resolvePolicy(), WINDOW, c.messages[1]!.id);
    const p = plan(c, {}, { trigger: 'forced' });
    p.operations.forEach((op, i) => {
      if (op.op === 'mask') expect(protect[i]).toBe('none');
    });
    // keepTurns 3 + the current turn: the last 4 turns' results (16 messages) untouched.
    expect(p.operations.slice(-16).every((op) => op.op === 'keep')).toBe(true);
  });

  it('offloads large messages to a preview when masking is not enough', () => {
    const c = context().system().user(100).user(13_000, 52_000).turns(12, 3_000).user(100);
    const p = plan(c, { strategies: ['offload-large'] }, { trigger: 'forced' });
    expect(strategiesOf(p)).toEqual(['offload-large']);
    const offloaded = p.operations.filter((o) => o.op === 'offload');
    expect(offloaded[0]).toMatchObject({ op: 'offload', id: c.messages[2]!.id, previewChars: 600 });
    expect(p.removed.find((r) => r.id === c.messages[2]!.id)?.replacedBy).toBe('offloaded');
  });

  it('summarizes the older turns, naming the span, when cheaper steps are not enough', () => {
    const c = context().system().user().reply(40_000).turns(40, 150); // little tool output to mask
    const p = plan(c, { strategies: ['mask-tool-results', 'summarize'] });
    expect(strategiesOf(p)).toContain('summarize');
    const step = p.steps.find((s) => s.strategy === 'summarize')!;
    expect(step.summary!.spanIds[0]).toBe(c.messages[2]!.id); // right after the goal
    expect(step.summary!.fallback).toBe('truncate-rounds');
    expect(step.summary!.estimatedTokens).toBeLessThanOrEqual(2_000);
    expect(p.summary).toEqual(step.summary);
    // The system prompt and the goal are kept; the span's removed messages are listed with their keys.
    expect(p.operations[0]).toEqual({ op: 'keep', id: c.messages[0]!.id });
    expect(p.operations[1]).toEqual({ op: 'keep', id: c.messages[1]!.id });
    for (const id of step.ids) expect(p.removed.find((r) => r.id === id)?.by).toBe('summarize');
  });

  it('a forced summarize runs on a small span (the automatic trigger would find it not worth a summary)', () => {
    const c = context().system().user().turns(4, 30);
    const policy = { strategies: ['summarize' as const], keepSteps: 1, keepTurns: 0, keepMessages: 0, reserveRatio: 0 };
    expect(plan(c, policy, { trigger: 'forced' }).steps.map((s) => s.strategy)).toEqual(['summarize']);
    expect(plan(c, policy, { trigger: 'auto', fixedTokens: 52_000 }).steps).toEqual([]);
  });

  it('keeps the user’s own messages of the span verbatim up to the budget, newest first', () => {
    const c = context().system().user().reply(40_000).turns(40, 150);
    const p = plan(c, { strategies: ['summarize'], summary: { keepUserTokens: 120 } });
    expect(p.summary!.keptUserIds).toHaveLength(2); // 50 tokens each
    const userIds = c.messages.filter((m, i) => m.role === 'user' && i > 1).map((m) => m.id);
    expect(p.summary!.keptUserIds).toEqual(userIds.filter((id) => p.summary!.spanIds.includes(id)).slice(-2));
  });

  it('without a summary model, summarizes extractively or drops the oldest rounds, as the policy says', () => {
    const c = context().system().user().reply(40_000).turns(40, 150);
    const extractive = plan(c, { strategies: ['summarize'] }, { summarizer: 'none' });
    expect(extractive.steps[0]!.strategy).toBe('summarize');
    expect(extractive.summary!.writer).toBe('extractive');
    const p = plan(c, { strategies: ['summarize'], summary: { withoutModel: 'fallback' } }, { summarizer: 'none' });
    expect(p.steps[0]!.strategy).toBe('summarize');
    expect(p.steps[0]!.note).toBe(
      'no summary model is configured: truncate-rounds instead, with an extractive summary of what it removed',
    );
    // Nothing leaves without a trace: the dropped rounds are in an extractive summary.
    expect(p.summary!.writer).toBe('extractive');
    expect(p.removed.every((r) => r.replacedBy === 'summary')).toBe(true);
    expect(p.after.tokens).toBeLessThanOrEqual(32_000);
    const failed = plan(c, { strategies: ['summarize'], summary: { fallback: 'halve' } }, { summarizer: 'failed' });
    expect(failed.steps[0]!.note).toBe(
      'the summary model failed: halve instead, with an extractive summary of what it removed',
    );
    expect(failed.summary!.writer).toBe('extractive');
  });

  it('drops rounds one at a time, oldest first, and stops at the target', () => {
    const c = context().system().user().turns(20, 3_000); // 3,160 per turn
    const p = plan(c, { strategies: ['truncate-rounds'] });
    const dropped = p.operations.filter((o) => o.op === 'drop').map((o) => o.id);
    // Whole turns of 4 messages, oldest first, after the goal (its own turn, fixed).
    expect(dropped).toEqual(c.ids().slice(2, 2 + dropped.length));
    expect(dropped.length % 4).toBe(0);
    expect(p.after.tokens).toBeLessThanOrEqual(32_000);
    expect(p.after.tokens).toBeGreaterThan(32_000 - 3_160);
  });

  it('halves, then halves again, but never the current turn, the goal or the system prompt', () => {
    const c = context().system().user().turns(20, 3_000);
    const p = plan(c, { strategies: ['halve'], keepTurns: 10 });
    expect(strategiesOf(p)).toEqual(['halve']);
    expect(p.operations[0]!.op).toBe('keep');
    expect(p.operations[1]!.op).toBe('keep');
    expect(p.operations.slice(-4).every((o) => o.op === 'keep')).toBe(true);
  });

  it('compact-turns keeps only the user text and the final reply of each older turn', () => {
    const c = context().system().user().turns(8, 500);
    const p = plan(
      c,
      { strategies: ['compact-turns'], keepTurns: 1, keepMessages: 0, reserveRatio: 0 },
      { trigger: 'forced' },
    );
    const kept = c.messages.filter((_, i) => p.operations[i]!.op === 'keep');
    expect(kept.filter((m) => m.role === 'tool')).toHaveLength(2); // only the last 2 turns keep their calls
  });

  it('records only strategies that changed something', () => {
    const c = context().system().user().turns(30, 2_000);
    const p = plan(c, { strategies: ['offload-large', 'mask-tool-results'] });
    expect(strategiesOf(p)).toEqual(['mask-tool-results']); // nothing over 16,000 chars to offload
  });

  it('applies at most one strategy per check when the policy says so (AgentScope Java)', () => {
    const c = context().system().user().turns(30, 2_000).user(13_000, 52_000).reply();
    const p = plan(c, {
      strategies: ['truncate-tool-results', 'mask-tool-results', 'summarize'],
      oneStrategyPerCheck: true,
      toolResults: { maxTokens: 1_000 },
    });
    expect(p.steps).toHaveLength(1);
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

  it('once the loop has moved on, when the policy cuts older results only (chatgpt-on-wechat)', () => {
    const policy = resolvePolicy({ preset: 'chatgpt-on-wechat' });
    const gate = gateOf(policy, WINDOW);
    const c = context().system().user().tools([6_000, 24_000]);
    expect(oversizedResult(gate, c.messages)).toBeUndefined(); // the newest: the model has not seen it yet
    c.tools(100);
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

describe('when the target cannot be reached', () => {
  it('a single message bigger than the window is cut to fit, and the plan says what it did', () => {
    const c = context().system(100).user(100).user(90_000, 360_000);
    const p = plan(c);
    expect(p.action).toBe('compact');
    expect(strategiesOf(p)).toContain('truncate-oversized');
    expect(p.after.tokens).toBeLessThanOrEqual(32_000);
    expect(p.removed.find((r) => r.id === c.messages[2]!.id)?.replacedBy).toBe('truncated');
  });

  it('a system prompt bigger than the target is reported as a shortfall, never thrown', () => {
    const c = context().system(40_000).user(100).turns(6, 2_000);
    const p = plan(c);
    expect(p.reachedTarget).toBe(false);
    expect(p.shortfall).toMatch(/protected messages .* hold \d+ tokens, the largest m000001 \(system, 40000 tokens\)/);
  });

  it('a forced compaction with nothing to do is a skip that says why', () => {
    const c = context().system().user().reply();
    const p = plan(c, {}, { trigger: 'forced' });
    expect(p.action).toBe('skip');
    expect(p.reason).toMatch(/^nothing to compact: forced by request, but no strategy/);
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

describe('protection', () => {
  it('fixed: system prompt, goal, summary and the turn’s request; the newest step; recent: the newest N steps', () => {
    const c = context().system().user().summary().turns(6, 100);
    const protect = protectionOf(
      c.messages,
      resolvePolicy({ keepSteps: 3, keepTurns: 0, keepMessages: 0, reserveRatio: 0 }),
      WINDOW,
      c.messages[1]!.id,
    );
    expect(protect.slice(0, 3)).toEqual(['fixed', 'fixed', 'fixed']);
    // The turn in progress: its request fixed, its tool step recent, its newest step (the reply) newest.
    expect(protect.slice(-4)).toEqual(['fixed', 'recent', 'recent', 'newest']);
    // Older steps, of this turn and the ones before, are compactable.
    expect(protect.slice(3, -4).every((p) => p === 'none')).toBe(true);
  });

  it('the newest step is protected whatever keepSteps says, and older steps of one long turn are not', () => {
    const c = context().system().user();
    for (let i = 0; i < 150; i++) c.tools(200);
    const protect = protectionOf(
      c.messages,
      resolvePolicy({ keepSteps: 0, keepTurns: 0, keepMessages: 0, reserveRatio: 0 }),
      WINDOW,
      c.messages[1]!.id,
    );
    expect(protect.slice(-2)).toEqual(['newest', 'newest']);
    expect(protect.slice(2, -2).every((p) => p === 'none')).toBe(true);
  });

  it('keepTurns protects the user’s words and the final answers of the last turns, not their tool steps', () => {
    const c = context().system().user().turns(4, 100).user().tools(100);
    const protect = protectionOf(
      c.messages,
      resolvePolicy({ keepSteps: 0, keepTurns: 2, keepMessages: 0, reserveRatio: 0 }),
      WINDOW,
      c.messages[1]!.id,
    );
    // turns of 4: user, assistant call, tool result, reply; the last two completed ones keep user and reply.
    expect(protect.slice(-11, -3)).toEqual(['recent', 'none', 'none', 'recent', 'recent', 'none', 'none', 'recent']);
    expect(protect.slice(-15, -11)).toEqual(['none', 'none', 'none', 'none']);
    expect(protect.slice(-3)).toEqual(['fixed', 'newest', 'newest']);
  });

  it('keepMessages widens to whole atomic groups', () => {
    const c = context().system().user().tools(10, 10, 10).reply().user().reply();
    // last 4 messages: tool, tool (of the 3-call group), reply, user, reply → the whole group is protected
    const protect = protectionOf(c.messages, resolvePolicy({ keepTurns: 0, keepMessages: 4, reserveRatio: 0 }), WINDOW);
    expect(protect.slice(2, 6)).toEqual(['recent', 'recent', 'recent', 'recent']);
  });

  it('no plan output breaks a tool pair', () => {
    const c = context().system().user().turns(30, 2_000).user().tools(100, 200, 300);
    for (const strategies of [['halve'], ['truncate-rounds'], ['summarize'], ['compact-turns']] as const) {
      const p = plan(c, { strategies: [...strategies] }, { trigger: 'forced' });
      const kept = c.messages.filter((_, i) => p.operations[i]!.op !== 'drop');
      expect(toolPairViolations(kept)).toEqual([]);
    }
  });

  it('stub sizes are what the plan counts', () => {
    expect(STUB_TOKENS).toBe(40);
  });
});
