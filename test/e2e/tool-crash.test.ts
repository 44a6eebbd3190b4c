/**
 * A worker killed while a tool runs: the tool's activity heartbeats, so the server notices the dead worker within the
 * heartbeat timeout (not the 5-minute start-to-close timeout) and the call runs again on another worker, with the
 * same call id (tools are called at least once; `callId` lets one with side effects dedupe). The turn completes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import protos from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentHandle, agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { newAgentId } from '../support/harness.ts';
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
    if (last?.role === 'tool') return { content: `the tool said: ${textOf(last.content)}` };
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
  it('the heartbeat timeout notices it; the call runs again on another worker with the same call id; the turn completes', async () => {
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

      expect(await turn).toMatchObject({ turn: 1, reply: 'the tool said: released', toolCalls: 1 });
      expect(toolRuns()).toEqual(['call-slow', 'call-slow']);
      // The first attempt ended by its heartbeat timeout, not its start-to-close timeout.
      const events = (await agentHandle(client, agentId).fetchHistory()).events ?? [];
      const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool')!;
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
