/**
 * The agent through the real stack (embedded Temporal dev server and MinIO, an in-process worker, a zero-latency
 * scripted model on loopback): orchestration overhead per turn, and history bytes per turn at a ~10k- and a
 * ~100k-token context against the bytes of the transcript a pass-the-whole-transcript design would record.
 *
 * Every step is bounded: the history step's agent runs on a model whose window leaves its context sizes below every
 * threshold at which the default policy compacts (checked before anything starts: {@link checkHistoryTargets}), and
 * its growth stops with an error naming the sizes if the context shrinks or does not reach them in the sends
 * computed from the first one's growth.
 */
import { randomUUID } from 'node:crypto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { agentHandle, agentState, closeAgent, compactAgent, sendMessage, startAgent } from '../client/agents.ts';
import { compactionHistory } from '../client/reads.ts';
import type { Client } from '@temporalio/client';
import { modulePath } from '../config/settings.ts';
import type { TemporalTarget } from '../config/temporal.ts';
import { unkeyedRecord } from '../contract/records.ts';
import { gateOf } from '../engine/gates.ts';
import { resolveModelInfo } from '../engine/models.ts';
import { resolvePolicy } from '../engine/presets.ts';
import { benchBackground, BACKGROUND_FULL, BACKGROUND_SHORT } from './background.ts';
import type { BackgroundOptions } from './background.ts';
import { historyBytesPerCompaction } from './compaction-history.ts';
import type { CompactionHistoryFigures } from './compaction-history.ts';
import { onStop } from './lifecycle.ts';
import { onBenchStack } from './stack.ts';
import type { BenchStack } from './stack.ts';
import { echoUpdate } from './floor-workflow.ts';
import { startChatServer } from '../llm/chat-server.ts';
import { createOpenAI } from '../llm/openai.ts';
import { S3BlobStore } from '../storage/s3.ts';
import { startInProcessAgents } from '../worker/in-process.ts';

const SUMMARY_MODEL = 'bench-summary';
/** Turns and compaction cycles left out of the figures at the start (caches warming up). */
const WARM_UP_TURNS = 5;
const WARM_UP_CYCLES = 2;

export interface AgentBenchOptions {
  /** Turns of the overhead step, side by side with the floor (more than {@link WARM_UP_TURNS}). */
  turns: number;
  /** Forced compaction cycles (more than {@link WARM_UP_CYCLES}). */
  cycles: number;
  /** The history step: the model of its agents, and the context sizes (tokens) at which one turn is measured. */
  history: { model: string; tokens: number[] };
  /** The history-per-compaction step: the context sizes (messages) at which one forced compaction is measured. */
  compactionHistory: { messages: number[] };
  background: BackgroundOptions;
}

/**
 * The history step's agent is on gpt-4.1 (a 1,047,576-token window): on gpt-4o-mini (128,000) the default policy
 * masks from 64,000 tokens and compacts in the background from 89,600, and a 100,000-token context is never reached.
 */
export const AGENT_FULL: AgentBenchOptions = {
  turns: 60,
  cycles: 12,
  history: { model: 'gpt-4.1', tokens: [10_000, 100_000] },
  compactionHistory: { messages: [20, 2_000] },
  background: BACKGROUND_FULL,
};

export const AGENT_SHORT: AgentBenchOptions = {
  turns: 12,
  cycles: 3,
  history: { model: 'gpt-4o-mini', tokens: [2_000, 10_000] },
  compactionHistory: { messages: [20, 200] },
  background: BACKGROUND_SHORT,
};

/** A context size the history step cannot reach: names it, the model, and where that model's agent compacts. */
export class UnreachableTargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnreachableTargetError';
  }
}

/**
 * The lowest context size (tokens) at which the default policy acts for `model` (the trigger, the background
 * compaction or the masking pass), with which of them it is.
 */
