/**
 * Tool calls through the whole stack: the model asks for tools, the workflow runs each as an activity, stores the
 * result, and calls the model again; the built-in context_reload reads stored content back in pages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool, RELOAD_PAGE_CHARS } from '../../activities/tools.ts';
import { agentHandle, agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { messageKey } from '../../contract/keys.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { AGENT_WORKFLOW, agentWorkflowId } from '../../contract/agent.ts';
import { turnStoppedReply } from '../../contract/inputs.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import { eventsOfAllRuns } from '../support/planned.ts';
import type { Harness } from '../support/harness.ts';

let brokenCalls = 0;
/** A tool with a bug: it always throws an error that is not the model's fault. */
const broken = defineTool({
  name: 'broken',
  description: 'Always fails',
  parameters: { type: 'object', properties: {} },
  run: () => {
    brokenCalls++;
    return Promise.reject(new Error('disk on fire'));
  },
});

let fatalCalls = 0;
/** A tool that fails for good: its error says no attempt can succeed (a non-retryable failure). */
const fatal = defineTool({
  name: 'fatal',
  description: 'Fails for good',
  parameters: { type: 'object', properties: {} },
  run: () => {
    fatalCalls++;
    return Promise.reject(ApplicationFailure.nonRetryable('license expired', 'LicenseExpired'));
  },
});

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  run: ({ a, b }) => Promise.resolve(String(Number(a) + Number(b))),
});

/** A tool whose output can be huge: it cuts its results over 300 tokens as they arrive. */
const dump = defineTool({
  name: 'dump',
  description: 'Prints numbered rows',
  parameters: { type: 'object', properties: { rows: { type: 'integer' } }, required: ['rows'] },
  maxResultTokens: 300,
  run: ({ rows }) => Promise.resolve(dumpOutput(Number(rows))),
});
const dumpOutput = (rows: number) =>
  Array.from({ length: rows }, (_, i) => `row ${i}: ${'abcdefghij'.slice(0, i % 10)}`).join('\n');

/** Every tool call in a request is answered by a tool message, and every tool message answers a call. */
function toolPairViolations(messages: ChatMessage[]): string[] {
  const calls = new Set(messages.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []));
  const answered = new Set(messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id));
  return [
    ...[...calls].filter((id) => !answered.has(id)).map((id) => `unanswered ${id}`),
    ...[...answered].filter((id) => !calls.has(id!)).map((id) => `orphan ${id}`),
  ];
}

const call = (id: string, name: string, args: unknown) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: JSON.stringify(args) },
});

/**
 * The script: the user's text says which tools to call, or to loop on tools forever (`loop`, ignoring tool_choice;
 * `usage`: the prompt and completion tokens each completion reports), or to take `steps` tool steps, then answer;
 * after tool results, answer with what came back.
 */
function script(request: RecordedRequest): ScriptedReply {
  const messages = request.body.messages;
  const user = messages.findLast((m) => m.role === 'user')!;
  const command = JSON.parse(textOf(user.content) || '{}') as {
    calls?: [string, string, unknown][];
    loop?: boolean;
    usage?: [number, number];
    steps?: number;
  };
  if (command.loop) {
    return {
      content: null,
      toolCalls: [call(`loop-${messages.length}`, 'add', { a: 1, b: 1 })],
      ...(command.usage ? { usage: { prompt_tokens: command.usage[0], completion_tokens: command.usage[1] } } : {}),
    };
  }
  if (command.steps !== undefined) {
    // The step number rides in the call id, so that the count holds whatever compaction left of the turn.
    const last = messages.findLast((m) => m.tool_calls?.[0]?.id.startsWith('step-'))?.tool_calls?.[0]?.id;
    const done = messages.indexOf(user) < messages.findLastIndex((m) => m.tool_calls) ? Number(last!.slice(5)) : 0;
    if (done < command.steps) return { content: null, toolCalls: [call(`step-${done + 1}`, 'add', { a: done, b: 1 })] };
    return { content: `done after ${done} steps` };
  }
  if (messages.at(-1)!.role === 'tool') {
    const results = messages.slice(messages.findLastIndex((m) => m.role === 'assistant') + 1);
    return { content: `results: ${results.map((m) => textOf(m.content)).join(' | ')}` };
  }
  return { content: null, toolCalls: (command.calls ?? []).map(([id, name, args]) => call(id, name, args)) };
}

/** The requests the model server got for a user message (each test's text is its own). */
function requestsWith(text: string): RecordedRequest[] {
  return h.model.requests.filter((r) => r.body.messages.some((m) => m.content === text));
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(script, [add, broken, dump, fatal]);
});
afterAll(async () => {
  await h?.close();
});

