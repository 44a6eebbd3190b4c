/** Each preset behaves as its system documents, and the configuration is validated with clear errors. */
import { describe, expect, it } from 'vitest';
import { applyPlan, replacementBody, summaryMessage } from '../../../engine/apply.ts';
import { callsShownBy, estimateCost, remainingTurnsOf } from '../../../engine/compaction-value.ts';
import { gateOf } from '../../../engine/gates.ts';
import { isUserTurn } from '../../../engine/messages.ts';
import type { MessageMeta } from '../../../engine/messages.ts';
import { planCompaction, protectionOf } from '../../../engine/planner/index.ts';
import type { PlanInput } from '../../../engine/planner/index.ts';
import { MAX_CONTEXT_MESSAGES, PolicyError } from '../../../engine/policy.ts';
import { PRESET_NAMES, resolvePolicy } from '../../../engine/presets.ts';
import { countMessage, loadTokenCounter } from '../../../engine/tokens.ts';
import { gateFiresWith, NO_COOLDOWN, oversizedResult } from '../../../engine/trigger.ts';
import { context, planFor, toolRunThenChat } from '../../support/contexts.ts';
import type { ContextBuilder } from '../../support/contexts.ts';

function plan(preset: string, c: ContextBuilder, window: number, extra: Partial<PlanInput> = {}) {
  return planFor(c, resolvePolicy({ preset }), window, extra);
}

const keptIds = (c: ContextBuilder, p: ReturnType<typeof plan>) =>
  c.messages.filter((_, i) => p.operations[i]!.op === 'keep').map((m) => m.id);

describe('astrbot', () => {
  it('triggers at 82% of the window', () => {
    const window = 100_000;
    expect(plan('astrbot', context().system(100).user(100).reply(81_799), window).reason).toMatch(/^below the trigger/);
    expect(plan('astrbot', context().system(100).user(100).reply(81_800), window).reason).toContain(
      'tokens 82000 ≥ 82000',
    );
  });

  it('summarizes with an LLM the rounds before the last 4, which stay whole', () => {
    const c = context().system().user().turns(30, 2_000);
    const p = plan('astrbot', c, 64_000);
    expect(p.steps.map((s) => s.strategy)).toEqual(['summarize']);
    // The round in progress and the 3 rounds before it whole (user message, tool call, result, answer: 4 messages
    // each); the rounds before them summarized.
    expect(p.operations.slice(-16).every((o) => o.op === 'keep')).toBe(true);
    expect(p.operations.at(-17)!.op).toBe('drop');
    expect(p.summary!.writer).toBe('model');
  });

  it('"when every complete round is within the rounds it keeps, there is nothing to summarize": it halves the long round by tool-call pairs, keeping the user message (#6196)', () => {
    // One user message, then a round of 40 messages (20 tool calls with their results): all within the kept rounds.
    const c = context().system().user();
    for (let i = 0; i < 20; i++) c.tools(2_800);
    c.reply();
    const p = plan('astrbot', c, 64_000);
    expect(p.steps.map((s) => s.strategy)).toEqual(['halve']);
    expect(p.after.tokens).toBeLessThan(0.82 * 64_000);
    const dropped = new Set(p.operations.filter((o) => o.op === 'drop').map((o) => o.id));
    // About half the round goes, not 98% of it, each call with its result; the user's message and the answer stay.
    expect(dropped.size).toBeGreaterThan(0);
    expect(dropped.size).toBeLessThanOrEqual(c.messages.length / 2 + 1);
    expect(dropped.has(c.messages[1]!.id)).toBe(false);
    expect(dropped.has(c.messages.at(-1)!.id)).toBe(false);
    c.messages.forEach((m) => {
      if (m.role !== 'tool') return;
      const call = c.messages.find((x) => x.toolCallIds?.includes(m.toolCallId!))!;
      expect(dropped.has(m.id), m.id).toBe(dropped.has(call.id));
    });
  });

  it('without a summary model, drops the oldest round one at a time; then halves', () => {
    const c = context().system().user().turns(30, 2_000);
    const p = plan('astrbot', c, 64_000, { summarizer: 'none' });
    expect(p.steps[0]!.note).toBe(
      'no summary model is configured: truncate-rounds instead, with an extractive summary of what it removed',
    );
    expect(p.summary!.writer).toBe('extractive');
    const dropped = p.operations.filter((o) => o.op === 'drop').map((o) => o.id);
    expect(dropped).toEqual(c.ids().slice(2, 2 + dropped.length)); // oldest first, contiguous
    // "until the context meets the requirement": below 82% of the window (52,480), not 80%.
    expect(p.after.tokens).toBeLessThan(0.82 * 64_000);
    expect(p.after.tokens).toBeGreaterThan(0.82 * 64_000 - 2_160); // one round at a time: stops right under
    expect(p.after.tokens).toBeGreaterThan(0.8 * 64_000);
    // The last 4 rounds alone over the target: halving (even those rounds, never the current one) follows.
    const heavy = context().system().user().turns(6, 14_000);
    const halved = plan('astrbot', heavy, 64_000, { summarizer: 'none' });
    expect(halved.steps.map((s) => s.strategy)).toEqual(['summarize', 'halve']);
  });
});

