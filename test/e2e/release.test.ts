/**
 * Living across releases, the way a release reaches a running agent today: one task queue, unversioned workers, each
 * release's worker started and the older one stopped (its work in flight finished first), a change that would break
 * the replay of older runs shipped behind `patched()` (docs/changing-workflows.md).
 *
 * Four agents live on build A: one in the middle of a long turn, one with a tool call waiting for approval, one with
 * a compaction draft waiting for review, one idle. Build B (A's behaviour, another bundle) replaces A; then build C,
 * whose every run starts a timer first, replaces B: first as a broken release (the change unguarded: the runs begun
 * before it fail their workflow tasks on C, and nothing is lost meanwhile), then fixed forward with the change behind
 * `patched()`. Every agent goes on to its end on C, each tool call run once and in order, no message lost or doubled,
 * and a run begun on A replayed on C.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { Worker, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../activities/tools.ts';
import {
  agentHandle,
  agentState,
  approveDraft,
  closeAgent,
  compactAgent,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import { approveTool, awaitingApproval } from '../../client/control.ts';
import { rollOut } from '../../client/rollout.ts';
import type { RolloutProgress } from '../../client/rollout.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import type { TemporalTarget } from '../../config/temporal.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { createOpenAI } from '../../llm/openai.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import { buildIdOf, bundleWorkflows, createAgentWorker } from '../../worker/worker.ts';
import { isSummaryRequest, newAgentId, sharedBundle, sharedStackEnv, summaryReply } from '../support/harness.ts';
import { runLongrun } from '../support/longrun-cli.ts';

const STEPS = 24;
const TASK = `Work through items 1 to ${STEPS}, one per step.`;
const EventType = { WFT_COMPLETED: 7, WFT_FAILED: 9 } as const;

/** The model: the long task's next item (answered only up to `allowed`), a deploy that needs approval, or an echo. */
let allowed = 0;
async function reply(messages: ChatMessage[]) {
  const first = textOf(messages.find((m) => m.role === 'user')?.content);
  const last = messages.at(-1)!;
  if (first === TASK && (last.role === 'tool' || textOf(last.content) === TASK)) {
    const step = messages.filter((m) => m.role === 'tool').length + 1;
    while (step > allowed) await sleep(20);
    if (step > STEPS) return { content: `All ${STEPS} items done.` };
    const call = { id: `call_${step}`, type: 'function' as const };
    return { content: null, toolCalls: [{ ...call, function: { name: 'work', arguments: `{"item":${step}}` } }] };
  }
  if (last.role === 'tool') return { content: `the tool said: ${textOf(last.content)}` };
  const text = textOf(last.content);
  if (text === 'deploy now') {
    const call = { id: 'deploy-1', type: 'function' as const };
    return { content: null, toolCalls: [{ ...call, function: { name: 'deploy', arguments: '{"target":"prod"}' } }] };
  }
  return { content: `re: ${text}` };
}

/** What each tool run did, in order: `work <item>` and `deploy <target>`. */
const ran: string[] = [];
const tools = new ToolRegistry([
  defineTool({
    name: 'work',
    description: 'Works on one item',
    parameters: { type: 'object', properties: { item: { type: 'number' } } },
    run: ({ item }) => {
      ran.push(`work ${String(item)}`);
      return Promise.resolve(`item ${String(item)} done`);
    },
  }),
  defineTool({
    name: 'deploy',
    description: 'Deploys, once a person approves',
    parameters: { type: 'object', properties: { target: { type: 'string' } } },
    approval: 'always',
    run: ({ target }) => {
      ran.push(`deploy ${String(target)}`);
      return Promise.resolve(`deployed ${String(target)}`);
    },
  }),
]);

let model: ChatServer;
let client: Client;
let target: TemporalTarget;
let store: S3BlobStore;
const taskQueue = `release-${Date.now()}`;
const builds: Record<'A' | 'B' | 'C' | 'Cfixed', WorkflowBundleWithSourceMap> = {} as never;
const live = new Map<string, { worker: Worker; running: Promise<void> }>();

const release = (name: string) => join(PROJECT_ROOT, 'test', 'support', 'release', name);

/** Starts a worker of `build` on the test's task queue. */
async function startBuild(build: keyof typeof builds): Promise<void> {
  const { worker } = await createAgentWorker({
    temporal: target,
    taskQueue,
    deps: {
      store,
      openai: createOpenAI({ apiKey: 'test-key', baseURL: model.baseURL, timeoutMs: 20_000 }),
      tools,
      summaryModel: 'summary-model',
      strictInvariants: true,
    },
    workflowBundle: builds[build],
  });
  live.set(build, { worker, running: worker.run() });
}

