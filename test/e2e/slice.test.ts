/**
 * One agent turn end to end, against the real things: client → Temporal → worker → activities → MinIO and the
 * model (the real openai client over HTTP to a scripted loopback server).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, sendMessage, startAgent, closeAgent, agentHandle } from '../../client/agents.ts';
import { messageKey } from '../../contract/keys.ts';
import { agentWorkflowId, sendUpdate } from '../../contract/agent.ts';
import { MAX_MESSAGE_CHARS } from '../../contract/inputs.ts';
import type { AgentCarry, AgentState } from '../../contract/state.ts';
import { SEARCH_ATTRIBUTES } from '../../contract/search-attributes.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { countMessage, countRequest, countToolSchemas, loadTokenCounter } from '../../engine/tokens.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

let h: Harness;

beforeAll(async () => {
  // The scripted model answers with what it was sent, so the test can check the wiring.
  h = await startHarness((request) => {
    const last = request.body.messages.at(-1);
    return {
      content: `echo(${request.body.messages.length}): ${textOf(last?.content)}`,
      usage: { prompt_tokens: 12, completion_tokens: 5 },
    };
  });
});

afterAll(async () => {
  await h?.close();
});

describe('one agent turn', () => {
  it('returns the reply, stores both messages in S3, and sends the stored messages to the model', async () => {
    const agentId = newAgentId();
    const started = await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      systemPrompt: 'You are terse.',
      taskQueue: h.taskQueue,
    });
    const firstRunId = (await started.describe()).runId;

    const first = await sendMessage(h.client, agentId, 'Hello, agent');
    expect(first.turn).toBe(1);
    expect(first.reply).toBe('echo(2): Hello, agent');

    const second = await sendMessage(h.client, agentId, 'And again');
    expect(second.turn).toBe(2);
    expect(second.reply).toBe('echo(4): And again');

    // Every message is in MinIO under its documented key, read back with the S3 client.
    const state = await agentState(h.client, agentId);
    const stored = async (id: string) => JSON.parse((await h.store.get(messageKey(state, id)))!) as ChatMessage;
    expect(state.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    const bodies = await Promise.all(state.messages.map((m) => stored(m.id)));
    expect(bodies).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hello, agent' },
      { role: 'assistant', content: 'echo(2): Hello, agent' },
      { role: 'user', content: 'And again' },
      { role: 'assistant', content: 'echo(4): And again' },
    ]);
    expect(state.messages.map((m) => m.key)).toEqual(state.messages.map((m) => messageKey(state, m.id)));

    // The model received exactly the stored messages, through the real openai client.
    const requests = h.model.requests.filter((r) => r.body.messages.some((m) => m.content === 'Hello, agent'));
    expect(requests).toHaveLength(2);
    expect(requests[0]!.body.model).toBe('gpt-4o-mini');
    expect(requests[0]!.headers.authorization).toBe('Bearer test-key');
    expect(requests[0]!.body.messages).toEqual(bodies.slice(0, 2));
    expect(requests[1]!.body.messages).toEqual(bodies.slice(0, 4));

    expect(state).toMatchObject({ agentId, model: 'gpt-4o-mini', status: 'running', turns: 2 });

    // Each message was counted once, when stored, with the model's encoding (o200k_base, exact).
    const counter = await loadTokenCounter('o200k_base');
    expect(state.modelInfo).toEqual({
      window: 128_000,
      encoding: 'o200k_base',
      margin: 1,
      exact: true,
      price: { inputPerMillion: 0.15, cachedInputPerMillion: 0.075, outputPerMillion: 0.6 },
    });
    expect(state.messages.map((m) => m.tokens)).toEqual(bodies.map((body) => countMessage(counter, body)));
    const schemas = requests[0]!.body.tools as unknown[];
    expect(state.fixedTokens).toBe(3 + countToolSchemas(counter, schemas));
    expect(state.contextTokens).toBe(countRequest(counter, bodies, schemas));
    // …and shown in the Temporal UI's search attributes (and `longrun list`) as the state has them: upserted after
    // each turn and at each step when they changed, at every compaction and at close.
    const attributes = (await agentHandle(h.client, agentId).describe()).typedSearchAttributes;
    expect(attributes.get(SEARCH_ATTRIBUTES.contextTokens)).toBe(state.contextTokens);
    expect(attributes.get(SEARCH_ATTRIBUTES.model)).toBe('gpt-4o-mini');

    // The Temporal UI shows a summary line for each activity and the agent's current details.
    // (The first run's history: the test stack's low threshold may already have continued the agent as new.)
    const history = await h.client.workflow.getHandle(agentWorkflowId(agentId), firstRunId).fetchHistory();
    const summaries = (history.events ?? [])
      .filter((event) => event.activityTaskScheduledEventAttributes)
      .map((event) => JSON.parse(Buffer.from(event.userMetadata!.summary!.data!).toString('utf8')) as string);
    expect(summaries).toEqual([
      'describe model gpt-4o-mini',
      'gpt-4o-mini: 2 msgs → reply m000003 + tools (stores m000001, m000002)',
      'gpt-4o-mini: 4 msgs → reply m000005 + tools (stores m000004)',
    ]);
    await closeAgent(h.client, agentId);
    const final = (await agentHandle(h.client, agentId).result()) as AgentState;
    expect(final.status).toBe('closed');
  });

  it('rejects bad input in the validator, naming the field and the limit, and leaves the state unchanged', async () => {
    const agentId = newAgentId();
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'first');
    const before = await agentState(h.client, agentId);

    await expect(sendMessage(h.client, agentId, '   ')).rejects.toThrow(WorkflowUpdateFailedError);
    await expect(sendMessage(h.client, agentId, '   ')).rejects.toMatchObject({
      cause: { message: 'text: must not be empty' },
    });
    await expect(sendMessage(h.client, agentId, 'x'.repeat(MAX_MESSAGE_CHARS + 1))).rejects.toMatchObject({
      cause: { message: `text: ${MAX_MESSAGE_CHARS + 1} characters is over the limit of ${MAX_MESSAGE_CHARS}` },
    });
    expect(await agentState(h.client, agentId)).toEqual(before);

    await closeAgent(h.client, agentId);
    await agentHandle(h.client, agentId).result();
  });
});

describe('optimistic concurrency', () => {
  it('a message with expectedTurn opens that turn or is rejected, naming the turn it would open', async () => {
    const agentId = newAgentId('occ');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    expect(await sendMessage(h.client, agentId, 'first', { expectedTurn: 1 })).toMatchObject({ turn: 1 });
    // Two clients read turns = 1; the first to send wins, the other is told what happened.
    expect(await sendMessage(h.client, agentId, 'from A', { expectedTurn: 2 })).toMatchObject({ turn: 2 });
    const before = await agentState(h.client, agentId);
    await expect(sendMessage(h.client, agentId, 'from B', { expectedTurn: 2 })).rejects.toMatchObject({
      cause: {
        message:
          'expectedTurn: this message would open turn 3, not 2 (another message came first; read the state and try again)',
      },
    });
    await expect(sendMessage(h.client, agentId, 'bad', { expectedTurn: 0 })).rejects.toMatchObject({
      cause: { message: 'expectedTurn: must be a positive integer (got 0)' },
    });
    expect(await agentState(h.client, agentId)).toEqual(before);
    expect(await sendMessage(h.client, agentId, 'from B again', { expectedTurn: 3 })).toMatchObject({ turn: 3 });
    await closeAgent(h.client, agentId);
    await agentHandle(h.client, agentId).result();
  });
});

describe('continue-as-new', () => {
  it('continues as new when the server suggests it, keeping state and answering every message', async () => {
    const agentId = newAgentId('can');
    const handle = await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const firstRunId = (await handle.describe()).runId;
    await sleep(2_100); // a run lives at least 2 s before it continues as new (workflows/continue-as-new.ts)
    // Several sends in flight at once: each must be answered exactly once, across runs.
    const texts = Array.from({ length: 8 }, (_, i) => `message ${i + 1}`);
    const results = await Promise.all(texts.map((text) => sendMessage(h.client, agentId, text)));
    // Each reply answers its own message, and the turns are 1..8 in some order (one input at a time).
    results.forEach((result, i) => expect(result.reply).toMatch(new RegExp(`^echo\\(\\d+\\): ${texts[i]}$`)));
    expect(results.map((r) => r.turn).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);

    const description = await agentHandle(h.client, agentId).describe();
    expect(description.runId).not.toBe(firstRunId);
    const state = await agentState(h.client, agentId);
    expect(state.turns).toBe(8);
    expect(state.messages).toHaveLength(16);
    expect(state.runs).toBeGreaterThanOrEqual(2);
    expect(state.lastHandOver).toBe('suggested by the server');
    expect(
      state.messages
        .filter((m) => m.role === 'user')
        .map((m) => m.preview)
        .sort(),
    ).toEqual([...texts].sort());
    // Message ids stay unique across runs.
    expect(new Set(state.messages.map((m) => m.id)).size).toBe(16);
    // The state continue-as-new carried holds the records without their own keys; the query gives them back.
    const started = (await agentHandle(h.client, agentId).fetchHistory()).events![0]!;
    const payloads = started.workflowExecutionStartedEventAttributes!.input!.payloads!;
    const carry = JSON.parse(Buffer.from(payloads[1]!.data!).toString()) as { state: AgentState };
    expect(carry.state.messages.length).toBeGreaterThan(0);
    expect(carry.state.messages.every((m) => m.key === undefined)).toBe(true);
    expect(state.messages.map((m) => m.key)).toEqual(state.messages.map((m) => messageKey(state, m.id)));

    // An Update delivered again to a later run (same Update id) is answered with its result, not applied twice.
    const replayed = await agentHandle(h.client, agentId).executeUpdate(sendUpdate, {
      args: [{ text: 'once only' }],
      updateId: 'send-once',
    });
    await sleep(2_100);
    for (let i = 0; i < 6; i++) await sendMessage(h.client, agentId, `filler ${i}`);
    expect((await agentHandle(h.client, agentId).describe()).runId).not.toBe(description.runId);
    const again = await agentHandle(h.client, agentId).executeUpdate(sendUpdate, {
      args: [{ text: 'once only' }],
      updateId: 'send-once',
    });
    expect(again).toEqual(replayed);
    const after = await agentState(h.client, agentId);
    expect(after.turns).toBe(15);
    expect(after.messages.filter((m) => m.preview === 'once only')).toHaveLength(1);

    await closeAgent(h.client, agentId);
    await agentHandle(h.client, agentId).result();
  });

  it('an Update sent again after continue-as-new gets its long reply back from the store; the carry holds none of it', async () => {
    const agentId = newAgentId('byref');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const long = (n: number) => `${n} ${'lorem ipsum dolor sit amet '.repeat(2_600)}`; // ~70,000 characters each
    const send = (text: string, updateId: string) =>
      agentHandle(h.client, agentId).executeUpdate(sendUpdate, { args: [{ text }], updateId });
    const runBefore = (await agentHandle(h.client, agentId).describe()).runId;
    const first = await send(long(1), 'long-1');
    const second = await send(long(2), 'long-2'); // whole, the two replies would be over the 128,000 characters kept
    await sleep(2_100); // a run lives at least 2 s before it continues as new
    for (let i = 0; i < 6; i++) await sendMessage(h.client, agentId, `filler ${i}`);
    const now = await agentHandle(h.client, agentId).describe();
    expect(now.runId).not.toBe(runBefore);

    // Both answered again with their replies, read back from S3; neither applied twice.
    expect(first.reply.length).toBeGreaterThan(60_000);
    expect(await send(long(2), 'long-2')).toEqual(second);
    expect(await send(long(1), 'long-1')).toEqual(first);
    const state = await agentState(h.client, agentId);
    expect(state.turns).toBe(8);
    expect(state.messages.filter((m) => m.role === 'user' && m.chars > 60_000)).toHaveLength(2);

    // What continue-as-new carried keeps the two results by reference: no reply text, a few hundred bytes each.
    const started = (await agentHandle(h.client, agentId).fetchHistory()).events![0]!;
    const payloads = started.workflowExecutionStartedEventAttributes!.input!.payloads!;
    const carry = JSON.parse(Buffer.from(payloads[1]!.data!).toString()) as AgentCarry;
    const kept = new Map(carry.applied);
    for (const [id, result] of [['long-1', first] as const, ['long-2', second] as const]) {
      const { reply: _, ...rest } = result;
      expect(kept.get(id)).toEqual({ ...rest, replyStored: true });
    }
    expect(payloads[1]!.data!.length).toBeLessThan(20_000);
    await closeAgent(h.client, agentId);
  });
});

describe('state by reference', () => {
  /** Bytes of the input of the agent's last callModel activity (in its current run, or the run before). */
  async function lastModelCallInputBytes(agentId: string): Promise<number> {
    let runId: string | undefined;
    for (;;) {
      const history = await h.client.workflow.getHandle(agentWorkflowId(agentId), runId).fetchHistory();
      const events = history.events ?? [];
      const scheduled = events.filter(
        (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel',
      );
      if (scheduled.length > 0) {
        const payloads = scheduled.at(-1)!.activityTaskScheduledEventAttributes!.input!.payloads!;
        return payloads.reduce((sum, payload) => sum + (payload.data?.length ?? 0), 0);
      }
      runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
      if (!runId) throw new Error('no callModel activity in the history');
    }
  }

  it('a model call costs the same history bytes at a 1-message and a 100 KB context', async () => {
    const agentId = newAgentId('ref');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'small');
    const small = await lastModelCallInputBytes(agentId);

    const chunk = 'lorem ipsum dolor sit amet '.repeat(150); // about 4 KB
    for (let i = 0; i < 25; i++) await sendMessage(h.client, agentId, `${i} ${chunk}`);
    await sendMessage(h.client, agentId, 'small');
    const large = await lastModelCallInputBytes(agentId);
    const state = await agentState(h.client, agentId);
    expect(state.messages.reduce((sum, m) => sum + m.chars, 0)).toBeGreaterThan(100_000);
    // The input names the messages by range and carries the turn's own message (the same 'small' both times), the
    // trigger's counters and the budget note's figures (default preset; the activity writes the note's text), so only
    // the digits of the range, the counters and the figures differ. What the activity tells itself is left out (the
    // default counting, the registry's window and price, the reply's id, the steps used: contract/lean-calls.ts).
    expect(Math.abs(large - small)).toBeLessThanOrEqual(12);
    expect(large).toBeLessThan(650);

    await closeAgent(h.client, agentId);
  });
});
