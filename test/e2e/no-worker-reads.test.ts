/**
 * No 30-second dead end: reading an agent no worker answers for (its worker stopped, or a closed agent) answers
 * within seconds, from its result when it completed, otherwise with what Temporal knows of it and "no worker polls
 * task queue X"; and `longrun replay` leaves no agent behind in the namespace it ran in.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentHandle, agentState, closeAgentAndWait, sendMessage, startAgent } from '../../client/agents.ts';
import { AgentNotAnsweringError, NO_WORKER_VERDICT_MS } from '../../client/agent-reads.ts';
import { compactionStats } from '../../client/reads.ts';
import { connectClient } from '../../config/temporal.ts';
import type { AgentState } from '../../contract/state.ts';
import type { ReplayReport } from '../../commands/replay-report.ts';
import { agentWithCompactions, newAgentId, sharedBundle, startHarness } from '../support/harness.ts';
import { createAgentWorker } from '../../worker/worker.ts';
import { createOpenAI } from '../../llm/openai.ts';
import { taskQueuePolled } from '../../client/agent-observation.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun, STACK_TRACE } from '../support/longrun-cli.ts';

/** A read's verdict when the worker seen polling stopped (the poll outlives it), and 3 s for the process around it. */
const VERDICT_BOUND_MS = NO_WORKER_VERDICT_MS + 3_000;

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

async function harness(): Promise<Harness> {
  const h = await startHarness(() => ({ content: 'noted' }));
  harnesses.push(h);
  return h;
}

describe('reading an agent without a worker', () => {
  it('a worker whose first poll comes just after the question answers it (a task queue never polled is looked at again)', async () => {
    const h = await harness();
    const agentId = newAgentId('late-worker');
    const taskQueue = `late-${agentId}`;
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue });
    // Made, not yet polling: it starts a moment after the read has looked and seen no worker at all.
    const { worker, connection } = await createAgentWorker({
      temporal: h.temporal,
      taskQueue,
      deps: {
        store: h.store,
        openai: createOpenAI({ apiKey: 'test-key', baseURL: h.model.baseURL, timeoutMs: 10_000 }),
      },
      workflowBundle: await sharedBundle(),
    });
    try {
      const reading = agentState(h.client, agentId);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await taskQueuePolled(h.client, taskQueue)).lastPollAt).toBeUndefined(); // none ever polled
      const running = worker.run();
      try {
        const state = await reading;
        expect(state.model).toBe('gpt-4o-mini');
      } finally {
        await agentHandle(h.client, agentId).terminate('test done');
        worker.shutdown();
        await running;
      }
    } finally {
      await connection.close();
    }
  });

  it('state and events of an agent whose worker stopped: exit 1 in seconds (7), "no worker polls task queue X"', async () => {
    const h = await harness();
    const agentId = newAgentId('orphan');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'hello');
    const env = cliEnv(h);
    await h.close(); // the worker stops; the agent runs on, its task queue unpolled

    for (const args of [
      ['state', agentId],
      ['events', agentId],
      ['context', agentId],
    ]) {
      const run = await runLongrun(args, { env });
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(1);
      expect(run.ms, run.stderr).toBeLessThan(VERDICT_BOUND_MS);
      expect(run.stderr).toContain(
        `longrun: agent ${agentId} cannot be asked: no worker polls task queue ${h.taskQueue}`,
      );
      expect(run.stderr).toContain(`start one on task queue ${h.taskQueue}`);
      expect(run.stderr).not.toContain('Failed to query Workflow');
      expect(run.stderr).not.toMatch(STACK_TRACE);
      // What Temporal knows without a worker, on stdout.
      expect(run.stdout).toContain(`agent    ${agentId}`);
      expect(run.stdout).toContain('model    gpt-4o-mini');
      expect(run.stdout).toContain(`worker   no worker polls task queue ${h.taskQueue}`);
    }
    const json = await runLongrun(['state', agentId, '--json'], { env });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      answered: false,
      agentId,
      workflowStatus: 'RUNNING',
      taskQueue: h.taskQueue,
      model: 'gpt-4o-mini',
      worker: { taskQueue: h.taskQueue },
    });
    expect((JSON.parse(json.stdout) as { reason: string }).reason).toMatch(/^no worker polls task queue /);

    // The client library's reads, the same way.
    const client = await connectClient(h.temporal);
    try {
      const started = Date.now();
      const error = await agentState(client, agentId).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AgentNotAnsweringError);
      expect((error as AgentNotAnsweringError).snapshot).toMatchObject({ agentId, workflowStatus: 'RUNNING' });
      expect(Date.now() - started).toBeLessThan(VERDICT_BOUND_MS);
    } finally {
      await client.connection.close();
    }
  });

  it('state and events of a closed agent are read from its result, with no worker', async () => {
    const h = await harness();
    const { agentId, turns } = await agentWithCompactions(h, 'closed', 1);
    await closeAgentAndWait(h.client, agentId);
    const env = cliEnv(h);
    await h.close();

    const state = await runLongrun(['state', agentId, '--json'], { env });
    expect(state.code, state.stderr).toBe(0);
    expect(state.ms).toBeLessThan(5_000);
    const final = JSON.parse(state.stdout) as AgentState;
    expect(final).toMatchObject({ agentId, status: 'closed', turns });
    expect(final.messages.length).toBeGreaterThan(0);

    const table = await runLongrun(['state', agentId], { env });
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('status   closed');

    const events = await runLongrun(['events', agentId, '--json'], { env });
    expect(events.code, events.stderr).toBe(0);
    expect(events.ms).toBeLessThan(5_000);
    const { events: list } = JSON.parse(events.stdout) as { events: { seq: number }[] };
    expect(list.map((event) => event.seq)).toContain(1);

    const client = await connectClient(h.temporal);
    try {
      expect((await compactionStats(client, agentId)).count).toBeGreaterThanOrEqual(1);
    } finally {
      await client.connection.close();
    }
  });
});

