/**
 * The plan's estimate of the context after a compaction against what the apply step leaves, through the compaction
 * activities over an in-memory store (plan → summarize → apply, as the workflow runs them): the summary's frame and
 * the task ledger are counted as they will be written, so the estimate is the result (the extractive summary exactly;
 * a summary model's body within its bound). A compaction that would not shrink the context is not made: an
 * automatic one is a skip, a forced one says "nothing to gain" unless asked with evenIfLarger, and one whose written
 * summary turned out larger than planned is not committed (no event, no manifest).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../engine/messages.ts';
import type { PolicyOverrides } from '../../engine/policy.ts';
import type { Trigger } from '../../engine/trigger.ts';
import { parseSessionJsonl } from '../../llm/replayed-model.ts';
import type { ApplyOutcome, NoGainOutcome, PlanOutcome } from '../../contract/compaction-activities.ts';
import { MODEL_LEDGER_TOKENS } from '../../activities/compaction/written-sizes.ts';
import { compactionKey } from '../../contract/keys.ts';
import type { ContextRecord } from '../../contract/records.ts';
import { agentLoop as loopOf, inActivity, storedAgent, summaryModel } from '../support/stored-agent.ts';

/** Summaries only: the masking pass and the cheaper strategies plan their stubs by estimates of their own. */
const SUMMARIES: PolicyOverrides = { strategies: ['summarize'], mask: { fromRatio: null } };

/** An agent's stored conversation and the compaction activities over it. */
async function agentWith(messages: ChatMessage[], model?: () => string) {
  const { store, activities, life, fixedTokens, context, append, planInput, summarize, applyInput } = await storedAgent(
    'estimate',
    messages,
    model ? summaryModel(model) : undefined,
  );
  const tokens = fixedTokens + context.reduce((sum, m) => sum + m.tokens, 0);
  const stored = [...context];

  /** Plan, summarize and apply compaction `seq` of `at` (the context), as the workflow's pipeline does. */
  async function compact(
    at: ContextRecord[],
    o: { seq: number; trigger: Trigger; window: number; policy?: PolicyOverrides; evenIfLarger?: boolean },
  ): Promise<{ plan: PlanOutcome; applied?: ApplyOutcome | NoGainOutcome }> {
    const plan = await inActivity(() =>
      activities.planCompaction({
        ...planInput({ ...o, policy: o.policy ?? SUMMARIES }),
        context: at,
        // The pace the workflow passes at a first compaction: the model calls that filled the context.
        callsSinceCompaction: at.filter((m) => m.role === 'assistant').length,
        ...(o.evenIfLarger ? { evenIfLarger: true } : {}),
      }),
    );
    if (plan.action === 'skip') return { plan };
    const summary = plan.summary ? await summarize(o.seq, plan.summary) : undefined;
    const applied = await inActivity(() =>
      activities.applyCompaction({
        ...applyInput(o, plan),
        ...(summary ? { summary } : {}),
        ...(o.evenIfLarger ? { evenIfLarger: true } : {}),
      }),
    );
    return { plan, applied };
  }
  return { store, life, context: stored, tokens, compact, append };
}

/** The README demo's conversation (`npm start`): its system prompt and the recorded session, or its first `turns`. */
function demoConversation(turns = Infinity): ChatMessage[] {
  const session = parseSessionJsonl(readFileSync(new URL('../../demo/session.jsonl', import.meta.url), 'utf8'));
  return [
    {
      role: 'system',
      content: 'You are a helpful trip-planning assistant. Keep track of the plan and the constraints.',
    },
    ...session.slice(0, 2 * turns),
  ];
}

/** An agent at work: a goal with constraints, then `steps` tool calls whose results are pages of a log, answered. */
const agentLoop = (steps: number): ChatMessage[] =>
  loopOf(steps, (i) => `request ${i} of the page: GET /api/cart answered 200 and the basket was saved as expected`);

const ofApplied = (applied: ApplyOutcome | NoGainOutcome | undefined) => {
  if (!applied || 'noGain' in applied) throw new Error(`not applied: ${JSON.stringify(applied)}`);
  return applied.event;
};

