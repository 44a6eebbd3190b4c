/**
 * What the release tests (test/e2e/release*.test.ts) share: a scripted model on loopback, two tools, workers of
 * several builds of the workflow code on one task queue (unversioned, or versions of one Worker Deployment), and
 * four agents in the states a release meets: in the middle of a long turn, with a tool call waiting for approval,
 * with a compaction draft waiting for review, idle.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { Worker, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool, ToolRegistry } from '../../../activities/tools.ts';
import { agentHandle, compactAgent, sendMessage, startAgent } from '../../../client/agents.ts';
import { awaitingApproval } from '../../../client/control.ts';
import { PROJECT_ROOT } from '../../../config/settings.ts';
import { connectClient } from '../../../config/temporal.ts';
import type { TemporalTarget } from '../../../config/temporal.ts';
import type { ApprovalProgress } from '../../../contract/state.ts';
import type { SendResult } from '../../../contract/results.ts';
import { textOf } from '../../../engine/messages.ts';
import type { ChatMessage } from '../../../engine/messages.ts';
import { startChatServer } from '../../../llm/chat-server.ts';
import type { ChatServer } from '../../../llm/chat-server.ts';
import { createOpenAI } from '../../../llm/openai.ts';
import type { S3BlobStore } from '../../../storage/s3.ts';
import { buildIdOf, bundleWorkflows, createAgentWorker } from '../../../worker/worker.ts';
import { isSummaryRequest, newAgentId, sharedBundle, summaryReply } from '../harness.ts';

export const STEPS = 24;
export const TASK = `Work through items 1 to ${STEPS}, one per step.`;
const EventType = { WFT_COMPLETED: 7, WFT_FAILED: 9 } as const;

/** The builds: A as the code is; B, A's behaviour in another bundle; C, a timer first (test/support/release/). */
export type Build = 'A' | 'B' | 'C' | 'Cpatched';
const MODULES: Record<Exclude<Build, 'A'>, string> = {
  B: 'build-b.ts',
  C: 'build-c.ts',
  Cpatched: 'build-c-patched.ts',
};

export async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 60_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`waited ${ms} ms for ${what}`);
}

/** The four agents of a release test and what they wait on. */
export interface FourAgents {
  ids: { idle: string; review: string; approval: string; turn: string };
  draft: string;
  waiting: ApprovalProgress;
  deploy: Promise<SendResult>;
  turn: Promise<SendResult>;
}

