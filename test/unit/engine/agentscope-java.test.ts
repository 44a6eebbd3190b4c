/**
 * The agentscope-java preset against AgentScope Java's AutoContextMemory as its README and code state each strategy
 * (issue 45): what a user of AgentScope Java expects of strategies 1 to 4 and of the current round, planned by the
 * engine (the activities that write the summaries: test/unit/agentscope-java-activities.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { applyPlan } from '../../../engine/apply.ts';
import { gateAfterSkippedPlan } from '../../../engine/gates.ts';
import type { MessageMeta } from '../../../engine/messages.ts';
import type { Plan, PlanInput } from '../../../engine/planner/index.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import { gateFires, NO_COOLDOWN } from '../../../engine/trigger.ts';
import { context, planFor, toolRunThenChat } from '../../support/contexts.ts';
import type { ContextBuilder } from '../../support/contexts.ts';

const java = resolvePolicy({ preset: 'agentscope-java' });
const plan = (c: ContextBuilder, window = 1_000_000, extra: Partial<PlanInput> = {}) => planFor(c, java, window, extra);

/** `c` after `p`, each summary in its place stored as an assistant message of kind summary (as the activities do). */
function applied(c: ContextBuilder, p: Plan): MessageMeta[] {
  const parts = (p.summary?.parts ?? []).map((part, i): MessageMeta => ({
    id: i === 0 ? 'c000001' : `c000001-${i + 1}`,
    key: `x/summary-${i + 1}`,
    role: 'assistant',
    tokens: part.estimatedTokens,
    chars: 4 * part.estimatedTokens,
    kind: 'summary',
  }));
  return applyPlan(c.messages, p, {}, parts[0], undefined, parts.slice(1));
}

const opsOf = (p: Plan) => new Set(p.operations.map((o) => o.op));

// AutoContextMemory's README, Strategy 1: "Finds consecutive tool invocation messages in historical conversations
// (more than `minConsecutiveToolMessages`, default: 6)", "Uses LLM to compress these tool invocations while preserving
// key information", "Replaces original tool invocations with compressed content"; its code replaces the run with "a new
// ASSISTANT message containing the compressed tool invocation summary".
describe('strategy 1: a run of more than 6 consecutive tool messages', () => {
  it('becomes one assistant message in its place: the calls go with their results, none stubbed', () => {
    const c = toolRunThenChat(5, 45); // 10 tool messages, then the answer and 90 messages
    for (const summarizer of ['available', 'none'] as const) {
      const p = plan(c, 1_000_000, { summarizer });
      expect(p.steps.map((s) => s.strategy)).toEqual(['compress-tool-runs']);
      // Nothing masked, truncated or offloaded: the run leaves whole, calls and results, into one summary.
      expect([...opsOf(p)].sort()).toEqual(['drop', 'keep']);
      const ids = c.ids();
      expect(p.operations.filter((o) => o.op === 'drop').map((o) => o.id)).toEqual(ids.slice(2, 12));
      // Written by the summary model when there is one, by the extractive summarizer otherwise.
      expect(p.summary).toMatchObject({
        form: 'tool-run',
        writer: summarizer === 'available' ? 'model' : 'extractive',
      });
      const next = applied(c, p);
      expect(next.slice(0, 4).map((m) => m.id)).toEqual([ids[0], ids[1], 'c000001', ids[12]]);
      expect(next[2]).toMatchObject({ role: 'assistant', kind: 'summary' });
      expect(next.some((m) => (m.toolCallIds?.length ?? 0) > 0)).toBe(false);
    }
  });
});

// AutoContextMemory's README: strategy 1 is for "more than `minConsecutiveToolMessages`" tool messages; runs of 6 or
// fewer are left to the strategies after it, and no strategy of its masks a tool result.
describe('runs of 6 or fewer tool messages', () => {
  it('are not strategy 1 material, and no old tool result is masked, whatever its size', () => {
    // 30 rounds of 3 tool calls (6 tool messages), results of 40 to 600 tokens, each round answered.
    const c = context().system();
    for (let round = 0; round < 30; round++) c.user().tools(40).tools(300).tools(600).reply();
    const only = plan(c, 1_000_000, { strategies: ['compress-tool-runs'], trigger: 'forced' });
    expect(only.action).toBe('skip');
    for (const trigger of ['auto', 'forced'] as const) {
      const p = plan(c, 1_000_000, { trigger });
      expect(p.action).toBe('compact');
      expect(p.steps.map((s) => s.strategy)).not.toContain('compress-tool-runs');
      expect(opsOf(p).has('mask')).toBe(false);
    }
    // Automatic, one strategy per check: strategy 4, each earlier round summarized in its place.
    expect(plan(c).steps.map((s) => s.strategy)).toEqual(['summarize-rounds']);
  });
});

