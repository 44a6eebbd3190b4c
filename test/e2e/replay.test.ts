/**
 * Replay safety: the histories of real agent runs (tool calls, pins, a failed turn, continue-as-new, close) replay
 * against the workflow code without a nondeterminism error. A change that breaks replay of running agents fails
 * here; such changes go behind patched().
 */
import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { agentHandle, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { pinText, unpin } from '../../client/pins.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { newAgentId, sharedBundle, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const echo = defineTool({
  name: 'echo',
  description: 'Echoes',
  parameters: { type: 'object', properties: { text: { type: 'string' } } },
  run: ({ text }) => Promise.resolve(String(text)),
});

function script(request: RecordedRequest): ScriptedReply {
  const messages = request.body.messages;
  const user = textOf(messages.findLast((m) => m.role === 'user')?.content);
  if (user.startsWith('401')) return { status: 401, error: 'bad key' };
  if (user.startsWith('pin') && messages.at(-1)!.role === 'user') {
    return {
      content: null,
      toolCalls: [
        {
          id: `p${messages.length}`,
          type: 'function',
          function: { name: 'context_pin', arguments: '{"text":"keep"}' },
        },
      ],
    };
  }
  if (user.startsWith('tool') && messages.at(-1)!.role === 'user') {
    return {
      content: null,
      toolCalls: [
        { id: `e${messages.length}`, type: 'function', function: { name: 'echo', arguments: '{"text":"hi"}' } },
      ],
    };
  }
  return { content: `reply to ${user}` };
}

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

let h: Harness;
beforeAll(async () => {
  h = await startHarness(script, [echo]);
});
afterAll(async () => {
  await h?.close();
});

describe('replay', () => {
  it('every run of a real agent replays deterministically', async () => {
    const agentId = newAgentId('replay');
    const handle = await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      systemPrompt: 'sys',
      taskQueue: h.taskQueue,
    });
    const firstRunId = (await handle.describe()).runId;
    await sendMessage(h.client, agentId, 'hello');
    await sendMessage(h.client, agentId, 'tool please');
    // Pins: a person's, the model's (context_pin, answered by the workflow), an unpin.
    await pinText(h.client, agentId, 'the launch code is 7401');
    await sendMessage(h.client, agentId, 'pin please');
    await unpin(h.client, agentId, 'pin-1');
    await sendMessage(h.client, agentId, '401 now').catch(() => undefined);
    // A run lives at least 2 s before it continues as new (workflows/continue-as-new.ts).
    await sleep(2_100);
    for (let i = 0; i < 6; i++) await sendMessage(h.client, agentId, `more ${i}`);
    await closeAgent(h.client, agentId);
    await agentHandle(h.client, agentId).result();

    // Every run of the chain, from the first to the closed one.
    const histories: History[] = [];
    let runId: string | undefined = firstRunId;
    while (runId) {
      const history: History = await h.client.workflow.getHandle(agentWorkflowId(agentId), runId).fetchHistory();
      histories.push(history);
      runId = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    }
    expect(histories.length).toBeGreaterThan(1); // it crossed a continue-as-new

    for (const history of histories) {
      await expect(
        Worker.runReplayHistory({ workflowBundle: await sharedBundle() }, history, agentWorkflowId(agentId)),
      ).resolves.toBeUndefined();
    }
  });
});