describe('tool calls', () => {
  it('runs the requested tools as activities, answers every call, and sends the tool schemas', async () => {
    const agentId = newAgentId('tools');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const text = JSON.stringify({
      calls: [
        ['c1', 'add', { a: 2, b: 3 }],
        ['c2', 'add', { a: 10, b: -4 }],
        ['c3', 'no_such_tool', {}],
        ['c4', 'add', 'not an object'],
      ],
    });
    const result = await sendMessage(h.client, agentId, text);
    expect(result.reply).toBe(
      'results: 5 | 6 | error: unknown tool "no_such_tool" (the tools: context_reload, context_search, context_pin, ' +
        'context_budget, add, broken, dump, fatal) | ' +
        'error: arguments of add must be a JSON object',
    );
    expect(result.toolCalls).toBe(4);

    const requests = h.model.requests.filter((r) => r.body.messages.some((m) => m.content === text));
    expect(requests).toHaveLength(2);
    for (const request of requests) expect(toolPairViolations(request.body.messages)).toEqual([]);
    const schemas = requests[0]!.body.tools as { function: { name: string } }[];
    expect(schemas.map((t) => t.function.name).sort()).toEqual([
      'add',
      'broken',
      'context_budget',
      'context_pin',
      'context_reload',
      'context_search',
      'dump',
      'fatal',
    ]);

    const state = await agentState(h.client, agentId);
    expect(state.messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'tool',
      'tool',
      'tool',
      'assistant',
    ]);
    expect(state.messages[1]!.toolCallIds).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect(state.messages.slice(2, 6).map((m) => m.toolCallId)).toEqual(['c1', 'c2', 'c3', 'c4']);
    const stored = JSON.parse((await h.store.get(state.messages[2]!.key))!) as ChatMessage;
    expect(stored).toEqual({ role: 'tool', tool_call_id: 'c1', content: '5' });
    // A step whose calls are all plain runs them in the model call's activity: no runTool activity, no workflow task
    // between the reply and the results; the activity's summary says it runs the reply's tools.
    const events = (await agentHandle(h.client, agentId).fetchHistory()).events ?? [];
    const scheduled = events.flatMap((e) => {
      const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
      return name ? [{ name, summary: Buffer.from(e.userMetadata!.summary!.data!).toString('utf8') }] : [];
    });
    expect(scheduled.map((a) => a.name)).toEqual(['describeModel', 'callModel', 'callModel']);
    expect(scheduled[1]!.summary).toContain('→ reply m000002 + tools');
    await closeAgent(h.client, agentId);
  });

  it('a step with a call that waits for approval runs its plain calls in the model call, and the other as runTool after approval', async () => {
    const agentId = newAgentId('tools-mixed');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      toolApproval: { tools: ['dump'], timeoutSeconds: 1, onTimeout: 'approve' },
    });
    const text = JSON.stringify({
      calls: [
        ['x1', 'add', { a: 1, b: 2 }],
        ['x2', 'dump', { rows: 2 }],
        ['x3', 'add', { a: 3, b: 4 }],
      ],
    });
    const result = await sendMessage(h.client, agentId, text);
    expect(result.reply).toBe(`results: 3 | ${dumpOutput(2)} | 7`);
    const state = await agentState(h.client, agentId);
    // The results take the ids after the reply's, in call order, whoever answered them.
    expect(state.messages.slice(2, 5).map((m) => [m.id, m.toolCallId])).toEqual([
      ['m000003', 'x1'],
      ['m000004', 'x2'],
      ['m000005', 'x3'],
    ]);
    // Every run's (the tests' stack may continue the agent as new right after the turn).
    const events = await eventsOfAllRuns(h.client, agentWorkflowId(agentId));
    const names = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    // runTool twice for x2: asked (it waits), then run once approved.
    expect(names.filter((n) => n === 'runTool')).toHaveLength(2);
    // What the History tab shows: the asking runTool says the call waits (it did not run), the wait's timer says what
    // it waits for and what happens then, the second runTool that it runs approved.
    const summaryOf = (e: (typeof events)[number]) => Buffer.from(e.userMetadata?.summary?.data ?? []).toString('utf8');
    const runTools = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool');
    expect(runTools.map(summaryOf)).toEqual([
      '"tool dump (x2): waits for approval, not run"',
      '"tool dump (x2), approved → m000004"',
    ]);
    const timers = events.filter((e) => e.timerStartedEventAttributes);
    expect(timers.map(summaryOf)).toEqual(['"approval of tool dump (x2): approved after 1 s unanswered"']);
    await closeAgent(h.client, agentId);
  });

  it('context_reload returns stored content byte-identical, in pages, and refuses other agents’ and lives’ keys', async () => {
    const agentId = newAgentId('reload');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const { storagePrefix } = await agentState(h.client, agentId);
    // A stored body of three pages, written where offloaded content goes.
    const body = Array.from({ length: RELOAD_PAGE_CHARS * 2 + 500 }, (_, i) =>
      String.fromCharCode(0x4e00 + (i % 900)),
    ).join('');
    const key = `${storagePrefix}offload/test-segment.jsonl`;
    await h.store.put(key, body, 'application/jsonl');
    const other = messageKey({ agentId: 'someone-else' }, 'm000001');
    // Another life of the same agent id (one started before lives existed has no life segment).
    const otherLife = messageKey({ agentId }, 'm000001');
    const text = JSON.stringify({
      calls: [
        ['p1', 'context_reload', { reference: key }],
        ['p2', 'context_reload', { reference: key, page: 2 }],
        ['p3', 'context_reload', { reference: key, page: 3 }],
        ['p4', 'context_reload', { reference: key, page: 4 }],
        ['p5', 'context_reload', { reference: other }],
        ['p6', 'context_reload', { reference: otherLife }],
      ],
    });
    await sendMessage(h.client, agentId, text);
    const state = await agentState(h.client, agentId);
    const results = await Promise.all(
      state.messages
        .filter((m) => m.role === 'tool')
        .map(async (m) => textOf((JSON.parse((await h.store.get(m.key))!) as ChatMessage).content)),
    );
    const pages = results.slice(0, 3).map((r) => r.slice(r.indexOf('\n') + 1));
    expect(pages.join('')).toBe(body);
    expect(results[0]).toMatch(new RegExp(`^\\[${key} · page 1 of 3\\]\\n`));
    expect(results[3]).toBe(`error: page 4 is past the end: ${key} has 3 page(s)`);
    expect(results[4]).toBe(`error: reference ${JSON.stringify(other)} is not stored content of this agent`);
    expect(results[5]).toBe(`error: reference ${JSON.stringify(otherLife)} is not stored content of this agent`);
    await closeAgent(h.client, agentId);
  });

  it('a result over its tool’s maxResultTokens is cut as it arrives (the policy’s limit over the definition’s): the model never reads it whole, the whole is stored and reloads; each result names what it read', async () => {
    const whole = dumpOutput(4_000);
    for (const [limit, compaction] of [
      [300, undefined],
      [120, { tools: { dump: { maxResultTokens: 120 } } }],
    ] as const) {
      const agentId = newAgentId('cut');
      await startAgent(h.client, {
        agentId,
        model: 'gpt-4o-mini',
        taskQueue: h.taskQueue,
        ...(compaction ? { compaction } : {}),
      });
      const text = JSON.stringify({
        agentId, // each agent's text its own
        calls: [
          ['d1', 'dump', { rows: 4_000 }],
          ['a1', 'add', { a: 1, b: 2 }],
          ['a2', 'add', { b: 2, a: 1 }],
          ['a3', 'add', { a: 2, b: 1 }],
        ],
      });
      await sendMessage(h.client, agentId, text);
      const state = await agentState(h.client, agentId);
      const { storagePrefix } = state;
      const results = state.messages.filter((m) => m.role === 'tool');
      const cut = results[0]!;
      const originalKey = `${storagePrefix}originals/${cut.id}.json`;
      expect(cut).toMatchObject({ kind: 'truncated', ref: originalKey, tool: 'dump' });
      expect(cut.tokens).toBeLessThanOrEqual(limit);
      expect(cut.tokens).toBeGreaterThan(limit * 0.8);
      // What the model was sent: the cut, never the whole.
      const sent = requestsWith(text)
        .flatMap((r) => r.body.messages)
        .filter((m) => m.tool_call_id === 'd1')
        .map((m) => textOf(m.content));
      expect(sent.length).toBeGreaterThan(0);
      for (const content of sent) {
        expect(content.startsWith('row 0: \nrow 1: a\n')).toBe(true);
        expect(content.endsWith('row 3999: abcdefghi')).toBe(true);
        expect(content).toContain(
          `characters cut as this result arrived (over the tool’s limit of ${limit} tokens); the whole result is stored: context_reload("${originalKey}")`,
        );
        expect(content.length).toBeLessThan(whole.length / 10);
      }
      // The whole result, stored before the cut that names it.
      expect(JSON.parse((await h.store.get(originalKey))!)).toEqual({
        role: 'tool',
        tool_call_id: 'd1',
        content: whole,
      });
      // The same call in another key order reads the same resource; other arguments another.
      const [a1, a2, a3] = results.slice(1);
      expect(a1!.resource).toMatch(/^[0-9a-f]{16}$/);
      expect(a2!.resource).toBe(a1!.resource);
      expect(a3!.resource).not.toBe(a1!.resource);
      // context_reload reads the whole back.
      await sendMessage(
        h.client,
        agentId,
        JSON.stringify({ calls: [['r1', 'context_reload', { reference: originalKey }]] }),
      );
      const reloaded = (await agentState(h.client, agentId)).messages.filter((m) => m.role === 'tool').at(-1)!;
      const page = textOf((JSON.parse((await h.store.get(reloaded.key))!) as ChatMessage).content);
      expect(page).toMatch(
        new RegExp(
          `^\\[${originalKey} · page 1 of \\d+\\]\\n\\{"role":"tool","tool_call_id":"d1","content":"row 0: \\\\nrow 1: a`,
        ),
      );
      await closeAgent(h.client, agentId);
    }
  });

  it('a turn of 60 tool steps runs to its answer: no step cap', async () => {
    const agentId = newAgentId('long-loop');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const text = JSON.stringify({ steps: 60, agentId });
    const result = await sendMessage(h.client, agentId, text);
    expect(result).toMatchObject({ reply: 'done after 60 steps', steps: 61, toolCalls: 60 });
    expect(result.stopped).toBeUndefined();
    const requests = requestsWith(text);
    expect(requests).toHaveLength(61);
    expect(requests.every((r) => r.body.tool_choice === undefined)).toBe(true);
    for (const request of requests) expect(toolPairViolations(request.body.messages)).toEqual([]);
    await closeAgent(h.client, agentId);
  });

  it('a budget of 5 steps stops the turn after 5 model calls, every call answered; the next message continues', async () => {
    const agentId = newAgentId('budget');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue, turnBudget: { steps: 5 } });
    const text = JSON.stringify({ loop: true, agentId });
    const result = await sendMessage(h.client, agentId, text);
    expect(result).toMatchObject({ turn: 1, steps: 5, toolCalls: 5, stopped: { by: 'steps', limit: 5, used: 5 } });
    expect(result.reply).toBe(turnStoppedReply({ by: 'steps', limit: 5, used: 5 }));
    expect(result.reply).toContain('Send another message');
    expect(requestsWith(text)).toHaveLength(5); // no sixth call, not even a forced text one
    const state = await agentState(h.client, agentId);
    expect(state.turns).toBe(1);
    expect(state.messages.map((m) => m.role)).toEqual([
      'user',
      ...Array.from({ length: 5 }, () => ['assistant', 'tool']).flat(),
    ]);
    expect(state.messages.some((m) => m.preview.includes('turn stopped'))).toBe(false); // not stored as the model's
    expect(result.replyId).toBe(state.messages.at(-2)!.id);

    // The next message continues from there: its request holds the whole stopped turn, every call answered.
    const next = JSON.stringify({ steps: 2, agentId });
    const continued = await sendMessage(h.client, agentId, next);
    expect(continued).toMatchObject({ turn: 2, reply: 'done after 2 steps', steps: 3, toolCalls: 2 });
    expect(continued.stopped).toBeUndefined();
    const first = requestsWith(next)[0]!.body.messages;
    expect(toolPairViolations(first)).toEqual([]);
    expect(first.map((m) => m.role)).toEqual([...state.messages.map((m) => m.role), 'user']);
    await closeAgent(h.client, agentId);
  });

  it('maxSteps of agents started before turn budgets is their step budget', async () => {
    const agentId = newAgentId('loop');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue, maxSteps: 2 });
    const text = JSON.stringify({ loop: true, agentId });
    const result = await sendMessage(h.client, agentId, text);
    expect(result).toMatchObject({ steps: 2, toolCalls: 2, stopped: { by: 'steps', limit: 2, used: 2 } });
    const requests = requestsWith(text);
    expect(requests.map((r) => r.body.tool_choice ?? 'auto')).toEqual(['auto', 'auto']);
    for (const request of requests) expect(toolPairViolations(request.body.messages)).toEqual([]);
    const state = await agentState(h.client, agentId);
    expect(state.messages.at(-1)!.role).toBe('tool');
    await closeAgent(h.client, agentId);
    await agentHandle(h.client, agentId).result();
  });

  it("token and time budgets: the provider's usage, or longrun's count when it reports none; workflow time", async () => {
    // Reported usage: 1,010 tokens a call, so a budget of 2,500 stops the turn after the third.
    const reported = newAgentId('tokens');
    await startAgent(h.client, {
      agentId: reported,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      turnBudget: { tokens: 2_500 },
    });
    const usage = await sendMessage(h.client, reported, JSON.stringify({ loop: true, usage: [1_000, 10], reported }));
    expect(usage).toMatchObject({ steps: 3, stopped: { by: 'tokens', limit: 2_500, used: 3_030 } });
    expect(usage.reply).toContain('token budget: 3,030 tokens used of 2,500 tokens allowed');

    // No usage reported (zero): the request and the reply as counted, which any call exceeds at 1 token.
    const counted = newAgentId('tokens');
    await startAgent(h.client, {
      agentId: counted,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      turnBudget: { tokens: 1 },
    });
    const one = await sendMessage(h.client, counted, JSON.stringify({ loop: true, counted }));
    expect(one).toMatchObject({ steps: 1, toolCalls: 1, stopped: { by: 'tokens', limit: 1 } });
    const state = await agentState(h.client, counted);
    // What the call sent (every message but the reply and its result, and the fixed tokens) and the reply.
    expect(one.stopped!.used).toBe(state.contextTokens - state.messages.at(-1)!.tokens);

    const timed = newAgentId('seconds');
    await startAgent(h.client, {
      agentId: timed,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      turnBudget: { seconds: 1 },
    });
    const started = Date.now();
    const time = await sendMessage(h.client, timed, JSON.stringify({ loop: true, timed }));
    expect(time).toMatchObject({ stopped: { by: 'seconds', limit: 1 } });
    expect(time.stopped!.used).toBeGreaterThanOrEqual(1);
    expect(time.steps).toBeGreaterThan(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    for (const agentId of [reported, counted, timed]) await closeAgent(h.client, agentId);
  });

  it('a bad budget is refused by the client, and fails the workflow cleanly when started without it', async () => {
    const agentId = newAgentId('bad-budget');
    await expect(
      startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue, turnBudget: { steps: 0 } }),
    ).rejects.toThrow('turnBudget.steps: 0 is not allowed (an integer from 1 to 1,000,000)');
    const handle = await h.client.workflow.start(AGENT_WORKFLOW, {
      workflowId: agentWorkflowId(agentId),
      taskQueue: h.taskQueue,
      args: [{ agentId, model: 'gpt-4o-mini', turnBudget: { seconds: 1e9 } }],
    });
    const failure: unknown = await (handle.result() as Promise<unknown>).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(((failure as Error).cause as Error).message).toBe(
      'turnBudget.seconds: 1000000000 is not allowed (an integer from 1 to 2,592,000)',
    );
  });

  it('a tool that keeps failing fails the turn after its retries; the unanswered call leaves the context', async () => {
    const agentId = newAgentId('broken');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const text = JSON.stringify({
      calls: [
        ['b1', 'add', { a: 1, b: 1 }],
        ['b2', 'broken', {}],
      ],
    });
    const failed = await sendMessage(h.client, agentId, text).catch((error: unknown) => error);
    expect(((failed as Error).cause as Error).message).toBe('runTool failed: disk on fire');
    expect(brokenCalls).toBe(3);
    const state = await agentState(h.client, agentId);
    expect(state.messages.map((m) => m.role)).toEqual(['user']);
    expect(state.contextTokens).toBe(state.fixedTokens! + state.messages[0]!.tokens);

    const next = JSON.stringify({ calls: [['n1', 'add', { a: 2, b: 2 }]] });
    expect((await sendMessage(h.client, agentId, next)).reply).toBe('results: 4');
    const request = h.model.requests.findLast((r) => r.body.messages.some((m) => m.content === next))!;
    expect(toolPairViolations(request.body.messages)).toEqual([]);
    expect(request.body.messages.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool']);
    await closeAgent(h.client, agentId);
  });

  it('a tool that fails for good (non-retryable) runs once, in the model call, and fails the turn with its error', async () => {
    const agentId = newAgentId('fatal');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const text = JSON.stringify({ calls: [['f1', 'fatal', {}]] });
    const failed = await sendMessage(h.client, agentId, text).catch((error: unknown) => error);
    expect(((failed as Error).cause as Error).message).toBe('runTool failed: license expired');
    expect(fatalCalls).toBe(1);
    const state = await agentState(h.client, agentId);
    expect(state.messages.map((m) => m.role)).toEqual(['user']);
    await closeAgent(h.client, agentId);
  });
});
