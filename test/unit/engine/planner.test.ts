/** The planner's strategies cheapest first, what it does when the target is out of reach, and protection. */
import { describe, expect, it } from 'vitest';
import { protectionOf, STUB_TOKENS } from '../../../engine/planner/index.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import { toolPairViolations } from '../../../engine/tool-pairs.ts';
import { context } from '../../support/contexts.ts';
import { plan, strategiesOf, WINDOW } from './planner-support.ts';

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
    // (Unpriced: beside a 40,000-token system prompt, a summary call for 12,000 tokens would not pay for itself.)
    const p = plan(c, { cost: null });
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