/** The build ids that completed each workflow task of a history, and its workflow task failures' messages. */
export function tasksIn(events: temporal.api.history.v1.IHistoryEvent[]) {
  const byType = (type: number) => events.filter((e) => e.eventType === (type as temporal.api.enums.v1.EventType));
  return {
    builds: byType(EventType.WFT_COMPLETED).map((e) => {
      const done = e.workflowTaskCompletedEventAttributes;
      return done?.deploymentVersion?.buildId || done?.workerVersion?.buildId || '';
    }),
    failures: byType(EventType.WFT_FAILED).map((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? ''),
  };
}

export class ReleaseWorld {
  /** The long task's model answers steps up to this one at once; a later one waits. */
  allowed = 0;
  /** What each tool run did, in order: `work <item>` and `deploy <target>`. */
  readonly ran: string[] = [];
  readonly taskQueue = `release-${Date.now()}`;
  readonly builds = new Map<Build, WorkflowBundleWithSourceMap>();
  private readonly live = new Map<Build, { worker: Worker; running: Promise<void> }>();
  model!: ChatServer;
  client!: Client;

  readonly target: TemporalTarget;
  readonly store: S3BlobStore;
  /** Worker Deployment Versioning: the workers are versions of this deployment. */
  readonly deployment: string | undefined;

  constructor(target: TemporalTarget, store: S3BlobStore, deployment?: string) {
    this.target = target;
    this.store = store;
    this.deployment = deployment;
  }

  async open(builds: Build[]): Promise<void> {
    this.client = await connectClient(this.target);
    this.model = await startChatServer((request) =>
      isSummaryRequest(request) ? { content: summaryReply('Took four notes.') } : this.reply(request.body.messages),
    );
    for (const build of builds) {
      const bundle =
        build === 'A'
          ? await sharedBundle()
          : await bundleWorkflows({ interceptorModules: [join(PROJECT_ROOT, 'test/support/release', MODULES[build])] });
      this.builds.set(build, bundle);
    }
  }

  async close(): Promise<void> {
    this.allowed = Number.POSITIVE_INFINITY;
    for (const build of [...this.live.keys()]) await this.stop(build);
    await this.client?.connection.close();
    await this.model?.close();
  }

  buildId(build: Build): string {
    return buildIdOf(this.builds.get(build)!);
  }

  /** Starts a worker of `build` on the task queue. */
  async start(build: Build): Promise<void> {
    const { worker } = await createAgentWorker({
      temporal: this.target,
      taskQueue: this.taskQueue,
      deps: {
        store: this.store,
        openai: createOpenAI({ apiKey: 'test-key', baseURL: this.model.baseURL, timeoutMs: 20_000 }),
        tools: this.tools,
        summaryModel: 'summary-model',
        strictInvariants: true,
      },
      workflowBundle: this.builds.get(build)!,
      ...(this.deployment !== undefined ? { deployment: this.deployment } : {}),
    });
    this.live.set(build, { worker, running: worker.run() });
  }

  /** Stops the worker of `build` as a release does: no new work, its work in flight finished first. */
  async stop(build: Build): Promise<void> {
    const { worker, running } = this.live.get(build)!;
    this.live.delete(build);
    worker.shutdown();
    await running;
  }

  workDone(): number {
    return this.ran.filter((r) => r.startsWith('work ')).length;
  }

  /** The build ids that completed each workflow task of a run (the current one by default), and its task failures. */
  async tasksOf(workflowId: string, runId?: string) {
    return tasksIn((await this.client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? []);
  }

  /**
   * Starts the four agents: the idle one after a turn, the review one with a draft, the approval one with its call
   * waiting, the turn one with `workBefore` items of its task done (its next step waits for `allowed`).
   */
  async fourAgents(workBefore: number): Promise<FourAgents> {
    const { client, taskQueue } = this;
    const ids = {
      idle: newAgentId('rel-idle'),
      review: newAgentId('rel-review'),
      approval: newAgentId('rel-approval'),
      turn: newAgentId('rel-turn'),
    };
    const compaction = { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } };
    for (const agentId of Object.values(ids)) {
      const own = agentId === ids.approval ? { toolApproval: {} } : agentId === ids.review ? { compaction } : {};
      await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue, ...own });
    }
    await sendMessage(client, ids.idle, 'hello');
    for (const note of ['Collect the notes.', 'note 2', 'note 3', 'note 4'])
      await sendMessage(client, ids.review, note);
    const draft = (await compactAgent(client, ids.review, { strategy: 'summarize', review: true })).draft!.id;
    const deploy = sendMessage(client, ids.approval, 'deploy now');
    const waiting = await until(
      'the deploy call to wait',
      async () => (await awaitingApproval(client, ids.approval))[0],
    );
    this.allowed = workBefore;
    const turn = sendMessage(client, ids.turn, TASK);
    await until(`${workBefore} items`, () => (this.workDone() >= workBefore ? true : undefined));
    return { ids, draft, waiting, deploy, turn };
  }

  /** The history of each run of a workflow (its chain of continue-as-new), newest first. */
  async *histories(workflowId: string) {
    for await (const run of this.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      yield (await this.client.workflow.getHandle(workflowId, run.runId).fetchHistory()).events ?? [];
    }
  }

  /**
   * What renewing cost the agent's runs: per run that took a `renew` Signal, the events from the Signal to its
   * continue-as-new (the Signal included).
   */
  async renewEvents(workflowId: string): Promise<number[]> {
    const counts: number[] = [];
    for await (const events of this.histories(workflowId)) {
      const at = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'renew');
      if (at >= 0) counts.push(events.length - at);
    }
    return counts;
  }

  /** The run an agent is on now. */
  async runOf(agentId: string) {
    return agentHandle(this.client, agentId).describe();
  }

  /** The model: the long task's next item (answered only up to `allowed`), a deploy that needs approval, an echo. */
  private async reply(messages: ChatMessage[]) {
    const first = textOf(messages.find((m) => m.role === 'user')?.content);
    const last = messages.at(-1)!;
    if (first === TASK && (last.role === 'tool' || textOf(last.content) === TASK)) {
      const step = messages.filter((m) => m.role === 'tool').length + 1;
      while (step > this.allowed) await sleep(20);
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

  private readonly tools = new ToolRegistry([
    defineTool({
      name: 'work',
      description: 'Works on one item',
      parameters: { type: 'object', properties: { item: { type: 'number' } } },
      run: ({ item }) => {
        this.ran.push(`work ${String(item)}`);
        return Promise.resolve(`item ${String(item)} done`);
      },
    }),
    defineTool({
      name: 'deploy',
      description: 'Deploys, once a person approves',
      parameters: { type: 'object', properties: { target: { type: 'string' } } },
      approval: 'always',
      run: ({ target }) => {
        this.ran.push(`deploy ${String(target)}`);
        return Promise.resolve(`deployed ${String(target)}`);
      },
    }),
  ]);
}
