/**
 * The `runTool` activity reads both input shapes (contract/lean-calls.ts): a lean one (the call by its id, no `type`)
 * takes the defaults (counting, approval `ask`) and answers lean; one of before (a call with `type`, runs recorded
 * before reachable turns) keeps its own meaning (no approval: run it) and answers whole.
 */
import { asyncLocalStorage } from '@temporalio/activity';
import type { Context } from '@temporalio/activity';
import { noopMetricMeter } from '@temporalio/common';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.ts';
import { defineTool, ToolRegistry } from '../../activities/tools.ts';
import { leanToolInput, wholeToolResult } from '../../contract/lean-calls.ts';
import type { CallOfReply } from '../../engine/messages.ts';
import { counting, memoryStore } from '../support/stored-agent.ts';

/** An activity's context as runTool reads it: its first attempt, never cancelled, heartbeats that go nowhere. */
const context = {
  metricMeter: noopMetricMeter,
  heartbeat: () => undefined,
  info: { attempt: 1, heartbeatDetails: undefined },
  cancellationSignal: new AbortController().signal,
} as unknown as Context;
const inActivity = <T>(work: () => Promise<T>): Promise<T> => asyncLocalStorage.run(context, work);

const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys',
  parameters: { type: 'object', properties: { target: { type: 'string' } } },
  approval: 'always',
  run: ({ target }) => Promise.resolve(`deployed to ${String(target)}`),
});

async function agentWithReply() {
  const store = memoryStore();
  const activities = createActivities({ store, openai: {} as OpenAI, tools: new ToolRegistry([deploy]) });
  const agent = { agentId: 'lean-tool', life: 'l1' };
  const call: CallOfReply = { id: 'call_1', type: 'function', function: { name: 'deploy' } };
  await inActivity(() =>
    activities.storeMessage({
      ...agent,
      messageId: 'm000001',
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [{ ...call, function: { name: 'deploy', arguments: '{"target":"prod"}' } }],
      },
      counting,
    }),
  );
  return { activities, agent, call };
}

describe('runTool, with a lean input and one of before', () => {
  it('a lean input asks (absent approval is `ask`), and reads the call from the stored reply', async () => {
    const { activities, agent, call } = await agentWithReply();
    const input = leanToolInput({ ...agent, call, replyId: 'm000001', resultId: 'm000002', counting, approval: 'ask' });
    expect(input).toEqual({ ...agent, call: { id: 'call_1' }, replyId: 'm000001', resultId: 'm000002' });
    expect(await inActivity(() => activities.runTool(input))).toEqual({
      approvalNeeded: true,
      arguments: '{"target":"prod"}',
    });
  });

  it('a lean input granted runs the tool and answers lean; the workflow restores the record whole', async () => {
    const { activities, agent, call } = await agentWithReply();
    const base = { ...agent, call, replyId: 'm000001', resultId: 'm000002', counting };
    const payload = await inActivity(() => activities.runTool(leanToolInput({ ...base, approval: 'granted' })));
    expect(payload).not.toHaveProperty('id');
    expect(payload).not.toHaveProperty('toolCallId');
    expect(payload).toMatchObject({ tool: 'deploy', preview: 'deployed to prod' });
    expect(wholeToolResult(payload, { resultId: 'm000002', callId: 'call_1' })).toMatchObject({
      id: 'm000002',
      role: 'tool',
      toolCallId: 'call_1',
      tool: 'deploy',
    });
  });

  it('an input of before (its call with `type`, no approval) runs the tool and answers whole', async () => {
    const { activities, agent, call } = await agentWithReply();
    const record = await inActivity(() =>
      activities.runTool({ ...agent, call, replyId: 'm000001', resultId: 'm000002', counting }),
    );
    expect(record).toMatchObject({
      id: 'm000002',
      role: 'tool',
      toolCallId: 'call_1',
      tool: 'deploy',
      preview: 'deployed to prod',
    });
  });
});