export function compactsFrom(model: string): { tokens: number; what: string; window: number } {
  const { window } = resolveModelInfo(model);
  const gate = gateOf(resolvePolicy(), window);
  const thresholds: [string, number | undefined][] = [
    ['the trigger', gate.tokens],
    ['the background compaction', gate.background],
    ['the masking pass', gate.mask?.tokens],
  ];
  const [what, tokens] = thresholds
    .filter((t): t is [string, number] => t[1] !== undefined)
    .reduce((low, t) => (t[1] < low[1] ? t : low));
  return { tokens, what, window };
}

/** Share of {@link compactsFrom} a target may reach: the growth overshoots by up to one message. */
export const REACHABLE_SHARE = 0.9;

/** Throws {@link UnreachableTargetError} unless every size of `tokens` is below where `model`'s agent compacts. */
export function checkHistoryTargets(model: string, tokens: readonly number[]): void {
  const from = compactsFrom(model);
  const limit = Math.floor(from.tokens * REACHABLE_SHARE);
  for (const target of tokens) {
    if (!Number.isInteger(target) || target < 1 || target > limit) {
      throw new UnreachableTargetError(
        `history per turn at ${target} tokens: unreachable on ${model} (window ${from.window}): its agent's context ` +
          `compacts from ${from.tokens} tokens (${from.what}), so a target must be a whole number from 1 to ${limit} ` +
          `(${REACHABLE_SHARE * 100}% of that); pick a model with a larger window or a smaller target`,
      );
    }
  }
}

/**
 * Forced compaction cycles (plan, summarize, apply) on a ~20k-token context: the Update's round trip. Then the
 * size of the workflow's state (what the worker caches and continue-as-new carries), beside the removed-item lists
 * that the kept events leave in S3 rather than in it.
 */
