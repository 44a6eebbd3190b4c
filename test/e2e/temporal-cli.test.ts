/** The workflow contract as the README documents it for the temporal CLI: update, signal and query by name. */
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { loadSettings } from '../../config/settings.ts';
import { TEMPORAL } from '../../stack/binaries.ts';
import { ensureBinaries } from '../../stack/setup.ts';
import { agentWorkflowId } from '../../workflows/contract.ts';
import type { AgentState, CompressionEvent, SendResult } from '../../workflows/contract.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

let h: Harness;
let temporalBinary: string;
beforeAll(async () => {
  h = await startHarness((request) => ({ content: `seen ${request.body.messages.length}` }));
  temporalBinary = (await ensureBinaries([TEMPORAL], { cacheDir: loadSettings().cacheDir })).temporal!;
});
afterAll(async () => {
  await h?.close();
});

/** Runs the temporal CLI against the test server, asynchronously (the worker runs in this process). */
function temporal(...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      temporalBinary,
      [
        ...args,
        '--address',
        String(h.temporal.connectionOptions.address),
        '--namespace',
        h.temporal.namespace,
        '-o',
        'json',
      ],
      { timeout: 30_000 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
    );
  });
}

describe('the temporal CLI on an agent', () => {
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

  it('signal compact forces a compaction; query compressionEvents and stats read it back', async () => {
    const agentId = newAgentId('tcli-compact');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compression: { reserveRatio: 0, keepTurns: 1, keepMessages: 0 },
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
      '{"strategy":"truncate-rounds"}',
    );
    await expect.poll(async () => (await agentState(h.client, agentId)).compressions, { timeout: 20_000 }).toBe(1);
    const events = JSON.parse(
      await temporal('workflow', 'query', '--workflow-id', workflowId, '--type', 'compressionEvents'),
    ) as { queryResult: CompressionEvent[][] };
    expect(events.queryResult[0]).toHaveLength(1);
    expect(events.queryResult[0]![0]).toMatchObject({ seq: 1, trigger: 'forced', strategies: ['truncate-rounds'] });
    const stats = JSON.parse(await temporal('workflow', 'query', '--workflow-id', workflowId, '--type', 'stats')) as {
      queryResult: { count: number }[];
    };
    expect(stats.queryResult[0]!.count).toBe(1);
  });
});