/** Stops the worker of `build` as a release does: no new work, its work in flight finished first. */
async function stopBuild(build: keyof typeof builds): Promise<void> {
  const { worker, running } = live.get(build)!;
  live.delete(build);
  worker.shutdown();
  await running;
}

/** The build ids that completed each workflow task of a run, and its workflow task failures' messages. */
async function tasksOf(workflowId: string, runId?: string) {
  const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
  const byType = (type: number) => events.filter((e) => e.eventType === (type as temporal.api.enums.v1.EventType));
  return {
    builds: byType(EventType.WFT_COMPLETED).map(
      (e) => e.workflowTaskCompletedEventAttributes?.workerVersion?.buildId ?? '',
    ),
    failures: byType(EventType.WFT_FAILED).map((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? ''),
  };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`waited ${timeoutMs} ms for ${what}`);
}

const workDone = () => ran.filter((r) => r.startsWith('work ')).length;

beforeAll(async () => {
  const stack = inject('stack');
  target = localTemporalTarget(stack.temporalAddress, stack.namespace);
  store = new S3BlobStore(stack.s3);
  client = await connectClient(target);
  model = await startChatServer((request) =>
    isSummaryRequest(request) ? { content: summaryReply('Greeted twice.') } : reply(request.body.messages),
  );
  builds.A = await sharedBundle();
  builds.B = await bundleWorkflows({ interceptorModules: [release('build-b.ts')] });
  builds.C = await bundleWorkflows({ interceptorModules: [release('build-c.ts')] });
  builds.Cfixed = await bundleWorkflows({ interceptorModules: [release('build-c-patched.ts')] });
}, 120_000);

afterAll(async () => {
  allowed = Number.POSITIVE_INFINITY;
  for (const build of [...live.keys()] as (keyof typeof builds)[]) await stopBuild(build);
  await client?.connection.close();
  await model?.close();
});