/**
 * What the next check finds once strategy 4 has summarized every earlier round: `rounds` user messages each with its
 * summary in its place, the latest round whole (its final answer the latest), then the round in progress: its request
 * and `steps` tool steps. Over 100 messages of working memory.
 */
function afterRoundSummaries(rounds = 45, steps = 4): ContextBuilder {
  const c = context().system();
  for (let r = 0; r < rounds; r++) c.user().summaryInPlace(200);
  c.user().tools(600).reply(300);
  c.user();
  for (let i = 0; i < steps; i++) c.tools(900);
  return c;
}

// AutoContextMemory's README, Strategy 4: "Summarizes each round (user + tools + assistant)", "Replaces original
// conversation rounds with summary messages"; Strategy 5 (its code's strategy 6): "If historical messages are already
// compressed but context still exceeds limits, compresses the current round", "Finds the latest user message and
// merges all messages after it (typically tool calls and results)".
describe('the round in progress, once the earlier rounds are summarized', () => {
  it('"finds the latest user message and merges all messages after it": the earlier rounds and their summaries stay', () => {
    const c = afterRoundSummaries();
    const ids = c.ids();
    const request = ids.length - 9; // the round in progress: its request and 4 tool steps
    const p = plan(c);
    expect(p.reason).toBe('messages in working memory 103 ≥ 100');
    expect(p.steps.map((s) => s.strategy)).toEqual(['summarize-current-turn']);
    // Everything before the request stays as it was: each user message with its summary, the latest round whole.
    expect(p.operations.slice(0, request + 1).every((o) => o.op === 'keep')).toBe(true);
    // The steps after the request leave, down to the newest one, into one assistant message in their place.
    expect(p.operations.filter((o) => o.op === 'drop').map((o) => o.id)).toEqual(ids.slice(request + 1, -2));
    expect(p.summary).toMatchObject({ form: 'current-round' });
    expect(p.summary!.parts).toHaveLength(1);
    // Read with the request (which stays), titled with the steps of the request in progress it covers.
    expect(p.summary!.parts![0]).toMatchObject({
      form: 'current-round',
      keptUserIds: [ids[request]],
      coverage: { currentTurn: { turnId: ids[request], steps: 3 } },
      beforeId: ids.at(-2),
    });
    const next = applied(c, p);
    expect(next.map((m) => m.id)).toEqual([...ids.slice(0, request + 1), 'c000001', ...ids.slice(-2)]);
    expect(next.filter((m) => m.kind === 'summary')).toHaveLength(45 + 1);
    expect(next.some((m) => m.kind === 'ledger')).toBe(false);
  });

  // AutoContextMemory's README, Strategy 2 & 3: "Find large messages (before the latest assistant)"; its code protects
  // "the latest assistant message that is a final response ... and all messages after it"; its current round starts
  // after the latest user message, so no strategy of its touches the previous round's final answer.
  it("the previous round's final answer, the latest, is never summarized away", () => {
    // The goal's round answered, then a long round in progress over 75% of a 36,000-token window.
    const c = context().system().user().tools(600).reply(300).user();
    for (let i = 0; i < 30; i++) c.tools(900);
    const answer = 4;
    expect(c.messages[answer]).toMatchObject({ role: 'assistant', tokens: 300 });
    for (const trigger of ['auto', 'forced', 'overflow'] as const) {
      const p = plan(c, 36_000, { trigger });
      expect(p.steps.map((s) => s.strategy)).toContain('summarize-current-turn');
      expect(p.operations.slice(0, 6), trigger).toEqual(
        c
          .ids()
          .slice(0, 6)
          .map((id) => ({ op: 'keep', id })),
      );
    }
  });

  it('an earlier summary of the round in progress is folded into the next one, in its place', () => {
    const c = context().system();
    for (let r = 0; r < 46; r++) c.user().summaryInPlace(200);
    c.user().summaryInPlace(300); // steps 1–3 of the round in progress, summarized by an earlier check
    for (let i = 0; i < 4; i++) c.tools(900);
    const ids = c.ids();
    const p = plan(c);
    expect(p.steps.map((s) => s.strategy)).toEqual(['summarize-current-turn']);
    // The request (read beside it, kept), the earlier summary and the steps since: one summary in their place.
    expect(p.summary!.parts![0]!.spanIds).toEqual(ids.slice(-10, -2));
    expect(p.operations.filter((o) => o.op === 'drop').map((o) => o.id)).toEqual(ids.slice(-9, -2));
    const next = applied(c, p);
    expect(next.map((m) => m.id)).toEqual([...ids.slice(0, -9), 'c000001', ...ids.slice(-2)]);
  });

  it('a round in progress of its newest step alone has nothing to summarize', () => {
    const c = afterRoundSummaries(47, 1);
    const p = plan(c, 1_000_000, { trigger: 'forced', strategies: ['summarize-current-turn'] });
    expect(p.action).toBe('skip');
  });
});

