/**
 * An agent id used again never overwrites what an earlier life of it stored: starting a closed agent is refused,
 * `--reopen` continues it with its messages and ids, and every other path (a plain start with the default reuse
 * policy, as the temporal CLI does; a start that terminates a running agent) begins a new life with keys of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentClosedError,
  agentHandle,
  agentState,
  closeAgentAndWait,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import { reopenAgent } from '../../client/agent-reopen.ts';
import { listAgents } from '../../client/reads.ts';
import { textOf } from '../../engine/messages.ts';
import { agentPrefix } from '../../contract/keys.ts';
import { AGENT_WORKFLOW, agentWorkflowId } from '../../contract/agent.ts';
import type { AgentInput } from '../../contract/inputs.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import type { CliRun } from '../support/longrun-cli.ts';
import { startWithTemporalCli, temporalCli } from '../support/temporal-cli.ts';

let h: Harness;
let temporal: (...args: string[]) => Promise<string>;
beforeAll(async () => {
  h = await startHarness((request) => ({ content: `reply to ${textOf(request.body.messages.at(-1)!.content)}` }));
  temporal = await temporalCli(h);
});
afterAll(async () => {
  await h?.close();
});

/** Every object stored under the agent id (all its lives), with its body. */
async function objectsOf(agentId: string): Promise<Map<string, string>> {
  // The stored bodies and compactions; not the live stream's log (docs/streaming.md: segments and a hint of where it
  // ends, which a life's later writers update by design), nor the search index (storage/search-index.ts: its small
  // segments are replaced by a sealed block as the life goes on, by design too).
  const keys = (await h.store.list(agentPrefix(agentId))).filter(
    (key) => !key.includes('/stream/') && !key.includes('/search/'),
  );
  return new Map(await Promise.all(keys.map(async (key) => [key, (await h.store.get(key))!] as const)));
}

/** Every object of `before` is still there, byte for byte. */
async function expectUntouched(agentId: string, before: Map<string, string>): Promise<void> {
  const now = await objectsOf(agentId);
  for (const [key, body] of before) expect(now.get(key), key).toBe(body);
}

function longrun(...args: string[]): Promise<CliRun> {
  return runLongrun(args, { env: cliEnv(h) });
}

const input = (agentId: string): AgentInput => ({ agentId, model: 'gpt-4o-mini', systemPrompt: 'Be brief.' });

