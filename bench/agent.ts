/**
 * The agent through the real stack (embedded Temporal dev server and MinIO, an in-process worker, a zero-latency
 * scripted model on loopback): orchestration overhead per turn, and history bytes per turn at a ~10k- and a
 * ~100k-token context against the bytes of the transcript a pass-the-whole-transcript design would record.
 */
import { randomUUID } from 'node:crypto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { agentHandle, agentState, closeAgent, compactAgent, sendMessage, startAgent } from '../client/agents.ts';
import { compactionHistory } from '../client/reads.ts';
import type { Client } from '@temporalio/client';
import { loadSettings, modulePath } from '../config/settings.ts';
import { localTemporalTarget } from '../config/temporal.ts';
import type { TemporalTarget } from '../config/temporal.ts';
import { unkeyedRecord } from '../contract/records.ts';
import { benchBackground } from './background.ts';
import { echoUpdate } from './floor-workflow.ts';
import { startChatServer } from '../llm/chat-server.ts';
import { createOpenAI } from '../llm/openai.ts';
import { BINARIES } from '../stack/binaries.ts';
import { startEmbeddedStack } from '../stack/index.ts';
import { ensureBinaries } from '../stack/setup.ts';
import { S3BlobStore } from '../storage/s3.ts';
import { startInProcessAgents } from '../worker/in-process.ts';

const TURNS = 60;
const SUMMARY_MODEL = 'bench-summary';
const CYCLES = 12;

/**
 * Forced compaction cycles (plan, summarize, apply) on a ~20k-token context: the Update's round trip. Then the
 * size of the workflow's state (what the worker caches and continue-as-new carries), beside the removed-item lists
 * that the kept events leave in S3 rather than in it.
 */
async function compactionCycles(client: Client, store: S3BlobStore, taskQueue: string) {
  const agentId = `bench-${randomUUID().slice(0, 8)}`;
  await startAgent(client, {
    agentId,
    model: 'gpt-4o-mini',
    taskQueue,
    compaction: { reserveRatio: 0, keepTurns: 1 },
  });
  const chunk = 'The agent inspected the logs and found the retry loop in the queue consumer. '.repeat(52); // ~4 KB
  const cycles: number[] = [];
  const summarizer: number[] = [];
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    for (let i = 0; i < 20; i++) await sendMessage(client, agentId, chunk);
    const started = performance.now();
    const result = await compactAgent(client, agentId, { strategy: 'summarize' });
    cycles.push(performance.now() - started);
    summarizer.push(result.event?.llm?.durationMs ?? 0);
  }
  const state = await agentState(client, agentId);
  const kept = state.events?.[0]?.seq ?? 1;
  const { events } = await compactionHistory(client, store, agentId, { since: kept - 1 });
  // As the workflow holds it: the query puts each record's own key back, the state leaves it out.
  const held = { ...state, messages: state.messages.map((record) => unkeyedRecord(state, record)) };
  const stateBytes = {
    total: JSON.stringify(held).length,
    messages: JSON.stringify(held.messages).length,
    events: JSON.stringify(state.events ?? []).length,
    removedListsInS3: JSON.stringify(events.map((e) => e.removed)).length,
  };
  await closeAgent(client, agentId);
  return { cycleMsP50: p50(cycles.slice(2)), summarizerMsP50: p50(summarizer.slice(2)), stateBytes };
}

