/**
 * Isolation (issue 15, part 5): what the Temporal server is shown of an agent, and which stored objects each path
 * touches.
 *
 * - Search attributes, memo, the static summary and details and the current details of every run of an agent
 *   carry no message content and no secret: an agent's turns carry distinctive secrets (in its system prompt, a user
 *   message, a queued message, a tool result, the model's reply, compaction instructions; the worker's model API key),
 *   and the raw server records are scanned for them. The API key appears nowhere in the history either.
 * - Every object the worker's activities write (and every read that reaches the store) is under the agent's own
 *   storage prefix; so is every object `compactionHistory` (what `longrun events` runs) reads, and every key
 *   `longrun replay` reports. The built-in `context_reload` refuses another agent's keys, `..` included, before it
 *   reads anything; so does a recording replayed with `longrun replay` that asks for them; so does `longrun reload`.
 * - A workflow started with another agent's id in its input (a raw client, the temporal CLI) cannot reach that
 *   agent's objects: its activities refuse (worker/own-agent.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import type { WorkflowExecutionDescription } from '@temporalio/client';
import protos from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { defineTool, ToolRegistry } from '../../activities/tools.ts';
import {
  agentHandle,
  agentState,
  closeAgentAndWait,
  compactAgent,
  queueMessage,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import { compactionHistory } from '../../client/reads.ts';
import type { ReplayReport } from '../../commands/replay-report.ts';
import { localTemporalTarget } from '../../config/temporal.ts';
import { AGENT_WORKFLOW, agentWorkflowId } from '../../contract/agent.ts';
import type { AgentState } from '../../contract/state.ts';
import { agentPrefix } from '../../contract/keys.ts';
import { DEFAULT_HISTORY_BUDGET } from '../../workflows/continue-as-new.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer, RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { createOpenAI } from '../../llm/openai.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import type { BlobStore } from '../../storage/s3.ts';
import { startInProcessAgents } from '../../worker/in-process.ts';
import type { InProcessAgents } from '../../worker/in-process.ts';
import { newAgentId, sharedBundle, sharedStackEnv } from '../support/harness.ts';
import { runLongrun } from '../support/longrun-cli.ts';

const tag = randomUUID().slice(0, 8);
/** Distinctive text in every place an agent's content or secrets go. */
const SECRETS = {
  apiKey: `sk-proj-isolation-${tag}-DO-NOT-LOG`,
  system: `system-secret-${tag}`,
  user: `user-secret-${tag}`,
  queued: `queued-secret-${tag}`,
  toolResult: `tool-secret-${tag}`,
  reply: `reply-secret-${tag}`,
  instructions: `instructions-secret-${tag}`,
};

/** A tool whose result is a secret. */
const vault = defineTool({
  name: 'vault',
  description: 'Reads the vault',
  parameters: { type: 'object', properties: {} },
  run: () => Promise.resolve(`the vault holds ${SECRETS.toolResult}`),
});

/**
 * The model: a message naming the vault calls it, then replies with a secret; `reload: [keys]` calls context_reload
 * with each key and replies with the results; anything else is noted.
 */
function script(request: RecordedRequest): ScriptedReply {
  const messages = request.body.messages;
  const user = textOf(messages.findLast((m) => m.role === 'user')?.content);
  const last = messages.at(-1)!;
  if (last.role === 'tool') {
    const results = messages.slice(messages.findLastIndex((m) => m.role === 'assistant') + 1);
    return { content: `${SECRETS.reply}: ${results.map((m) => textOf(m.content)).join(' | ')}` };
  }
  if (user.includes('vault')) {
    return { content: null, toolCalls: [{ id: 'v1', type: 'function', function: { name: 'vault', arguments: '{}' } }] };
  }
  if (user.startsWith('reload: ')) {
    const keys = JSON.parse(user.slice('reload: '.length)) as string[];
    return {
      content: null,
      toolCalls: keys.map((reference, i) => ({
        id: `r${i + 1}`,
        type: 'function' as const,
        function: { name: 'context_reload', arguments: JSON.stringify({ reference }) },
      })),
    };
  }
  return { content: `Noted (${messages.length} messages).` };
}

/** A store access that reached MinIO: for which workflow and activity, what, which key. */
interface Access {
  workflowId: string;
  activity: string;
  op: 'get' | 'put';
  key: string;
}
const accesses: Access[] = [];

/**
 * The store the worker is given, recording every write and every read that reaches it (the worker's body cache sits
 * in front of it, so a cached read is not seen), with the activity and workflow it was made for.
 */
