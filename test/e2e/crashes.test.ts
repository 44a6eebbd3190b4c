/**
 * A crash of either server in the middle of a turn loses nothing. The file runs its own Temporal server and MinIO,
 * kills one with SIGKILL at the worst moment, starts it again on the same port and data, and checks that the turn
 * completes with every message stored once. Under `npm test` the server is the dev server on SQLite on disk (as
 * `npm start` runs it); under `npm run test:cluster` it is a cluster of the file's own (stack/cluster.ts): the
 * Temporal server on PostgreSQL, killed and started again on the same database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHandle, agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { loadSettings } from '../../config/settings.ts';
import { localTemporalTarget } from '../../config/temporal.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { createOpenAI } from '../../llm/openai.ts';
import { BINARIES } from '../../stack/binaries.ts';
import { startClusterStack } from '../../stack/cluster.ts';
import { minioOptionsIn, temporalOptionsIn } from '../../stack/index.ts';
import { startMinio } from '../../stack/minio.ts';
import { freePorts } from '../../stack/ports.ts';
import type { ServerProcess } from '../../stack/process.ts';
import { ensureBinaries, ensureClusterBinaries } from '../../stack/setup.ts';
import { startTemporal } from '../../stack/temporal.ts';
import type { S3Target } from '../../storage/s3.ts';
import { messageKey } from '../../contract/keys.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import { startInProcessAgents } from '../../worker/in-process.ts';
import type { InProcessAgents } from '../../worker/in-process.ts';
import { sendUpdate } from '../../contract/agent.ts';
import { defineTool, ToolRegistry } from '../../activities/tools.ts';
import { newAgentId } from '../support/harness.ts';
import { onCluster } from '../support/stack-kind.ts';

/** The servers the crashes happen to. */
interface CrashServers {
  address: string;
  namespace: string;
  s3: S3Target;
  process(server: 'temporal' | 'minio'): ServerProcess;
  /** Starts the server again on the same port and data. */
  start(server: 'temporal' | 'minio'): Promise<void>;
  close(): Promise<void>;
}

const BUCKET = 'crashes';