async function compactionCycles(client: Client, store: S3BlobStore, taskQueue: string, cycleCount: number) {
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
  for (let cycle = 0; cycle < cycleCount; cycle++) {
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
  return {
    cycleMsP50: p50(cycles.slice(WARM_UP_CYCLES)),
    summarizerMsP50: p50(summarizer.slice(WARM_UP_CYCLES)),
    stateBytes,
  };
}

function p50(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Grows an agent's context to about `tokens` with 4 KB messages, then measures one short turn's history bytes. Bounded:
 * the sends it may take follow from the first one's growth, and a context that shrinks (a compaction) stops it; either
 * way with an error naming the sizes.
 */
async function historyBytesPerTurn(client: Client, taskQueue: string, model: string, tokens: number) {
  const agentId = `bench-${randomUUID().slice(0, 8)}`;
  await startAgent(client, { agentId, model, taskQueue });
  try {
    const chunk = 'The agent inspected the logs and found the retry loop in the queue consumer. '.repeat(52); // ~4 KB
    let context = (await agentState(client, agentId)).contextTokens;
    let sends = 0;
    let limit = Infinity;
    while (context < tokens) {
      if (sends >= limit) {
        throw new UnreachableTargetError(
          `history per turn at ${tokens} tokens: ${sends} messages of 4 KB grew ${agentId}'s context to only ` +
            `${context} tokens`,
        );
      }
      await sendMessage(client, agentId, chunk);
      sends++;
      const state = await agentState(client, agentId);
      if (state.contextTokens <= context || (state.compactions ?? 0) > 0) {
        throw new UnreachableTargetError(
          `history per turn at ${tokens} tokens: ${agentId} (${model}) compacted at ${context} tokens ` +
            `(now ${state.contextTokens}) before reaching the target`,
        );
      }
      // After the first send: half as many again as the sends the rest takes at that growth (which varies a little).
      if (sends === 1) limit = 1 + Math.ceil((1.5 * (tokens - state.contextTokens)) / (state.contextTokens - context));
      context = state.contextTokens;
    }
    const before = await agentHandle(client, agentId).describe();
    await sendMessage(client, agentId, 'short question');
    const after = await agentHandle(client, agentId).describe();
    const state = await agentState(client, agentId);
    const sameRun = before.runId === after.runId;
    return {
      contextTokens: state.contextTokens,
      historyBytesPerTurn: sameRun ? (after.historySize ?? 0) - (before.historySize ?? 0) : null,
      transcriptBytes: state.messages.reduce((sum, m) => sum + m.chars, 0),
    };
  } finally {
    await closeAgent(client, agentId);
  }
}

/**
 * History bytes per compaction at each context size (`historyBytesPerCompaction.at20` …), their spread against the
 * smallest, and the plans the agents made and how many found nothing (`plans`).
 */
async function compactionHistoryStep(
  client: Client,
  taskQueue: string,
  sizes: readonly number[],
  log: (line: string) => void,
): Promise<{ historyBytesPerCompaction: Record<string, number | null>; plans: CompactionHistoryFigures['plans'] }> {
  const bytes: Record<string, number | null> = {};
  const plans = { made: 0, empty: 0 };
  for (const messages of sizes) {
    const r = await historyBytesPerCompaction(client, taskQueue, messages);
    bytes[`at${messages}`] = r.historyBytes;
    plans.made += r.plans.made;
    plans.empty += r.plans.empty;
    log(`history bytes per compaction at ${messages} messages: ${r.historyBytes ?? 'n/a (continued as new)'}`);
  }
  const first = bytes[`at${sizes[0]}`];
  const last = bytes[`at${sizes.at(-1)}`];
  if (first && last)
    log(`history per compaction at ${sizes.at(-1)} / at ${sizes[0]} messages: ${(last / first).toFixed(2)}×`);
  log(`plans: ${plans.made} made, ${plans.empty} found nothing`);
  return { historyBytesPerCompaction: bytes, plans };
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

/** The label of a context size in the results: `at10k`, `at100k`. */
const sizeKey = (tokens: number) => `at${Math.round(tokens / 1000)}k`;

/** Throws for options the agent step cannot run with (before anything starts: run.ts checks before its stack). */
export function checkAgentOptions(options: AgentBenchOptions): void {
  if (options.turns <= WARM_UP_TURNS) throw new Error(`turns: ${options.turns}, more than ${WARM_UP_TURNS} needed`);
  if (options.cycles <= WARM_UP_CYCLES)
    throw new Error(`cycles: ${options.cycles}, more than ${WARM_UP_CYCLES} needed`);
  checkHistoryTargets(options.history.model, options.history.tokens);
}

/** The agent step, on `stack` (`npm run bench`'s) or on one of its own. */
export async function benchAgent(
  log: (line: string) => void,
  options: AgentBenchOptions = AGENT_FULL,
  stack?: BenchStack,
) {
  checkAgentOptions(options); // before anything starts
  return withBenchStack(log, stack, async ({ client, taskQueue, temporal, store }) => {
    const compactionHistory = await compactionHistoryStep(client, taskQueue, options.compactionHistory.messages, log);
    const agentId = `bench-${randomUUID().slice(0, 8)}`;
    await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
    // Side by side, alternating: a turn, then the floor (an echo Update + activity on the same server and client).
    const floor = await startFloor(temporal, client);
    const durations: number[] = [];
    const floorDurations: number[] = [];
    try {
      for (let i = 0; i < options.turns; i++) {
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
    const turnOverheadMsP50 = p50(durations.slice(WARM_UP_TURNS));
    const temporalFloorMsP50 = p50(floorDurations.slice(WARM_UP_TURNS));
    log(
      `turn overhead (zero-latency model): p50 ${turnOverheadMsP50.toFixed(1)} ms over ${options.turns - WARM_UP_TURNS} turns; ` +
        `the floor (echo Update + activity, same server) ${temporalFloorMsP50.toFixed(1)} ms: ` +
        `${(turnOverheadMsP50 / temporalFloorMsP50).toFixed(2)}×`,
    );

    const compaction = await compactionCycles(client, store, taskQueue, options.cycles);
    log(
      `compaction cycle (plan, summarize, apply; forced by Update): p50 ${compaction.cycleMsP50.toFixed(1)} ms, ` +
        `of which the summarizer call ${compaction.summarizerMsP50.toFixed(1)} ms, over ${options.cycles - WARM_UP_CYCLES} cycles`,
    );
    const bytes = compaction.stateBytes;
    log(
      `workflow state after ${options.cycles} compactions: ${bytes.total} B (messages ${bytes.messages} B, ` +
        `the last events ${bytes.events} B); their removed-item lists, kept in S3 instead: ${bytes.removedListsInS3} B`,
    );

    const historyBytes: Record<string, number | null> = {};
    const transcriptBytes: Record<string, number> = {};
    for (const tokens of options.history.tokens) {
      const r = await historyBytesPerTurn(client, taskQueue, options.history.model, tokens);
      historyBytes[sizeKey(tokens)] = r.historyBytesPerTurn;
      transcriptBytes[sizeKey(tokens)] = r.transcriptBytes;
      log(
        `history bytes per turn at ${sizeKey(tokens).slice(2)} (${r.contextTokens} tokens, ${options.history.model}): ` +
          `${r.historyBytesPerTurn ?? 'n/a (continued as new)'} vs transcript ${r.transcriptBytes} bytes`,
      );
    }
    const steps = await benchBackground(log, temporal, store, options.background);
    return {
      ...steps,
      turnOverheadMsP50,
      temporalFloorMsP50,
      compactionCycleMsP50: compaction.cycleMsP50,
      compactionSummarizerMsP50: compaction.summarizerMsP50,
      stateBytes: compaction.stateBytes,
      historyBytesPerTurn: historyBytes,
      transcriptBytes,
      ...compactionHistory,
    };
  });
}

/** `npm run bench -- --only agent.historyBytesPerCompaction`: that step alone, on a stack of its own. */
export async function benchCompactionHistory(log: (line: string) => void, options: AgentBenchOptions = AGENT_FULL) {
  return withBenchStack(log, undefined, ({ client, taskQueue }) =>
    compactionHistoryStep(client, taskQueue, options.compactionHistory.messages, log),
  );
}

/** The step latency part alone (`npm run bench -- --only agent.stepLatency`): without, beside and waiting for compaction. */
export async function benchStepLatency(log: (line: string) => void, options: AgentBenchOptions = AGENT_FULL) {
  return withBenchStack(log, undefined, ({ temporal, store }) =>
    benchBackground(log, temporal, store, options.background),
  );
}

/**
 * Runs `steps` on the bench's stack (`shared`, or one of its own: stack.ts), a zero-latency model on loopback and an
 * in-process worker, and stops what it started after.
 */
async function withBenchStack<T>(
  log: (line: string) => void,
  shared: BenchStack | undefined,
  steps: (ctx: { client: Client; taskQueue: string; temporal: TemporalTarget; store: S3BlobStore }) => Promise<T>,
): Promise<T> {
  return onBenchStack(log, shared, async ({ temporal, s3 }) => {
    // Zero latency for both: the agent's model answers 'ok', the summary model a fixed five-field summary.
    const summary = JSON.stringify({
      task_overview: 'Benchmark the agent.',
      current_state: 'Messages read.',
      important_discoveries: 'The retry loop is in the queue consumer.',
      next_steps: 'Go on.',
      context_to_preserve: 'queue consumer',
    });
    const model = await startChatServer(
      (request) => (request.body.model === SUMMARY_MODEL ? { content: summary } : { content: 'ok' }),
      { record: false },
    );
    const modelClosed = onStop(() => model.close());
    const store = new S3BlobStore(s3);
    const agents = await startInProcessAgents({
      temporal,
      taskQueue: `bench-${randomUUID()}`,
      deps: {
        store,
        openai: createOpenAI({ apiKey: 'bench', baseURL: model.baseURL, timeoutMs: 10_000 }),
        summaryModel: SUMMARY_MODEL,
      },
    });
    try {
      return await steps({ client: agents.client, taskQueue: agents.taskQueue, temporal, store });
    } finally {
      await agents.close();
      await model.close();
      modelClosed();
    }
  });
}
