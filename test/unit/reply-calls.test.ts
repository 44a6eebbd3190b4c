/**
 * The model call that runs its reply's plain tool calls (`runCalls`, activities/run-tool.ts `runReplyCalls`), without
 * a server: which calls it answers and which it leaves to the workflow, the ids its results take, the attempt a tool
 * that threw spent, and a retry that reads the stored reply back and stores a result its heartbeats carried instead of
 * asking the model and running the tool again.
 */
import { asyncLocalStorage } from '@temporalio/activity';
import type { Context } from '@temporalio/activity';
import { noopMetricMeter } from '@temporalio/common';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.ts';
import { defineTool, ToolRegistry } from '../../activities/tools.ts';
import type { CallModelInput, CallModelPayload } from '../../contract/activities.ts';
import { messageKey, resultIdsOf } from '../../contract/keys.ts';
import { wholeToolResult } from '../../contract/lean-calls.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { counting, memoryStore } from '../support/stored-agent.ts';

const runs: string[] = [];
const add = defineTool({
  name: 'add',
  description: 'Adds',
  parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
  run: ({ a, b }, { callId }) => {
    runs.push(callId!);
    return Promise.resolve(String(Number(a) + Number(b)));
  },
});
const broken = defineTool({
  name: 'broken',
  description: 'Throws',
  parameters: { type: 'object', properties: {} },
  run: () => Promise.reject(new Error('disk on fire')),
});
const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys',
  parameters: { type: 'object', properties: {} },
  approval: 'always',
  run: () => Promise.resolve('deployed'),
});
const wipe = defineTool({
  name: 'wipe',
  description: 'Wipes (the agent asks for it by name)',
  parameters: { type: 'object', properties: {} },
  run: () => Promise.resolve('wiped'),
});

const call = (id: string, name: string, args: unknown = {}) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: JSON.stringify(args) },
});
const CALLS = [
  call('c1', 'add', { a: 1, b: 2 }),
  call('c2', 'broken'),
  call('c3', 'deploy'),
  call('c4', 'context_pin', { text: 'keep this' }),
  call('c5', 'wipe'),
  call('c6', 'add', { a: 3, b: 4 }),
];

/** A provider that answers every request with the calls above, counting the requests. */
function provider() {
  const requests: unknown[] = [];
  const openai = {
    chat: {
      completions: {
        create: (body: unknown) => {
          requests.push(body);
          const message = { role: 'assistant', content: null, tool_calls: CALLS };
          return Promise.resolve({
            model: 'gpt-4o-mini',
            choices: [{ index: 0, message, finish_reason: 'tool_calls' }],
          });
        },
      },
    },
  } as unknown as OpenAI;
  return { openai, requests };
}

/** Runs `work` as an activity's `attempt` whose last heartbeat carried `details`; collects what it heartbeats. */
function inAttempt<T>(attempt: number, details: unknown, work: () => Promise<T>) {
  const beats: unknown[] = [];
  const context = {
    metricMeter: noopMetricMeter,
    heartbeat: (d: unknown) => void beats.push(d),
    info: { attempt, heartbeatDetails: details },
    cancellationSignal: new AbortController().signal,
  } as unknown as Context;
  return { beats, done: asyncLocalStorage.run(context, work) };
}

const agent = { agentId: 'reply-calls', life: 'l1' };
const input: CallModelInput = {
  ...agent,
  model: 'gpt-4o-mini',
  view: { firstSeq: 1, lastSeq: 1 },
  replyId: 'm000002',
  counting,
  newMessages: [{ messageId: 'm000001', message: { role: 'user', content: 'go' } }],
  runCalls: { approval: ['wipe'] },
};

function activitiesWith(store = memoryStore()) {
  const { openai, requests } = provider();
  const tools = new ToolRegistry([add, broken, deploy, wipe]);
  return { activities: createActivities({ store, openai, tools, streamModel: false }), requests, store };
}