function recordingStore(store: S3BlobStore): BlobStore {
  const note = (op: Access['op'], key: string) => {
    const info = Context.current().info;
    accesses.push({ workflowId: info.workflowExecution?.workflowId ?? '', activity: info.activityType, op, key });
  };
  return {
    bucket: store.bucket,
    put: (key, body, contentType) => {
      note('put', key);
      return store.put(key, body, contentType);
    },
    get: (key) => {
      note('get', key);
      return store.get(key);
    },
    ensureBucket: () => store.ensureBucket(),
  };
}

let agents: InProcessAgents;
let model: ChatServer;
let store: S3BlobStore;
const A = newAgentId('iso-a');
const B = newAgentId('iso-b');
let stateA: AgentState;
let stateB: AgentState;
let detailsWhileRunning: string[] = [];

beforeAll(async () => {
  const stack = inject('stack');
  store = new S3BlobStore(stack.s3);
  model = await startChatServer(script);
  agents = await startInProcessAgents({
    temporal: localTemporalTarget(stack.temporalAddress, stack.namespace),
    taskQueue: `test-${randomUUID()}`,
    deps: {
      store: recordingStore(store),
      openai: createOpenAI({ apiKey: SECRETS.apiKey, baseURL: model.baseURL, timeoutMs: 10_000 }),
      tools: new ToolRegistry([vault]),
    },
    workflowBundle: await sharedBundle(),
  });
  const { client, taskQueue } = agents;
  const policy = { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } };
  await startAgent(client, {
    agentId: A,
    model: 'gpt-4o-mini',
    taskQueue,
    systemPrompt: SECRETS.system,
    compaction: policy,
  });
  await startAgent(client, { agentId: B, model: 'gpt-4o-mini', taskQueue });

  // A: a tool call with a secret result and a secret reply, a queued message, more turns, a forced compaction.
  expect((await sendMessage(client, A, `Keep ${SECRETS.user} safe and check the vault.`)).reply).toContain(
    SECRETS.toolResult,
  );
  await queueMessage(client, A, `Also remember ${SECRETS.queued}.`);
  for (let waited = 0; (await agentState(client, A)).turns < 2; waited += 100) {
    if (waited > 20_000) throw new Error('the queued message was not answered');
    await sleep(100);
  }
  for (let i = 1; i <= 3; i++) await sendMessage(client, A, `Step ${i}: ${'compare the two lists. '.repeat(20)}`);
  const compacted = await compactAgent(client, A, { instructions: `keep ${SECRETS.instructions}`, evenIfLarger: true });
  expect(compacted.compacted).toBe(true);
  // A run hands over (continue-as-new) only once it is minRunMs old, and looks again after each input: on a fast
  // machine all of the above fits in less, so the next message comes after it, and the hand-over follows its turn.
  await sleep(DEFAULT_HISTORY_BUDGET.minRunMs);
  await sendMessage(client, A, 'Go on.');
  stateA = await agentState(client, A);
  // The current details the Temporal UI shows, while the agent runs.
  detailsWhileRunning = [await currentDetails(A)];

  // B asks for A's objects: its own message's key, A's first message, A's compaction event, and a `..` path.
  await sendMessage(client, B, 'hello');
  const own = (await agentState(client, B)).messages[0]!.key;
  const ofA = [stateA.messages.find((m) => m.role === 'user')!.key, stateA.events!.at(-1)!.keys.event];
  const dotted = `${(await agentState(client, B)).storagePrefix}../../${ofA[0]!.slice('agents/'.length)}`;
  await sendMessage(client, B, `reload: ${JSON.stringify([own, ...ofA, dotted])}`);
  stateB = await agentState(client, B);
  detailsWhileRunning.push(await currentDetails(B));

  expect((await closeAgentAndWait(client, A)).status).toBe('closed');
  expect((await closeAgentAndWait(client, B)).status).toBe('closed');
});
afterAll(async () => {
  await agents?.close();
  await model?.close();
});

/** The current details of the agent's run, as the Temporal UI reads them (the workflow metadata query). */
async function currentDetails(agentId: string): Promise<string> {
  const metadata = await agentHandle(agents.client, agentId).query<{ currentDetails?: string }>(
    '__temporal_workflow_metadata',
  );
  return metadata.currentDetails ?? '';
}

/** Every run of the agent's workflow (continue-as-new makes several), described as the server holds them. */
async function runsOf(agentId: string): Promise<WorkflowExecutionDescription[]> {
  const runs: WorkflowExecutionDescription[] = [];
  const query = `WorkflowId = '${agentWorkflowId(agentId)}'`;
  for await (const run of agents.client.workflow.list({ query })) {
    runs.push(await agents.client.workflow.getHandle(run.workflowId, run.runId).describe());
  }
  return runs;
}

