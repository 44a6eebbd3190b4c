/**
 * Reaching an agent while it works (issue 28), on the real stack: a forced compaction, a steer and an interrupt
 * taken at the next step boundary of a long tool loop; an interrupt that cancels a tool and a model call in flight;
 * tool calls that wait for a person's approval.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools.ts';
import { agentHandle, agentState, closeAgent, startAgent } from '../../client/agents.ts';
import { executeAgentUpdate } from '../../client/updates.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import * as api from '../../contract/agent.ts';
import { lateResultKey } from '../../contract/keys.ts';
import type { StreamItem } from '../../contract/stream.ts';
import { streamAgent } from '../../client/stream.ts';
import { interruptedReply } from '../../contract/results.ts';
import type { SendResult } from '../../contract/results.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { toolPairViolations, pairViewOf } from '../../engine/tool-pairs.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

/** How long each call of `work` takes: a step of the loop is at least this long. */
const STEP_MS = 300;
const work = defineTool({
  name: 'work',
  description: 'Does one step of work',
  parameters: { type: 'object', properties: { n: { type: 'number' } } },
  run: ({ n }) => new Promise((resolve) => setTimeout(() => resolve(`step ${String(n)} done`), STEP_MS)),
});

/** Calls of `sleepy` that saw their cancellation. */
const sawAbort: string[] = [];
/** A tool that takes a minute unless cancelled (it honours its signal). */
const sleepy = defineTool({
  name: 'sleepy',
  description: 'Sleeps for a minute',
  parameters: { type: 'object', properties: {} },
  run: (_args, { signal, callId }) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve('slept'), 60_000);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        sawAbort.push(callId!);
        reject(new Error('aborted'));
      });
    }),
});

/** A tool that ignores its cancellation and answers after 4 s. */
const stubborn = defineTool({
  name: 'stubborn',
  description: 'Takes 4 s whatever happens',
  parameters: { type: 'object', properties: {} },
  run: () => new Promise((resolve) => setTimeout(() => resolve('stubborn done'), 4_000)),
});

const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys to production',
  parameters: { type: 'object', properties: { target: { type: 'string' } } },
  approval: 'always',
  run: ({ target }) => Promise.resolve(`deployed ${String(target)}`),
});

const call = (id: string, name: string, args: unknown) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: JSON.stringify(args) },
});

/**
 * The script, by the turn's first user text (JSON): `loop` n: call `work` n times, one step each, then answer; a
 * steer (a user message after a tool result) is answered at once with what it said. `sleepy`: call sleepy once.
 * `slowModel`: the model takes a minute to answer. `deploy`: call deploy, then answer with its result.
 */
function script(request: RecordedRequest): ScriptedReply {
  const messages = request.body.messages;
  const firstUser = messages.find((m) => m.role === 'user' && textOf(m.content).startsWith('{'));
  const command = JSON.parse(firstUser ? textOf(firstUser.content) : '{}') as {
    loop?: number;
    sleepy?: boolean;
    stubborn?: boolean;
    slowModel?: boolean;
    deploy?: string;
    pair?: boolean;
  };
  const last = messages.at(-1)!;
  if (last.role === 'user' && textOf(last.content).startsWith('steer:')) {
    return { content: `steered by: ${textOf(last.content)}` };
  }
  if (last.role === 'user' && !textOf(last.content).startsWith('{')) return { content: `re: ${textOf(last.content)}` };
  const done = messages.filter((m) => m.role === 'tool').length;
  if (command.loop !== undefined) {
    // The step rides in the call id, so that the count holds whatever compaction left of the turn.
    const lastCall = messages.findLast((m) => m.tool_calls?.[0]?.id.startsWith('w-'))?.tool_calls?.[0]?.id;
    const done = lastCall ? Number(lastCall.slice(2)) : 0;
    if (done < command.loop) return { content: null, toolCalls: [call(`w-${done + 1}`, 'work', { n: done + 1 })] };
    return { content: `looped ${done} steps` };
  }
  if (command.stubborn) {
    return done === 0 ? { content: null, toolCalls: [call('st-1', 'stubborn', {})] } : { content: 'finished' };
  }
  if (command.sleepy)
    return done === 0 ? { content: null, toolCalls: [call('s-1', 'sleepy', {})] } : { content: 'woke' };
  if (command.pair) {
    const calls = [call('p-1', 'work', { n: 1 }), call('p-2', 'sleepy', {})];
    return done === 0 ? { content: null, toolCalls: calls } : { content: 'both done' };
  }
  if (command.slowModel) return { content: 'too late', delayMs: 60_000 };
  if (command.deploy) {
    if (done === 0) return { content: null, toolCalls: [call('d-1', 'deploy', { target: command.deploy })] };
    return { content: `result: ${textOf(last.content)}` };
  }
  return { content: 'ok' };
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(script, [work, sleepy, stubborn, deploy]);
});
afterAll(async () => {
  await h?.close();
});