// A forced compaction runs every strategy in order (an automatic one stops at the first that applies): each summary
// stays in its place, of its own form, as AgentScope Java's strategies 1 and 4 write them one after the other.
describe('strategies 1 and 4 in one compaction', () => {
  it('a compressed run and the summarized rounds each keep their own place; nothing is folded into one summary', () => {
    const c = context().system().user();
    for (let i = 0; i < 4; i++) c.tools(600); // round 1: a run of 8 tool messages
    c.reply();
    for (let round = 0; round < 20; round++) c.user().tools([3_000, 5_000]).reply(100); // rounds 2–21, the last answer the latest
    c.summaryInPlace(200); // (an earlier summary in its place stays where it is)
    c.user().tools(300);
    const p = plan(c, 1_000_000, { trigger: 'forced' });
    expect(p.reachedTarget).toBe(true);
    expect(p.steps.map((s) => s.strategy)).toEqual(['compress-tool-runs', 'summarize-rounds']);
    const forms = p.summary!.parts!.map((part) => part.form);
    expect(forms).toEqual(['tool-run', ...Array.from({ length: 19 }, () => 'round')]);
    const next = applied(c, p);
    const ids = c.ids();
    expect(next.slice(0, 5).map((m) => m.id)).toEqual([ids[0], ids[1], 'c000001', ids[10], ids[11]]);
    expect(next.filter((m) => m.kind === 'summary')).toHaveLength(1 + 19 + 1);
    expect(next.some((m) => m.kind === 'ledger')).toBe(false);
  });
});

// AutoContextMemory's code, once no strategy applies: "All compression strategies exhausted but context still exceeds
// threshold", and nothing more is done: its msgThreshold only starts the strategies. longrun's halving (a last resort
// it adds) runs for this preset only when the tokens are at or over the trigger, never for the message count alone.
describe('when every strategy is exhausted', () => {
  it('the message count alone halves nothing: the rounds stay each with its summary', () => {
    const c = afterRoundSummaries(49, 1); // 98 + 4 + 3 messages in working memory, 14,310 tokens
    const p = plan(c);
    expect(p.action).toBe('skip');
    expect(p.reason).toMatch(/^nothing to compact: messages in working memory 105 ≥ 100, but no strategy of \[/);
  });

  it('a check that found nothing holds the count until it grows, not planning again at every step', () => {
    const c = afterRoundSummaries(49, 1);
    const p = plan(c);
    const gate = gateAfterSkippedPlan(
      java,
      1_000_000,
      NO_COOLDOWN,
      { tokens: p.before.tokens, messages: p.before.messages },
      'auto',
      50,
    );
    const at = (messages: number) => gateFires(gate, { tokens: p.before.tokens, messages, turns: 52 }, true);
    expect(at(105)).toBeUndefined();
    expect(at(111)).toBeUndefined(); // 106 messages in all, +5%: 111
    expect(at(112)).toBe('messages in working memory 112 ≥ 112');
  });

  it("up to the workflow state's bound: there, the count halves", () => {
    const c = context().system();
    for (let r = 0; r < 1_000; r++) c.user(10).summaryInPlace(10);
    c.user().tools(30);
    expect(c.messages.length).toBe(2_004);
    expect(plan(c).steps.map((s) => s.strategy)).toEqual(['halve']);
    const gate = gateAfterSkippedPlan(java, 1_000_000, NO_COOLDOWN, { tokens: 30_000, messages: 1_990 }, 'auto', 50);
    expect(gate.messages).toBe(1_998);
  });

  it('over the token trigger, halving is still the last resort', () => {
    const c = afterRoundSummaries(49, 1);
    const p = plan(c, 18_000); // 75% of 18,000 is 13,500 tokens: the context holds more
    expect(p.before.tokens).toBeGreaterThan(13_500);
    expect(p.steps.map((s) => s.strategy)).toEqual(['halve']);
  });

  it("halveOnCountLimit is this preset's alone, and a flag", () => {
    expect(java.halveOnCountLimit).toBe(false);
    expect(resolvePolicy({ preset: 'default' }).halveOnCountLimit).toBeUndefined();
    expect(() => resolvePolicy({ preset: 'agentscope-java', halveOnCountLimit: 'no' as unknown as boolean })).toThrow(
      /halveOnCountLimit/,
    );
  });
});