describe('reopening an agent without a worker', () => {
  it('a terminated agent no worker could replay: said at once, naming the task queue (it waited 30 s)', async () => {
    const h = await harness();
    const agentId = newAgentId('reopenless');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'hello');
    await agentHandle(h.client, agentId).terminate('test: ended without a close');
    const env = cliEnv(h);
    await h.close();

    const reopen = await runLongrun(['start', agentId, '--reopen'], { env });
    expect(reopen.code, reopen.stderr).toBe(1);
    expect(reopen.ms, reopen.stderr).toBeLessThan(VERDICT_BOUND_MS);
    expect(reopen.stderr).toContain(
      `longrun: agent ${agentId} is closed (terminated) and cannot be asked: no worker polls task queue ${h.taskQueue}`,
    );
    expect(reopen.stderr).not.toMatch(STACK_TRACE);
  });
});

describe('longrun replay', () => {
  it('leaves no replay agent in the namespace it ran in', async () => {
    const h = await harness();
    const dir = await mkdtemp(join(tmpdir(), 'replay-'));
    const file = join(dir, 'session.jsonl');
    const lines = [
      { role: 'user', content: 'Hello.' },
      { role: 'assistant', content: 'Hi.' },
      { role: 'user', content: 'Bye.' },
      { role: 'assistant', content: 'Bye.' },
    ];
    await writeFile(file, lines.map((line) => JSON.stringify(line)).join('\n'));
    const run = await runLongrun(['replay', file, '--json'], { env: cliEnv(h) });
    expect(run.code, run.stderr).toBe(0);
    const { agentId, deletion } = JSON.parse(run.stdout) as ReplayReport;
    expect(agentId).toMatch(/^replay-/);
    // The replay reports its agent gone only once the namespace's list shows none of its runs (it waits for that).
    expect(deletion).toMatchObject({
      namespace: h.temporal.namespace,
      workflowId: `agent-${agentId}`,
      gone: true,
      stillListed: [],
    });
    expect(deletion!.deletedRuns).toBeGreaterThanOrEqual(1);
    expect(run.stderr).not.toContain('NOT GONE');

    // Deleting is asynchronous in Temporal: within a few seconds no run of it is left, open or closed.
    const query = `WorkflowId = "agent-${agentId}"`;
    const left = async () => {
      const runs: string[] = [];
      for await (const execution of h.client.workflow.list({ query })) runs.push(execution.status.name);
      return runs;
    };
    const deadline = Date.now() + 15_000;
    while ((await left()).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    expect(await left()).toEqual([]);
    const state = await runLongrun(['state', agentId], { env: cliEnv(h) });
    expect(state.code).toBe(3); // unknown agent
    const list = await runLongrun(['list'], { env: cliEnv(h) });
    expect(list.stdout).not.toContain(agentId);
  });
});
