/**
 * The chatgpt-on-wechat preset tried as a user of chatgpt-on-wechat would (issue 45): each scenario of its document,
 * as ../shared/PRIOR-ART.md quotes it, through the engine's public functions: the plan, the context it leaves
 * (`applyPlan`), and what the gate says before the next decision loop. The rule by rule tests of issue 31 are in
 * presets.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { applyPlan } from '../../../engine/apply.ts';
import { gateOf } from '../../../engine/gates.ts';
import { isUserTurn } from '../../../engine/messages.ts';
import type { MessageMeta } from '../../../engine/messages.ts';
import { REPLACED_KIND } from '../../../engine/planner/index.ts';
import type { Plan, PlanInput } from '../../../engine/planner/index.ts';
import { MAX_CONTEXT_MESSAGES } from '../../../engine/policy.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import { compactionDue, oversizedResult } from '../../../engine/trigger.ts';
import { context, planFor } from '../../support/contexts.ts';
import type { ContextBuilder } from '../../support/contexts.ts';

const cow = resolvePolicy({ preset: 'chatgpt-on-wechat' });

const plan = (c: ContextBuilder, window: number, extra: Partial<PlanInput> = {}) => planFor(c, cow, window, extra);

/** The summary message a summarizer writes for `p` (its body is the activity's business). */
const SUMMARY: MessageMeta = { id: 'c000001', role: 'user', tokens: 300, chars: 1_200, key: 'x/s', kind: 'summary' };

/** The context `p` leaves (replacements as the apply step records them, at their planned size). */
function after(c: ContextBuilder, p: Plan): MessageMeta[] {
  const replacements: Record<string, MessageMeta> = {};
  for (const op of p.operations) {
    if (op.op === 'keep' || op.op === 'drop') continue;
    const meta = c.messages.find((m) => m.id === op.id)!;
    const chars = op.op === 'truncate' ? op.headChars + op.tailChars : meta.chars;
    const kind = REPLACED_KIND[op.op];
    replacements[op.id] = {
      ...meta,
      kind,
      tokens: op.tokens ?? meta.tokens,
      chars,
      key: `${meta.key}.cut`,
      ref: meta.key,
    };
  }
  return applyPlan(c.messages, p, replacements, p.summary ? SUMMARY : undefined);
}

/** What the gate says before the next decision loop over `messages`, as the workflow asks it after a compaction. */
function dueAfter(messages: MessageMeta[], p: Plan, window: number) {
  const gate = gateOf(cow, window, { consecutive: 1, lastTokensAfter: p.after.tokens });
  const stats = { tokens: p.after.tokens, messages: messages.length, turns: messages.filter(isUserTurn).length };
  return compactionDue(gate, stats, false, messages);
}

/** Indexes of the messages that open a turn. */
const openers = (messages: readonly MessageMeta[]) => messages.flatMap((m, i) => (isUserTurn(m) ? [i] : []));

