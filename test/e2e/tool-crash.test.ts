/**
 * A worker killed while a tool runs: the tool runs in the model call's activity (a step of plain calls), which
 * heartbeats, so the server notices the dead worker within the heartbeat timeout (not the start-to-close timeout) and
 * the activity runs again on another worker: it reads the reply the first attempt stored back (the model is not asked
 * again) and runs the call again, with the same call id (tools are called at least once; `callId` lets one with side
 * effects dedupe). The turn completes.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import protos from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { interruptAgent } from '../../client/control.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { newAgentId } from '../support/harness.ts';
import { eventsOfAllRuns } from '../support/planned.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { toolWorkers } from '../support/tool-workers.ts';

const { TimeoutType } = protos.temporal.api.enums.v1;
const dir = mkdtempSync(join(tmpdir(), 'longrun-tool-crash-'));
const taskQueue = `tool-crash-${Date.now()}`;
let model: ChatServer;
const workers = toolWorkers(dir, taskQueue);
const { toolLog, release } = workers;
const startWorker = () => workers.start(model.baseURL);

/** Lines of the tool's log: the call id of each run. */
const toolRuns = () => readFileSync(toolLog, 'utf8').split('\n').filter(Boolean);

beforeAll(async () => {
  model = await startChatServer((request) => {
    const last = request.body.messages.at(-1);
    if (last?.role === 'tool') {
      const results = request.body.messages.filter((m) => m.role === 'tool').map((m) => textOf(m.content));
      return { content: `the tools said: ${results.join(' + ')}` };
    }
    if (last?.role === 'user' && textOf(last.content).startsWith('both')) {
      return {
        content: null,
        toolCalls: [
          { id: 'call-quick', type: 'function', function: { name: 'quick_side_effect', arguments: '{}' } },
          { id: 'call-slow-2', type: 'function', function: { name: 'slow_side_effect', arguments: '{}' } },
        ],
      };
    }
    return {
      content: null,
      toolCalls: [{ id: 'call-slow', type: 'function', function: { name: 'slow_side_effect', arguments: '{}' } }],
    };
  });
}, 60_000);

afterAll(async () => {
  writeFileSync(release, '');
  await workers.stop();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a worker killed while a tool runs', () => {
  it('the heartbeat timeout notices it; the call runs again on another worker with the same call id, the model is not asked again; the turn completes', async () => {
    const stack = inject('stack');
    const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
    try {
      const first = await startWorker();
      const agentId = newAgentId('tool-crash');
      await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
      const turn = sendMessage(client, agentId, 'do the slow thing');
      while (toolRuns().length === 0) await sleep(100); // the tool is running on the first worker
      first.kill('SIGKILL');
      await startWorker();
      while (toolRuns().length < 2) await sleep(200); // the retry runs it on the second worker
      writeFileSync(release, '');

      expect(await turn).toMatchObject({ turn: 1, reply: 'the tools said: released', toolCalls: 1 });
      expect(toolRuns()).toEqual(['call-slow', 'call-slow']);
      // One request for the step (its reply, stored, was read back by the retry), one after the tool's result.
      expect(model.requests).toHaveLength(2);
      expect(model.requests[1]!.body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call-slow' });
      // The first attempt ended by its heartbeat timeout, not its start-to-close timeout.
      const events = await eventsOfAllRuns(client, agentWorkflowId(agentId));
      const names = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
      expect(names).not.toContain('runTool');
      const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel')!;
      const started = events.find(
        (e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled.eventId),
      )!.activityTaskStartedEventAttributes!;
      expect(started.attempt).toBe(2);
      expect(started.lastFailure?.timeoutFailureInfo?.timeoutType).toBe(TimeoutType.TIMEOUT_TYPE_HEARTBEAT);
      const state = await agentState(client, agentId);
      expect(state.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
      await closeAgent(client, agentId);
    } finally {
      await client.connection.close();
    }
  }, 120_000);
});

describe('a worker killed while one of a step’s tools runs and the other has answered', () => {
  mkdirSync(join(dir, 'second'));
  const second = toolWorkers(join(dir, 'second'), `${taskQueue}-second`);
  afterAll(async () => {
    writeFileSync(second.release, '');
    await second.stop();
  });

  it('the retry stores the answered result without running its tool again, and runs the other again', async () => {
    const stack = inject('stack');
    const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
    const runs = () => readFileSync(second.toolLog, 'utf8').split('\n').filter(Boolean);
    try {
      const first = await second.start(model.baseURL);
      const agentId = newAgentId('tool-crash-two');
      await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue: `${taskQueue}-second` });
      const asked = model.requests.length;
      const turn = sendMessage(client, agentId, 'both things');
      while (runs().length < 2) await sleep(100); // both ran; the slow one waits
      await sleep(2_500); // the quick one's result has ridden on a heartbeat
      first.kill('SIGKILL');
      await second.start(model.baseURL);
      while (runs().length < 3) await sleep(200); // the retry runs the slow one again
      writeFileSync(second.release, '');

      expect(await turn).toMatchObject({ reply: 'the tools said: quick done + released', toolCalls: 2 });
      expect(runs().sort()).toEqual(['call-slow-2', 'call-slow-2', 'quick call-quick']);
      expect(model.requests.length - asked).toBe(2); // the step's reply was read back, not asked for again
      const state = await agentState(client, agentId);
      expect(state.messages.map((m) => m.toolCallId ?? m.role)).toEqual([
        'user',
        'assistant',
        'call-quick',
        'call-slow-2',
        'assistant',
      ]);
      await closeAgent(client, agentId);
    } finally {
      await client.connection.close();
    }
  }, 120_000);
});

