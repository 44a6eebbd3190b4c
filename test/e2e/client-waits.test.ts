/**
 * How clients wait (issue 12): never silently for a worker that is not there, through a lost connection to the
 * Update's real outcome, failures with the workflow's own message at the top level, and output that reaches a pipe
 * whole. The main job's stop: main-job-stop.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { createServer, connect } from 'node:net';
import type { Server, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ActivityFailure,
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  ServiceError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import type { ApplicationFailure, ConnectionOptions } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentHandle, agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import {
  AgentUpdateError,
  NoWorkerError,
  TemporalUnreachableError,
  UpdateOutcomeUnknownError,
} from '../../client/update-errors.ts';
import { watchDelays } from '../../client/updates.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { createOpenAI } from '../../llm/openai.ts';
import { freePort } from '../../stack/ports.ts';
import { startInProcessAgents } from '../../worker/in-process.ts';
import { sendUpdate } from '../../contract/agent.ts';
import { FAILURE } from '../../contract/failures.ts';
import { newAgentId, sharedBundle, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { heldReplies } from '../support/held-replies.ts';
import { cliEnv, runLongrun, STACK_TRACE } from '../support/longrun-cli.ts';
import type { CliRun } from '../support/longrun-cli.ts';

const replies = heldReplies();

let h: Harness;
beforeAll(async () => {
  h = await startHarness(replies.respond);
});
afterAll(async () => {
  replies.releaseAll();
  await h?.close();
});

/** Runs bin/longrun.js with its stdout and stderr on pipes, as `longrun … | jq` does. */
function longrun(args: string[], env: NodeJS.ProcessEnv = cliEnv(h), timeoutMs = 60_000): Promise<CliRun> {
  return runLongrun(args, { env, timeoutMs });
}

describe('waiting for a worker', () => {
  it('send to an agent whose task queue has no worker: a progress line, then a clear error within the timeout, nothing sent', async () => {
    const agentId = newAgentId('noworker');
    const taskQueue = `nobody-${randomUUID().slice(0, 8)}`;
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue });

    const run = await longrun(['send', agentId, 'hello?'], cliEnv(h, { LONGRUN_WORKER_TIMEOUT_MS: '5000' }), 30_000);
    expect(run.code, run.stderr).toBe(1);
    expect(run.ms).toBeLessThan(15_000);
    expect(run.stderr).toMatch(
      new RegExp(
        `longrun: send to ${agentId}, \\d+ s: waiting for a worker on task queue ${taskQueue} \\(the server has seen no worker poll it\\)`,
      ),
    );
    expect(run.stderr).toContain(`longrun: no worker is polling task queue ${taskQueue} of agent ${agentId}`);
    expect(run.stderr).toContain('Nothing was sent');
    expect(run.stderr).not.toMatch(STACK_TRACE);
    expect(run.stdout).toBe('');

    // The library says the same with a typed error; and indeed nothing reached the workflow.
    const lines: string[] = [];
    const error = await sendMessage(h.client, agentId, 'hello?', {
      workerTimeoutMs: 4_000,
      onProgress: (line) => lines.push(line),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoWorkerError);
    expect(error).toMatchObject({ stage: 'not sent', taskQueue, agentId });
    expect(lines.some((line) => line.includes(`waiting for a worker on task queue ${taskQueue}`))).toBe(true);
    const history = await agentHandle(h.client, agentId).fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toEqual([]);
    await agentHandle(h.client, agentId).terminate('test over');
  });

  it('a worker that stopped moments ago: the Update is sent, not accepted in time, and the error says what becomes of it', async () => {
    const taskQueue = `gone-${randomUUID().slice(0, 8)}`;
    const stack = inject('stack');
    const temporal = localTemporalTarget(stack.temporalAddress, stack.namespace);
    const deps = {
      store: h.store,
      openai: createOpenAI({ apiKey: 'test-key', baseURL: h.model.baseURL, timeoutMs: 10_000 }),
    };
    const bundle = await sharedBundle();
    const first = await startInProcessAgents({ temporal, taskQueue, deps, workflowBundle: bundle });
    const agentId = newAgentId('gone');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue });
    expect((await sendMessage(h.client, agentId, 'one')).turn).toBe(1);
    await first.close(); // its last poll was just now: the queue looks served for another minute

    const error = await sendMessage(h.client, agentId, 'two', { workerTimeoutMs: 4_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoWorkerError);
    expect(error).toMatchObject({ stage: 'sent, not accepted', taskQueue });
    expect((error as Error).message).toContain('Its outcome is unknown: the server keeps it in memory');

    // As the message says: a worker that starts soon applies it (once).
    const second = await startInProcessAgents({ temporal, taskQueue, deps, workflowBundle: bundle });
    try {
      const deadline = Date.now() + 30_000;
      while ((await agentState(h.client, agentId)).turns < 2 && Date.now() < deadline) await sleep(200);
      const state = await agentState(h.client, agentId);
      expect(state.turns).toBe(2);
      expect(state.messages.filter((m) => m.role === 'user').map((m) => m.preview)).toEqual(['one', 'two']);
      await closeAgent(h.client, agentId);
    } finally {
      await second.close();
    }
  });
});

