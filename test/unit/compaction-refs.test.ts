/**
 * The compaction activities by reference (`compaction-refs`), through the activities over an in-memory store as the
 * workflow's pipeline runs them: the plan reads the context's records from storage, the summarizer its span from the
 * stored plan, apply takes the summary's key and returns a delta. The context the workflow rebuilds from the delta is
 * the one the inline shapes return, and so is the event. Beside it, the masking pass the workflow can tell would find
 * nothing (workflows/compaction-refs.ts).
 */
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../engine/messages.ts';
import { gateAfterMaskSkip, gateAfterSkippedPlan, gateOf } from '../../engine/gates.ts';
import { planCompaction } from '../../engine/planner/index.ts';
import { resolvePolicy } from '../../engine/presets.ts';
import { holdGrowth } from '../../engine/trigger.ts';
import type { ApplyOutcome, ContextRef, NoGainOutcome } from '../../contract/compaction-activities.ts';
import { applyDelta, recordsDigest } from '../../contract/context-delta.ts';
import { messageIdOf } from '../../contract/keys.ts';
import { keyedRecord } from '../../contract/records.ts';
import type { ContextRecord } from '../../contract/records.ts';
import type { TaskLedger } from '../../engine/ledger.ts';
import { Conversation } from '../../workflows/conversation.ts';
import { cannotPay, contextRefOf, nothingToMask } from '../../workflows/compaction-refs.ts';
import { agentLoop as loopOf, inActivity, storedAgent } from '../support/stored-agent.ts';
import type { CompactionOf } from '../support/stored-agent.ts';

/** An agent loop: a goal, then `steps` tool calls with pages of a log as results, each answered. */
const agentLoop = (steps: number): ChatMessage[] =>
  loopOf(steps, (i, step) => `request ${i}: GET /api/cart ${step} answered 200`);

type Compaction = CompactionOf;

/** An agent's stored conversation and its compaction, the inline way (before `compaction-refs`) or by reference. */
async function agentWith(messages: ChatMessage[]) {
  // The extractive summarizer: deterministic.
  const { store, activities, life, context, append, planInput, summarize, applyInput } = await storedAgent(
    'refs',
    messages,
  );
  const applied = (outcome: ApplyOutcome | NoGainOutcome) => {
    if ('noGain' in outcome) throw new Error(`not applied: ${outcome.reason}`);
    return outcome;
  };

  /** Before `compaction-refs`: the whole context in, the span's keys out, the summary inline, the context back. */
  async function inline(at: ContextRecord[], o: Compaction) {
    const plan = await inActivity(() => activities.planCompaction({ ...planInput(o), context: at }));
    if (plan.action === 'skip') return { plan };
    const summary = plan.summary ? await summarize(o.seq, plan.summary) : undefined;
    const outcome = await inActivity(() =>
      activities.applyCompaction({ ...applyInput(o, plan), ...(summary ? { summary } : {}) }),
    );
    return { plan, summary, applied: applied(outcome) };
  }

  /** By reference: the context's records from storage, the span from the plan, the summary by key, a delta back. */
  async function byRef(ref: ContextRef, o: Compaction, ledgerKey?: string) {
    const plan = await inActivity(() =>
      activities.planCompaction({ ...planInput(o), contextRef: ref, ...(ledgerKey ? { ledgerKey } : {}) }),
    );
    if (plan.action === 'skip') return { plan };
    // The ledger the plan was made with, as the workflow holds it: the one stored under its key (or none).
    const base = ledgerKey ? (JSON.parse(store.objects.get(ledgerKey)!) as TaskLedger) : undefined;
    const summary = plan.summary ? await summarize(o.seq, plan.summary, { planKey: plan.planKey! }, base) : undefined;
    const outcome = await inActivity(() =>
      activities.applyCompaction({
        ...applyInput(o, plan),
        ...(summary ? { summaryKey: summary.summaryKey! } : {}),
        delta: true,
      }),
    );
    return { plan, summary, applied: applied(outcome) };
  }
  return { store, life, context, inline, byRef, append };
}

/** The reference to a context of stored messages `1..n` that no compaction has touched yet. */
const freshRef = (records: ContextRecord[]): ContextRef => ({
  baseLength: 0,
  firstSeq: 1,
  lastSeq: records.length,
  tailDigest: recordsDigest(records),
});

const SUMMARIZE: Compaction = { seq: 1, trigger: 'forced', window: 16_000, policy: { strategies: ['summarize'] } };
const DEFAULT_AUTO: Compaction = { seq: 1, trigger: 'auto', window: 16_000, policy: {} };