describe('a model call that runs its reply’s tool calls', () => {
  it('answers the plain calls under the ids after the reply’s, and leaves the others to the workflow', async () => {
    runs.length = 0;
    const { activities, store } = activitiesWith();
    const { done } = inAttempt(1, undefined, () => activities.callModel(input));
    const result: CallModelPayload = await done;
    // add twice; broken threw (one attempt spent); deploy asks by its rule, wipe by name; context_pin is the workflow's.
    expect(result.toolResults?.map((r) => r?.preview ?? null)).toEqual(['3', null, null, null, null, '7']);
    expect(result.toolErrors).toEqual({ c2: 1 });
    expect(runs).toEqual(['c1', 'c6']);
    const ids = resultIdsOf('m000002', CALLS.length);
    expect(ids).toEqual(['m000003', 'm000004', 'm000005', 'm000006', 'm000007', 'm000008']);
    expect(JSON.parse(store.objects.get(messageKey(agent, ids[5]!))!)).toEqual({
      role: 'tool',
      tool_call_id: 'c6',
      content: '7',
    });
    for (const id of ids.slice(1, 5)) expect(store.objects.has(messageKey(agent, id))).toBe(false);
    // Lean, as runTool answers a lean input: the workflow restores the record whole.
    expect(result.toolResults![0]).not.toHaveProperty('id');
    expect(wholeToolResult(result.toolResults![0]!, { resultId: ids[0]!, callId: 'c1' })).toMatchObject({
      id: 'm000003',
      role: 'tool',
      toolCallId: 'c1',
      tool: 'add',
    });
  });

  it('a retry reads the stored reply back and stores the results its heartbeats carried, asking and running nothing again', async () => {
    runs.length = 0;
    const first = activitiesWith();
    const attempt1 = inAttempt(1, undefined, () => first.activities.callModel(input));
    await attempt1.done;
    // What the heartbeats carry (the object itself: what a heartbeat after the last call answered would send): the
    // reply's mark and each call's progress.
    const details = attempt1.beats.findLast((d) => d !== undefined);
    expect(details).toMatchObject({ replyId: 'm000002', reply: { servedBy: 'gpt-4o-mini' } });
    expect(first.requests).toHaveLength(1);

    runs.length = 0;
    const retried = activitiesWith(first.store);
    const attempt2 = inAttempt(2, details, () => retried.activities.callModel(input));
    const result = await attempt2.done;
    expect(retried.requests).toHaveLength(0); // the model was not asked again
    expect(runs).toEqual([]); // nor were the tools that had answered run again
    expect(result.toolResults?.map((r) => r?.preview ?? null)).toEqual(['3', null, null, null, null, '7']);
    // The tool that threw is left to runTool with the attempt it spent; the stored reply is the first attempt's.
    expect(result.toolErrors).toEqual({ c2: 1 });
    const reply = JSON.parse(first.store.objects.get(messageKey(agent, 'm000002'))!) as ChatMessage;
    expect(reply.tool_calls?.map((c) => c.id)).toEqual(CALLS.map((c) => c.id));
  });

  it('a retry whose first attempt died before a heartbeat said so still reads a stored reply back', async () => {
    runs.length = 0;
    const first = activitiesWith();
    await inAttempt(1, undefined, () => first.activities.callModel(input)).done;
    runs.length = 0;
    const retried = activitiesWith(first.store);
    const result = await inAttempt(2, undefined, () => retried.activities.callModel(input)).done;
    expect(retried.requests).toHaveLength(0);
    expect(runs).toEqual(['c1', 'c6']); // no result rode on a heartbeat: the tools run again (at least once)
    expect(result.toolResults?.filter(Boolean)).toHaveLength(2);
  });

  it('without runCalls, answers no call (the workflow runs them all, as before)', async () => {
    runs.length = 0;
    const { activities } = activitiesWith();
    const { runCalls: _, ...plain } = input;
    const result = await inAttempt(1, undefined, () => activities.callModel(plain)).done;
    expect(result.toolResults).toBeUndefined();
    expect(runs).toEqual([]);
  });
});