/** A TCP proxy in front of the Temporal server: `cut(ms)` drops its connections and refuses new ones that long. */
async function startProxy(
  upstream: string,
): Promise<{ address: string; cut(ms: number): Promise<void>; close(): Promise<void> }> {
  const [host, port] = upstream.split(':') as [string, string];
  const listenPort = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = createServer((downstream) => {
        const up = connect(Number(port), host);
        for (const socket of [downstream, up]) {
          sockets.add(socket);
          socket.on('error', () => {});
          socket.on('close', () => {
            sockets.delete(socket);
            downstream.destroy();
            up.destroy();
          });
        }
        downstream.pipe(up).pipe(downstream);
      });
      server.listen(listenPort, '127.0.0.1', resolve);
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (!server) return resolve();
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
      server = undefined;
    });
  await listen();
  return {
    address: `127.0.0.1:${listenPort}`,
    async cut(ms) {
      await stop();
      await sleep(ms);
      await listen();
    },
    close: stop,
  };
}

describe('an Update whose connection drops', () => {
  it('reattaches with the same Update id and reports the real reply; the plain SDK call gives up with "Workflow Update failed"', async () => {
    const proxy = await startProxy(String(h.temporal.connectionOptions.address));
    let client: Client | undefined;
    try {
      client = await connectClient(localTemporalTarget(proxy.address, h.temporal.namespace));
      const [agentId, controlId, shortId] = [newAgentId('reattach'), newAgentId('control'), newAgentId('short')];
      for (const id of [agentId, controlId, shortId]) {
        await startAgent(h.client, { agentId: id, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
        expect((await sendMessage(client, id, `first ${id}`)).turn).toBe(1);
      }
      const mine = replies.hold(`held ${agentId}`);
      const control = replies.hold(`held ${controlId}`);
      const short = replies.hold(`held ${shortId}`);
      const lines: string[] = [];
      const sending = sendMessage(client, agentId, `held ${agentId}`, { onProgress: (line) => lines.push(line) });
      // A client that gives up on reconnecting after 5 s says the outcome is unknown, naming the Update.
      const givingUp = sendMessage(client, shortId, `held ${shortId}`, { reconnectTimeoutMs: 5_000 }).catch(
        (error: unknown) => error,
      );
      // What `longrun send` did before: the SDK's own executeUpdate, which retries a lost connection ~20 s at most.
      const plain = agentHandle(client, controlId)
        .executeUpdate(sendUpdate, { args: [{ text: `held ${controlId}` }] })
        .catch((error: unknown) => error);
      await Promise.all([mine.atModel, control.atModel, short.atModel]);

      // The connection is cut for 30 s, longer than the SDK's retries; both turns complete meanwhile.
      const cut = proxy.cut(30_000);
      await sleep(1_000);
      mine.release();
      control.release();
      short.release();
      await cut;

      expect(await sending).toMatchObject({ turn: 2, reply: `re: held ${agentId}` });
      expect(
        lines.some((line) => line.includes('cannot reach Temporal')),
        lines.join('\n'),
      ).toBe(true);
      const failed = await plain;
      expect(failed).toBeInstanceOf(ServiceError);
      expect((failed as Error).message).toBe('Workflow Update failed');
      // …although that turn completed too: the outcome a client must not report as a failure.
      expect((await agentState(h.client, controlId)).turns).toBe(2);
      const unknown = await givingUp;
      expect(unknown).toBeInstanceOf(UpdateOutcomeUnknownError);
      expect((unknown as Error).message).toMatch(
        new RegExp(`^lost the connection to Temporal while waiting for update [0-9a-f-]{36} of agent ${shortId}`),
      );
      expect((unknown as Error).message).toContain('Its outcome is unknown (it is applied at most once)');
      expect((await agentState(h.client, shortId)).turns).toBe(2); // it was applied, once
      // Applied once each.
      const users = (await agentState(h.client, agentId)).messages.filter((m) => m.role === 'user');
      expect(users.map((m) => m.preview)).toEqual([`first ${agentId}`, `held ${agentId}`]);
      for (const id of [agentId, controlId, shortId]) await closeAgent(h.client, id);
    } finally {
      await client?.connection.close();
      await proxy.close();
    }
  }, 90_000);
});

/** A client whose calls to Temporal are counted by method name (DescribeTaskQueue, UpdateWorkflowExecution, …). */
async function countingClient(address: string): Promise<{ client: Client; calls: Map<string, number> }> {
  const calls = new Map<string, number>();
  type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number];
  const count = ((options: { method_definition: { path: string } }, next: (options: unknown) => unknown) => {
    const method = options.method_definition.path.split('/').at(-1)!;
    calls.set(method, (calls.get(method) ?? 0) + 1);
    return next(options);
  }) as unknown as Interceptor;
  const connection = await Connection.connect({
    address,
    // The SDK's own retries kept (a list of interceptors replaces the default one), each attempt counted.
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), count],
  });
  const client = new Client({ connection, namespace: h.temporal.namespace });
  return { client, calls };
}