/** The raw bytes of a run's visibility record: its search attributes, memo, static summary and details. */
function visibilityBytes(run: WorkflowExecutionDescription): Buffer {
  const raw = run.raw;
  const { DescribeWorkflowExecutionResponse } = protos.temporal.api.workflowservice.v1;
  return Buffer.from(
    DescribeWorkflowExecutionResponse.encode({
      workflowExecutionInfo: {
        searchAttributes: raw.workflowExecutionInfo?.searchAttributes ?? null,
        memo: raw.workflowExecutionInfo?.memo ?? null,
      },
      executionConfig: { userMetadata: raw.executionConfig?.userMetadata ?? null },
    }).finish(),
  );
}

/** The raw bytes of a run's whole history. */
async function historyBytes(run: WorkflowExecutionDescription): Promise<Buffer> {
  const history = await agents.client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
  return Buffer.from(protos.temporal.api.history.v1.History.encode(history).finish());
}

const secretsIn = (bytes: Buffer | string) =>
  Object.entries(SECRETS)
    .filter(([, secret]) => (typeof bytes === 'string' ? bytes.includes(secret) : bytes.includes(Buffer.from(secret))))
    .map(([name]) => name);

describe('isolation', () => {
  it('search attributes, memo, summaries and details of every run hold no message content and no secret', async () => {
    for (const agentId of [A, B]) {
      const runs = await runsOf(agentId);
      expect(runs.length).toBeGreaterThan(agentId === A ? 1 : 0); // A crossed a continue-as-new
      for (const run of runs) {
        const bytes = visibilityBytes(run);
        // What is there: the status, the model and the counts (so the scan reads the attributes' payloads).
        expect(bytes.includes(Buffer.from('gpt-4o-mini'))).toBe(true);
        expect(secretsIn(bytes), `${run.workflowId} ${run.runId}`).toEqual([]);
        expect(secretsIn(JSON.stringify(run.searchAttributes)), 'search attributes').toEqual([]);
        expect(secretsIn(JSON.stringify(run.memo ?? {})), 'memo').toEqual([]);
      }
      // The visibility store's own records (what `temporal workflow list` and the UI's list show).
      for await (const listed of agents.client.workflow.list({ query: `WorkflowId = '${agentWorkflowId(agentId)}'` })) {
        expect(secretsIn(JSON.stringify(listed.searchAttributes)), 'listed search attributes').toEqual([]);
        expect(secretsIn(JSON.stringify(listed.memo ?? {})), 'listed memo').toEqual([]);
      }
    }
    // (A run that has just continued as new shows no details until its first turn.)
    const details = [...detailsWhileRunning, await currentDetails(A), await currentDetails(B)].filter(Boolean);
    expect(details.length).toBeGreaterThan(0);
    for (const shown of details) {
      expect(shown).toMatch(/^\*\*(running|closed)\*\* · model gpt-4o-mini/);
      expect(secretsIn(shown)).toEqual([]);
    }
  });

  it('the model API key appears in no history and no stored object; the content is where it belongs', async () => {
    const histories = await Promise.all((await runsOf(A)).map(historyBytes));
    for (const bytes of histories) expect(secretsIn(bytes).filter((name) => name === 'apiKey')).toEqual([]);
    // The scan finds what is there: the user's message is in the history (the Update's input).
    expect(histories.some((bytes) => bytes.includes(Buffer.from(SECRETS.user)))).toBe(true);
    const keys = await store.list(agentPrefix(A));
    const bodies = await Promise.all(keys.map(async (key) => (await store.get(key)) ?? ''));
    expect(bodies.some((body) => body.includes(SECRETS.toolResult))).toBe(true);
    expect(bodies.filter((body) => body.includes(SECRETS.apiKey))).toEqual([]);
    // The key went where it belongs: the model endpoint's Authorization header.
    expect(model.requests[0]!.headers.authorization).toBe(`Bearer ${SECRETS.apiKey}`);
  });

  it('every object the activities write or read is under their own agent’s storage prefix', () => {
    const prefixes = new Map([
      [agentWorkflowId(A), stateA.storagePrefix!],
      [agentWorkflowId(B), stateB.storagePrefix!],
    ]);
    const mine = accesses.filter((access) => prefixes.has(access.workflowId));
    // Every path that stores: messages, model replies, tool results (a step's plain calls run in its model call's
    // activity), the compaction's plan, summary and event.
    const activities = new Set(mine.filter((access) => access.op === 'put').map((access) => access.activity));
    for (const activity of ['callModel', 'planCompaction', 'applyCompaction']) {
      expect(activities, activity).toContain(activity);
    }
    const outside = mine.filter((access) => !access.key.startsWith(prefixes.get(access.workflowId)!));
    expect(outside).toEqual([]);
    expect(stateA.storagePrefix).toMatch(new RegExp(`^agents/${A}/[^/]+/$`));
  });

  it('context_reload refuses another agent’s keys and `..`, before reading them', async () => {
    const results = await Promise.all(
      stateB.messages
        .filter((m) => m.role === 'tool')
        .map(async (m) => textOf((JSON.parse((await store.get(m.key))!) as ChatMessage).content)),
    );
    expect(results).toHaveLength(4);
    expect(results[0]).toMatch(/^\[agents\/iso-b-.* · page 1 of 1\]\n/); // its own message reloads
    for (const refused of results.slice(1))
      expect(refused).toMatch(/^error: reference ".*" is not stored content of this agent$/);
    const ofA = accesses.filter((access) => access.workflowId === agentWorkflowId(B) && access.key.includes(`/${A}/`));
    expect(ofA).toEqual([]);
  });

  it('compactionHistory (longrun events) reads the agent’s own events only', async () => {
    const read: string[] = [];
    const reader = { get: (key: string) => (read.push(key), store.get(key)) };
    const { events } = await compactionHistory(agents.client, reader, A);
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(read.length).toBe(events.length);
    for (const key of read) expect(key.startsWith(stateA.storagePrefix!)).toBe(true);
    for (const event of events) {
      for (const key of [...Object.values(event.keys), ...event.removed.map((item) => item.key)]) {
        expect(key.startsWith(stateA.storagePrefix!), key).toBe(true);
      }
    }
  });

  it('longrun reload refuses another agent’s key and `..`; longrun replay stays in its own prefix', async () => {
    const env = { ...process.env, ...sharedStackEnv() };
    const keyOfA = stateA.messages.find((m) => m.role === 'user')!.key;
    for (const reference of [keyOfA, `${agentPrefix(B)}../${keyOfA.slice('agents/'.length)}`]) {
      const reload = await runLongrun(['reload', B, reference], { env });
      expect(reload).toMatchObject({ code: 2, stdout: '' });
      expect(reload.stderr).toContain(`is outside agents/${B}/`);
    }

    // A recording whose assistant asks context_reload for A's message: the replayed agent's tool refuses it.
    const recording = [
      { role: 'user', content: 'Read the other agent’s note.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'x1',
            type: 'function',
            function: { name: 'context_reload', arguments: JSON.stringify({ reference: keyOfA }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'x1', content: 'recorded: the note' },
      { role: 'assistant', content: 'Done.' },
    ];
    const file = join(await mkdtemp(join(tmpdir(), 'isolation-')), 'hostile.jsonl');
    await writeFile(file, recording.map((line) => JSON.stringify(line)).join('\n'));
    const replay = await runLongrun(['replay', file, '--json'], { env, timeoutMs: 120_000 });
    expect(replay.code, replay.stderr).toBe(0);
    const report = JSON.parse(replay.stdout) as ReplayReport;
    expect(report.storagePrefix).toMatch(new RegExp(`^agents/${report.agentId}/[^/]+/$`));
    const result = report.finalView.find((m) => m.role === 'tool');
    expect(textOf(result?.content)).toBe(
      `error: reference ${JSON.stringify(keyOfA)} is not stored content of this agent`,
    );
    const reported = report.compactions.flatMap((c) => [...Object.values(c.keys), ...c.offloaded.map((o) => o.key)]);
    for (const key of reported) expect(key.startsWith(report.storagePrefix)).toBe(true);
  });

  it('a workflow started with another agent’s id in its input cannot reach that agent’s objects', async () => {
    const intruder = newAgentId('iso-intruder');
    const before = await store.list(agentPrefix(A));
    // As a raw client or the temporal CLI can: workflow agent-<intruder>, input naming agent A.
    await agents.client.workflow.start(AGENT_WORKFLOW, {
      workflowId: agentWorkflowId(intruder),
      taskQueue: agents.taskQueue,
      args: [{ agentId: A, model: 'gpt-4o-mini' }],
    });
    const failed = await sendMessage(agents.client, intruder, 'read A').then(
      () => new Error('the turn was answered'),
      (error: unknown) => error as Error,
    );
    expect(failed).toMatchObject({ type: 'TurnFailed' });
    // The model call is refused, then the store of the user's message on its own (the turn's last step).
    expect(failed.message).toBe(
      `storeMessage failed: agentId ${JSON.stringify(A)} is not the agent of workflow ${agentWorkflowId(intruder)} ` +
        '(agent-<agentId>): storeMessage reads and writes the objects of its own agent only',
    );
    expect(await store.list(agentPrefix(A))).toEqual(before);
    expect(accesses.filter((access) => access.workflowId === agentWorkflowId(intruder))).toEqual([]);
    await agents.client.workflow.getHandle(agentWorkflowId(intruder)).terminate('test done');
  });
});