describe('compaction by reference', () => {
  it('a summary: the context rebuilt from the delta is the one the inline shapes return, and so is the event', async () => {
    const before = await agentWith(agentLoop(30));
    const after = await agentWith(agentLoop(30));
    const old = await before.inline(before.context, SUMMARIZE);
    const refs = await after.byRef(freshRef(after.context), SUMMARIZE);
    expect(refs.plan.summary?.spanKeys).toBeUndefined(); // the span stays in the stored plan
    expect(refs.plan.summary?.spanLength).toBe(old.plan.summary!.spanKeys!.length);
    expect(refs.applied!.context).toBeUndefined();
    const rebuilt = applyDelta(after.context, refs.applied!.delta!);
    expect(rebuilt).toEqual(old.applied!.context);
    const { durationMs: _a, ...event } = refs.applied!.event;
    const { durationMs: _b, ...oldEvent } = old.applied!.event;
    expect({ ...event, llm: { ...event.llm, durationMs: 0 } }).toEqual({
      ...oldEvent,
      llm: { ...oldEvent.llm, durationMs: 0 },
    });
    // The summary's outcome and its ledger are stored by key; the records of the new context too.
    expect(refs.summary!.summaryKey).toMatch(/summary-outcome\.json$/);
    expect(JSON.parse(after.store.objects.get(refs.summary!.ledgerKey!)!)).toEqual(refs.summary!.ledger);
    expect(JSON.parse(after.store.objects.get(refs.applied!.baseRecords!)!)).toEqual(rebuilt);
  });

  it("the default preset's automatic compaction (masking, cuts, summary): the same context from the delta", async () => {
    const before = await agentWith(agentLoop(40));
    const after = await agentWith(agentLoop(40));
    const old = await before.inline(before.context, DEFAULT_AUTO);
    const refs = await after.byRef(freshRef(after.context), DEFAULT_AUTO);
    expect(applyDelta(after.context, refs.applied!.delta!)).toEqual(old.applied!.context);
    // The delta is smaller than the whole context it stands for.
    expect(JSON.stringify(refs.applied!.delta).length).toBeLessThan(JSON.stringify(old.applied!.context).length);
  });

  it('a second compaction reads the first one’s records from storage and the ledger by its key', async () => {
    const before = await agentWith(agentLoop(30));
    const after = await agentWith(agentLoop(30));
    const first = await before.inline(before.context, SUMMARIZE);
    const firstRefs = await after.byRef(freshRef(after.context), SUMMARIZE);
    const base = applyDelta(after.context, firstRefs.applied!.delta!);
    const firstSeq = after.context.length + 1;
    const more = agentLoop(50).slice(after.context.length);
    const oldTail = await before.append(more);
    const tail = await after.append(more);
    const second: Compaction = { ...SUMMARIZE, seq: 2 };
    const old = await before.inline([...first.applied!.context!, ...oldTail], second);
    const refs = await after.byRef(
      {
        baseRecords: firstRefs.applied!.baseRecords!,
        baseLength: base.length,
        firstSeq,
        lastSeq: firstSeq + tail.length - 1,
        tailDigest: recordsDigest(tail),
      },
      second,
      firstRefs.summary!.ledgerKey,
    );
    expect(refs.plan.action).toBe('compact');
    expect(applyDelta([...base, ...tail], refs.applied!.delta!)).toEqual(old.applied!.context);
    expect(refs.summary!.ledger).toEqual(old.summary!.ledger);
  });

  it('records it derives differently from the workflow’s are not planned over: the workflow sends them', async () => {
    const agent = await agentWith(agentLoop(10));
    const held = agent.context.map((r, i) => (i === 3 ? { ...r, tokens: r.tokens + 1 } : r));
    const ref = freshRef(held);
    const differ = await agent.byRef(ref, SUMMARIZE);
    expect(differ.plan.recordsDiffer).toBe(true);
    expect(differ.plan.planKey).toBeUndefined();
    const sent = await agent.byRef({ ...ref, tail: held }, SUMMARIZE);
    expect(sent.plan.action).toBe('compact');
    expect(applyDelta(held, sent.applied!.delta!)[0]).toBe(held[0]);
  });
});

