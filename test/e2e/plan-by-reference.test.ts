/**
 * A plan after tool calls goes by reference (issue 29, item 5): the plan step derives the records of the messages
 * since the last compaction from their stored bodies, and what was stored beside a tool result (the tool, the
 * resource, a cut and its original: by `runTool`'s code, in the step's model call) makes them the records the workflow
 * holds, so the digest matches and the workflow does not send them. Covered: results of a tool run in the model
 * call, one read twice (the same resource), one
 * cut as it arrived (`maxResultTokens`), calls the workflow answers itself (`context_budget`, `context_pin`) and a
 * call denied when nobody approved it in time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { temporal } from '@temporalio/proto';
import { defineTool } from '../../activities/tools.ts';
import { agentState, closeAgent, compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import type { CallModelInput, CallModelPayload, RunToolInput } from '../../contract/activities.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import { isSummaryRequest, newAgentId, startHarness } from '../support/harness.ts';
import { decoded, eventsOfAllRuns, plansOf } from '../support/planned.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import type { Harness } from '../support/harness.ts';

const read = defineTool({
  name: 'read',
  description: 'Reads a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } } },
  run: ({ path }) => Promise.resolve(`contents of ${String(path)}: the queue consumer retries 3 times`),
});
const dump = defineTool({
  name: 'dump',
  description: 'Dumps a long log',
  parameters: { type: 'object', properties: {} },
  maxResultTokens: 60,
  run: () => Promise.resolve(Array.from({ length: 200 }, (_, i) => `log line ${i}: worker ${i % 7} idle`).join('\n')),
});
const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys',
  parameters: { type: 'object', properties: { target: { type: 'string' } } },
  approval: 'always',
  run: ({ target }) => Promise.resolve(`deployed ${String(target)}`),
});

/** The turn's calls, one per step, then an answer. */
const CALLS: [name: string, args: unknown][] = [
  ['read', { path: 'a.txt' }],
  ['dump', {}],
  ['context_budget', {}],
  ['context_pin', { text: 'the queue consumer listens on port 8080' }],
  ['deploy', { target: 'prod' }],
  ['read', { path: 'a.txt' }],
];

function script(request: RecordedRequest): ScriptedReply {
  if (isSummaryRequest(request)) {
    return {
      content: JSON.stringify({
        task_overview: 'Inspect the queue consumer.',
        current_state: 'Files read.',
        important_discoveries: 'It retries 3 times.',
        next_steps: 'Go on.',
        context_to_preserve: 'port 8080',
      }),
    };
  }
  const messages = request.body.messages;
  const last = messages.at(-1)!;
  if (last.role === 'user') {
    if (!textOf(last.content).startsWith('work')) return { content: `noted: ${textOf(last.content)}` };
    const [name, args] = CALLS[0]!;
    return {
      content: null,
      toolCalls: [{ id: 'c-1', type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    };
  }
  const lastCall = messages.findLast((m) => m.tool_calls?.[0]?.id.startsWith('c-'))?.tool_calls?.[0]?.id;
  const done = lastCall ? Number(lastCall.slice(2)) : 0;
  if (done >= CALLS.length) return { content: 'done' };
  const [name, args] = CALLS[done]!;
  const id = `c-${done + 1}`;
  return { content: null, toolCalls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] };
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(script, [read, dump, deploy]);
});
afterAll(async () => {
  await h?.close();
});

type Event = temporal.api.history.v1.IHistoryEvent;

/** Each activity of the agent's history: its type, its input and its result. */
function activitiesOf(events: Event[]): { type: string; input: Record<string, unknown>; result?: unknown }[] {
  const scheduled = new Map<string, { type: string; input: Record<string, unknown>; result?: unknown }>();
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) scheduled.set(String(e.eventId), { type: s.activityType!.name!, input: decoded(s.input?.payloads?.[0]) });
    const done = e.activityTaskCompletedEventAttributes;
    const activity = done && scheduled.get(String(done.scheduledEventId));
    if (activity) activity.result = decoded(done.result?.payloads?.[0]);
  }
  return [...scheduled.values()];
}