describe('an interrupt while the worker running the step is dead', () => {
  mkdirSync(join(dir, 'third'));
  const third = toolWorkers(join(dir, 'third'), `${taskQueue}-third`);
  afterAll(async () => {
    writeFileSync(third.release, '');
    await third.stop();
  });

  it('the step its cancel cannot reach ends at its heartbeat timeout as interrupted, not failed; the agent goes on', async () => {
    const stack = inject('stack');
    const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
    const runs = () => readFileSync(third.toolLog, 'utf8').split('\n').filter(Boolean);
    try {
      const first = await third.start(model.baseURL);
      const agentId = newAgentId('tool-crash-interrupt');
      await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue: `${taskQueue}-third` });
      const turn = sendMessage(client, agentId, 'do the slow thing');
      while (runs().length === 0) await sleep(100); // the tool runs in the step's activity on the first worker
      // The second worker polls before the first is killed: it takes the interrupt at once, well within the step's
      // heartbeat timeout, and asks the step's activity to cancel. That activity's worker is gone, so only the
      // heartbeat timeout ends it (and, a cancel being asked, no other attempt starts).
      await third.start(model.baseURL);
      first.kill('SIGKILL');
      const interrupted = await interruptAgent(client, agentId);
      expect(interrupted).toMatchObject({ interrupted: true, turn: 1, step: 1 });
      expect(await turn).toMatchObject({ turn: 1, interrupted: { step: 1 } });
      expect(runs()).toEqual(['call-slow']);

      // Every run's: the tests' stack suggests continue-as-new after 40 events, which the agent may take after the turn.
      const events = await eventsOfAllRuns(client, agentWorkflowId(agentId));
      const timedOut = events.filter((e) => e.activityTaskTimedOutEventAttributes);
      expect(timedOut).toHaveLength(1);
      expect(timedOut[0]!.activityTaskTimedOutEventAttributes!.failure?.timeoutFailureInfo?.timeoutType).toBe(
        TimeoutType.TIMEOUT_TYPE_HEARTBEAT,
      );
      // The reply the cancelled activity may have stored is not the context's (the model call did not complete):
      // no call is left without its result, and the agent takes the next message.
      writeFileSync(third.release, '');
      const next = await sendMessage(client, agentId, 'do the slow thing again');
      expect(next).toMatchObject({ turn: 2, toolCalls: 1 });
      expect(next.reply).toMatch(/released$/);
      const state = await agentState(client, agentId);
      expect(state.messages.map((m) => m.toolCallId ?? m.role)).toEqual([
        'user',
        'user',
        'assistant',
        'call-slow',
        'assistant',
      ]);
      await closeAgent(client, agentId);
    } finally {
      await client.connection.close();
    }
  }, 120_000);
});
