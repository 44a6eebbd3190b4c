/**
 * What an e2e test needs around the shared stack: a Temporal client, the S3 store, a scripted OpenAI-compatible
 * server on loopback, and a worker on a task queue of its own, wired exactly as the real worker wires them.
 */
import type { PolicyOverrides } from '../../engine/policy.ts';
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { Worker, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { inject } from 'vitest';
import { ToolRegistry } from '../../activities/tools.ts';
import { compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import type { ToolDefinition } from '../../activities/tools.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { localTemporalTarget } from '../../config/temporal.ts';
import type { TemporalTarget } from '../../config/temporal.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer, RecordedRequest, Responder } from '../../llm/chat-server.ts';
import { createOpenAI } from '../../llm/openai.ts';
import { serversEnv } from '../../stack/worker-process.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import { startInProcessAgents } from '../../worker/in-process.ts';
import { bundleWorkflows } from '../../worker/worker.ts';

// Worker logs only from WARN up, so test output stays readable.
Runtime.install({ logger: new DefaultLogger('WARN') });

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/** The workflow bundle, built once per test file. */
export function sharedBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflows();
  return bundle;
}

export interface Harness {
  temporal: TemporalTarget;
  client: Client;
  store: S3BlobStore;
  model: ChatServer;
  taskQueue: string;
  worker: Worker;
  close(): Promise<void>;
}

/** The variables that point a child process at the shared stack: its Temporal server and its MinIO, bucket included. */
export function sharedStackEnv(): NodeJS.ProcessEnv {
  const stack = inject('stack');
  return serversEnv({ address: stack.temporalAddress, namespace: stack.namespace }, stack.s3);
}

/**
 * Starts a worker process (`entry`, a script under the project root, with `args`) against the shared stack, with
 * `env` on top of it; resolves once it polls, rejects with its output if it exits first.
 */
export function spawnWorker(
  entry: string,
  env: NodeJS.ProcessEnv,
  args: string[] = [],
): Promise<ChildProcessWithoutNullStreams> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, entry), ...args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...sharedStackEnv(), ...env },
  });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('[worker] polling')) resolve(child);
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code, signal) => reject(new Error(`worker exited with ${code ?? signal}:\n${output}`)));
  });
}

export async function startHarness(
  responder: Responder,
  tools: ToolDefinition[] = [],
  options: {
    summaryModel?: string | null;
    summaryWindow?: number;
    modelTimeoutMs?: number;
    /** The chat server reports each request's and reply's tokens as its prompt cache counts them (chat-server.ts). */
    countUsage?: boolean;
  } = {},
): Promise<Harness> {
  const stack = inject('stack');
  const temporal = localTemporalTarget(stack.temporalAddress, stack.namespace);
  const store = new S3BlobStore(stack.s3);
  const model = await startChatServer(responder, options.countUsage ? { countUsage: true } : {});
  const agents = await startInProcessAgents({
    temporal,
    taskQueue: `test-${randomUUID()}`,
    deps: {
      store,
      openai: createOpenAI({ apiKey: 'test-key', baseURL: model.baseURL, timeoutMs: options.modelTimeoutMs ?? 10_000 }),
      tools: new ToolRegistry(tools),
      // `null`: no summary model (the extractive summarizer stands in).
      ...(options.summaryModel === null ? {} : { summaryModel: options.summaryModel ?? 'summary-model' }),
      ...(options.summaryWindow ? { summaryWindow: options.summaryWindow } : {}),
      strictInvariants: true, // a break of the coverage invariant fails the test loudly
    },
    workflowBundle: await sharedBundle(),
  });
  return {
    temporal,
    client: agents.client,
    store,
    model,
    taskQueue: agents.taskQueue,
    worker: agents.worker,
    async close() {
      await agents.close();
      await model.close();
    },
  };
}

/**
 * An agent compacted `compactions` times: three turns ("note 1a", "note 1b", …), then a forced truncate-rounds
 * compaction (the goal and the last turn stay, the rest can go), until that many compactions compacted. Returns
 * the agent, its turns, and how many compactions were asked for.
 */
export async function agentWithCompactions(
  h: Harness,
  prefix: string,
  compactions: number,
): Promise<{ agentId: string; turns: number; attempts: number }> {
  const agentId = newAgentId(prefix);
  await startAgent(h.client, {
    agentId,
    model: 'gpt-4o-mini',
    taskQueue: h.taskQueue,
    compaction: { reserveRatio: 0, keepTurns: 1 },
  });
  let done = 0;
  let turns = 0;
  let attempts = 0;
  while (done < compactions) {
    if (attempts === compactions + 8) throw new Error(`${agentId}: ${done} of ${compactions} compactions compacted`);
    attempts++;
    for (const part of ['a', 'b', 'c']) await sendMessage(h.client, agentId, `note ${attempts}${part}`);
    turns += 3;
    // Events, whatever their size: these short notes are often smaller than the summary and ledger that replace them.
    if ((await compactAgent(h.client, agentId, { strategy: 'truncate-rounds', evenIfLarger: true })).compacted) done++;
  }
  return { agentId, turns, attempts };
}

/** Whether a request the scripted server received is the summarizer's (the harness's summary model). */
export function isSummaryRequest(request: RecordedRequest): boolean {
  return request.body.model === 'summary-model';
}

/** A summary model's reply: the five fields as JSON, `currentState` the current state. */
export function summaryReply(currentState: string, overview = 'Read the notes.'): string {
  return JSON.stringify({
    task_overview: overview,
    current_state: currentState,
    important_discoveries: '',
    next_steps: 'Go on.',
    context_to_preserve: '',
  });
}

/**
 * An agent with `notes` user messages of about 150 tokens each in its context (plain prose, one per turn) and a small
 * summary budget: summarizing them in a small summary model's window takes several chunks.
 */
export async function agentWithNotes(h: Harness, prefix: string, notes: number): Promise<string> {
  const agentId = newAgentId(prefix);
  await startAgent(h.client, {
    agentId,
    model: 'gpt-4o-mini',
    taskQueue: h.taskQueue,
    compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0, maxTokens: 200 } },
  });
  const note = 'The quarterly report lists revenue by region and the regional managers comment on each figure. ';
  for (let i = 1; i <= notes; i++) await sendMessage(h.client, agentId, `Note ${i}: ${note.repeat(12)}`);
  return agentId;
}

/** A fresh agent id per test, so tests never share a workflow. */
export function newAgentId(prefix = 'agent'): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/**
 * Compaction when the context holds more than 4 turns (the 5th message's call waits for it), by summary only, the
 * last turn kept; nothing in the background.
 */
export const FIVE_TURNS: PolicyOverrides = {
  maxTurns: 4,
  strategies: ['summarize'],
  backgroundRatio: null,
  mask: { fromRatio: null },
  reserveRatio: 0,
  keepTurns: 1,
  keepSteps: 1,
  keepMessages: 0,
  summary: { keepUserTokens: 0 },
};
