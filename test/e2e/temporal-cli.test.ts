/** The workflow contract as docs/temporal-ui.md documents it for the temporal CLI: update, signal and query by name. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionEvents } from '../../client/reads.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import type { AgentState } from '../../contract/state.ts';
import type { CompactionEvent, InterruptResult, SendResult, SteerResult } from '../../contract/results.ts';
import { renderState } from '../../commands/render.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { startWithTemporalCli, temporalCli } from '../support/temporal-cli.ts';

let h: Harness;
let temporal: (...args: string[]) => Promise<string>;
beforeAll(async () => {
  h = await startHarness((request) => ({ content: `seen ${request.body.messages.length}` }));
  temporal = await temporalCli(h);
});
afterAll(async () => {
  await h?.close();
});

describe('the temporal CLI on an agent', () => {
  it('workflow start with a compaction policy (backgroundRatio), then query state', async () => {
    const agentId = newAgentId('tcli');
    const workflowId = agentWorkflowId(agentId);
    await startWithTemporalCli(temporal, h.taskQueue, {
      agentId,
      model: 'gpt-4o-mini',
      compaction: { backgroundRatio: 0.6 },
    });
    await sendMessage(h.client, agentId, 'hello');
    const state = JSON.parse(await temporal('workflow', 'query', '--workflow-id', workflowId, '--type', 'state')) as {
      queryResult: [AgentState];
    };
    expect(state.queryResult[0].policy).toMatchObject({ preset: 'default', backgroundRatio: 0.6 });
  });

  it('update send, signal message, query state, signal close', async () => {
    const agentId = newAgentId('tcli');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const workflowId = agentWorkflowId(agentId);

    const updated = JSON.parse(
      await temporal(
        'workflow',
        'update',
        'execute',
        '--workflow-id',
        workflowId,
        '--name',
        'send',
        '--input',
        '{"text":"from the CLI"}',
      ),
    ) as { result: SendResult };
    expect(updated.result).toMatchObject({ turn: 1, reply: 'seen 1' });

    await temporal(
      'workflow',
      'signal',
      '--workflow-id',
      workflowId,
      '--name',
      'message',
      '--input',
      '{"text":"queued"}',
    );
    await expect.poll(async () => (await agentState(h.client, agentId)).turns, { timeout: 20_000 }).toBe(2);

    const queried = JSON.parse(await temporal('workflow', 'query', '--workflow-id', workflowId, '--type', 'state')) as {
      queryResult: AgentState[];
    };
    expect(queried.queryResult[0]).toMatchObject({ agentId, turns: 2, status: 'running' });

    await temporal('workflow', 'signal', '--workflow-id', workflowId, '--name', 'close');
    await expect.poll(async () => (await agentState(h.client, agentId)).status, { timeout: 20_000 }).toBe('closed');
  });

  it('steer, interrupt and approveTool by name, as docs/temporal-ui.md shows them', async () => {
    const agentId = newAgentId('tcli-reach');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const workflowId = agentWorkflowId(agentId);
    const update = (name: string, input: string) =>
      temporal('workflow', 'update', 'execute', '--workflow-id', workflowId, '--name', name, '--input', input);
    // A steer to an idle agent opens a turn; as a Signal too.
    const steered = JSON.parse(await update('steer', '{"text":"use metric units"}')) as { result: SteerResult };
    expect(steered.result).toMatchObject({ turn: 1, step: 1, opened: true });
    await expect.poll(async () => (await agentState(h.client, agentId)).turns, { timeout: 20_000 }).toBe(1);
    await temporal('workflow', 'signal', '--workflow-id', workflowId, '--name', 'steer', '--input', '{"text":"again"}');
    await expect.poll(async () => (await agentState(h.client, agentId)).turns, { timeout: 20_000 }).toBe(2);
    // Nothing to interrupt on an idle agent; the Signal without input is taken, not dropped.
    const interrupted = JSON.parse(await update('interrupt', '{}')) as { result: InterruptResult };
    expect(interrupted.result).toMatchObject({ interrupted: false, reason: 'no turn in progress' });
    await temporal('workflow', 'signal', '--workflow-id', workflowId, '--name', 'interrupt');
    await sendMessage(h.client, agentId, 'still here?');
    const state = await agentState(h.client, agentId);
    expect(state).toMatchObject({ status: 'running', turns: 3 });
    expect(state.droppedSignals?.interrupt).toBeUndefined();
    // A call that does not wait for approval is refused by the validator, naming it.
    await expect(update('approveTool', '{"callId":"deploy-7"}')).rejects.toThrow(/deploy-7/);
    await expect(update('denyTool', '{"callId":"deploy-7","reason":"not now"}')).rejects.toThrow(/deploy-7/);
  });

  it('signal compact forces a compaction; query compactionEvents and stats read it back', async () => {
    const agentId = newAgentId('tcli-compact');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0 },
    });
    for (let i = 1; i <= 4; i++) await sendMessage(h.client, agentId, `message ${i}`);
    const workflowId = agentWorkflowId(agentId);
    await temporal(
      'workflow',
      'signal',
      '--workflow-id',
      workflowId,
      '--name',
      'compact',
      '--input',
      '{"strategy":"truncate-rounds","evenIfLarger":true}',
    );
    await expect.poll(async () => (await agentState(h.client, agentId)).compactions, { timeout: 20_000 }).toBe(1);
    const events = JSON.parse(
      await temporal('workflow', 'query', '--workflow-id', workflowId, '--type', 'compactionEvents'),
    ) as { queryResult: CompactionEvent[][] };
    expect(events.queryResult[0]).toHaveLength(1);
    expect(events.queryResult[0]![0]).toMatchObject({ seq: 1, trigger: 'forced', strategies: ['truncate-rounds'] });
    const stats = JSON.parse(await temporal('workflow', 'query', '--workflow-id', workflowId, '--type', 'stats')) as {
      queryResult: { count: number }[];
    };
    expect(stats.queryResult[0]!.count).toBe(1);
    // Past the last event: an empty list (the temporal CLI prints an empty list as `null`; the SDK gets `[]`).
    expect(await compactionEvents(h.client, agentId, { since: 1 })).toEqual([]);
    // The ledger names the goal (the user's first message) from the first turn, whatever the compaction did.
    const ledger = JSON.parse(await temporal('workflow', 'query', '--workflow-id', workflowId, '--type', 'ledger')) as {
      queryResult: { goal: string }[];
    };
    expect(ledger.queryResult[0]!.goal).toBe('message 1');
  });

  it('invalid Signals from other senders are dropped and counted by name', async () => {
    const agentId = newAgentId('tcli-drop');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const workflowId = agentWorkflowId(agentId);
    const signal = (name: string, input: unknown) =>
      temporal('workflow', 'signal', '--workflow-id', workflowId, '--name', name, '--input', JSON.stringify(input));
    await signal('message', { text: ' ' });
    await signal('compact', { instructions: 'x'.repeat(4_001) });
    await signal('compact', { strategy: 'nope' });
    await expect
      .poll(async () => (await agentState(h.client, agentId)).droppedSignals, { timeout: 10_000 })
      .toEqual({ message: 1, compact: 2 });
    expect(renderState(await agentState(h.client, agentId))).toContain(
      'dropped  invalid signals: 1 message, 2 compact',
    );
  });

  it('describes every Update, Signal and Query it handles (the UI and `temporal workflow metadata` show them)', async () => {
    const agentId = newAgentId('tcli-meta');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'hello');
    const metadata = JSON.parse(await temporal('workflow', 'metadata', '--workflow-id', agentWorkflowId(agentId))) as {
      queryResult: [{ definition: Record<string, { name: string; description?: string }[]> }];
    };
    const described = Object.fromEntries(
      ['queryDefinitions', 'signalDefinitions', 'updateDefinitions'].map((kind) => [
        kind,
        Object.fromEntries((metadata.queryResult[0].definition[kind] ?? []).map((d) => [d.name, d.description ?? ''])),
      ]),
    );
    for (const name of ['state', 'context', 'compactionEvents', 'stats', 'ledger', 'progress']) {
      expect(described.queryDefinitions![name], name).toMatch(/\w{4,}/);
    }
    for (const name of ['message', 'close', 'compact'])
      expect(described.signalDefinitions![name], name).toMatch(/\w{4,}/);
    for (const name of ['send', 'close', 'compact', 'pin', 'unpin']) {
      expect(described.updateDefinitions![name], name).toMatch(/\w{4,}/);
    }
  });
});