/** The Temporal dev server on SQLite on disk and MinIO, in a folder of the file's own. */
async function embeddedServers(): Promise<CrashServers> {
  const dir = mkdtempSync(join(tmpdir(), 'longrun-crashes-'));
  const settings = loadSettings(process.env);
  const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir });
  const [port, uiPort, s3Port, consolePort] = (await freePorts(4)) as [number, number, number, number];
  const temporalOptions = temporalOptionsIn(
    dir,
    { binary: binaries.temporal!, port, uiPort, namespace: 'default' },
    true,
  );
  const minioOptions = minioOptionsIn(dir, { binary: binaries.minio!, port: s3Port, consolePort, bucket: BUCKET });
  let [temporal, minio] = await Promise.all([startTemporal(temporalOptions), startMinio(minioOptions)]);
  return {
    address: temporal.address,
    namespace: temporal.namespace,
    s3: minio.target,
    process: (server) => (server === 'temporal' ? temporal.process : minio.process),
    start: async (server) => {
      if (server === 'temporal') temporal = await startTemporal(temporalOptions);
      else minio = await startMinio(minioOptions);
    },
    close: async () => {
      await Promise.all([temporal.process.stop(), minio.process.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A cluster of the file's own: PostgreSQL, the Temporal server (the one killed), its UI, MinIO. */
async function clusterServers(): Promise<CrashServers> {
  const settings = loadSettings({ ...process.env, LONGRUN_S3_BUCKET: BUCKET });
  const binaries = await ensureClusterBinaries({ cacheDir: settings.cacheDir });
  const stack = await startClusterStack({ mode: 'ephemeral', settings, binaries });
  return {
    address: stack.temporal.address,
    namespace: stack.temporal.namespace,
    s3: stack.minio!.target,
    process: (server) => stack.processes[server]!,
    start: (server) => stack.restart(server),
    close: () => stack.stop(),
  };
}

let servers: CrashServers;
let model: ChatServer;
let agents: InProcessAgents;
let store: S3BlobStore;

/** Each run of the `side_effect` tool, by call id; `onRun` is what its next run does first (e.g. crash MinIO). */
const toolRuns: string[] = [];
let onRun: (() => Promise<void>) | undefined;
const sideEffect = defineTool({
  name: 'side_effect',
  description: 'Does something that must happen once',
  parameters: { type: 'object', properties: {} },
  run: async (_args, context) => {
    toolRuns.push(context.callId ?? '');
    const first = onRun;
    onRun = undefined;
    await first?.();
    return `done ${toolRuns.length}`;
  },
});

/** The model holds its answer to this text until released (to crash a server while the call is out). */
let held: { text: string; arrived: () => void; release: Promise<void> } | undefined;

/** SIGKILL to the server and its supervisor (their own process group), then waits for the exit. */
async function crash(server: ServerProcess): Promise<void> {
  process.kill(-server.pid!, 'SIGKILL');
  await server.stop();
}

beforeAll(async () => {
  servers = onCluster ? await clusterServers() : await embeddedServers();
  model = await startChatServer(async (request) => {
    const lastMessage = request.body.messages.at(-1);
    const last = textOf(lastMessage?.content);
    // `use the tool`: one call of `side_effect`, then an answer with what it returned.
    if (last === 'use the tool') {
      return {
        content: null,
        toolCalls: [{ id: 'call-1', type: 'function', function: { name: 'side_effect', arguments: '{}' } }],
      };
    }
    if (lastMessage?.role === 'tool') return { content: `the tool said: ${last}` };
    if (held && last === held.text) {
      const { arrived, release } = held;
      arrived();
      await release;
    }
    return { content: `re: ${last}` };
  });
  store = new S3BlobStore(servers.s3);
  agents = await startInProcessAgents({
    temporal: localTemporalTarget(servers.address, servers.namespace),
    taskQueue: 'crashes',
    deps: {
      store,
      openai: createOpenAI({ apiKey: 'test-key', baseURL: model.baseURL, timeoutMs: 10_000 }),
      tools: new ToolRegistry([sideEffect]),
    },
  });
}, 180_000);

afterAll(async () => {
  await agents?.close();
  await model?.close();
  await servers?.close();
});

/** Every user message of the agent, in order, each with its body in S3. */
async function userMessages(agentId: string): Promise<string[]> {
  const state = await agentState(agents.client, agentId);
  const users = state.messages.filter((m) => m.role === 'user');
  const bodies = await Promise.all(users.map((m) => store.get(messageKey(state, m.id))));
  return bodies.map((body) => (JSON.parse(body!) as { content: string }).content);
}

describe('a server crash mid-turn', () => {
  it('kill -9 of the Temporal server while the model call is out: it comes back from its database, the turn completes', async () => {
    const agentId = newAgentId('crash-temporal');
    await startAgent(agents.client, { agentId, model: 'gpt-4o-mini', taskQueue: 'crashes' });
    for (let i = 1; i <= 2; i++) await sendMessage(agents.client, agentId, `turn ${i}`);

    let arrived!: () => void;
    let release!: () => void;
    const atModel = new Promise<void>((resolve) => (arrived = resolve));
    held = { text: 'turn 3', arrived, release: new Promise<void>((resolve) => (release = resolve)) };
    const send = () =>
      agentHandle(agents.client, agentId).executeUpdate(sendUpdate, { args: [{ text: 'turn 3' }], updateId: 'turn-3' });
    void send().catch(() => {}); // its connection dies with the server; asked again below, same Update id
    await atModel;
    await crash(servers.process('temporal'));
    release(); // the answer reaches a worker that cannot report it
    held = undefined;
    await sleep(1_000);
    await servers.start('temporal');

    const result = await send();
    expect(result).toMatchObject({ turn: 3, reply: 're: turn 3' });
    expect(await sendMessage(agents.client, agentId, 'turn 4')).toMatchObject({ turn: 4, reply: 're: turn 4' });
    expect(await userMessages(agentId)).toEqual(['turn 1', 'turn 2', 'turn 3', 'turn 4']);
    await closeAgent(agents.client, agentId);
  }, 90_000);

  it('kill -9 of MinIO before a turn stores its message: the model call waits for MinIO, and asks the model once', async () => {
    const agentId = newAgentId('crash-minio');
    await startAgent(agents.client, { agentId, model: 'gpt-4o-mini', taskQueue: 'crashes' });
    for (let i = 1; i <= 2; i++) await sendMessage(agents.client, agentId, `turn ${i}`);

    const requestsBefore = model.requests.length;
    await crash(servers.process('minio'));
    const turn = sendMessage(agents.client, agentId, 'turn 3');
    await sleep(3_000); // the turn's storage fails meanwhile and is retried
    await servers.start('minio');

    expect(await turn).toMatchObject({ turn: 3, reply: 're: turn 3' });
    expect(await userMessages(agentId)).toEqual(['turn 1', 'turn 2', 'turn 3']);
    // The turn's model call (which stores the message) waited the outage out in its first attempt, and the model
    // was asked once for the turn (an attempt that failed on storage would ask it again).
    const history = await agentHandle(agents.client, agentId).fetchHistory();
    const attempts = (history.events ?? []).flatMap((e) => e.activityTaskStartedEventAttributes?.attempt ?? []);
    expect(Math.max(...attempts)).toBe(1);
    const asked = model.requests
      .slice(requestsBefore)
      .filter((r) => textOf(r.body.messages.at(-1)?.content) === 'turn 3');
    expect(asked).toHaveLength(1);
    await closeAgent(agents.client, agentId);
  }, 90_000);

  it('kill -9 of MinIO after a tool ran, before its result is stored: the result is stored once MinIO is back, the tool ran once', async () => {
    const agentId = newAgentId('crash-minio-tool');
    await startAgent(agents.client, { agentId, model: 'gpt-4o-mini', taskQueue: 'crashes' });
    toolRuns.length = 0;
    let restarted!: Promise<void>;
    onRun = async () => {
      await crash(servers.process('minio')); // the tool has done its work; storing its result meets no MinIO
      restarted = sleep(4_000).then(() => servers.start('minio'));
    };
    const result = await sendMessage(agents.client, agentId, 'use the tool');
    await restarted;
    expect(result).toMatchObject({ turn: 1, reply: 'the tool said: done 1', toolCalls: 1 });
    expect(toolRuns).toEqual(['call-1']);
    // The tool ran in the step's model call, whose activity waited the outage out itself: its first attempt
    // completed (a retry would have run it again).
    const events = (await agentHandle(agents.client, agentId).fetchHistory()).events ?? [];
    const names = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(names).toEqual(['describeModel', 'callModel', 'callModel']);
    const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel')!;
    const started = events.find(
      (e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled.eventId),
    );
    expect(started?.activityTaskStartedEventAttributes?.attempt).toBe(1);
    const state = await agentState(agents.client, agentId);
    const stored = state.messages.find((m) => m.role === 'tool')!;
    expect(JSON.parse((await store.get(stored.key))!)).toMatchObject({ role: 'tool', content: 'done 1' });
    await closeAgent(agents.client, agentId);
  }, 90_000);
});