function p50(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Grows an agent's context to about `tokens` with 4 KB messages, then measures one short turn's history bytes. */
async function historyBytesPerTurn(client: Client, taskQueue: string, tokens: number) {
  const agentId = `bench-${randomUUID().slice(0, 8)}`;
  await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
  const chunk = 'The agent inspected the logs and found the retry loop in the queue consumer. '.repeat(52); // ~4 KB
  while ((await agentState(client, agentId)).contextTokens < tokens) await sendMessage(client, agentId, chunk);
  const before = await agentHandle(client, agentId).describe();
  await sendMessage(client, agentId, 'short question');
  const after = await agentHandle(client, agentId).describe();
  const state = await agentState(client, agentId);
  await closeAgent(client, agentId);
  const sameRun = before.runId === after.runId;
  return {
    contextTokens: state.contextTokens,
    historyBytesPerTurn: sameRun ? (after.historySize ?? 0) - (before.historySize ?? 0) : null,
    transcriptBytes: state.messages.reduce((sum, m) => sum + m.chars, 0),
  };
}

/** A worker for the floor workflow on a task queue of its own, and one running workflow to send Updates to. */
async function startFloor(temporal: TemporalTarget, client: Client) {
  const connection = await NativeConnection.connect(temporal.connectionOptions);
  const taskQueue = `floor-${randomUUID()}`;
  const worker = await Worker.create({
    connection,
    namespace: temporal.namespace,
    taskQueue,
    workflowsPath: modulePath(import.meta.url, './floor-workflow'),
    activities: { echo: (text: string) => Promise.resolve(text) },
  });
  const running = worker.run();
  const handle = await client.workflow.start('floorWorkflow', { taskQueue, workflowId: taskQueue });
  return {
    echo: (text: string) => handle.executeUpdate(echoUpdate, { args: [text] }),
    async close() {
      await handle.executeUpdate('stop');
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

export async function benchAgent(log: (line: string) => void) {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const settings = loadSettings({ ...process.env, LONGRUN_S3_BUCKET: 'longrun-bench' });
  const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir });
  const stack = await startEmbeddedStack({ mode: 'ephemeral', settings, binaries });
  // Zero latency for both: the agent's model answers 'ok', the summary model a fixed five-field summary.
  const summary = JSON.stringify({
    task_overview: 'Benchmark the agent.',
    current_state: 'Messages read.',
    important_discoveries: 'The retry loop is in the queue consumer.',
    next_steps: 'Go on.',
    context_to_preserve: 'queue consumer',
  });
  const model = await startChatServer((request) =>
    request.body.model === SUMMARY_MODEL ? { content: summary } : { content: 'ok' },
  );
  const temporal = localTemporalTarget(stack.temporal!.address, stack.temporal!.namespace);
  const store = new S3BlobStore(stack.minio!.target);
  const agents = await startInProcessAgents({
    temporal,
    taskQueue: `bench-${randomUUID()}`,
    deps: {
      store,
      openai: createOpenAI({ apiKey: 'bench', baseURL: model.baseURL, timeoutMs: 10_000 }),
      summaryModel: SUMMARY_MODEL,
    },
  });
  const { client, taskQueue } = agents;
  try {
    const agentId = `bench-${randomUUID().slice(0, 8)}`;
    await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
    // Side by side, alternating: a turn, then the floor (an echo Update + activity on the same server and client).
    const floor = await startFloor(temporal, client);
    const durations: number[] = [];
    const floorDurations: number[] = [];
    try {
      for (let i = 0; i < TURNS; i++) {
        let started = performance.now();
        await sendMessage(client, agentId, `turn ${i}`);
        durations.push(performance.now() - started);
        started = performance.now();
        await floor.echo(`turn ${i}`);
        floorDurations.push(performance.now() - started);
      }
    } finally {
      await floor.close();
    }
    await closeAgent(client, agentId);
    const turnOverheadMsP50 = p50(durations.slice(5)); // after warm-up
    const temporalFloorMsP50 = p50(floorDurations.slice(5));
    log(
      `turn overhead (zero-latency model): p50 ${turnOverheadMsP50.toFixed(1)} ms over ${TURNS - 5} turns; ` +
        `the floor (echo Update + activity, same server) ${temporalFloorMsP50.toFixed(1)} ms: ` +
        `${(turnOverheadMsP50 / temporalFloorMsP50).toFixed(2)}×`,
    );

    const compaction = await compactionCycles(client, store, taskQueue);
    log(
      `compaction cycle (plan, summarize, apply; forced by Update): p50 ${compaction.cycleMsP50.toFixed(1)} ms, ` +
        `of which the summarizer call ${compaction.summarizerMsP50.toFixed(1)} ms, over ${CYCLES - 2} cycles`,
    );
    const bytes = compaction.stateBytes;
    log(
      `workflow state after ${CYCLES} compactions: ${bytes.total} B (messages ${bytes.messages} B, ` +
        `the last events ${bytes.events} B); their removed-item lists, kept in S3 instead: ${bytes.removedListsInS3} B`,
    );

    const at10k = await historyBytesPerTurn(client, taskQueue, 10_000);
    const at100k = await historyBytesPerTurn(client, taskQueue, 100_000);
    for (const [name, r] of [['10k', at10k] as const, ['100k', at100k] as const]) {
      log(
        `history bytes per turn at ${name} (${r.contextTokens} tokens): ${r.historyBytesPerTurn ?? 'n/a (continued as new)'}` +
          ` vs transcript ${r.transcriptBytes} bytes`,
      );
    }
    const steps = await benchBackground(log, temporal, store);
    return {
      ...steps,
      turnOverheadMsP50,
      temporalFloorMsP50,
      compactionCycleMsP50: compaction.cycleMsP50,
      compactionSummarizerMsP50: compaction.summarizerMsP50,
      stateBytes: compaction.stateBytes,
      historyBytesPerTurn: { at10k: at10k.historyBytesPerTurn, at100k: at100k.historyBytesPerTurn },
      transcriptBytes: { at10k: at10k.transcriptBytes, at100k: at100k.transcriptBytes },
    };
  } finally {
    await agents.close();
    await model.close();
    await stack.stop();
  }
}
