/** The conversation the agent workflow holds: the one place its state and message ids change (pure, no Temporal). */
import { describe, expect, it } from 'vitest';
import { Conversation } from '../../workflows/conversation.ts';
import type { AgentCarry } from '../../contract/state.ts';
import type { CompactionEventSummary } from '../../contract/results.ts';
import type { ContextRecord } from '../../contract/records.ts';
import { messageIdOf, resultIdsOf } from '../../contract/keys.ts';
import { CARRY_SCHEMA, statsOf } from '../../contract/state.ts';
import { resolvePolicy } from '../../engine/presets.ts';
import { gateOf } from '../../engine/gates.ts';
import { backgroundFires } from '../../engine/trigger.ts';

const input = { agentId: 'a1', model: 'gpt-4o-mini' };
const record = (seq: number, extra: Partial<ContextRecord> = {}): ContextRecord => ({
  id: messageIdOf(seq),
  role: 'assistant',
  tokens: 10,
  chars: 40,
  preview: '',
  ...extra,
});

function described(conversation: Conversation): Conversation {
  const policy = resolvePolicy({ mask: { fromRatio: null } }); // the trigger alone
  conversation.describedAs({
    info: { window: 1000, encoding: 'o200k_base', margin: 0 } as never,
    fixedTokens: 5,
    policy,
    gate: gateOf(policy, 1000),
  });
  return conversation;
}

