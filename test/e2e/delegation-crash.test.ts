/**
 * A sub-agent survives its worker's crash like any agent (issue 30, item 4): the parent delegates to a child whose
 * tool is running when the worker process is killed (SIGKILL); a new worker starts, the child's tool call runs again
 * there (its heartbeat timed out), the child answers, and the parent's turn, which waited durably, gets the answer.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentHandle, agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { newAgentId } from '../support/harness.ts';
import { toolWorkers } from '../support/tool-workers.ts';

const dir = mkdtempSync(join(tmpdir(), 'longrun-delegation-crash-'));
const taskQueue = `delegation-crash-${Date.now()}`;
let model: ChatServer;
const workers = toolWorkers(dir, taskQueue);
const { toolLog, release } = workers;
const startWorker = () => workers.start(model.baseURL);
const toolRuns = () => readFileSync(toolLog, 'utf8').split('\n').filter(Boolean);

const PARENT = 'parent: you delegate.';

beforeAll(async () => {
  // The parent delegates; the child (the default sub-agent prompt) calls slow_side_effect, then answers.
  model = await startChatServer((request) => {
    const messages = request.body.messages;
    const last = messages.at(-1)!;
    if (textOf(messages[0]?.content) === PARENT) {
      if (last.role === 'tool') return { content: `parent got: ${textOf(last.content)}` };
      const task = { task: 'Do the slow thing.' };
      return {
        content: null,
        toolCalls: [
          { id: 'call-deleg', type: 'function', function: { name: 'delegate', arguments: JSON.stringify(task) } },
        ],
      };
    }
    if (last.role === 'tool') return { content: `child finished: ${textOf(last.content)}` };
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

describe('a sub-agent whose worker is killed mid-task', () => {
  it('finishes on a new worker, and the parent that waited gets its answer', async () => {
    const stack = inject('stack');
    const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
    try {
      const first = await startWorker();
      const parentId = newAgentId('deleg-crash');
      await startAgent(client, {
        agentId: parentId,
        model: 'gpt-4o-mini',
        taskQueue,
        systemPrompt: PARENT,
        delegation: {},
      });
      const turn = sendMessage(client, parentId, 'delegate it');
      while (toolRuns().length === 0) await sleep(100); // the child's tool runs on the first worker
      const childId = `${parentId}.d1-1-1`;
      expect((await agentHandle(client, childId).describe()).status.name).toBe('RUNNING');
      first.kill('SIGKILL');
      await startWorker();
      while (toolRuns().length < 2) await sleep(200); // its retry runs on the second worker
      writeFileSync(release, '');

      const result = await turn;
      expect(result.reply).toContain(`parent got: [delegated to sub-agent ${childId}: done]`);
      expect(result.reply).toContain('child finished: released');
      expect(toolRuns()).toEqual(['call-slow', 'call-slow']);
      const child = await agentState(client, childId);
      expect(child).toMatchObject({ status: 'closed', task: { parent: parentId, steps: 2, toolCalls: 1 } });
      await closeAgent(client, parentId);
    } finally {
      await client.connection.close();
    }
  }, 180_000);
});