describe('a plan after tool calls', () => {
  it(
    'goes by reference: the records it derives are the ones the workflow holds, none re-sent',
    {
      timeout: 60_000,
    },
    async () => {
      const agentId = newAgentId('plan-ref');
      await startAgent(h.client, {
        agentId,
        model: 'gpt-4o-mini',
        taskQueue: h.taskQueue,
        toolApproval: { tools: ['deploy'], timeoutSeconds: 1, onTimeout: 'deny' },
        compaction: { reserveRatio: 0, keepTurns: 1 },
      });
      await sendMessage(h.client, agentId, 'note: the consumer is in queue.ts');
      expect((await sendMessage(h.client, agentId, 'work on the queue consumer')).reply).toBe('done');
      await sendMessage(h.client, agentId, 'note: and in worker.ts');
      await sendMessage(h.client, agentId, 'note: the tests are in test/');
      const state = await agentState(h.client, agentId);
      const results = state.messages.filter((m) => m.role === 'tool');
      // What the test covers: results the tools' code stored (one cut), the workflow's own answers, a denial.
      expect(results.map((m) => m.tool ?? null)).toEqual(['read', 'dump', null, null, null, 'read']);
      expect(results[1]).toMatchObject({ kind: 'truncated' });
      expect(results[0]!.resource).toBeDefined();
      expect(results[0]!.resource).toBe(results[5]!.resource);
      expect(results[4]!.preview).toMatch(/^\[denied\]/);
      const compacted = await compactAgent(h.client, agentId, { strategy: 'truncate-rounds', evenIfLarger: true });
      expect(compacted.compacted, compacted.reason).toBe(true);
      const plans = plansOf(await eventsOfAllRuns(h.client, agentWorkflowId(agentId)));
      expect(plans.map((p) => p.outcome?.reason)).not.toContain('records differ');
      expect(plans).toHaveLength(1);
      expect(plans[0]!.contextRef).toBeDefined();
      expect(plans[0]!.contextRef!.tail).toBeUndefined();
      expect(plans[0]!.outcome!.action).toBe('compact');
      await closeAgent(h.client, agentId);
    },
  );

  it(
    'a reply that calls tools comes back without its text and its calls’ arguments; runTool reads them from the stored reply',
    {
      timeout: 60_000,
    },
    async () => {
      const agentId = newAgentId('lean-reply');
      await startAgent(h.client, {
        agentId,
        model: 'gpt-4o-mini',
        taskQueue: h.taskQueue,
        toolApproval: { tools: ['deploy'], timeoutSeconds: 1, onTimeout: 'deny' },
      });
      const seen = h.model.requests.length;
      const sent = await sendMessage(h.client, agentId, 'work, thinking aloud');
      expect(sent.reply).toBe('done');
      // The model that served it, though no result in the history names it (it is the model asked for).
      expect(sent.servedBy).toBe('gpt-4o-mini');
      const activities = activitiesOf(await eventsOfAllRuns(h.client, agentWorkflowId(agentId)));
      const replies = activities
        .filter((a) => a.type === 'callModel')
        .map((a) => (a.result as CallModelPayload).reply!)
        .filter((reply) => reply.toolCalls.length > 0);
      expect(replies).toHaveLength(CALLS.length);
      const payloads = activities.filter((a) => a.type === 'callModel').map((a) => a.result as CallModelPayload);
      expect(payloads.every((p) => p.reply?.servedBy === undefined && p.reply?.record.id === undefined)).toBe(true);
      for (const reply of replies) {
        expect(reply.content).toBeUndefined(); // the text is in the stored reply (a lean payload: absent is empty)
        const [call] = reply.toolCalls;
        // Only the calls the workflow answers itself keep their arguments.
        if (call!.function.name.startsWith('context_')) expect(call!.function.arguments).toBeDefined();
        else expect(call!.function.arguments).toBeUndefined();
      }
      // The plain calls ran in their step's model call (its result has their records, without what the workflow
      // knows: id, role, call id); the call waiting for approval went to runTool.
      const ran = activities
        .filter((a) => a.type === 'callModel')
        .flatMap((a) => (a.result as CallModelPayload).toolResults ?? [])
        .filter((record) => record !== null);
      expect(ran.map((r) => r.tool)).toEqual(['read', 'dump', 'read']);
      for (const record of ran) expect(Object.keys(record)).not.toContain('toolCallId');
      const runs = activities.filter((a) => a.type === 'runTool').map((a) => a.input as unknown as RunToolInput);
      const nameOf = new Map(replies.flatMap((reply) => reply.toolCalls.map((c) => [c.id, c.function.name] as const)));
      expect(runs.map((r) => nameOf.get(r.call.id))).toEqual(['deploy']);
      for (const run of runs) {
        // The call by its id alone: its name and arguments are in the stored reply, which runTool reads.
        expect(run.call).toEqual({ id: expect.any(String) as string });
        expect(run.replyId).toMatch(/^m\d+$/);
      }
      // The tool ran with the arguments of the stored reply, and a call waiting for approval showed them.
      const results = (await agentState(h.client, agentId)).messages.filter((m) => m.role === 'tool');
      expect(results[0]!.preview).toContain('contents of a.txt');
      const asked = activities.find(
        (a) => a.type === 'runTool' && (a.result as { approvalNeeded?: true }).approvalNeeded,
      );
      expect(asked!.result).toEqual({ approvalNeeded: true, arguments: '{"target":"prod"}' });
      // The budget note: its figures in the history, its text in every request the model got.
      const calls = activities.filter((a) => a.type === 'callModel').map((a) => a.input as unknown as CallModelInput);
      expect(calls.every((c) => c.budget !== undefined && c.budgetNote === undefined)).toBe(true);
      const requests = h.model.requests.slice(seen).filter((r) => !isSummaryRequest(r));
      expect(requests.length).toBeGreaterThan(CALLS.length);
      for (const request of requests) {
        expect(textOf(request.budgetNote?.content ?? '')).toMatch(
          /^\[context budget: a note from longrun, not from the user\] Context: /,
        );
      }
      await closeAgent(h.client, agentId);
    },
  );
});
