/**
 * A tool call waiting for approval survives its worker's kill -9 (the wait is workflow state: the next worker
 * rebuilds it by replay and takes the approval), and approvals work the same in the run after a continue-as-new.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { agentHandle, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import * as api from '../../contract/agent.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { newAgentId } from '../support/harness.ts';
import { toolWorkers } from '../support/tool-workers.ts';

const dir = mkdtempSync(join(tmpdir(), 'longrun-approval-crash-'));
const taskQueue = `approval-crash-${Date.now()}`;
let model: ChatServer;
const workers = toolWorkers(dir, taskQueue);
const startWorker = () => workers.start(model.baseURL);

/** Waits until a call waits for approval; returns its id. */
async function waitingCall(client: Client, agentId: string): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const waiting = (await agentHandle(client, agentId).query(api.progressQuery)).awaitingApproval;
    if (waiting?.length) return waiting[0]!.callId;
    await sleep(100);
  }
  throw new Error('no call waited for approval');
}

beforeAll(async () => {
  model = await startChatServer((request, index) => {
    const last = request.body.messages.at(-1)!;
    if (last.role === 'tool') return { content: `the tool said: ${textOf(last.content)}` };
    const text = textOf(last.content);
    if (!text.startsWith('deploy ')) return { content: `re: ${text}` };
    const call = { id: `call-${index}`, type: 'function' as const };
    return {
      content: null,
      toolCalls: [{ ...call, function: { name: 'guarded_deploy', arguments: '{"target":"x"}' } }],
    };
  });
}, 60_000);

afterAll(async () => {
  await workers.stop();
  await model?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a tool call waiting for approval', () => {
  it('survives a worker kill -9, is approved on the next worker, and approvals work after continue-as-new', async () => {
    const stack = inject('stack');
    const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
    try {
      const first = await startWorker();
      const agentId = newAgentId('approval-crash');
      await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
      const handle = agentHandle(client, agentId);
      const firstRun = (await handle.describe()).runId;
      const turn = sendMessage(client, agentId, 'deploy now');
      const callId = await waitingCall(client, agentId);
      first.kill('SIGKILL');
      await startWorker();
      const decided = await handle.executeUpdate(api.approveToolUpdate, { args: [{ callId }] });
      expect(decided).toEqual({ callId, tool: 'guarded_deploy', decision: 'approved' });
      expect(await turn).toMatchObject({ turn: 1, reply: 'the tool said: deployed x', toolCalls: 1 });

      // Turns until the server's suggestion (after 40 events in the tests' stack) hands the agent to a new run (a
      // run lives at least 2 s first).
      await sleep(2_100);
      for (let i = 1; i <= 15 && (await handle.describe()).runId === firstRun; i++) {
        await sendMessage(client, agentId, `turn ${i}`);
      }
      expect((await handle.describe()).runId).not.toBe(firstRun);
      const later = sendMessage(client, agentId, 'deploy again');
      const second = await waitingCall(client, agentId);
      await handle.executeUpdate(api.denyToolUpdate, { args: [{ callId: second, reason: 'frozen' }] });
      expect((await later).reply).toBe(
        'the tool said: [denied] A person denied this call of guarded_deploy, so it was not run: frozen',
      );
      await closeAgent(client, agentId);
    } finally {
      await client.connection.close();
    }
  }, 180_000);
});