const handle = (agentId: string) => agentHandle(h.client, agentId);
/** Starts a turn with `command` and returns its pending result. */
/**
 * A message, through the client's Update wait: a turn of many steps may outlast its run on this stack (the server
 * suggests continue-as-new after 40 events), and the client sends an Update answered `handedOver` again.
 */
function send(agentId: string, text: string): Promise<SendResult> {
  return executeAgentUpdate(h.client, handle(agentId), agentId, api.sendUpdate, [{ text }]);
}
function startTurn(agentId: string, command: unknown): Promise<SendResult> {
  return send(agentId, JSON.stringify(command));
}
/** Waits until the turn in progress is on step `step` or later. */
async function untilStep(agentId: string, step: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const progress = await handle(agentId).query(api.progressQuery);
    if ((progress.turn?.step ?? 0) >= step) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the turn never reached step ${step}`);
}
/** Waits until the model server has had a request with `text` in it `count` times. */
async function untilRequests(text: string, count: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (requestsWith(text).length >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`never ${count} requests with ${text}`);
}
function requestsWith(text: string): RecordedRequest[] {
  return h.model.requests.filter((r) => r.body.messages.some((m) => textOf(m.content).includes(text)));
}
/** The agent's live stream as stored now (items published by the activities). */
async function streamOf(agentId: string): Promise<StreamItem[]> {
  const items: StreamItem[] = [];
  for await (const item of streamAgent(h.client, h.store, agentId, { follow: false })) items.push(item);
  return items;
}
function pairsWhole(messages: ChatMessage[]): void {
  expect(toolPairViolations(messages.map(pairViewOf))).toEqual([]);
}

describe('inputs at the next step boundary', () => {
  it('applies a forced compaction sent during a long tool loop within a step, and the turn goes on', async () => {
    const agentId = newAgentId('reach-compact');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const turn = startTurn(agentId, { loop: 12, tag: agentId });
    await untilStep(agentId, 5);
    const { runId } = await handle(agentId).describe();
    const compacted = await handle(agentId).executeUpdate(api.compactUpdate, { args: [{ evenIfLarger: true }] });
    expect(compacted.compacted).toBe(true);
    // Applied at the boundary after the step in flight when it was sent: in the run's history, at most one model call
    // (the next step's, when the Update came just after a boundary) is scheduled between the Update's acceptance and
    // the compaction's apply. (Counting the model server's requests instead races the step after the apply.)
    const events = (await h.client.workflow.getHandle(handle(agentId).workflowId, runId).fetchHistory()).events ?? [];
    const scheduled = (i: number) => events[i]!.activityTaskScheduledEventAttributes?.activityType?.name;
    const accepted = events.findIndex(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'compact',
    );
    const applied = events.findIndex((_, i) => i > accepted && scheduled(i) === 'applyCompaction');
    expect(accepted).toBeGreaterThan(0);
    expect(applied).toBeGreaterThan(accepted);
    const modelCalls = events.slice(accepted, applied).filter((_, i) => scheduled(accepted + i) === 'callModel');
    expect(modelCalls.length).toBeLessThanOrEqual(1);
    const progress = await handle(agentId).query(api.progressQuery);
    expect(progress.turn?.turn).toBe(1); // the turn is still in progress
    const result = await turn;
    expect(result.reply).toBe('looped 12 steps');
    expect(result.steps).toBe(13);
    const state = await agentState(h.client, agentId);
    expect(state.compactions).toBe(1);
    for (const request of requestsWith(agentId)) pairsWhole(request.body.messages);
    await closeAgent(h.client, agentId);
  });

  it('adds a steer to the turn in progress after the step, where the model sees it, and says where it landed', async () => {
    const agentId = newAgentId('reach-steer');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const turn = startTurn(agentId, { loop: 20, tag: agentId });
    await untilStep(agentId, 3);
    const landed = await handle(agentId).executeUpdate(api.steerUpdate, {
      args: [{ text: 'steer: use the fast path' }],
    });
    expect(landed).toMatchObject({ turn: 1, opened: false });
    expect(landed.step).toBeGreaterThanOrEqual(4);
    const result = await turn;
    expect(result.reply).toBe('steered by: steer: use the fast path');
    expect(result.steps).toBe(landed.step);
    const carrying = requestsWith('steer: use the fast path')[0]!.body.messages;
    expect(carrying.at(-1)).toEqual({ role: 'user', content: 'steer: use the fast path' });
    expect(carrying.at(-2)!.role).toBe('tool');
    const state = await agentState(h.client, agentId);
    const steer = state.messages.find((m) => m.id === landed.messageId)!;
    expect(steer).toMatchObject({ role: 'user', steer: true });
    expect(state.contextTurns).toBe(1); // a steer is inside the turn, not a turn of its own
    expect(state.turns).toBe(1);
    // The live stream says where it landed, and when the turn ended.
    const items = await streamOf(agentId);
    expect(items.filter((i) => i.kind === 'steer')).toMatchObject([
      { text: 'steer: use the fast path', turn: 1, step: landed.step },
    ]);
    expect(items.filter((i) => i.kind === 'turn-end')).toMatchObject([{ turn: 1, steps: landed.step }]);
    await closeAgent(h.client, agentId);
  });

  it('opens a turn with a steer sent to an idle agent', async () => {
    const agentId = newAgentId('reach-steer-idle');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const landed = await handle(agentId).executeUpdate(api.steerUpdate, { args: [{ text: 'hello there' }] });
    expect(landed).toMatchObject({ turn: 1, step: 1, opened: true });
    for (let i = 0; i < 100 && (await agentState(h.client, agentId)).turns < 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const state = await agentState(h.client, agentId);
    expect(state.turns).toBe(1);
    expect(state.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(state.messages[1]!.preview).toContain('re: hello there');
    await closeAgent(h.client, agentId);
  });
});

describe('interrupt', () => {
  it('cancels a long tool that honours it, answers the call as interrupted, and the send gets that reply', async () => {
    const agentId = newAgentId('reach-int-tool');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const turn = startTurn(agentId, { sleepy: true, tag: agentId });
    await untilRequests(agentId, 1);
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the tool is running
    const interrupted = await handle(agentId).executeUpdate(api.interruptUpdate, { args: [{}] });
    expect(interrupted).toMatchObject({ interrupted: true, turn: 1, step: 1, reason: 'turn 1 interrupted at step 1' });
    const result = await turn;
    expect(result).toMatchObject({ turn: 1, interrupted: { step: 1 }, reply: interruptedReply(1, 1), steps: 1 });
    expect(sawAbort).toContain('s-1');
    const state = await agentState(h.client, agentId);
    expect(state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(state.messages[2]!.preview).toContain('[interrupted]');
    expect(state.turns).toBe(1);
    const items = await streamOf(agentId);
    expect(items.filter((i) => i.kind === 'interrupted')).toMatchObject([{ turn: 1, step: 1 }]);
    const results = items.filter((i) => i.kind === 'tool-result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ callId: 's-1' });
    expect((results[0] as { preview: string }).preview).toContain('[interrupted]');
    // The tool ran in the model call's activity: its cancellation was asked for, and it completed with the reply.
    const events = (await handle(agentId).fetchHistory()).events ?? [];
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool')).toEqual([]);
    const modelCall = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel')!;
    const ofCall = (e: (typeof events)[number]) =>
      [e.activityTaskCancelRequestedEventAttributes, e.activityTaskCompletedEventAttributes].some(
        (a) => String(a?.scheduledEventId) === String(modelCall.eventId),
      );
    expect(events.filter(ofCall).map((e) => (e.activityTaskCompletedEventAttributes ? 'completed' : 'cancel'))).toEqual(
      ['cancel', 'completed'],
    );
    // The agent goes on: the next message sees a whole conversation.
    const next = await send(agentId, 'are you there');
    expect(next.reply).toBe('re: are you there');
    pairsWhole(requestsWith('are you there')[0]!.body.messages);
    await closeAgent(h.client, agentId);
  });

  it("keeps the step's finished tool result and answers the cancelled one as interrupted", async () => {
    const agentId = newAgentId('reach-int-pair');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const turn = startTurn(agentId, { pair: true, tag: agentId });
    await untilRequests(agentId, 1);
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // work is done, sleepy is running
    await handle(agentId).executeUpdate(api.interruptUpdate, { args: [{}] });
    const result = await turn;
    expect(result).toMatchObject({ turn: 1, interrupted: { step: 1 }, steps: 1 });
    expect(sawAbort).toContain('p-2');
    const state = await agentState(h.client, agentId);
    expect(state.messages.map((m) => [m.role, m.toolCallId])).toEqual([
      ['user', undefined],
      ['assistant', undefined],
      ['tool', 'p-1'],
      ['tool', 'p-2'],
    ]);
    expect(state.messages[2]!.preview).toBe('step 1 done');
    expect(state.messages[3]!.preview).toContain('[interrupted]');
    // The live stream: each call, then its result, as runTool published them.
    const items = (await streamOf(agentId)).filter((i) => i.kind === 'tool-call' || i.kind === 'tool-result');
    expect(items.map((i) => [i.kind, (i as { callId: string }).callId])).toEqual([
      ['tool-call', 'p-1'],
      ['tool-call', 'p-2'],
      ['tool-result', 'p-1'],
      ['tool-result', 'p-2'],
    ]);
    const next = await send(agentId, 'still there');
    expect(next.reply).toBe('re: still there');
    pairsWhole(requestsWith('still there')[0]!.body.messages);
    await closeAgent(h.client, agentId);
  });

  it('cancels a model call in flight, and with text opens the next turn with it', async () => {
    const agentId = newAgentId('reach-int-model');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const turn = startTurn(agentId, { slowModel: true, tag: agentId });
    await untilRequests(agentId, 1);
    const interrupted = await handle(agentId).executeUpdate(api.interruptUpdate, {
      args: [{ text: 'do this instead' }],
    });
    expect(interrupted).toMatchObject({ interrupted: true, turn: 1, step: 1, opens: 2 });
    const result = await turn;
    expect(result).toMatchObject({ turn: 1, interrupted: { step: 1 }, steps: 0, replyId: '' });
    for (let i = 0; i < 100 && (await agentState(h.client, agentId)).turns < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const state = await agentState(h.client, agentId);
    expect(state.turns).toBe(2);
    // The first turn's message stays; no reply of the cancelled call; the interrupt's text opened turn 2.
    expect(state.messages.map((m) => m.role)).toEqual(['user', 'user', 'assistant']);
    expect(state.messages[2]!.preview).toContain('re: do this instead');
    await closeAgent(h.client, agentId);
  });

  it('abandons a tool that ignores it after the grace period; its late result is stored apart, not used', async () => {
    const agentId = newAgentId('reach-int-stubborn');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const turn = startTurn(agentId, { stubborn: true, tag: agentId });
    await untilRequests(agentId, 1);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the tool is running
    await handle(agentId).executeUpdate(api.interruptUpdate, { args: [{}] });
    const result = await turn;
    expect(result.interrupted).toEqual({ step: 1 });
    const state = await agentState(h.client, agentId);
    const answered = state.messages[2]!;
    expect(answered.preview).toContain('[interrupted]');
    // The tool's answer came after the turn moved on: kept under its late key, the context's copy untouched.
    const late = lateResultKey({ agentId, life: state.life! }, answered.id);
    let kept: string | undefined;
    for (let i = 0; i < 100 && kept === undefined; i++) {
      kept = await h.store.get(late);
      if (kept === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(JSON.parse(kept!)).toEqual({ role: 'tool', tool_call_id: 'st-1', content: 'stubborn done' });
    const inContext = JSON.parse((await h.store.get(answered.key))!) as ChatMessage;
    expect(textOf(inContext.content)).toContain('[interrupted]');
    await closeAgent(h.client, agentId);
  });

  it('with no turn in progress says so, and stops nothing', async () => {
    const agentId = newAgentId('reach-int-idle');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const result = await handle(agentId).executeUpdate(api.interruptUpdate, { args: [{}] });
    expect(result).toEqual({ interrupted: false, reason: 'no turn in progress' });
    await closeAgent(h.client, agentId);
  });
});

describe('tool approval', () => {
  it('waits for approveTool, shows the call while it waits, then runs it', async () => {
    const agentId = newAgentId('reach-approve');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const turn = startTurn(agentId, { deploy: 'prod', tag: agentId });
    let waiting = (await handle(agentId).query(api.progressQuery)).awaitingApproval;
    for (let i = 0; i < 200 && !waiting?.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      waiting = (await handle(agentId).query(api.progressQuery)).awaitingApproval;
    }
    expect(waiting).toMatchObject([
      { callId: 'd-1', tool: 'deploy', arguments: '{"target":"prod"}', onTimeout: 'deny' },
    ]);
    expect((await agentState(h.client, agentId)).shownStatus).toBe('awaiting-approval');
    const refused = await handle(agentId)
      .executeUpdate(api.approveToolUpdate, { args: [{ callId: 'no-such-call' }] })
      .catch((error: unknown) => error as Error);
    expect(((refused as Error).cause as Error | undefined)?.message).toBe(
      'callId: no-such-call is not waiting for approval (the calls waiting: d-1)',
    );
    const decided = await handle(agentId).executeUpdate(api.approveToolUpdate, { args: [{ callId: 'd-1' }] });
    expect(decided).toEqual({ callId: 'd-1', tool: 'deploy', decision: 'approved' });
    expect((await turn).reply).toBe('result: deployed prod');
    const items = await streamOf(agentId);
    expect(items.filter((i) => i.kind.startsWith('approval'))).toMatchObject([
      { kind: 'approval-asked', callId: 'd-1', name: 'deploy', arguments: '{"target":"prod"}' },
      { kind: 'approval-answered', callId: 'd-1', approved: true },
    ]);
    expect((await agentState(h.client, agentId)).shownStatus).toBe('running');
    await closeAgent(h.client, agentId);
  });

  it('answers a denied call with the denial and its reason, which the model sees', async () => {
    const agentId = newAgentId('reach-deny');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const turn = startTurn(agentId, { deploy: 'prod', tag: agentId });
    for (let i = 0; i < 200; i++) {
      if ((await handle(agentId).query(api.progressQuery)).awaitingApproval?.length) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await handle(agentId).executeUpdate(api.denyToolUpdate, { args: [{ callId: 'd-1', reason: 'not on a Friday' }] });
    expect((await turn).reply).toBe(
      'result: [denied] A person denied this call of deploy, so it was not run: not on a Friday',
    );
    const answered = (await streamOf(agentId)).filter((i) => i.kind === 'approval-answered');
    expect(answered).toMatchObject([{ callId: 'd-1', approved: false }]);
    await closeAgent(h.client, agentId);
  });

  it('asks for tools named in the agent input, and applies onTimeout when nobody answers', async () => {
    const agentId = newAgentId('reach-timeout');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      toolApproval: { tools: ['work'], timeoutSeconds: 1, onTimeout: 'approve' },
    });
    const result = await startTurn(agentId, { loop: 1, tag: agentId });
    expect(result.reply).toBe('looped 1 steps');
    // The live stream says the call waited, as it does for a tool's own rule, and that the timeout approved it.
    const approvals = (await streamOf(agentId)).filter((i) => i.kind.startsWith('approval'));
    expect(approvals).toMatchObject([
      { kind: 'approval-asked', name: 'work' },
      { kind: 'approval-answered', approved: true },
    ]);
    await closeAgent(h.client, agentId);
  });
});