describe('chatgpt-on-wechat as its document says (issue 45)', () => {
  it('"turns > max turns (20): trim the oldest half of whole turns" once: 21 turns leave 11, and no second compaction', () => {
    const c = context().system().user().turns(20, 50); // 21 turns, far under the token budget
    const p = plan(c, 1_000_000);
    expect(p.reason).toBe('turns 21 > 20');
    expect(p.steps.map((s) => s.strategy)).toEqual(['trim-turns']);
    expect(p.steps[0]!.note).toBe('the oldest 10 of 21 turns trimmed');
    expect(p.after.turns).toBe(11);
    const next = after(c, p);
    expect(next.filter(isUserTurn)).toHaveLength(11);
    // The newest 10 turns whole, and the goal standing for its turn (longrun keeps the user's first message).
    const opened = openers(c.messages);
    expect(p.operations.slice(opened[11]).every((o) => o.op === 'keep')).toBe(true);
    expect(p.operations[opened[0]!]?.op).toBe('keep');
    // The next decision loop does not compact again: 11 turns are within the limit.
    expect(dueAfter(next, p, 1_000_000)).toBeUndefined();
  });

  it('"tokens > budget (50k)" with 5 or more turns: the first half of the turns trimmed once, the first kept turn whole with its reply', () => {
    // 7 turns of 8,500 tokens each: 59,600 tokens.
    const c = context().system().user();
    for (let i = 0; i < 6; i++) c.user(100).tools(4_000, 4_000).reply(400);
    expect(c.tokens).toBeGreaterThan(50_000);
    const p = plan(c, 1_000_000);
    expect(p.reason).toMatch(/^tokens \d+ > 50000$/);
    expect(p.steps.map((s) => s.strategy)).toEqual(['trim-turns']);
    expect(p.steps[0]!.note).toBe('the oldest 3 of 7 turns trimmed');
    expect(p.after.turns).toBe(4);
    // Under the budget, above the target (50,000 × 0.5 / 0.9): no second pass.
    expect(p.after.tokens).toBeLessThan(50_000);
    expect(p.after.tokens).toBeGreaterThan(p.target.tokens);
    // The first kept turn keeps its request, its tool steps and its reply, the summary at its head.
    const opened = openers(c.messages);
    const firstKept = opened[4]!;
    expect(p.summary!.placement).toEqual({ mode: 'prepend', id: c.messages[firstKept]!.id });
    expect(p.operations.slice(firstKept).every((o) => o.op === 'keep')).toBe(true);
    expect(c.messages[opened[5]! - 1]).toMatchObject({ role: 'assistant' }); // its reply, kept
    expect(dueAfter(after(c, p), p, 1_000_000)).toBeUndefined();
  });

  it('"under 5 turns keep only first user text and last reply per turn": the tool chains into the summary (ours), the user\'s words as sent', () => {
    const c = context().system().user(); // the goal's turn, then 3 turns of long tool chains, then a new message
    for (let i = 0; i < 3; i++) c.user().tools([9_000, 19_000], [9_000, 19_000]).reply();
    const p = plan(c, 1_000_000);
    expect(p.reason).toMatch(/^tokens \d+ > 50000$/);
    // One pass: no second step, and the next decision loop does not compact again.
    expect(p.steps.map((s) => s.strategy)).toEqual(['trim-turns']);
    expect(p.steps[0]!.note).toBe('4 turns: each keeps its first user text and last reply');
    const chains: string[] = [];
    c.messages.forEach((m, i) => {
      const lastTurn = i >= c.messages.length - 4;
      const chain = m.role === 'tool' || (m.toolCallIds?.length ?? 0) > 0;
      if (chain && !lastTurn) chains.push(m.id);
      expect(p.operations[i]!.op, m.id).toBe(chain && !lastTurn ? 'drop' : 'keep');
    });
    expect(chains).toHaveLength(6);
    // What left is named by the summary (the coverage invariant: its document writes none), each id in its span,
    // listed as removed into it with its stored original; the summary model writes it.
    expect(p.summary).toMatchObject({
      writer: 'model',
      coverage: { firstId: chains[0], lastId: chains[5], messages: 6 },
    });
    for (const id of chains) expect(p.summary!.spanIds).toContain(id);
    for (const id of chains) {
      expect(p.removed.find((r) => r.id === id)).toMatchObject({
        by: 'trim-turns',
        replacedBy: 'summary',
        key: `agents/t/messages/${id}.json`,
      });
    }
    // The context left: each earlier turn its first user text and its last reply; the user's messages as they were,
    // but the first kept one after the chains, which hosts the summary before its own text and stays a turn.
    const next = after(c, p);
    expect(next.map((m) => m.role)).toEqual([
      'system',
      'user',
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
    ]);
    const hostId = c.messages.at(-5)!.id;
    expect(p.summary!.placement).toEqual({ mode: 'prepend', id: hostId });
    const users = c.messages.filter((m) => m.role === 'user');
    for (const m of users) {
      const kept = next.find((n) => n.id === m.id)!;
      if (m.id === hostId) expect(kept).toMatchObject({ kind: 'summary', userTurn: true, ref: m.key });
      else expect(kept).toBe(m); // as sent
    }
    for (const turn of [1, 2]) {
      const opener = openers(c.messages)[turn]!;
      const reply = c.messages[openers(c.messages)[turn + 1]! - 1]!;
      expect(reply.role).toBe('assistant');
      expect(next.map((m) => m.id)).toEqual(expect.arrayContaining([c.messages[opener]!.id, reply.id]));
    }
    expect(next.filter(isUserTurn)).toHaveLength(4);
    expect(dueAfter(next, p, 1_000_000)).toBeUndefined();
    // No summary model: the same trim, the summary extractive.
    const offline = plan(c, 1_000_000, { summarizer: 'none' });
    expect(offline.operations).toEqual(p.operations);
    expect(offline.summary).toMatchObject({ writer: 'extractive', spanIds: p.summary!.spanIds });
  });

  it('"summary injected into the first kept user message": the host keeps its own words and still counts as a turn', () => {
    const c = context().system().user().turns(20, 50);
    const p = plan(c, 1_000_000);
    const hostId = (p.summary!.placement as { id: string }).id;
    const next = after(c, p);
    const host = next.find((m) => m.id === hostId)!;
    expect(host).toMatchObject({
      role: 'user',
      kind: 'summary',
      userTurn: true,
      ref: `agents/t/messages/${hostId}.json`,
    });
    expect(isUserTurn(host)).toBe(true);
    // Counted: 11 turns with the host, and the next trim takes it with its turn like any other.
    expect(next.filter(isUserTurn)).toHaveLength(11);
    c.messages.splice(0, c.messages.length, ...next);
    for (let i = 0; i < 10; i++) c.user().reply(); // 21 turns again
    const again = plan(c, 1_000_000);
    expect(again.reason).toBe('turns 21 > 20');
    expect(again.operations.find((o) => o.id === hostId)!.op).toBe('drop');
  });

  it('"tool results > 20,000 chars cut to head + tail with a notice (older turns only)" before every decision loop, no limit exceeded', () => {
    // Two earlier turns each with a 22,000-character result, the one in progress with one too: far under the limits.
    const c = context().system().user().tools([5_500, 22_000]).reply();
    const gate = gateOf(cow, 1_000_000);
    // The first decision loop of the next turn finds the result of the turn before…
    c.user();
    const due = compactionDue(gate, { tokens: c.tokens, messages: c.messages.length, turns: 2 }, true, c.messages);
    expect(due).toMatchObject({ kind: 'tool-result', result: { id: c.messages[3]!.id } });
    const p = plan(c, 1_000_000);
    expect(p.action).toBe('compact');
    expect(p.toolResultCut).toBe(true);
    expect(p.operations.filter((o) => o.op !== 'keep')).toEqual([
      expect.objectContaining({ op: 'truncate', id: c.messages[3]!.id, headChars: 10_000, tailChars: 5_000 }),
    ]);
    // …and every decision loop after it, inside the turn in progress, leaves that turn's own result whole.
    c.messages.splice(0, c.messages.length, ...after(c, p));
    c.tools([5_500, 22_000]);
    expect(oversizedResult(gate, c.messages)).toBeUndefined();
    c.tools(100);
    expect(oversizedResult(gate, c.messages)).toBeUndefined();
    // Once that turn has ended, the next decision loop cuts its result: the turn in progress is then the next one.
    c.reply().user();
    expect(oversizedResult(gate, c.messages)?.id).toBe(c.messages.at(-5)!.id);
  });

  it('"on a provider overflow error: trim hard (10k chars, 5 turns)": the turn in progress too, its user text and tool result', () => {
    const c = context().system().user();
    for (let i = 0; i < 7; i++) c.user(3_000, 12_000).tools([3_000, 12_000]).reply();
    c.user(3_000, 12_000).tools([10_000, 40_000]); // the turn in progress: a 12,000-char request, a 40,000-char result
    const request = c.messages.at(-3)!;
    const result = c.messages.at(-1)!;
    const first = plan(c, 64_000, { trigger: 'overflow', attempt: 1 });
    expect(first.after.turns).toBe(5); // the turn in progress included
    const cutOf = (p: Plan, id: string) => p.operations.find((o) => o.id === id)!;
    for (const id of [request.id, result.id]) {
      const op = cutOf(first, id);
      expect(op.op, id).toBe('truncate');
      if (op.op === 'truncate') expect(op.headChars + op.tailChars).toBeLessThanOrEqual(10_000);
    }
    // (A message the user pinned stays whole: longrun's pins are kept verbatim.)
    const pinned = plan(c, 64_000, { trigger: 'overflow', attempt: 1, pinnedIds: [request.id] });
    expect(cutOf(pinned, request.id).op).toBe('keep');
    // Every kept message over 10,000 characters is cut: none reaches the provider whole.
    c.messages.forEach((m, i) => {
      if (m.chars > 10_000) expect(['truncate', 'drop'], m.id).toContain(first.operations[i]!.op);
    });
    // Still over: the history cleared into the summary; the request in progress and its newest step, cut, stay.
    const cleared = plan(c, 64_000, { trigger: 'overflow', attempt: 2 });
    const kept = c.messages.filter((_, i) => cleared.operations[i]!.op !== 'drop');
    expect(kept.map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'tool']); // (the goal: ours)
    expect(cutOf(cleared, request.id).op).toBe('truncate');
    expect(cutOf(cleared, result.id).op).toBe('truncate');
    expect(cleared.summary).toBeDefined();
  });

  it.each([10_000, 50_000])(
    'one long turn of %i messages: the oldest half of its steps trimmed, then down to the message bound',
    (n) => {
      const c = context().system().user();
      while (c.messages.length < n) c.tools([10, 40]);
      expect(cow.maxMessages).toBe(MAX_CONTEXT_MESSAGES);
      const p = plan(c, 1_000_000);
      expect(p.target.messages).toBe(MAX_CONTEXT_MESSAGES / 2); // (over the token budget too)
      expect(p.steps.map((s) => s.strategy)).toEqual(['trim-turns']);
      expect(p.after.messages).toBeLessThanOrEqual(p.target.messages!);
      expect(p.reachedTarget).toBe(true);
      const next = after(c, p);
      expect(next.length).toBeLessThanOrEqual(MAX_CONTEXT_MESSAGES);
      expect(dueAfter(next, p, 1_000_000)).toBeUndefined();
      // The newest steps stay, oldest dropped first, each call with its result.
      expect(p.operations.at(-1)!.op).toBe('keep');
      expect(p.operations.at(-2)!.op).toBe('keep');
    },
  );
});