describe('astrbot in a long tool round', () => {
  const astrbot = resolvePolicy({ preset: 'astrbot' });

  it('"does not compress during tool invocations": inside a tool loop only the hard limit fires', () => {
    const window = 100_000;
    const gate = gateOf(astrbot, window);
    // One user message, then tool steps: 85% of the window, over the trigger (82%), under the hard limit (95%).
    const loop = context().system(100).user(100);
    for (let i = 0; i < 17; i++) loop.tools(4_970);
    expect(loop.tokens).toBe(85_200);
    const stats = { tokens: loop.tokens, messages: loop.messages.length, turns: 1 };
    expect(gateFiresWith({ gate, stats, consecutive: 0 }, [], loop.messages)).toBeUndefined();
    const held = plan('astrbot', loop, window);
    expect(held.action).toBe('skip');
    expect(held.reason).toMatch(/^below the trigger/);
    // Steers added mid-loop do not open a turn: still held.
    expect(gateFiresWith({ gate, stats, consecutive: 0 }, [{ tokens: 10, userTurn: false, role: 'user' }])).toBe(
      undefined,
    );
    // At the hard limit it compacts, loop or not.
    const hard = { ...stats, tokens: 95_000 };
    expect(gateFiresWith({ gate, stats: hard, consecutive: 0 }, [], loop.messages)?.reason).toBe(
      'tokens 95000 ≥ hard limit 95000',
    );
    // Once the round ends (its answer given), or a new message opens the next one, the 82% trigger applies.
    loop.reply(100);
    const ended = { ...stats, tokens: loop.tokens };
    expect(gateFiresWith({ gate, stats: ended, consecutive: 0 }, [], loop.messages)?.reason).toBe(
      'tokens 85300 ≥ 82000',
    );
    expect(gateFiresWith({ gate, stats, consecutive: 0 }, [{ tokens: 50, userTurn: true, role: 'user' }])?.reason).toBe(
      'tokens 85250 ≥ 82000',
    );
    // The default preset compacts inside its loops.
    expect(
      gateFiresWith({ gate: gateOf(resolvePolicy(), window), stats, consecutive: 0 }, [], loop.messages),
    ).toBeDefined();
  });

  it('"then halve until it fits": halving cuts inside a long tool round, by tool-call pairs, when that round is all there is', () => {
    // The goal, one long round of 30 tool steps (its request and answer protected as one of the last rounds), a new
    // message: no whole round to drop.
    const c = context().system().user().user();
    for (let i = 0; i < 30; i++) c.tools(1_800);
    c.reply().user();
    const p = plan('astrbot', c, 64_000, { summarizer: 'none' });
    expect(p.steps.map((s) => s.strategy)).toEqual(['halve']);
    expect(p.after.tokens).toBeLessThan(0.82 * 64_000);
    // Oldest tool steps first, each call with its result: the round's request and answer stay.
    const dropped = new Set(p.operations.filter((o) => o.op === 'drop').map((o) => o.id));
    expect(dropped.size).toBeGreaterThan(0);
    c.messages.forEach((m) => {
      if (m.role === 'tool') {
        const call = c.messages.find((x) => x.toolCallIds?.includes(m.toolCallId!))!;
        expect(dropped.has(m.id), m.id).toBe(dropped.has(call.id));
      }
    });
    expect(dropped.has(c.messages[2]!.id)).toBe(false); // the round's request
    expect(dropped.has(c.messages.at(-2)!.id)).toBe(false); // its answer
  });
});