describe('Conversation', () => {
  it("takes a step's result ids as resultIdsOf names them, the ones the model call stores its calls' results under", () => {
    const c = described(Conversation.begin(input, { nextMessageSeq: 41 } as AgentCarry, 'run-1'));
    const reply = c.newMessageId();
    const taken = [c.newMessageId(), c.newMessageId(), c.newMessageId()];
    expect(resultIdsOf(reply, 3)).toEqual(taken);
    expect(taken).toEqual([messageIdOf(42), messageIdOf(43), messageIdOf(44)]);
  });

  it('gives a new agent ids from 1 on, and a view of every message stored since the last manifest', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    expect(c.state.life).toBe('run-1');
    expect([c.newMessageId(), c.newMessageId()]).toEqual([messageIdOf(1), messageIdOf(2)]);
    expect(c.view()).toEqual({ firstSeq: 1, lastSeq: 2 });
    const reply = c.newMessageId();
    expect(c.view(reply)).toEqual({ firstSeq: 1, lastSeq: 2 }); // the reply's id is taken, not yet stored
    expect(c.tailSeq).toBe(4);
  });

  it('appends with counts: tokens, user turns, the goal, and a user message resets the cooldown', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    c.state.cooldown = { consecutive: 2, lastTokensAfter: 300 };
    c.append(record(1, { role: 'user' }), record(2));
    expect(c.state.contextTokens).toBe(25);
    expect(c.state.contextTurns).toBe(1);
    expect(c.state.goalId).toBe(messageIdOf(1));
    expect(c.state.cooldown).toEqual({ consecutive: 0, lastTokensAfter: 300 });
  });

  it("keeps the system prompt in the state: the start's for a state of before, a configured one over it", () => {
    const prompted = { ...input, systemPrompt: 'Be brief.' };
    const earlier = described(Conversation.begin(prompted, undefined, 'run-1')).state;
    expect(earlier.systemPrompt).toBe('Be brief.');
    delete earlier.systemPrompt; // as a run of before kept it
    const c = Conversation.begin(prompted, { state: earlier, nextMessageSeq: 1, applied: [] }, 'run-2');
    expect(c.state.systemPrompt).toBe('Be brief.');
    // configure: before any message it is simply the prompt; once the context holds messages, sent next turn.
    c.configured({ systemPrompt: 'Be kind.' });
    expect(c.state).toMatchObject({ systemPrompt: 'Be kind.' });
    expect(c.state.systemPromptPending).toBeUndefined();
    c.append(record(1, { role: 'user' }));
    c.configured({ systemPrompt: 'Be terse.', model: 'gpt-4o' });
    expect(c.state).toMatchObject({ systemPrompt: 'Be terse.', systemPromptPending: true, model: 'gpt-4o' });
    c.systemPromptSent();
    expect(c.state.systemPromptPending).toBeUndefined();
    const next = Conversation.begin(prompted, c.carry([]), 'run-3'); // continue-as-new keeps the configured ones
    expect(next.state).toMatchObject({ systemPrompt: 'Be terse.', model: 'gpt-4o' });
  });

  it('reads the next id from a run of an earlier release, which carried it beside the state, and carries both', () => {
    const earlier = described(Conversation.begin(input, undefined, 'run-1')).state;
    delete earlier.nextMessageSeq;
    const carry: AgentCarry = { state: earlier, nextMessageSeq: 42, applied: [] };
    const c = Conversation.begin(input, carry, 'run-2');
    expect(c.state.life).toBe('run-1'); // a life spans its runs
    expect(c.newMessageId()).toBe(messageIdOf(42));
    expect(c.carry([])).toMatchObject({ nextMessageSeq: 43, state: { nextMessageSeq: 43 } });
  });

  it('renames the fields a run of the release before carried (compressions, callsSinceCompression)', () => {
    const earlier = described(Conversation.begin(input, undefined, 'run-1')).state as Record<string, unknown>;
    delete earlier.compactions;
    Object.assign(earlier, { compressions: 4, callsSinceCompression: 7 });
    const c = Conversation.begin(input, { state: earlier as never, nextMessageSeq: 9, applied: [] }, 'run-2');
    expect(c.state).toMatchObject({ compactions: 4, callsSinceCompaction: 7 });
    expect(c.state).not.toHaveProperty('compressions');
    expect(c.state).not.toHaveProperty('callsSinceCompression');
  });

  it('carries the stats of a run of an earlier release: averageReduction (a size ratio) is averageSizeRatio', () => {
    const earlier = described(Conversation.begin(input, undefined, 'run-1')).state;
    earlier.stats = { count: 2, averageReduction: 0.4, tokensSaved: 900 } as never;
    const c = Conversation.begin(input, { state: earlier, nextMessageSeq: 9, applied: [] }, 'run-2');
    expect(c.state.stats).toEqual({ count: 2, averageSizeRatio: 0.4, tokensSaved: 900 });
  });

  it('brings the shapes of earlier releases up to date and marks a reopened agent running', () => {
    const earlier = described(Conversation.begin(input, undefined, 'run-1')).state;
    earlier.status = 'closed';
    (earlier as unknown as { droppedSignals: number }).droppedSignals = 3;
    const c = Conversation.begin(
      input,
      { state: earlier, nextMessageSeq: 1, applied: [], reopened: { closedAs: 'terminated' } },
      'r',
    );
    expect(c.state.droppedSignals).toEqual({ earlier: 3 });
    expect(c.state.status).toBe('running');
    expect(c.state.runs).toBe(2);
    expect(c.state.lastHandOver).toBe('reopened (the agent was terminated)');
    c.dropped('message');
    c.dropped('message');
    expect(c.state.droppedSignals).toEqual({ earlier: 3, message: 2 });
  });

  it('after a failed turn, ends the context at its last complete step and reuses the ids taken after it', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    for (let seq = 1; seq <= 2; seq++) c.newMessageId();
    c.append(record(1, { role: 'user' }), record(2, { toolCallIds: ['t1', 't2'] }));
    c.newMessageId(); // t1's result, stored
    c.append(record(3, { role: 'tool', toolCallId: 't1' }));
    c.newMessageId(); // t2's result: the tool failed for good
    c.turnFailed('runTool failed: boom');
    expect(c.state.messages.map((m) => m.id)).toEqual([messageIdOf(1)]);
    expect(c.state.contextTokens).toBe(15);
    expect(c.state.lastError).toBe('runTool failed: boom');
    expect(c.newMessageId()).toBe(messageIdOf(2));
    c.turnDone(1);
    expect(c.state).toMatchObject({ turns: 1, lastError: undefined });
  });

  it('swaps a compacted context in at once: counts, manifest, tail, event, stats, cooldown, gate and ledger', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    for (let seq = 1; seq <= 6; seq++) c.newMessageId();
    c.append(record(1, { role: 'user' }), ...[2, 3, 4, 5, 6].map((seq) => record(seq)));
    c.called({ record: record(6), content: '', toolCalls: [] });
    const event = {
      seq: 1,
      trigger: 'auto',
      tokensBefore: 65,
      tokensAfter: 35,
      strategies: ['summarize'],
      keys: { event: 'e', removed: 'r', context: 'ctx-1' },
    } as unknown as CompactionEventSummary;
    const summary = record(90, { id: 'summary-1', kind: 'summary' as never, key: 'k' });
    c.compacted({
      made: c.snapshot(),
      context: [record(1, { role: 'user' }), summary, record(6)],
      event,
      tailFromSeq: 7,
      cooldown: { consecutive: 0, lastTokensAfter: 0 },
      trigger: 'auto',
      maskPass: undefined,
      gate: { tokens: 900 } as never,
      ledger: undefined,
    });
    expect(c.state).toMatchObject({
      contextTokens: 35,
      contextTurns: 1,
      base: 'ctx-1',
      baseLength: 3,
      tailFromSeq: 7,
      compactions: 1,
      callsSinceCompaction: 0,
      gate: { tokens: 900 },
      cooldown: { consecutive: 1, lastTokensAfter: 35 },
      stats: { count: 1, tokensSaved: 30 },
    });
    expect(c.state.events?.at(-1)).toBe(event);
    expect(c.view()).toEqual({ base: 'ctx-1', baseLength: 3, firstSeq: 7, lastSeq: 6 });
    c.newMessageId();
    expect(c.view()).toEqual({ base: 'ctx-1', baseLength: 3, firstSeq: 7, lastSeq: 7 });

    // A second one that grew the context (asked with evenIfLarger): the stats are net of it, the ratio its mean.
    const grew = { ...event, seq: 2, tokensBefore: 35, tokensAfter: 49 };
    c.compacted({
      made: c.snapshot(),
      context: [record(1, { role: 'user' }), summary, record(6)],
      event: grew,
      tailFromSeq: 8,
      cooldown: { consecutive: 0, lastTokensAfter: 0 },
      trigger: 'forced',
      maskPass: undefined,
      gate: { tokens: 900 } as never,
      ledger: undefined,
    });
    expect(c.state.stats).toMatchObject({ count: 2, tokensSaved: 30 - 14 });
    expect(c.state.stats!.averageSizeRatio).toBeCloseTo((35 / 65 + 49 / 35) / 2, 10);
  });

  it('counts the user message a summary was prepended to as a turn (chatgpt-on-wechat: "stays a user turn"), a host of before not', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    for (let seq = 1; seq <= 4; seq++) c.newMessageId();
    c.append(record(1, { role: 'user' }), record(2), record(3, { role: 'user' }), record(4));
    const event = {
      seq: 1,
      trigger: 'auto',
      tokensBefore: 45,
      tokensAfter: 35,
      strategies: ['trim-turns'],
      keys: { event: 'e', removed: 'r', context: 'ctx-1' },
    } as unknown as CompactionEventSummary;
    const host = (extra: Partial<ContextRecord>) =>
      record(3, { role: 'user', kind: 'summary' as never, key: 'k', ref: 'orig', ...extra });
    const swap = (context: ContextRecord[]) =>
      c.compacted({
        made: c.snapshot(),
        context,
        event,
        tailFromSeq: 5,
        cooldown: { consecutive: 0, lastTokensAfter: 0 },
        trigger: 'auto',
        maskPass: undefined,
        gate: { tokens: 900 } as never,
        ledger: undefined,
      });
    swap([record(1, { role: 'user' }), host({ userTurn: true }), record(4)]);
    expect(c.state.contextTurns).toBe(2);
    swap([record(1, { role: 'user' }), host({}), record(4)]); // as an earlier release recorded it: not counted
    expect(c.state.contextTurns).toBe(1);
  });

  it("gives the gate the working memory's count when it counts that (AgentScope Java's msgThreshold)", () => {
    const c = Conversation.begin(input, undefined, 'run-1');
    const policy = resolvePolicy({ preset: 'agentscope-java' });
    c.describedAs({
      info: { window: 1_000_000, encoding: 'o200k_base', margin: 0 } as never,
      fixedTokens: 5,
      policy,
      gate: gateOf(policy, 1_000_000),
    });
    c.newMessageId();
    c.append(record(1, { role: 'system' }));
    for (let seq = 2; seq <= 100; seq++) {
      c.newMessageId();
      c.append(record(seq, { role: seq === 2 ? 'user' : 'assistant' }));
    }
    expect(c.gateCheck()!.stats.messages).toBe(99); // 100 messages, the system prompt aside
    expect(c.compactionDue()).toBeUndefined();
    c.newMessageId();
    c.append(record(101));
    expect(c.compactionDue()).toBe('messages in working memory 100 ≥ 100');
  });

  it("sums each model call's usage and cost at the model's price, and counts a call without usage itself", () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    c.state.modelInfo!.price = { inputPerMillion: 1, cachedInputPerMillion: 0.1, outputPerMillion: 4 };
    c.append(record(1, { role: 'user', tokens: 2_000 }));
    const usage = { promptTokens: 3_000, cachedTokens: 2_048, completionTokens: 100 };
    c.called({ record: record(2, { tokens: 50 }), content: 'x', toolCalls: [], usage });
    // No usage reported: the request as counted (5 fixed + 2,000) and the reply's 50, nothing cached.
    c.called({ record: record(3, { tokens: 50 }), content: 'y', toolCalls: [] });
    expect(c.state.spend).toMatchObject({
      calls: 2,
      promptTokens: 5_005,
      cachedTokens: 2_048,
      completionTokens: 150,
      countedCalls: 1,
    });
    const first = (952 * 1 + 2_048 * 0.1 + 100 * 4) / 1e6;
    const second = (2_005 * 1 + 50 * 4) / 1e6;
    expect(c.state.spend!.cost).toBeCloseTo(first + second, 12);
    expect(c.state.callsSinceCompaction).toBe(2);
  });

  it('reports an unknown price as a null cost, never as 0', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1')); // modelInfo without a price
    c.called({ record: record(1), content: '', toolCalls: [], usage: { promptTokens: 10, completionTokens: 1 } });
    expect(c.state.spend).toMatchObject({ calls: 1, promptTokens: 10, cost: null });
  });

  it('prices a compaction: its summary call, and the cache it invalidated from the first changed message on', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    c.state.modelInfo!.price = { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 8 };
    for (let seq = 1; seq <= 6; seq++) c.newMessageId();
    c.append(record(1, { role: 'user' }), ...[2, 3, 4, 5, 6].map((seq) => record(seq)));
    const event = {
      seq: 1,
      trigger: 'auto',
      tokensBefore: 65,
      tokensAfter: 45,
      strategies: ['summarize'],
      keys: { event: 'e', removed: 'r', context: 'ctx-1' },
      llm: { model: 'gpt-4o-mini', promptTokens: 40, completionTokens: 10, durationMs: 1, cost: 0.25 },
    } as unknown as CompactionEventSummary;
    // Messages 1 and 2 stay as they were; 3-5 become a summary; 6 stays, after it.
    const summary = record(90, { id: 'summary-1', kind: 'summary' as never, key: 'k', tokens: 20 });
    c.compacted({
      made: c.snapshot(),
      context: [record(1, { role: 'user' }), record(2), summary, record(6)],
      event,
      tailFromSeq: 7,
      cooldown: { consecutive: 0, lastTokensAfter: 0 },
      trigger: 'auto',
      maskPass: undefined,
      gate: { tokens: 900 } as never,
      ledger: undefined,
    });
    // Kept: 5 fixed + 10 + 10; the old context was 65, the new one 55.
    expect(event.spent).toEqual({
      summary: 0.25,
      cache: { keptTokens: 25, invalidatedTokens: 40, rewrittenTokens: 30, nextCallCost: (30 * 1.5) / 1e6 },
    });
    expect(c.state.spend).toMatchObject({ summaryCost: 0.25, calls: 0, cost: 0 });
  });

  it('is due for compaction when the gate fires, and says nothing before the model is described', () => {
    expect(Conversation.begin(input, undefined, 'r').compactionDue()).toBeUndefined();
    const c = described(Conversation.begin(input, undefined, 'r'));
    const trigger = c.state.gate!.tokens;
    c.append(record(1, { role: 'user', tokens: trigger - 5 - 1 }));
    expect(c.compactionDue()).toBeUndefined();
    c.append(record(2, { tokens: 1 }));
    expect(c.compactionDue()).toContain(String(trigger));
  });

  it('commits a compaction prepared in the background in front of what the agent added meanwhile', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    for (let seq = 1; seq <= 6; seq++) c.newMessageId();
    c.append(record(1, { role: 'user' }), ...[2, 3, 4, 5, 6].map((seq) => record(seq)));
    const made = c.snapshot();
    const tailFromSeq = c.tailSeq;
    // The agent goes on while it is prepared: a tool step and the user's next message.
    for (let seq = 7; seq <= 9; seq++) c.newMessageId();
    c.append(record(7, { toolCallIds: ['t1'] }), record(8, { role: 'tool', toolCallId: 't1' }));
    c.append(record(9, { role: 'user', tokens: 20 }));
    expect(c.staleFor(made)).toBeUndefined();
    const event = {
      seq: 1,
      trigger: 'background',
      tokensBefore: 65,
      tokensAfter: 35,
      strategies: ['summarize'],
      keys: { event: 'e', removed: 'r', context: 'ctx-1' },
    } as unknown as CompactionEventSummary;
    const summary = record(90, { id: 'summary-1', kind: 'summary' as never, key: 'k' });
    c.compacted({
      made,
      context: [record(1, { role: 'user' }), summary, record(6)],
      event,
      tailFromSeq,
      cooldown: { consecutive: 0, lastTokensAfter: 0 },
      trigger: 'background',
      maskPass: undefined,
      gate: { tokens: 900 } as never,
      ledger: undefined,
    });
    expect(c.state.messages.map((m) => m.id)).toEqual([
      messageIdOf(1),
      'summary-1',
      messageIdOf(6),
      messageIdOf(7),
      messageIdOf(8),
      messageIdOf(9),
    ]);
    expect(c.state).toMatchObject({ contextTokens: 5 + 30 + 10 + 10 + 20, contextTurns: 2, baseLength: 3 });
    // The user spoke meanwhile: the cooldown starts over, as a user message makes it.
    expect(c.state.cooldown?.consecutive).toBe(0);
    expect(c.view()).toEqual({ base: 'ctx-1', baseLength: 3, firstSeq: 7, lastSeq: 9 });
    expect(c.coverage()).toEqual([]);
  });

  it('refuses to commit a compaction made for a context that has changed under it', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    for (let seq = 1; seq <= 3; seq++) c.newMessageId();
    c.append(record(1, { role: 'user' }), record(2), record(3, { toolCallIds: ['t1'] }));
    const made = c.snapshot();
    c.turnFailed('callModel failed'); // the unanswered call leaves the context
    expect(c.staleFor(made)).toMatch(/no longer the start of the context/);
    const again = described(Conversation.begin(input, undefined, 'run-2'));
    const before = again.snapshot();
    again.state.compactions = 1; // another compaction was committed since
    expect(again.staleFor(before)).toMatch(/made after compaction 0/);
  });

  it('finds a message twice, or a gap in the tail, in the context it holds', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    for (let seq = 1; seq <= 3; seq++) c.newMessageId();
    c.append(record(1, { role: 'user' }), record(2), record(2));
    expect(c.coverage().join('\n')).toMatch(/m000002 is twice in the context/);
    const d = described(Conversation.begin(input, undefined, 'run-2'));
    d.append(record(1, { role: 'user' }), record(3));
    expect(d.coverage().join('\n')).toMatch(/expected sequence 2/);
  });

  it('starts a background compaction from the soft threshold, below the trigger, past the cooldown', () => {
    const c = described(Conversation.begin(input, undefined, 'r'));
    const { background, tokens } = c.state.gate!;
    expect(background).toBe(700);
    c.append(record(1, { role: 'user', tokens: background! - 5 - 1 }));
    expect(c.backgroundDue()).toBeUndefined();
    c.append(record(2, { tokens: 1 }));
    expect(c.backgroundDue()).toMatch(/soft threshold 700/);
    c.append(record(3, { tokens: tokens - background! }));
    expect(c.compactionDue()).toBeDefined();
    expect(c.backgroundDue()).toBeUndefined(); // over the trigger: it blocks instead
  });

  it('moves the soft threshold up with the cooldown, keeping its distance below where the trigger now fires', () => {
    const policy = resolvePolicy({ mask: { fromRatio: null } });
    const gate = { ...gateOf(policy, 1000), floorWithoutUser: 900 }; // the trigger (800) held back to 900
    expect(backgroundFires(gate, { tokens: 750, messages: 1, turns: 1 }, false)).toBeUndefined();
    expect(backgroundFires(gate, { tokens: 800, messages: 1, turns: 1 }, false)).toMatch(/soft threshold 800 \(700/);
    expect(backgroundFires(gate, { tokens: 700, messages: 1, turns: 1 }, true)).toMatch(/soft threshold 700$/);
  });

  it('keeps the loop guard as the events say: ineffective ones counted, the pause in stats, a user message keeping it', () => {
    const c = described(Conversation.begin(input, undefined, 'run-1'));
    for (let seq = 1; seq <= 3; seq++) c.newMessageId();
    c.append(record(1, { role: 'user' }), record(2), record(3));
    const compact = (seq: number, tokensAfter: number, loopGuard: CompactionEventSummary['loopGuard']) => {
      const event = {
        seq,
        trigger: 'auto',
        tokensBefore: 40,
        tokensAfter,
        strategies: ['summarize'],
        keys: { event: 'e', removed: 'r', context: `ctx-${seq}` },
        ...(loopGuard ? { loopGuard } : {}),
      } as unknown as CompactionEventSummary;
      c.compacted({
        made: c.snapshot(),
        context: [record(1, { role: 'user', tokens: tokensAfter - 5 })],
        event,
        tailFromSeq: 4,
        cooldown: c.state.cooldown!,
        trigger: 'auto',
        maskPass: undefined,
        gate: { tokens: 900 } as never,
        ledger: undefined,
      });
    };
    compact(1, 38, { ineffective: true, savedShare: 0.05, inARow: 1 });
    expect(c.state.cooldown).toEqual({ consecutive: 1, lastTokensAfter: 38, ineffective: 1 });
    c.newMessageId();
    c.append(record(4, { role: 'user' })); // a user message resets the cooldown's step, not the count
    expect(c.state.cooldown).toEqual({ consecutive: 0, lastTokensAfter: 38, ineffective: 1 });
    compact(2, 38, { ineffective: true, savedShare: 0.05, inARow: 3, paused: true, pausedUntil: 42 });
    expect(c.state.cooldown).toMatchObject({ ineffective: 3, pausedUntil: 42 });
    expect(c.state.stats).toMatchObject({ count: 2, ineffective: 2 });
    expect(statsOf(c.state)).toMatchObject({ ineffective: 2, pausedUntil: 42 });
    c.newMessageId();
    c.append(record(5, { tokens: 4 })); // 42 tokens: the pause is over (the next check compacts)
    expect(statsOf(c.state).pausedUntil).toBeUndefined();
    compact(3, 20, { ineffective: false, savedShare: 0.5, inARow: 0 });
    expect(c.state.cooldown).toEqual({ consecutive: 2, lastTokensAfter: 20 });
    expect(c.state.stats).toMatchObject({ count: 3, ineffective: 2 });
    // The counts other events keep stay (a revert's).
    c.state.stats = { ...c.state.stats!, reverts: 1 };
    compact(4, 20, { ineffective: false, savedShare: 0.5, inARow: 0 });
    expect(c.state.stats).toMatchObject({ count: 4, ineffective: 2, reverts: 1 });
    // An event recorded before the guard (no verdict) starts the count over, as its compaction was never judged.
    compact(5, 20, undefined);
    expect(c.state.cooldown).toEqual({ consecutive: 4, lastTokensAfter: 20 });
  });
});

describe('the carry schema', () => {
  it('is written with every carry, and a carry newer than this worker reads is refused, naming both', () => {
    const input = { agentId: 'a', model: 'gpt-4o-mini' };
    const carry = Conversation.begin(input, undefined, 'run-1').carry([]);
    expect(carry.schema).toBe(CARRY_SCHEMA);
    expect(() => Conversation.begin(input, carry, 'run-2')).not.toThrow();
    expect(() => Conversation.begin(input, { ...carry, schema: undefined }, 'run-2')).not.toThrow(); // before it: 1
    expect(() => Conversation.begin(input, { ...carry, schema: CARRY_SCHEMA + 1 }, 'run-2')).toThrow(
      `this run's state was carried by a newer release (carry schema ${CARRY_SCHEMA + 1}; this worker reads up to ${CARRY_SCHEMA})`,
    );
  });
});