/** How many times a wait of `ms` looks at the agent while its Update is out (at 3 s, 6 s, 12 s, …). */
function looksWithin(ms: number): number {
  let looks = 0;
  const delays = watchDelays();
  for (let at = delays.next().value; at <= ms; at += delays.next().value) looks++;
  return looks;
}

describe('how often a waiting client asks Temporal', () => {
  it('a worker found on a task queue serves every agent on it for a while, and a long turn is looked at less and less often', async () => {
    const { client, calls } = await countingClient(String(h.temporal.connectionOptions.address));
    try {
      const ids = Array.from({ length: 5 }, (_, i) => newAgentId(`asks-${i}`));
      for (const id of ids) await startAgent(h.client, { agentId: id, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
      // A first message to each: the client does not know an agent's task queue before it has looked at it once.
      for (const id of ids) expect(await sendMessage(client, id, `first ${id}`)).toMatchObject({ turn: 1 });
      await sleep(10_500); // what the client found is now too old to trust: the next message checks again
      const before = new Map(calls);
      const asked = (method: string) => (calls.get(method) ?? 0) - (before.get(method) ?? 0);

      const long = replies.hold(`long ${ids[2]}`);
      void long.atModel.then(() => setTimeout(long.release, 13_000)); // the model answers that turn after 13 s
      const started = Date.now();
      const took: number[] = [];
      const lines: string[] = [];
      for (const [i, id] of ids.entries()) {
        const sentAt = Date.now();
        const text = i === 2 ? `long ${id}` : `hello ${id}`;
        expect(await sendMessage(client, id, text, { onProgress: (line) => lines.push(line) })).toMatchObject({
          turn: 2,
          reply: `re: ${text}`,
        });
        took.push(Date.now() - sentAt);
      }
      const elapsed = Date.now() - started;
      // Before sending: one check for a worker per task queue per 10 s, not one per agent (five agents here, each
      // checked again before this round when the worker was remembered per agent). While an Update is out: a look
      // (describe + task queue) at 3 s, 6 s, 12 s, …, not every 2 s (six or seven looks for the long turn).
      const checks = 1 + Math.floor(elapsed / 10_000);
      const looks = took.reduce((sum, ms) => sum + looksWithin(ms), 0);
      const seen = JSON.stringify({ took, elapsed, calls: Object.fromEntries(calls) });
      expect(took[2]).toBeGreaterThanOrEqual(13_000);
      expect(asked('DescribeTaskQueue'), seen).toBeGreaterThanOrEqual(1 + looksWithin(13_000));
      expect(asked('DescribeTaskQueue'), seen).toBeLessThanOrEqual(checks + looks);
      expect(asked('DescribeWorkflowExecution'), seen).toBeLessThanOrEqual(checks + looks);
      // The long turn was still reported on.
      expect(
        lines.some((line) => line.startsWith(`send to ${ids[2]}`) && line.includes('the agent is working')),
        lines.join('\n'),
      ).toBe(true);
      for (const id of ids) await closeAgent(h.client, id);
    } finally {
      await client.connection.close();
    }
  }, 90_000);

  it('a check for workers that Temporal does not answer is made again: the message is sent once it answers, or the error says how long it tried', async () => {
    const proxy = await startProxy(String(h.temporal.connectionOptions.address));
    let client: Client | undefined;
    try {
      client = await connectClient(localTemporalTarget(proxy.address, h.temporal.namespace));
      const [agentId, shortId] = [newAgentId('recheck'), newAgentId('recheck-short')];
      for (const id of [agentId, shortId]) {
        await startAgent(h.client, { agentId: id, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
      }
      // The client has never looked at these agents: its first look finds no Temporal for 12 s.
      const cut = proxy.cut(12_000);
      const lines: string[] = [];
      const sending = sendMessage(client, agentId, 'through the cut', { onProgress: (line) => lines.push(line) });
      const short = sendMessage(client, shortId, 'not sent', { reconnectTimeoutMs: 3_000 }).catch((e: unknown) => e);
      await cut;
      expect(await sending).toMatchObject({ turn: 1, reply: 're: through the cut' });
      expect(lines.some((line) => line.includes('cannot reach Temporal to look for a worker'))).toBe(true);
      const unreachable = await short;
      expect(unreachable).toBeInstanceOf(TemporalUnreachableError);
      expect((unreachable as Error).message).toMatch(
        new RegExp(
          `^cannot reach Temporal to look for agent ${shortId}'s worker \\(.+; tried for \\d+ s\\); nothing was sent$`,
        ),
      );
      expect((await agentState(h.client, shortId)).turns).toBe(0); // nothing was sent
      for (const id of [agentId, shortId]) await closeAgent(h.client, id);
    } finally {
      await client?.connection.close();
      await proxy.close();
    }
  }, 60_000);
});

describe('failures carry the workflow message and type', () => {
  it('a failed turn is an AgentUpdateError with the message and type at the top level; the CLI prints it without a stack', async () => {
    const agentId = newAgentId('typed');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const error = await sendMessage(h.client, agentId, '401 please').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentUpdateError);
    expect(error).toBeInstanceOf(WorkflowUpdateFailedError); // still what the SDK throws, for older callers
    const failed = error as AgentUpdateError;
    expect(failed.message).toBe(
      `callModel failed: model gpt-4o-mini at ${h.model.baseURL}: HTTP 401: 401 Incorrect API key provided`,
    );
    expect(failed.type).toBe('TurnFailed');
    expect(failed.updateId).toMatch(/^[0-9a-f-]{36}$/);
    expect(failed).toMatchObject({ agentId, update: 'send', name: 'AgentUpdateError' });
    expect((failed.cause as Error).message).toBe(failed.message);
    // The failure keeps its cause: the model-call activity's failure, and under it the provider's HTTP status.
    const activity = (failed.cause as ApplicationFailure).cause;
    expect(activity).toBeInstanceOf(ActivityFailure);
    expect((activity as ActivityFailure).cause).toMatchObject({ type: 'ModelHttp401' });

    const rejected = await sendMessage(h.client, agentId, 'x', { expectedTurn: 7 }).catch((e: unknown) => e);
    expect(rejected).toBeInstanceOf(AgentUpdateError);
    expect(rejected).toMatchObject({ update: 'send' });
    expect((rejected as Error).message).toContain('expectedTurn: this message would open turn');
    expect(rejected).toMatchObject({ type: FAILURE.invalidInput });

    const run = await longrun(['send', agentId, '401 again']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `longrun: the turn failed: callModel failed: model gpt-4o-mini at ${h.model.baseURL}: HTTP 401: 401 Incorrect API key provided\n`,
    );
    await closeAgent(h.client, agentId);
  });
});

describe('output reaches a pipe whole', () => {
  it('a 600 KiB JSON object read with `longrun reload` through a pipe arrives whole and parses', async () => {
    const agentId = newAgentId('pipe');
    const key = `agents/${agentId}/big.json`;
    const big = {
      items: Array.from({ length: 6_000 }, (_, i) => ({ i, text: `item ${i} `.padEnd(90, 'x') })),
    };
    const body = JSON.stringify(big);
    expect(body.length).toBeGreaterThan(600 * 1024);
    await h.store.put(key, body);

    const run = await longrun(['reload', agentId, key]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.length).toBe(body.length + 1); // and its newline
    expect(JSON.parse(run.stdout)).toEqual(big);
  });
});