describe('chatgpt-on-wechat', () => {
  const cow = resolvePolicy({ preset: 'chatgpt-on-wechat' });

  it('"tool results > 20,000 chars cut to head + tail with a notice (older turns only)", before every decision loop, under no limit', () => {
    // An earlier turn with a 22,000-character result, then the turn in progress with one as large: far under every limit.
    const c = context().system().user().tools(5_500).reply().user().tools(5_500);
    const gate = gateOf(cow, 1_000_000);
    const older = c.messages[3]!;
    expect(oversizedResult(gate, c.messages)?.id).toBe(older.id); // not the turn in progress's
    const p = plan('chatgpt-on-wechat', c, 1_000_000);
    expect(p.action).toBe('compact');
    expect(p.reason).toBe(`tool result ${older.id} over the limit (5500 tokens, 22000 chars)`);
    expect(p.steps.map((s) => s.strategy)).toEqual(['truncate-tool-results']);
    expect(p.operations.filter((o) => o.op !== 'keep')).toEqual([
      expect.objectContaining({ op: 'truncate', id: older.id, headChars: 10_000, tailChars: 5_000 }),
    ]);
    // The turn in progress keeps its result whole, however many steps it takes…
    const loop = context().system().user().tools(5_500).tools(100).tools(100);
    expect(oversizedResult(gate, loop.messages)).toBeUndefined();
    // …until it ends: the next decision loop (the next message's) finds it.
    loop.reply();
    expect(oversizedResult(gate, loop.messages)?.id).toBe(loop.messages[3]!.id);
  });

  it('"turns > max turns (20)": the oldest half of the current turns trimmed once, not down to half the limit', () => {
    const c = context().system().user().turns(22, 50); // 23 turns
    const p = plan('chatgpt-on-wechat', c, 1_000_000);
    expect(p.reason).toBe('turns 23 > 20');
    expect(p.steps.map((s) => s.strategy)).toEqual(['trim-turns']);
    expect(p.after.turns).toBe(12); // 23 − 11
    expect(p.target.turns).toBe(12);
    expect(p.reachedTarget).toBe(true);
    // Whole turns, oldest first: the goal stays for its turn (ours), the rest of it and the next 11 turns go, the 11
    // newest stay whole.
    const opened = c.messages.flatMap((m, i) => (m.role === 'user' ? [i] : []));
    const firstKept = opened[12]!;
    expect(p.operations[1]!.op).toBe('keep');
    expect(p.operations.slice(2, firstKept).every((o) => o.op === 'drop')).toBe(true);
    expect(p.operations.slice(firstKept).every((o) => o.op === 'keep')).toBe(true);
  });

  it('"summary injected into the first kept user message": it keeps its own text and stays a user turn', () => {
    const c = context().system().user().turns(22, 50);
    const p = plan('chatgpt-on-wechat', c, 1_000_000);
    expect(p.summary!.placement.mode).toBe('prepend');
    const hostId = (p.summary!.placement as { id: string }).id;
    const host = c.messages.findIndex((m) => m.id === hostId);
    expect(host).toBe(c.messages.flatMap((m, i) => (m.role === 'user' ? [i] : []))[12]);
    const summary: MessageMeta = {
      id: 'c000001',
      role: 'user',
      tokens: 300,
      chars: 1_200,
      key: 'x/s',
      kind: 'summary',
    };
    const next = applyPlan(c.messages, p, {}, summary);
    const applied = next.find((m) => m.id === hostId)!;
    expect(applied).toMatchObject({ role: 'user', kind: 'summary', ref: c.messages[host]!.key, userTurn: true });
    expect(isUserTurn(applied)).toBe(true);
    expect(next.filter(isUserTurn)).toHaveLength(12);
    // The summary message body keeps the user's own text after the summary.
    const body = summaryMessage('SUMMARY', { role: 'user', content: 'what the user wrote' });
    expect(body.role).toBe('user');
    expect(body.content).toMatch(/^SUMMARY[\s\S]*\nwhat the user wrote$/);
    // A later trim takes the host with its turn (it is no longer fixed as a summary would be).
    expect(protectionOf(next, cow, 1_000_000).at(next.indexOf(applied))).toBe('none');
  });

  it('"tokens > budget (50k)" with 5 or more turns: the first half of the turns dropped once, no second pass', () => {
    // 7 turns of results under 20,000 characters (nothing for the cut), ≈ 59,900 tokens.
    const c = context().system().user();
    for (let i = 0; i < 6; i++) c.user().tools([4_900, 19_600], [4_900, 19_600]).reply();
    expect(c.tokens).toBeGreaterThan(50_000);
    const p = plan('chatgpt-on-wechat', c, 1_000_000);
    expect(p.reason).toMatch(/^tokens \d+ > 50000$/);
    expect(p.steps.map((s) => s.strategy)).toEqual(['trim-turns']);
    expect(p.after.turns).toBe(4); // 7 − 3
    // Still over its target (≈ 27,778): no second pass, nothing else runs.
    expect(p.after.tokens).toBeGreaterThan(p.target.tokens);
    expect(p.reachedTarget).toBe(false);
  });

  it('"under 5 turns keep only first user text and last reply per turn" (tool chains removed)', () => {
    const c = context().system().user(); // the goal's turn, then 3 turns of long tool chains
    for (let i = 0; i < 3; i++) c.user().tools([9_000, 19_000], [9_000, 19_000]).reply();
    expect(c.tokens).toBeGreaterThan(50_000);
    const p = plan('chatgpt-on-wechat', c, 1_000_000);
    expect(p.steps.map((s) => s.strategy)).toEqual(['trim-turns']);
    expect(p.after.turns).toBe(4);
    c.messages.forEach((m, i) => {
      const op = p.operations[i]!.op;
      const lastTurn = i >= c.messages.length - 4;
      if (m.role === 'tool' || (m.toolCallIds?.length ?? 0) > 0) expect(op, m.id).toBe(lastTurn ? 'keep' : 'drop');
      else expect(op, m.id).toBe('keep'); // the users' texts, the replies
    });
  });

  it('"on a provider overflow error: … trim hard (10k chars, 5 turns), then clear", everything stored', () => {
    // (The user texts of the turn in progress are cut too: preset-chatgpt-on-wechat.test.ts.)
    const c = context().system().user();
    for (let i = 0; i < 7; i++) c.user(3_000, 12_000).tools([3_000, 12_000]).reply();
    c.user().tools([3_000, 12_000]);
    const first = plan('chatgpt-on-wechat', c, 64_000, { trigger: 'overflow', attempt: 1 });
    expect(first.steps.map((s) => s.strategy)).toContain('trim-turns');
    expect(first.after.turns).toBe(5); // the turn in progress included
    for (const op of first.operations) {
      if (op.op === 'truncate') expect(op.headChars + op.tailChars).toBeLessThanOrEqual(10_000);
    }
    // Every kept tool result and user text is at most 10,000 characters.
    c.messages.forEach((m, i) => {
      if (m.chars > 10_000 && m.role !== 'system') expect(['truncate', 'drop']).toContain(first.operations[i]!.op);
    });
    // Every removed message is listed with its stored original.
    expect(first.removed.every((r) => r.key.startsWith('agents/t/messages/'))).toBe(true);
    // The last resort: the history cleared; the request in progress and its newest step stay.
    const cleared = plan('chatgpt-on-wechat', c, 64_000, { trigger: 'overflow', attempt: 2 });
    const kept = c.messages.filter((_, i) => cleared.operations[i]!.op !== 'drop');
    expect(kept.map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant', 'tool']); // (the goal: ours)
    expect(cleared.summary).toBeDefined();
  });
});

describe('agentscope', () => {
  // AgentScope's document (docs.agentscope.io, Context): "Tool result truncation — caps oversized tool outputs before
  // they enter the context", and "Context offloading — persists removed content to external storage so the agent can
  // retrieve it later"; the agent keeps the result's beginning within tool_result_limit and appends
  // "\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited context. You can refer to
  // the file in '{path}' for the truncated content if needed.</system-reminder>".
  it('cuts a tool result over tool_result_limit tokens to its beginning, then <<<TRUNCATED>>> and the system reminder naming the stored original', async () => {
    const c = context().system().user().tools(3_000);
    const p = plan('agentscope', c, 64_000, { trigger: 'forced' });
    const op = p.operations.at(-1)!;
    if (op.op !== 'truncate') throw new Error(`expected a truncate, got ${op.op}`);
    expect(op.maxTokens).toBeLessThanOrEqual(2_048);
    const meta = c.messages.at(-1)!;
    const counter = await loadTokenCounter('o200k_base');
    // A result of about 3,000 real tokens: "line 1: value 1\n…".
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i}: value ${i * 7}`).join('\n');
    const original = { role: 'tool' as const, tool_call_id: meta.toolCallId!, content: lines };
    const body = replacementBody(original, meta, op, resolvePolicy({ preset: 'agentscope' }).toolResults.marker, {
      counter,
    });
    const text = body.content as string;
    const reminder =
      '\n<<<TRUNCATED>>>\n<system-reminder>The remaining content has been omitted for limited context. You can ' +
      `refer to the file in '${meta.key}' for the truncated content if needed.</system-reminder>`;
    // The beginning, then the marker and the reminder, and nothing after them: no tail.
    expect(text.endsWith(reminder)).toBe(true);
    const head = text.slice(0, -reminder.length);
    expect(head.length).toBeGreaterThan(lines.length / 2);
    expect(lines.startsWith(head)).toBe(true);
    // Counted, it fits the limit, just under it: as much of the beginning as tool_result_limit holds.
    const tokens = countMessage(counter, body);
    expect(tokens).toBeLessThanOrEqual(op.maxTokens!);
    expect(tokens).toBeGreaterThanOrEqual(op.maxTokens! * 0.97);
  });

  it('keeps the recent messages within reserve_ratio × window, summarizes the rest', () => {
    const c = context().system().user().turns(30, 2_000);
    const p = plan('agentscope', c, 64_000);
    const step = p.steps.find((s) => s.strategy === 'summarize')!;
    expect(step).toBeDefined();
    // reserve 6,400 tokens: the newest steps within it (9 messages, 80 + 2,030 + 50 + 80 + 2,030 + 50 + 80 tokens)
    // kept, the tool step before them (2,030 more) summarized.
    const kept = keptIds(c, p);
    expect(kept.slice(-9)).toEqual(c.ids().slice(-9));
    expect(p.operations.at(-10)!.op).toBe('drop');
  });
});

describe('agentscope-java', () => {
  it('triggers at 100 messages (its working memory: the system prompt aside) or 75% of the window', () => {
    // (Rounds worth summarizing: the count alone halves nothing, `halveOnCountLimit`.)
    const hundred = context().system().user().turns(24, 500).user().reply().reply();
    expect(hundred.messages).toHaveLength(101);
    expect(plan('agentscope-java', hundred, 1_000_000).reason).toBe('messages in working memory 100 ≥ 100');
    expect(plan('agentscope-java', context().system(100).user(100).reply(74_800), 100_000).reason).toContain(
      'tokens 75000 ≥ 75000',
    );
  });

  it('offloads messages over 5 KiB to 200-character previews, outside the last 50 messages first, one strategy per check', () => {
    const c = context().system().user(2_000, 8_000).turns(23, 10).user(2_000, 8_000).turns(2, 10);
    const p = plan('agentscope-java', c, 1_000_000);
    expect(p.reason).toBe('messages in working memory 102 ≥ 100');
    expect(p.steps).toHaveLength(1);
    expect(p.steps[0]!.strategy).toBe('offload-large');
    // The goal is fixed; the big user message outside the last 50 goes first; the one inside follows only if needed.
    const offloaded = p.operations.filter((o) => o.op === 'offload');
    expect(offloaded[0]).toMatchObject({ previewChars: 200 });
  });
});

/** A summary message per part of a plan's summaries in their places (what the summarize step stores). */
function partSummaries(p: ReturnType<typeof plan>): MessageMeta[] {
  return (p.summary?.parts ?? []).map((part, i) => ({
    id: i === 0 ? 'c000001' : `c000001-${i + 1}`,
    role: 'assistant',
    tokens: part.estimatedTokens,
    chars: 4 * part.estimatedTokens,
    key: `x/summary-${i + 1}`,
    kind: 'summary',
  }));
}

/** `c` after the plan, its summaries in their places applied (tool pairs checked by applyPlan). */
function appliedInPlace(c: ContextBuilder, p: ReturnType<typeof plan>): MessageMeta[] {
  const parts = partSummaries(p);
  return applyPlan(c.messages, p, {}, parts[0], undefined, parts.slice(1));
}

// AgentScope Java, AutoContextMemory's README, "Strategy 1: Compress Historical Tool Invocations": "Finds consecutive
// tool invocation messages in historical conversations (more than `minConsecutiveToolMessages`, default: 6)", "Uses
// LLM to compress these tool invocations while preserving key information", "Replaces original tool invocations with
// compressed content"; its code searches before the latest final answer and outside the last `lastKeep` (50) messages.
describe('agentscope-java strategy 1: old tool runs', () => {
  it('"more than minConsecutiveToolMessages (6)" consecutive tool messages become one assistant message in their place', () => {
    const c = toolRunThenChat(4, 45); // 8 tool messages, then 91 messages after them
    const p = plan('agentscope-java', c, 1_000_000);
    expect(p.reason).toBe('messages in working memory 100 ≥ 100');
    expect(p.steps.map((s) => s.strategy)).toEqual(['compress-tool-runs']);
    const ids = c.ids();
    expect(p.summary).toMatchObject({ form: 'tool-run', writer: 'model' });
    expect(p.summary!.parts).toEqual([
      expect.objectContaining({
        coverage: { firstId: ids[2], lastId: ids[9], messages: 8 },
        beforeId: ids[10],
        keptUserIds: [ids[1]],
      }),
    ]);
    expect(p.operations.filter((o) => o.op === 'drop').map((o) => o.id)).toEqual(ids.slice(2, 10));
    const next = appliedInPlace(c, p);
    expect(next.map((m) => m.id).slice(0, 4)).toEqual([ids[0], ids[1], 'c000001', ids[10]]);
    expect(next[2]!.role).toBe('assistant');
    expect(next.some((m) => m.kind === 'ledger')).toBe(false); // a summary in its place brings no task ledger
    expect(next.length).toBe(p.after.messages);
  });

  it('offline, the extractive summarizer writes it (no summary model configured)', () => {
    const p = plan('agentscope-java', toolRunThenChat(4, 45), 1_000_000, { summarizer: 'none' });
    expect(p.steps.map((s) => s.strategy)).toEqual(['compress-tool-runs']);
    expect(p.summary).toMatchObject({ form: 'tool-run', writer: 'extractive' });
  });

  it('6 consecutive tool messages are not "more than 6"; 7 are', () => {
    const only = { strategies: ['compress-tool-runs' as const] };
    expect(plan('agentscope-java', toolRunThenChat(3, 46), 1_000_000, only).action).toBe('skip');
    const seven = context().system().user().tools(600, 600).tools(600).tools(600).reply();
    for (let i = 0; i < 46; i++) seven.user().reply();
    const p = plan('agentscope-java', seven, 1_000_000, only);
    expect(p.summary!.parts![0]!.coverage.messages).toBe(7);
  });

  it('never a run inside the last 50 messages, nor one after the latest final answer', () => {
    const only = { strategies: ['compress-tool-runs' as const] };
    // 60 messages of chat, then the run, its answer and 20 more: the run is among the last 50.
    const recent = context().system().user().reply();
    for (let i = 0; i < 30; i++) recent.user().reply();
    for (let i = 0; i < 4; i++) recent.tools(600);
    recent.reply();
    for (let i = 0; i < 10; i++) recent.user().reply();
    expect(plan('agentscope-java', recent, 1_000_000, { ...only, trigger: 'forced' }).action).toBe('skip');
    // The latest final answer, then a long loop of tool calls under the next request: the loop is protected.
    const loop = context().system().user().reply();
    for (let i = 0; i < 60; i++) loop.user().reply();
    loop.user();
    for (let i = 0; i < 8; i++) loop.tools(600);
    expect(plan('agentscope-java', loop, 1_000_000, { ...only, trigger: 'forced' }).action).toBe('skip');
  });

  it('up to 5 runs in one check, the oldest first, each in its own place', () => {
    const c = context().system().user();
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 4; i++) c.tools(600);
      c.reply().user();
    }
    for (let i = 0; i < 45; i++) c.reply().user();
    c.reply();
    const p = plan('agentscope-java', c, 1_000_000);
    expect(p.steps.map((s) => s.strategy)).toEqual(['compress-tool-runs']);
    const parts = p.summary!.parts!;
    expect(parts).toHaveLength(5);
    const ids = c.ids();
    // Each run of 8 is followed by its answer: round r's run starts at 2 + 10 r.
    expect(parts.map((part) => part.coverage.firstId)).toEqual([0, 1, 2, 3, 4].map((r) => ids[2 + 10 * r]));
    expect(parts.map((part) => part.beforeId)).toEqual([0, 1, 2, 3, 4].map((r) => ids[10 + 10 * r]));
    const next = appliedInPlace(c, p);
    expect(next.filter((m) => m.kind === 'summary').map((m) => m.role)).toEqual(Array(5).fill('assistant'));
  });
});

// AutoContextMemory's README, "Strategy 2 & 3: Offload Large Messages": "Find large messages (before the latest
// assistant)"; its code protects "the latest assistant message that is a final response ... and all messages after it".
describe('agentscope-java strategies 2 and 3: large messages', () => {
  it('never offloads the latest final answer or anything after it', () => {
    const c = context().system().user().turns(24, 10);
    c.tools([2_000, 8_000]).reply(2_000, 8_000); // a large result, then the latest final answer, large too
    c.user().tools([2_000, 8_000]).tools(10); // the next request's large result, then a step after it
    const ids = c.ids();
    const [before, answer, after] = [ids[99]!, ids[100]!, ids[103]!];
    const offloadedWith = (beforeLatestAnswer: boolean) => {
      const p = planFor(c, resolvePolicy({ preset: 'agentscope-java', offload: { beforeLatestAnswer } }), 1_000_000, {
        trigger: 'forced',
        strategies: ['offload-large'],
      });
      return p.operations.filter((o) => o.op === 'offload').map((o) => o.id);
    };
    expect(resolvePolicy({ preset: 'agentscope-java' }).offload.beforeLatestAnswer).toBe(true);
    expect(offloadedWith(true)).toEqual([before]);
    // Without the bound, the answer and the result after it would go too.
    expect(offloadedWith(false)).toEqual([before, answer, after]);
  });
});

// AutoContextMemory's README, "Strategy 4: Summarize Historical Rounds": "Finds all conversation rounds before the
// latest assistant message", "Summarizes each round (user + tools + assistant)", "Replaces original conversation rounds
// with summary messages"; its code: "user1-tools-assistant1, user2-tools-assistant2, … user4" becomes
// "user1-summary, user2-summary, … user4": each round on its own, the user's message verbatim.
describe('agentscope-java strategy 4: historical rounds', () => {
  it('summarizes each round before the latest final answer on its own, its user message kept verbatim', () => {
    const c = context().system();
    for (let round = 0; round < 30; round++) c.user().tools(300).reply(100);
    const p = plan('agentscope-java', c, 1_000_000);
    expect(p.reason).toBe('messages in working memory 120 ≥ 100');
    expect(p.steps.map((s) => s.strategy)).toEqual(['summarize-rounds']);
    const ids = c.ids();
    const users = ids.filter((_, i) => i > 0 && (i - 1) % 4 === 0);
    const parts = p.summary!.parts!;
    // Rounds 1–29; the 30th holds the latest final answer.
    expect(parts).toHaveLength(29);
    parts.forEach((part, r) => {
      expect(part.keptUserIds).toEqual([users[r]]);
      expect(part.coverage).toEqual({ firstId: ids[2 + 4 * r], lastId: ids[4 + 4 * r], messages: 3 });
      expect(part.beforeId).toBe(users[r + 1]);
    });
    const next = appliedInPlace(c, p);
    // user1-summary, user2-summary, …, then the last round whole.
    const shape = next.map((m) => (m.kind === 'summary' ? 'summary' : m.role));
    expect(shape).toEqual([
      'system',
      ...Array.from({ length: 29 }, () => ['user', 'summary']).flat(),
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(next.filter((m) => m.role === 'user').map((m) => m.id)).toEqual(users);
    expect(next.length).toBe(p.after.messages);
  });
});

describe('agentscope-java in the current round', () => {
  it('summarizes the round in progress down to its newest step when nothing older is left', () => {
    // One user message, then 40 tool steps: all within the last 50 messages' protection, then the current round.
    const c = context().system().user();
    for (let i = 0; i < 40; i++) c.tools(900);
    const p = plan('agentscope-java', c, 64_000, { trigger: 'forced', strategies: ['summarize-current-turn'] });
    expect(p.steps.map((s) => s.strategy)).toEqual(['summarize-current-turn']);
    expect(p.operations.slice(-2).every((o) => o.op === 'keep')).toBe(true); // the newest step
    expect(p.operations[1]!.op).toBe('keep'); // the request
    expect(p.summary!.coverage.currentTurn).toMatchObject({ turnId: c.messages[1]!.id });
  });
});

describe('octomind', () => {
  it("prices the remaining calls at the session's pace: a context that refilled fast is worth compacting", () => {
    const c = context().system().user().turns(20, 3_000);
    // Octomind's arithmetic: every call at the full input price (cached input priced as input).
    const policy = resolvePolicy({
      preset: 'octomind',
      cost: { inputPerMillion: 3, cachedInputPerMillion: 3, summaryOutputPerMillion: 300 },
    });
    const at = (callsSinceCompaction: number) =>
      planCompaction({
        context: c.messages,
        policy,
        window: 1_000_000,
        fixedTokens: 0,
        trigger: 'auto',
        cooldown: NO_COOLDOWN,
        summarizer: 'available',
        goalId: c.messages[1]!.id,
        callsSinceCompaction,
      });
    const slow = at(1);
    expect(slow.action).toBe('skip');
    expect(slow.reason).toMatch(/over 1 remaining calls \(the session's pace/);
    const fast = at(40);
    expect(fast.action).toBe('compact');
    expect(fast.cost).toMatchObject({ remainingTurns: 40, remainingFrom: 'pace' });
    // Full input price on both sides, the summary call on one: (before − after) × calls × price > summary call.
    const saved = ((fast.before.tokens - fast.after.tokens) * 40 * 3) / 1_000_000;
    expect(fast.cost!.netBenefit).toBeCloseTo(
      saved - (fast.cost!.withCompaction - (fast.after.tokens * 40 * 3) / 1e6),
      9,
    );
  });

  // Octomind's document, cache-aware economics: "net_benefit = (cost of remaining turns with full context) − (compression
  // cost + cache invalidation cost + cost of remaining turns with compressed context)", "If net_benefit > 0: Compress
  // (saves money)"; its example: 100k → 50k tokens over 10 turns is a net gain.
  it('"If net_benefit > 0: Compress": 100k → 50k tokens over 10 turns is a net gain by its own arithmetic', () => {
    const cost = resolvePolicy({ preset: 'octomind' }).cost!;
    // The summary call reads the 100k tokens and writes a 2,000-token summary; no call counted yet: the document's 10.
    const example = estimateCost(cost, 100_000, 50_000, 100_000, 2_000, undefined);
    expect(example).toMatchObject({ remainingTurns: 10, remainingFrom: 'estimate' });
    // Every call at the full input price (3 per million): 10 × 50k saved against the summary call.
    expect(example.netBenefit).toBeCloseTo((10 * 50_000 * 3 - (100_000 * 3 + 2_000 * 15)) / 1e6, 9);
    expect(example.netBenefit).toBeGreaterThan(0);
    // Once the pace is known, it is priced instead (a context refilled in 1 call: 1 call left).
    expect(estimateCost(cost, 100_000, 50_000, 100_000, 2_000, 1)).toMatchObject({
      remainingTurns: 1,
      remainingFrom: 'pace',
    });
  });

  it('compresses a growing session at each pressure level (60k, 120k, 160k) before its pace is known', () => {
    for (const [turns, perTurn] of [
      [20, 3_000],
      [40, 2_950],
      [40, 3_950],
    ] as const) {
      const c = context().system().user().turns(turns, perTurn);
      const p = planCompaction({
        context: c.messages,
        policy: resolvePolicy({ preset: 'octomind' }),
        window: 1_000_000,
        fixedTokens: 0,
        trigger: 'auto',
        cooldown: NO_COOLDOWN,
        summarizer: 'available',
        goalId: c.messages[1]!.id,
      });
      expect(p.action, `${c.tokens} tokens: ${p.reason}`).toBe('compact');
      expect(p.cost).toMatchObject({ remainingTurns: 10, remainingFrom: 'estimate' });
      expect(p.cost!.netBenefit).toBeGreaterThan(0);
      expect(keptIds(c, p).slice(-4)).toEqual(c.ids().slice(-4));
    }
  });

  it('keeps the last 4 messages and skips a compaction that costs more than it saves', () => {
    const c = context().system().user().turns(20, 3_000);
    const p = plan('octomind', c, 1_000_000);
    expect(p.cost).toBeDefined();
    if (p.action === 'compact') expect(keptIds(c, p).slice(-4)).toEqual(c.ids().slice(-4));
    const cheap = planCompaction({
      context: c.messages,
      policy: resolvePolicy({
        preset: 'octomind',
        cost: { inputPerMillion: 0.1, summaryOutputPerMillion: 1_000, expectedRemainingTurns: 1 },
      }),
      window: 1_000_000,
      fixedTokens: 0,
      trigger: 'auto',
      cooldown: NO_COOLDOWN,
      summarizer: 'available',
    });
    expect(cheap.action).toBe('skip');
    expect(cheap.reason).toMatch(/^not worth it: compacting would cost/);
  });
});

describe('default: the cost decision before the pace is known', () => {
  const policy = resolvePolicy();
  /** 33,000 tokens in 13 turns (a user message, a tool call and its 2,000-token result, the answer: 26 calls). */
  const thirteenTurns = () => {
    const c = context().system(1_410);
    for (let i = 0; i < 13; i++) c.user(200).tools(2_000).reply(200);
    return c;
  };

  // Issue 45: "At 33,000 of a 40,000-token window (hard limit 38,000) with 13 turns and no pace known yet, it skips:
  // 'not worth it over 1 remaining call'. The seeds compact there; a first compaction should not need a known pace."
  it('"a first compaction should not need a known pace": 33,000 of 40,000 tokens in 13 turns compacts', () => {
    const c = thirteenTurns();
    expect(c.tokens).toBe(33_000);
    expect(gateOf(policy, 40_000)).toMatchObject({ tokens: 32_000, hard: 38_000 });
    for (const callsSinceCompaction of [undefined, 0]) {
      const p = plan('default', c, 40_000, { callsSinceCompaction });
      expect(p.action, p.reason).toBe('compact');
      // The calls the context shows were made (its 26 assistant messages), not 1.
      expect(p.cost).toMatchObject({ remainingTurns: 26, remainingFrom: 'context' });
      expect(p.cost!.netBenefit).toBeGreaterThan(0);
    }
    // A known pace still wins: refilled in 1 call, 1 call is priced and the compaction waits.
    const paced = plan('default', c, 40_000, { callsSinceCompaction: 1 });
    expect(paced.action).toBe('skip');
    expect(paced.reason).toMatch(/over 1 remaining calls \(the session's pace/);
  });

  it("prices the context's calls since its last summary, and names them as its source when it does not pay", () => {
    // 13 turns of chat (13 calls) at 33,000 tokens: a model-written summary costs more than 13 calls save.
    const chat = context().system(500);
    for (let i = 0; i < 13; i++) chat.user(500).reply(2_000);
    const p = plan('default', chat, 40_000, { callsSinceCompaction: undefined });
    expect(p.action).toBe('skip');
    expect(p.cost).toMatchObject({ remainingTurns: 13, remainingFrom: 'context' });
    expect(p.reason).toMatch(/over 13 remaining calls \(the context's/);
    // After a summary, only the calls since it: 4.
    const summarized = context().system(500).summary(3_000);
    for (let i = 0; i < 4; i++) summarized.user(500).reply(7_000);
    const after = plan('default', summarized, 40_000, { callsSinceCompaction: 0 });
    expect(after.cost).toMatchObject({ remainingTurns: 4, remainingFrom: 'context' });
    expect(callsShownBy(summarized.messages)).toBe(4);
    expect(callsShownBy(context().system().user().messages)).toBe(1); // at least 1
    // Without the context's calls (an estimate of the cost alone), 1 call.
    const cost = policy.cost!;
    expect(estimateCost(cost, 100_000, 50_000, 0, 0, undefined)).toMatchObject({
      remainingTurns: 1,
      remainingFrom: 'pace',
    });
    expect(remainingTurnsOf(cost, 0, 13)).toEqual({ turns: 13, from: 'context' });
  });

  it("the policy's figures still win over the context's: expectedRemainingTurns, and octomind's 10 until the pace", () => {
    expect(remainingTurnsOf({ ...policy.cost!, expectedRemainingTurns: 3 }, undefined, 26)).toEqual({
      turns: 3,
      from: 'policy',
    });
    const octomind = resolvePolicy({ preset: 'octomind' }).cost!;
    expect(remainingTurnsOf(octomind, undefined, 26)).toEqual({ turns: 10, from: 'estimate' });
    expect(remainingTurnsOf(octomind, 5, 26)).toEqual({ turns: 5, from: 'pace' });
  });
});

describe('configuration', () => {
  it('every preset is a valid policy', () => {
    for (const name of PRESET_NAMES) expect(resolvePolicy({ preset: name }).preset).toBe(name);
  });

  it('every preset bounds the messages in the context (the workflow state), its own limit kept below the bound', () => {
    expect(resolvePolicy({ preset: 'default' }).maxMessages).toBe(1_000);
    expect(resolvePolicy({ preset: 'agentscope-java' }).maxMessages).toBe(99);
    expect(resolvePolicy({ preset: 'astrbot' }).maxMessages).toBe(MAX_CONTEXT_MESSAGES); // none of its own
    for (const name of PRESET_NAMES) {
      expect(resolvePolicy({ preset: name }).maxMessages).toBeLessThanOrEqual(MAX_CONTEXT_MESSAGES);
    }
  });

  it.each([
    [{ triggerRatio: 1.5 }, 'triggerRatio: 1.5 is not allowed (a number > 0 and ≤ 0.9)'],
    [{ keepTurns: -1 }, 'keepTurns: -1 is not allowed (an integer from 0 to 10000)'],
    [
      { preset: 'nope' },
      'preset: "nope" is not allowed (one of default, astrbot, chatgpt-on-wechat, agentscope, agentscope-java, octomind)',
    ],
    [
      { strategies: ['fold'] },
      'strategies[0]: "fold" is not allowed (one of supersede-tool-results, truncate-tool-results, mask-tool-results, compress-tool-runs, offload-large, summarize, summarize-rounds, summarize-current-turn, compact-turns, trim-turns, truncate-rounds, halve)',
    ],
    [{ targetRatio: 0.85 }, 'targetRatio: 0.85 is not allowed (a number > 0 and ≤ 0.8)'],
    [{ triggerRatio: 0.5 }, 'targetRatio: 0.5 is not allowed (below triggerRatio (0.5))'],
    [{ colour: 'red' }, 'colour: "red" is not allowed (not a policy field)'],
    [{ maxMessages: 5_000 }, 'maxMessages: 5000 is not allowed (an integer from 2 to 2000)'],
    [{ summary: { placement: 'top' } }, 'summary.placement: "top" is not allowed (one of message, first-kept-user)'],
    [
      { cost: { inputPerMillion: 3, summaryOutputPerMillion: 15, cacheReadMultiplier: 0.1 } },
      'cost.cacheReadMultiplier: 0.1 is not allowed (not a cost field (inputPerMillion, cachedInputPerMillion, summaryOutputPerMillion, summaryInputPerMillion, expectedRemainingTurns, remainingTurnsUntilPace))',
    ],
    [
      { cost: { inputPerMillion: 3, cachedInputPerMillion: 4, summaryOutputPerMillion: 15 } },
      'cost.cachedInputPerMillion: 4 is not allowed (a number ≥ 0 and ≤ 3)',
    ],
    [{ keepSteps: -1 }, 'keepSteps: -1 is not allowed (an integer from 0 to 10000)'],
    [
      { summary: { withoutModel: 'drop' } },
      'summary.withoutModel: "drop" is not allowed (one of extractive, fallback)',
    ],
    [{ summary: { request: 'chat' } }, 'summary.request: "chat" is not allowed (one of conversation, transcript)'],
  ])('%j is rejected: %s', (overrides, message) => {
    expect(() => resolvePolicy(overrides as never)).toThrow(PolicyError);
    expect(() => resolvePolicy(overrides as never)).toThrow(message);
  });

  it("summary.request: ours rides the agent's prompt cache (conversation); each seed sends its own prompt (transcript)", () => {
    expect(resolvePolicy().summary.request).toBe('conversation');
    for (const name of PRESET_NAMES.filter((n) => n !== 'default')) {
      expect(resolvePolicy({ preset: name }).summary.request, name).toBe('transcript');
    }
    expect(resolvePolicy({ summary: { request: 'transcript' } }).summary).toMatchObject({
      request: 'transcript',
      maxTokens: 2_000,
    });
    expect(resolvePolicy({ preset: 'astrbot', summary: { request: 'conversation' } }).summary.request).toBe(
      'conversation',
    );
  });

  it('overrides merge into nested groups field by field', () => {
    const policy = resolvePolicy({ preset: 'agentscope', toolResults: { maxTokens: 4_096 } });
    expect(policy.toolResults.maxTokens).toBe(4_096);
    expect(policy.toolResults.marker).toContain('<<<TRUNCATED>>>');
  });
});

describe('applying a plan', () => {
  it('replacements keep their id and point to the original; the summary goes where the plan says', () => {
    const c = context().system().user().reply(40_000).turns(10, 2_000);
    const p = plan('default', c, 64_000);
    const replacements: Record<string, MessageMeta> = {};
    for (const op of p.operations) {
      if (op.op === 'truncate' || op.op === 'mask' || op.op === 'offload') {
        const original = c.messages.find((m) => m.id === op.id)!;
        replacements[op.id] = { ...original, key: `x/${op.id}`, ref: original.key, tokens: 40, kind: 'masked' };
      }
    }
    const summary: MessageMeta = {
      id: 'c000001',
      role: 'user',
      tokens: 500,
      chars: 2_000,
      key: 'x/summary',
      kind: 'summary',
    };
    const next = applyPlan(c.messages, p, replacements, p.summary ? summary : undefined);
    expect(next[0]).toBe(c.messages[0]);
    for (const item of p.removed.filter((r) => r.replacedBy && r.replacedBy !== 'summary')) {
      expect(next.find((m) => m.id === item.id)?.ref).toBe(item.key);
    }
    if (p.summary) expect(next.some((m) => m.kind === 'summary')).toBe(true);
    expect(next.length).toBe(p.after.messages);
  });
});