describe('one agent id, several lives', () => {
  it('a closed agent is not started again silently; --reopen continues it with its messages, ids and keys', async () => {
    const agentId = newAgentId('lives');
    await startAgent(h.client, { ...input(agentId), taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'first');
    await sendMessage(h.client, agentId, 'second');
    const closed = await closeAgentAndWait(h.client, agentId);
    const before = await objectsOf(agentId);
    expect([...before.keys()].every((key) => key.startsWith(closed.storagePrefix!))).toBe(true);
    expect(before.size).toBe(5); // the system prompt, two user messages, two replies

    // The client library and the CLI refuse, naming both ways out.
    const refused = await startAgent(h.client, { ...input(agentId), taskQueue: h.taskQueue }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AgentClosedError);
    expect((refused as Error).message).toMatch(/closed \(completed\).*new agent id.*--reopen/);
    const cli = await longrun('start', agentId);
    expect(cli.code).toBe(4);
    expect(cli.stderr).toContain(`longrun start ${agentId} --reopen`);
    expect(cli.stdout).toBe('');
    expect((await agentHandle(h.client, agentId).describe()).status.name).toBe('COMPLETED');

    // Reopen (the CLI, as a user would): the same life, the next ids, the old objects as they were.
    const reopened = await longrun('start', agentId, '--reopen');
    expect(reopened).toMatchObject({ code: 0, stdout: `reopened agent ${agentId}\n` });
    const third = await sendMessage(h.client, agentId, 'third');
    expect(third).toMatchObject({ turn: 3, messageId: 'm000006', replyId: 'm000007' });
    const state = await agentState(h.client, agentId);
    expect(state.life).toBe(closed.life);
    expect(state.status).toBe('running');
    expect(state.lastHandOver).toBe('reopened (the agent was completed)');
    expect(state.messages.map((m) => m.id)).toEqual([
      'm000001',
      'm000002',
      'm000003',
      'm000004',
      'm000005',
      'm000006',
      'm000007',
    ]);
    // The model saw the whole conversation, old messages included.
    const request = h.model.requests.find((r) => r.body.messages.at(-1)!.content === 'third')!;
    expect(request.body.messages.map((m) => m.content)).toEqual([
      'Be brief.',
      'first',
      'reply to first',
      'second',
      'reply to second',
      'third',
    ]);
    await expectUntouched(agentId, before);
    // Reopening a running agent is a no-op; --reopen with settings is a usage error.
    await reopenAgent(h.client, h.store, agentId);
    expect((await longrun('start', agentId, '--reopen', '--model', 'gpt-4o')).code).toBe(2);
    // One row per agent id in the list, its latest execution.
    const rows = (await listAgents(h.client, 1000)).filter((a) => a.agentId === agentId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.workflowStatus).toBe('RUNNING');
    await closeAgentAndWait(h.client, agentId);
  });

  it('every other path to a new run under the same id starts a new life with keys of its own', async () => {
    const agentId = newAgentId('lives-paths');
    const workflowId = agentWorkflowId(agentId);
    await startAgent(h.client, { ...input(agentId), taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'life one');
    const lives = [(await closeAgentAndWait(h.client, agentId)).life!];

    // 1. A plain start with the default reuse policy (ALLOW_DUPLICATE), as any Temporal client may do.
    let before = await objectsOf(agentId);
    await h.client.workflow.start(AGENT_WORKFLOW, { workflowId, taskQueue: h.taskQueue, args: [input(agentId)] });
    await sendMessage(h.client, agentId, 'life two');
    lives.push((await closeAgentAndWait(h.client, agentId)).life!);
    await expectUntouched(agentId, before);

    // 2. The temporal CLI.
    before = await objectsOf(agentId);
    await startWithTemporalCli(temporal, h.taskQueue, { ...input(agentId) });
    await sendMessage(h.client, agentId, 'life three');
    lives.push((await agentState(h.client, agentId)).life!);
    await expectUntouched(agentId, before);

    // 3. A start that terminates the running agent (conflict policy TERMINATE_EXISTING).
    before = await objectsOf(agentId);
    await h.client.workflow.start(AGENT_WORKFLOW, {
      workflowId,
      taskQueue: h.taskQueue,
      args: [input(agentId)],
      workflowIdConflictPolicy: 'TERMINATE_EXISTING',
    });
    await sendMessage(h.client, agentId, 'life four');
    lives.push((await closeAgentAndWait(h.client, agentId)).life!);
    await expectUntouched(agentId, before);

    expect(new Set(lives).size).toBe(4);
    // Each life's first message is its own object.
    const firsts = await Promise.all(
      lives.map(
        async (life) =>
          JSON.parse((await h.store.get(`agents/${agentId}/${life}/messages/m000002.json`))!) as { content: string },
      ),
    );
    expect(firsts.map((m) => m.content)).toEqual(['life one', 'life two', 'life three', 'life four']);
  });

  it('a terminated agent reopens from the state a worker replays', async () => {
    const agentId = newAgentId('lives-term');
    await startAgent(h.client, { ...input(agentId), taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'before the end');
    await agentHandle(h.client, agentId).terminate('test');
    const before = await objectsOf(agentId);
    await reopenAgent(h.client, h.store, agentId);
    const next = await sendMessage(h.client, agentId, 'after');
    expect(next).toMatchObject({ turn: 2, messageId: 'm000004' });
    expect((await agentState(h.client, agentId)).lastHandOver).toBe('reopened (the agent was terminated)');
    await expectUntouched(agentId, before);
    await closeAgentAndWait(h.client, agentId);
  });

  it('an agent cut off mid-step, with objects its state does not name, is not reopened over them', async () => {
    const agentId = newAgentId('lives-cut');
    await startAgent(h.client, { ...input(agentId), taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'before the end');
    const { storagePrefix } = await agentState(h.client, agentId);
    await agentHandle(h.client, agentId).terminate('test');
    // What a model call stores before its result is recorded: the next user message, then the run ends.
    const orphan = `${storagePrefix}messages/m000004.json`;
    await h.store.put(orphan, JSON.stringify({ role: 'user', content: 'stored, never recorded' }));
    const refused = await reopenAgent(h.client, h.store, agentId).catch((e: unknown) => e);
    expect((refused as Error).message).toContain(`was terminated mid-step`);
    expect((refused as Error).message).toContain(orphan);
    expect((await agentHandle(h.client, agentId).describe()).status.name).toBe('TERMINATED');
    expect(JSON.parse((await h.store.get(orphan))!)).toEqual({ role: 'user', content: 'stored, never recorded' });
  });
});