describe('a masking pass the workflow can tell would find nothing', () => {
  /** Even: an assistant message that calls a tool; odd: that call's result. */
  const step = (seq: number, tokens: number): ContextRecord => ({
    id: messageIdOf(seq),
    role: seq % 2 === 0 ? 'assistant' : 'tool',
    tokens,
    chars: tokens * 4,
    preview: '',
    ...(seq % 2 === 0 ? { toolCallIds: [`c${seq}`] } : { toolCallId: `c${seq - 1}` }),
  });

  const STEPS = 20;
  function conversationAt(toolTokens: number) {
    const c = Conversation.begin({ agentId: 'a1', model: 'gpt-4o-mini' }, undefined, 'run-1');
    const policy = resolvePolicy({});
    c.describedAs({
      info: { window: 10_000, encoding: 'o200k_base', margin: 0 } as never,
      fixedTokens: 0,
      policy,
      gate: gateOf(policy, 10_000),
    });
    // 6,000 tokens in all: past the masking pass (5,000), below the background threshold and the trigger.
    c.newMessageId();
    const userTokens = 6_000 - STEPS * (10 + toolTokens);
    c.append({ id: messageIdOf(1), role: 'user', tokens: userTokens, chars: userTokens * 4, preview: '' });
    for (let seq = 2; seq <= 2 * STEPS + 1; seq++) {
      c.newMessageId();
      c.append(step(seq, seq % 2 === 0 ? 10 : toolTokens));
    }
    return c;
  }

  /** The automatic plan of `c`'s context as the plan activity would make it (the extractive summarizer). */
  const planOf = (c: Conversation, extra: { callsSinceCompaction?: number | undefined } = {}) =>
    planCompaction({
      context: c.state.messages.map((r) => keyedRecord(c.life, r)),
      policy: c.state.policy!,
      window: c.window,
      fixedTokens: 0,
      trigger: 'auto',
      cooldown: c.state.cooldown!,
      ...extra,
      ...(c.state.goalId ? { goalId: c.state.goalId } : {}),
      summarizer: 'none',
    });

  it('is not planned when the tool results it could mask hold fewer tokens than it must save; the gate moves', () => {
    const c = conversationAt(150); // under the policy's mask.minTokens (200): nothing worth masking
    expect(c.compactionDue()).toMatch(/mask/);
    const skipped = nothingToMask(c);
    expect(skipped?.skipped).toMatch(/masking would save 0 tokens, less than 1000/);
    expect(skipped?.gate?.mask?.floor).toBeGreaterThan(c.state.contextTokens);
  });

  it('is planned when they are enough, and not when only the protected newest steps hold enough', () => {
    const enough = conversationAt(300);
    expect(enough.compactionDue()).toMatch(/mask/);
    expect(nothingToMask(enough)).toBeUndefined();
    // The same results, but only the newest four steps' are large: protected, the plan would mask nothing.
    const protectedOnly = conversationAt(150);
    for (const m of protectedOnly.state.messages.slice(-8)) if (m.role === 'tool') m.tokens = 600;
    expect(nothingToMask(protectedOnly)?.skipped).toMatch(/masking would save 0 tokens/);
  });

  it('skips exactly the masking passes whose plan would skip for too little saved, over random loops', () => {
    // A plan may also skip a masking pass that saves enough but does not pay against the prompt cache it would
    // invalidate ("not worth it", engine/compaction-value.ts): the workflow cannot tell that one, so it plans it; it
    // never skips a pass whose plan would do something.
    let seed = 29;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let skipped = 0;
    let planned = 0;
    let costSkips = 0;
    for (let trial = 0; trial < 150; trial++) {
      const c = conversationAt(150);
      for (const m of c.state.messages) if (m.role === 'tool') m.tokens = 100 + Math.floor(random() * 260);
      c.state.contextTokens = c.state.messages.reduce((sum, m) => sum + m.tokens, 0);
      if (c.compactionDue() === undefined || !/mask/.test(c.compactionDue()!)) continue;
      const verdict = nothingToMask(c);
      const plan = planOf(c);
      const forCost = plan.action === 'skip' && plan.reason.startsWith('not worth it');
      if (forCost) costSkips++;
      const planSkips = plan.action === 'skip' && plan.maskPass === true && !forCost;
      expect(verdict !== undefined, `trial ${trial}: ${verdict?.skipped ?? plan.reason}`).toBe(planSkips);
      if (verdict)
        expect(verdict.gate).toEqual(
          gateAfterMaskSkip(
            c.state.policy!,
            c.window,
            c.state.cooldown!,
            c.state.contextTokens,
            holdGrowth(c.state.policy!),
          ),
        );
      if (verdict) skipped++;
      else planned++;
    }
    expect(skipped).toBeGreaterThan(3);
    expect(planned).toBeGreaterThan(3);
    expect(costSkips).toBeGreaterThan(0);
  });

  it('priced (patch mask-pass-priced): skips exactly the masking passes whose plan would skip, cost included', () => {
    // The same random loops at random paces: since the patch, the workflow also prices the pass against the prompt
    // cache as the plan does (engine/compaction-value.ts), so it plans a masking pass only when its plan would make it.
    let seed = 31;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let skipped = 0;
    let planned = 0;
    let forCost = 0;
    for (let trial = 0; trial < 400; trial++) {
      const c = conversationAt(150);
      for (const m of c.state.messages) if (m.role === 'tool') m.tokens = 100 + Math.floor(random() * 400);
      c.state.contextTokens = c.state.messages.reduce((sum, m) => sum + m.tokens, 0);
      // Half of the loops right after a compaction (a pass saves too few calls), half far from it.
      c.state.callsSinceCompaction = trial % 2 === 0 ? 1 + Math.floor(random() * 10) : 100 + Math.floor(random() * 500);
      if (c.compactionDue() === undefined || !/mask/.test(c.compactionDue()!)) continue;
      const verdict = nothingToMask(c, true);
      const plan = planOf(c, { callsSinceCompaction: c.state.callsSinceCompaction });
      expect(verdict !== undefined, `trial ${trial}: ${verdict?.skipped ?? plan.reason}`).toBe(plan.action === 'skip');
      if (verdict?.skipped.includes('not worth it')) {
        forCost++;
        // It holds until the pass would pay, as the plan's skip would (engine/gates.ts gateAfterSkippedPlan).
        const held = gateAfterSkippedPlan(
          c.state.policy!,
          c.window,
          c.state.cooldown!,
          { ...plan, tokens: c.state.contextTokens },
          'auto',
          c.state.callsSinceCompaction,
        );
        expect(verdict.gate).toEqual(held);
      }
      if (verdict) skipped++;
      else planned++;
    }
    expect(forCost).toBeGreaterThan(3);
    expect(planned).toBeGreaterThan(3);
    expect(skipped).toBeGreaterThanOrEqual(forCost);
  });

  it("priced before the pace is known (patch pace-from-context): over the context's calls, as the plan prices them", () => {
    // No call counted since the last compaction (an agent started on a long history, a check right after a
    // compaction): both price the calls the context shows were made (engine/compaction-value.ts paceOf), so the
    // workflow plans a masking pass only when its plan would make it. Before the patch it priced 1 call, and skipped
    // passes the plan makes.
    let seed = 37;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let forCost = 0;
    let planned = 0;
    let oldBranchDiffers = 0;
    for (let trial = 0; trial < 400; trial++) {
      const c = conversationAt(200);
      for (const m of c.state.messages) if (m.role === 'tool') m.tokens = 100 + Math.floor(random() * 300);
      c.state.contextTokens = c.state.messages.reduce((sum, m) => sum + m.tokens, 0);
      c.state.callsSinceCompaction = trial % 2 === 0 ? 0 : undefined;
      if (c.compactionDue() === undefined || !/mask/.test(c.compactionDue()!)) continue;
      const verdict = nothingToMask(c, true);
      const plan = planOf(c, { callsSinceCompaction: c.state.callsSinceCompaction });
      expect(verdict !== undefined, `trial ${trial}: ${verdict?.skipped ?? plan.reason}`).toBe(plan.action === 'skip');
      if (plan.action === 'compact') {
        planned++;
        expect(plan.cost).toMatchObject({ remainingTurns: STEPS, remainingFrom: 'context' });
      }
      if (verdict?.skipped.includes('not worth it')) {
        forCost++;
        expect(verdict.skipped).toMatch(/over 20 calls \(the context's\)/);
        expect(plan.reason).toMatch(/over 20 remaining calls \(the context's/);
      }
      // The old branch (1 call) skips passes the plan makes: replayed, it must decide as it did.
      if ((nothingToMask(c, true, false) !== undefined) !== (verdict !== undefined)) oldBranchDiffers++;
    }
    expect(planned).toBeGreaterThan(3);
    expect(forCost).toBeGreaterThan(3);
    expect(oldBranchDiffers).toBeGreaterThan(3);
  });

  it('an automatic plan no compaction could make pay is not planned (patch plan-pays-first); every plan it stops would have been skipped', () => {
    // Random loops at the soft threshold and the trigger, right after a compaction (a few calls) or far from it: the
    // bound is the best any compaction could do (everything it may take, nothing written, the longest cached prefix),
    // so when it says no plan pays, the plan, summary or not, says so too.
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let stopped = 0;
    let through = 0;
    for (let trial = 0; trial < 300; trial++) {
      const c = conversationAt(150);
      for (const m of c.state.messages) if (m.role === 'tool') m.tokens = 150 + Math.floor(random() * 250);
      c.state.contextTokens = c.state.messages.reduce((sum, m) => sum + m.tokens, 0);
      c.state.callsSinceCompaction = trial % 3 === 0 ? 20 + Math.floor(random() * 200) : 1 + Math.floor(random() * 8);
      c.state.cooldown = {
        consecutive: 1,
        lastTokensAfter: Math.floor(c.state.contextTokens * (0.5 + 0.4 * random())),
      };
      const trigger = trial % 2 === 0 ? 'auto' : 'background';
      const verdict = cannotPay(c, trigger);
      for (const summarizer of ['none', 'available'] as const) {
        const plan = planCompaction({
          context: c.state.messages.map((r) => keyedRecord(c.life, r)),
          policy: c.state.policy!,
          window: c.window,
          fixedTokens: 0,
          trigger,
          cooldown: c.state.cooldown,
          callsSinceCompaction: c.state.callsSinceCompaction,
          ...(c.state.goalId ? { goalId: c.state.goalId } : {}),
          summarizer,
        });
        if (verdict) expect(plan.action, `trial ${trial} ${summarizer}: ${verdict.skipped}`).toBe('skip');
      }
      if (verdict) {
        stopped++;
        expect(verdict.skipped).toMatch(/^not worth it: no compaction could pay over \d+ calls/);
        expect(verdict.gate).toBeDefined();
      } else through++;
    }
    expect(stopped).toBeGreaterThan(10);
    expect(through).toBeGreaterThan(10);
  });

  it('the policy without a cost decision, the hard limit and a fired message limit are not its to stop', () => {
    // Small old results, large newest ones (protected): at most a few hundred tokens to take, early in the context,
    // for the prompt cache of everything after them, two calls after the last compaction.
    const c = conversationAt(150);
    const tools = c.state.messages.filter((m) => m.role === 'tool');
    tools.forEach((m, i) => (m.tokens = i < tools.length - 4 ? 20 : 1_000));
    c.state.contextTokens = c.state.messages.reduce((sum, m) => sum + m.tokens, 0);
    c.state.callsSinceCompaction = 2;
    c.state.cooldown = { consecutive: 1, lastTokensAfter: c.state.contextTokens - 1_500 };
    expect(cannotPay(c, 'background')?.skipped).toMatch(/not worth it: no compaction could pay over \d+ calls/);
    c.state.policy = resolvePolicy({ cost: null });
    expect(cannotPay(c, 'background')).toBeUndefined();
    c.state.policy = resolvePolicy({});
    c.state.contextTokens = 9_600; // over the hard limit of 9,500
    expect(cannotPay(c, 'auto')).toBeUndefined();
  });

  it("the planner asks the same preflight first: its skip is the preflight's; what a tool never masked holds only lowers what the plan finds", () => {
    const few = conversationAt(150);
    const skip = nothingToMask(few)!;
    expect(planOf(few)).toMatchObject({ action: 'skip', maskPass: true, reason: skip.skipped });
    // Every tool result is of a tool the policy never masks: the preflight, which reads no tool's own limits, lets
    // the pass through (an upper bound of what masking saves), and the plan, which honours them, masks nothing.
    const neverMasked = conversationAt(300);
    for (const m of neverMasked.state.messages) if (m.role === 'tool') m.tool = 'pager';
    neverMasked.state.policy = { ...neverMasked.state.policy!, tools: { pager: { neverMask: true } } };
    expect(nothingToMask(neverMasked)).toBeUndefined();
    expect(planOf(neverMasked)).toMatchObject({ action: 'skip', maskPass: true });
    expect(planOf(neverMasked).reason).toMatch(/masking would save 0 tokens, less than 1000/);
  });

  it('the context by reference: the base by its key once stored, the tail by its sequence numbers and digest', () => {
    const c = conversationAt(150);
    expect(contextRefOf(c.state)).toEqual({
      baseLength: 0,
      firstSeq: 1,
      lastSeq: 41,
      tailDigest: recordsDigest(c.state.messages),
    });
    c.state.base = 'compactions/1/context.json';
    c.state.baseLength = 2;
    c.state.tailFromSeq = 3;
    const inline = contextRefOf(c.state);
    expect(inline.base).toEqual(c.state.messages.slice(0, 2));
    c.state.baseRecords = 'compactions/1/records.json';
    expect(contextRefOf(c.state)).toEqual({
      baseRecords: 'compactions/1/records.json',
      baseLength: 2,
      firstSeq: 3,
      lastSeq: 41,
      tailDigest: recordsDigest(c.state.messages.slice(2)),
    });
  });
});