describe("the plan's estimate against what the apply step leaves", () => {
  it('the README demo forced: a real reduction, the estimate met exactly', async () => {
    const agent = await agentWith(demoConversation());
    const { plan, applied } = await agent.compact(agent.context, {
      seq: 1,
      trigger: 'forced',
      window: 128_000,
      policy: {},
    });
    const event = ofApplied(applied);
    expect(event.tokensAfter).toBe(plan.tokensAfter);
    expect(event.tokensAfter).toBeLessThan(0.85 * event.tokensBefore);
  });

  it("a short chat (the demo's first three exchanges) forced: nothing to gain; evenIfLarger meets the estimate exactly", async () => {
    const agent = await agentWith(demoConversation(3));
    expect(agent.tokens).toBe(594); // the messages, the reply primer and the built-in tools' schemas
    const refused = await agent.compact(agent.context, { seq: 1, trigger: 'forced', window: 128_000, policy: {} });
    expect(refused.plan.action).toBe('skip');
    expect(refused.plan.noGain).toBeDefined();
    const expected = refused.plan.noGain!.tokensAfter;
    expect(refused.plan.reason).toBe(
      `nothing to gain (594 → ~${expected} tokens): [halve] would leave the context larger, the summary's frame and ` +
        'the task ledger outweighing what leaves; not compacted',
    );
    const forced = await agent.compact(agent.context, {
      seq: 1,
      trigger: 'forced',
      window: 128_000,
      policy: {},
      evenIfLarger: true,
    });
    expect(forced.plan.tokensAfter).toBe(expected);
    const event = ofApplied(forced.applied);
    expect(event.tokensAfter).toBe(expected); // the extractive summary and its ledger, counted as written
    expect(event.tokensAfter).toBeGreaterThan(event.tokensBefore);
  });

  it('an agent loop compacted automatically, twice (the second replacing the ledger and the summary): estimate = result', async () => {
    const agent = await agentWith(agentLoop(24));
    const window = Math.floor(agent.tokens / 0.85);
    const first = await agent.compact(agent.context, { seq: 1, trigger: 'auto', window });
    expect(first.plan.action).toBe('compact');
    const event = ofApplied(first.applied);
    expect(event.tokensAfter).toBeLessThan(event.tokensBefore);
    expect(event.tokensAfter).toBe(first.plan.tokensAfter);
    // The second, over the context it left and 16 more steps.
    const next = (first.applied as ApplyOutcome).context!;
    const grown = [...next, ...(await agent.append(agentLoop(40).slice(agent.context.length)))];
    const second = await agent.compact(grown, { seq: 2, trigger: 'forced', window });
    expect(second.plan.action).toBe('compact');
    expect(ofApplied(second.applied).tokensAfter).toBe(second.plan.tokensAfter);
  });

  it('a summary model: the frame and the ledger counted, the body within its bound (a tight estimate)', async () => {
    // A summary of about the size the planner plans a body at (a quarter of the span, within its budget).
    const reply = () =>
      JSON.stringify({
        task_overview: 'Find why checkout fails since Monday; do not restart production; report by 17:00.',
        current_state: 'Pages 1 to 23 of the log read: every /api/cart request answered 200. '.repeat(6),
        important_discoveries: 'No failed checkout request in pages 1 to 23.',
        next_steps: 'Read page 24.',
        context_to_preserve: '/api/cart',
        decisions: ['Read the pages in order'],
        done: ['Pages 1 to 23'],
        pending: ['Pages from 24'],
      });
    const agent = await agentWith(agentLoop(24), reply);
    const window = Math.floor(agent.tokens / 0.85);
    const { plan, applied } = await agent.compact(agent.context, { seq: 1, trigger: 'auto', window });
    const event = ofApplied(applied);
    expect(event.tokensAfter).toBeLessThan(event.tokensBefore);
    // The summary within what the plan allowed it (the body is the model's: planned at a quarter of the span, within
    // the summary's budget)…
    const planned = plan.summary!.estimatedTokens;
    expect(event.summaryTokens).toBeLessThanOrEqual(planned);
    // …and everything else as written: the frame counted, the ledger within the share planned for the model's lists.
    const rest = { planned: plan.tokensAfter - planned, written: event.tokensAfter - event.summaryTokens! };
    expect(rest.planned - rest.written).toBeGreaterThanOrEqual(0);
    expect(rest.planned - rest.written).toBeLessThanOrEqual(MODEL_LEDGER_TOKENS);
  });
});

describe('a compaction that, as written, would not shrink the context', () => {
  /** A summary model that writes far more than it was given (a bound of the message cuts it, not the ledger). */
  const bloated = () =>
    JSON.stringify({
      task_overview: 'Checkout. '.repeat(400),
      current_state: 'Reading. '.repeat(400),
      important_discoveries: '',
      next_steps: 'Go on.',
      context_to_preserve: '',
      decisions: Array.from({ length: 30 }, (_, i) => `decision ${i}: ${'keep reading the pages in order '.repeat(8)}`),
      done: Array.from(
        { length: 30 },
        (_, i) => `done ${i}: ${'read a page of the log from top to bottom '.repeat(7)}`,
      ),
      pending: [],
    });

  it('is not committed: no event, no manifest; the gate holds until the context grows; evenIfLarger applies it', async () => {
    const agent = await agentWith(agentLoop(6), bloated);
    const window = Math.floor(agent.tokens / 0.85);
    // Unpriced: after 12 calls, a summary call would not pay for the prompt cache it breaks (a skip of the plan).
    const policy = { ...SUMMARIES, cost: null };
    const { plan, applied } = await agent.compact(agent.context, { seq: 1, trigger: 'auto', window, policy });
    expect(plan.action).toBe('compact');
    expect(plan.tokensAfter).toBeLessThan(plan.tokensBefore); // the plan expected a gain…
    expect(applied).toMatchObject({ noGain: { tokensBefore: plan.tokensBefore } }); // …the written summary undid it
    const noGain = applied as NoGainOutcome;
    expect(noGain.noGain.tokensAfter).toBeGreaterThanOrEqual(plan.tokensBefore);
    expect(noGain.reason).toBe(
      `would not shrink the context: ${plan.tokensBefore} tokens, ${noGain.noGain.tokensAfter} once the summary and ` +
        'the ledger were written; not committed',
    );
    expect(noGain.gate.floorAfterUser).toBeGreaterThan(plan.tokensBefore); // not again before the context grows
    expect(noGain.gate.floorWithoutUser).toBeGreaterThan(plan.tokensBefore);
    expect(agent.store.objects.has(compactionKey(agent.life, 1, 'event.json'))).toBe(false);
    expect(agent.store.objects.has(compactionKey(agent.life, 1, 'context.json'))).toBe(false);
    // A forced one says so too; asked with evenIfLarger, it is applied and its event says it grew the context.
    const forced = await agent.compact(agent.context, { seq: 1, trigger: 'forced', window });
    expect((forced.applied as NoGainOutcome).reason).toMatch(/^nothing to gain \(\d+ → \d+ tokens\)/);
    const even = await agent.compact(agent.context, { seq: 1, trigger: 'forced', window, evenIfLarger: true });
    const event = ofApplied(even.applied);
    expect(event.tokensAfter).toBeGreaterThan(event.tokensBefore);
    expect(event.notes.join('\n')).toContain(`grew the context from ${event.tokensBefore} to ${event.tokensAfter}`);
  });
});