describe('a release under living agents (unversioned workers, patched())', () => {
  it('moves agents mid-turn, waiting on an approval, on a review draft and idle from A to B to C; a breaking C fails tasks, never loses work', async () => {
    const ids = {
      ids: new Set(Object.values(builds).map(buildIdOf)),
      ...Object.fromEntries(Object.entries(builds).map(([k, b]) => [k, buildIdOf(b)])),
    } as Record<keyof typeof builds, string> & { ids: Set<string> };
    expect(ids.ids.size).toBe(4); // four builds, four ids
    await startBuild('A');

    // On A: an idle agent, one waiting on a review draft, one on an approval, one in a long turn.
    const agents = {
      idle: newAgentId('rel-idle'),
      review: newAgentId('rel-review'),
      approval: newAgentId('rel-approval'),
      turn: newAgentId('rel-turn'),
    };
    const reviewSettings = {
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
    };
    for (const agentId of Object.values(agents)) {
      const own = agentId === agents.approval ? { toolApproval: {} } : agentId === agents.review ? reviewSettings : {};
      await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue, ...own });
    }
    await sendMessage(client, agents.idle, 'hello');
    for (const note of ['Collect the notes.', 'note 2', 'note 3', 'note 4'])
      await sendMessage(client, agents.review, note);
    const draft = (await compactAgent(client, agents.review, { strategy: 'summarize', review: true })).draft!;
    expect(draft.id).toBe('draft-1');
    const deploy = sendMessage(client, agents.approval, 'deploy now');
    const waiting = await until(
      'the deploy call to wait',
      async () => (await awaitingApproval(client, agents.approval))[0],
    );
    const approvalRun = (await agentHandle(client, agents.approval).describe()).runId;
    allowed = 4;
    const turn = sendMessage(client, agents.turn, TASK);
    await until('4 items on A', () => Promise.resolve(workDone() >= 4 ? true : undefined));

    // Release B: its worker starts, A's stops once its work in flight is done (the turn's next step, let through).
    await startBuild('B');
    const stopA = stopBuild('A');
    allowed = 8;
    await stopA;
    await until('8 items', () => Promise.resolve(workDone() >= 8 ? true : undefined));

    // Release C, broken: a run begun before C fails its workflow tasks there (non-determinism). The message waits.
    await startBuild('C');
    const stopB = stopBuild('B');
    allowed = 12;
    await stopB;
    const message = sendMessage(client, agents.idle, 'after the release');
    const failure = await until(
      'a workflow task failure on C',
      async () => (await tasksOf(agentWorkflowId(agents.idle))).failures[0],
    );
    expect(failure).toMatch(/[Nn]ondetermin/);

    // Fixed forward: C with its change behind patched(). Everything goes on.
    await startBuild('Cfixed');
    await stopBuild('C');
    allowed = 16;
    expect(await message).toMatchObject({ reply: 're: after the release' });
    await until('16 items', () => Promise.resolve(workDone() >= 16 ? true : undefined));

    // The rollout: every agent on a run of before C is asked to renew. The idle one and the review's go at once;
    // the turn at its next step; the approval's once it is answered.
    const since = new Date();
    const looks: RolloutProgress[] = [];
    const rollout = rollOut(client, { taskQueue, since, onProgress: (look) => looks.push(look), askAgainMs: 3_000 });
    const both = await until('the turn and the approval to be the ones left', () => {
      const waiting = looks.at(-1)?.waiting ?? [];
      return Promise.resolve(waiting.length === 2 ? waiting : undefined);
    });
    expect(looks.at(-1)).toMatchObject({ asked: 4, renewed: 2 });
    const why = Object.fromEntries(both.map((w) => [w.agentId, w.why]));
    expect(why[agents.approval]).toMatch(
      /^a tool call waits for approval \(until .+\); it renews once that is answered$/,
    );
    expect(why[agents.turn]).toMatch(/next safe point/);
    allowed = Number.POSITIVE_INFINITY;
    expect(await turn).toMatchObject({ turn: 1, toolCalls: STEPS, reply: `All ${STEPS} items done.` });
    await approveTool(client, agents.approval, waiting.callId);
    expect(await deploy).toMatchObject({ reply: 'the tool said: deployed prod', toolCalls: 1 });
    const done = await rollout;
    expect(done).toMatchObject({ asked: 4, renewed: 4, waiting: [] });

    // Every agent's run began on C (fixed), after the rollout, with the release's patch marker; the draft made on A
    // is applied there, and each agent answers.
    for (const agentId of Object.values(agents)) {
      const run = await agentHandle(client, agentId).describe();
      expect(run.startTime.getTime()).toBeGreaterThanOrEqual(since.getTime());
      const { builds: tasks, failures } = await tasksOf(agentWorkflowId(agentId));
      expect(new Set(tasks)).toEqual(new Set([ids.Cfixed]));
      expect(failures).toEqual([]);
    }
    expect((await approveDraft(client, agents.review, draft.id)).compacted).toBe(true);
    for (const agentId of Object.values(agents))
      expect((await sendMessage(client, agentId, 'still there?')).reply).toBe('re: still there?');

    // Each tool ran once, in order; no message lost or doubled.
    expect(ran.filter((r) => r.startsWith('work '))).toEqual(Array.from({ length: STEPS }, (_, i) => `work ${i + 1}`));
    expect(ran.filter((r) => r.startsWith('deploy '))).toEqual(['deploy prod']);
    const users = async (agentId: string) =>
      (await agentState(client, agentId)).messages.filter((m) => m.role === 'user').map((m) => m.preview);
    expect(await users(agents.idle)).toEqual(['hello', 'after the release', 'still there?']);
    expect(await users(agents.approval)).toEqual(['deploy now', 'still there?']);

    // The approval's run began on A and was replayed and finished its wait on C (fixed): its tasks ran on A, then C.
    const approvalTasks = await tasksOf(agentWorkflowId(agents.approval), approvalRun);
    expect(approvalTasks.builds[0]).toBe(ids.A);
    expect(approvalTasks.builds).toContain(ids.Cfixed);
    for (const agentId of Object.values(agents)) await closeAgent(client, agentId);
  }, 240_000);

  it('longrun rollout renews an idle agent on a run of before and says so; again with the same --before renews none twice', async () => {
    const agentId = newAgentId('rel-cli');
    await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
    await sendMessage(client, agentId, 'hello');
    const before = (await agentHandle(client, agentId).describe()).runId;
    await sleep(2_100); // a run hands over once it is 2 s old
    const env = {
      ...process.env,
      ...sharedStackEnv(),
      TEMPORAL_ADDRESS: String(target.connectionOptions.address),
      TEMPORAL_NAMESPACE: target.namespace,
    };
    const first = await runLongrun(['rollout', '--task-queue', taskQueue], { env });
    expect(first.stderr).toMatch(/renewed (0|1) of 1 agents/);
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toMatch(/^renewed 1 of 1 agents on runs of before \d{4}-\d\d-\d\dT/);
    expect((await agentHandle(client, agentId).describe()).runId).not.toBe(before);
    expect((await sendMessage(client, agentId, 'after')).reply).toBe('re: after');
    const since = /before (\S+)$/.exec(first.stdout.trim())![1]!;
    // Again with the same time: the run that began after it is not renewed twice.
    const again = await runLongrun(['rollout', '--task-queue', taskQueue, '--before', since, '--json'], { env });
    expect(JSON.parse(again.stdout)).toMatchObject({ since, asked: 0, renewed: 0, waiting: [] });
    const bad = await runLongrun(['rollout', '--before', 'yesterday'], { env });
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toContain('--before: must be an ISO 8601 time like 2026-11-29T06:00:00Z (got "yesterday")');
    await closeAgent(client, agentId);
  }, 60_000);
});
