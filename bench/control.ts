/**
 * Reaching an agent while it works (issue 28), on the real stack (embedded Temporal and MinIO, an in-process worker,
 * a loopback model that answers at once): how soon a forced compaction, a steer and an interrupt sent during a long
 * tool loop take effect. Every time is taken in this process: the sends here, and the model requests where the
 * loopback server's responder sees them arrive.
 *
 * - Forced compaction: Updates `compact` sent at several steps of one long turn (a `work` tool of `compaction.stepMs`
 *   per step). `steps` = how many model calls began after the send without the compaction: the first request that
 *   carries its summary is the k-th of the turn, the step in flight at the send the s-th, so k - 1 - s (0 = applied at
 *   the boundary right after the step in flight).
 * - Steer: Updates `steer` sent at random moments of a long tool loop; from the send to the arrival of the first model
 *   request whose messages hold its text. Beside it, the duration of a step of that same loop (the time between two
 *   consecutive model requests): a steer waits for the step in flight, so its latency is compared with a step's.
 * - Interrupt: Updates `interrupt` sent while a tool that honours its cancellation runs (a minute unless cancelled),
 *   at a random moment of it; from the send to the Update's answer (it answers once the turn has ended), and to the
 *   answer of the `send` that opened the turn; split at the moment the tool's abort signal fired (the cancellation
 *   reaches an activity with the server's answer to a heartbeat). Then a few sent during a model call that would
 *   take a minute.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool, ToolRegistry } from '../activities/tools.ts';
import { agentHandle, closeAgent, startAgent } from '../client/agents.ts';
import type { Client } from '@temporalio/client';
import type { TemporalTarget } from '../config/temporal.ts';
import * as api from '../contract/agent.ts';
import type { SendResult } from '../contract/results.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { startChatServer } from '../llm/chat-server.ts';
import type { RecordedRequest, ScriptedReply } from '../llm/chat-server.ts';
import { createOpenAI } from '../llm/openai.ts';
import { S3BlobStore } from '../storage/s3.ts';
import type { S3Target } from '../storage/s3.ts';
import { startInProcessAgents } from '../worker/in-process.ts';
import { onStop } from './lifecycle.ts';
import { onBenchStack } from './stack.ts';
import type { BenchStack } from './stack.ts';
import { percentile } from './stats.ts';

export interface ControlOptions {
  /** One turn of `steps` tool steps of `stepMs` each; a forced compaction sent at each step of `at`. */
  compaction: { steps: number; stepMs: number; at: number[] };
  /** `steers` steers into tool loops of `stepMs` per step. */
  steer: { steers: number; stepMs: number };
  /**
   * Interrupts during a tool that honours its cancellation, and during a model call; each sent at a random moment
   * from 100 ms to `withinMs` after the call began.
   */
  interrupt: { tool: number; model: number; withinMs: number };
}

export const CONTROL_FULL: ControlOptions = {
  compaction: { steps: 150, stepMs: 100, at: [10, 40, 75, 110, 140] },
  steer: { steers: 40, stepMs: 300 },
  interrupt: { tool: 20, model: 2, withinMs: 2_500 },
};

export const CONTROL_SHORT: ControlOptions = {
  compaction: { steps: 18, stepMs: 20, at: [7, 14] },
  steer: { steers: 4, stepMs: 100 },
  interrupt: { tool: 2, model: 1, withinMs: 600 },
};

const SUMMARY_MODEL = 'bench-summary';
/** Steps of the steer loop left out of the step durations at its start (the worker's caches warming up). */
const WARM_UP_STEPS = 3;
/** Most steps of one loop turn of the steer step: it ends by an interrupt once its steers are sent. */
const STEER_LOOP_STEPS = 400;
/** Marks the summary the loopback summarizer writes: `[bench summary 3]`, numbered across the run. */
const SUMMARY_MARK = /\[bench summary (\d+)\]/g;

const call = (id: string, name: string, args: unknown) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: JSON.stringify(args) },
});

/** What a turn was opened with (its first user message, JSON). */
interface Command {
  agent: string;
  /** Call `work` this many times, one step of `stepMs` each; a steer in between changes nothing. */
  loop?: number;
  stepMs?: number;
  /** Call `sleepy` once (id `s-<sleepy>`), then answer. */
  sleepy?: number;
  /** The model takes a minute to answer. */
  slowModel?: boolean;
}

/** A request of an agent's model as the responder saw it arrive. */
interface Arrival {
  at: number;
  agent: string;
  messages: ChatMessage[];
}

function commandOf(messages: ChatMessage[]): Command {
  const first = messages.findLast((m) => m.role === 'user' && textOf(m.content).startsWith('{"agent"'));
  return first ? (JSON.parse(textOf(first.content)) as Command) : { agent: '' };
}

/** The text of every message: what to look for a steer's or a summary's text in. */
const allText = (messages: ChatMessage[]) => messages.map((m) => textOf(m.content)).join('\n');

/** The loopback model: scripted replies, and every request of an agent's model with its arrival time. */
async function startModel() {
  const arrivals: Arrival[] = [];
  let summaries = 0;
  const respond = (request: RecordedRequest): ScriptedReply => {
    const at = performance.now();
    const messages = request.body.messages;
    if (request.body.model === SUMMARY_MODEL) {
      summaries++;
      return {
        content: JSON.stringify({
          task_overview: `[bench summary ${summaries}] Do the steps of work one by one.`,
          current_state: 'Working.',
          important_discoveries: 'Every step so far was done.',
          next_steps: 'The next step.',
          context_to_preserve: 'step numbers',
        }),
      };
    }
    const command = commandOf(messages);
    arrivals.push({ at, agent: command.agent, messages });
    if (command.loop !== undefined) {
      // The step rides in the call id, so that the count holds whatever compaction left of the turn.
      const last = messages.findLast((m) => m.tool_calls?.[0]?.id.startsWith('w-'))?.tool_calls?.[0]?.id;
      const done = last ? Number(last.slice(2)) : 0;
      if (done < command.loop)
        return { content: null, toolCalls: [call(`w-${done + 1}`, 'work', { n: done + 1, ms: command.stepMs ?? 0 })] };
      return { content: `looped ${done} steps` };
    }
    if (command.sleepy !== undefined) {
      const answered = messages.some((m) => m.role === 'tool' && m.tool_call_id === `s-${command.sleepy}`);
      return answered ? { content: 'woke' } : { content: null, toolCalls: [call(`s-${command.sleepy}`, 'sleepy', {})] };
    }
    if (command.slowModel) return { content: 'too late', delayMs: 60_000 };
    return { content: 'ok' };
  };
  const server = await startChatServer(respond, { record: false });
  return { server, arrivals, summaries: () => summaries };
}

/** When each call of `sleepy` began, and when it saw its cancellation, by call id. */
const sleepyStarted = new Map<string, number>();
const sleepyAborted = new Map<string, number>();

const work = defineTool({
  name: 'work',
  description: 'Does one step of work',
  parameters: { type: 'object', properties: { n: { type: 'number' }, ms: { type: 'number' } } },
  run: ({ n, ms }) => new Promise((resolve) => setTimeout(() => resolve(`step ${String(n)} done`), Number(ms))),
});

/** A minute unless cancelled: it honours its signal. */
const sleepy = defineTool({
  name: 'sleepy',
  description: 'Sleeps for a minute',
  parameters: { type: 'object', properties: {} },
  run: (_args, { signal, callId }) =>
    new Promise((resolve, reject) => {
      sleepyStarted.set(callId!, performance.now());
      const timer = setTimeout(() => resolve('slept'), 60_000);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        sleepyAborted.set(callId!, performance.now());
        reject(new Error('aborted'));
      });
    }),
});

async function until(what: string, ready: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`bench control: waited ${timeoutMs} ms for ${what}`);
    await sleep(5);
  }
}

/** A random whole number of ms from 0 to `ms`. */
const jitter = (ms: number) => Math.floor(Math.random() * ms);

function turnOf(client: Client, agentId: string, command: Omit<Command, 'agent'>): Promise<SendResult> {
  const text = JSON.stringify({ agent: agentId, ...command });
  return agentHandle(client, agentId).executeUpdate(api.sendUpdate, { args: [{ text }] });
}

export interface CompactionSend {
  /** The step in flight at the send, and the step whose model call first carried the compaction. */
  sentAtStep: number;
  appliedAtStep: number;
  /** Model calls that began after the send without it (0: applied at the next step boundary). */
  steps: number;
  updateMs: number;
}

async function forcedCompactions(
  client: Client,
  taskQueue: string,
  model: Awaited<ReturnType<typeof startModel>>,
  options: ControlOptions['compaction'],
): Promise<CompactionSend[]> {
  const agentId = `bench-ctl-compact-${randomUUID().slice(0, 8)}`;
  // No reserve: its share of the window (12,800 tokens) would protect every step of this small context.
  await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue, compaction: { reserveRatio: 0 } });
  const mine = () => model.arrivals.filter((a) => a.agent === agentId);
  const turn = turnOf(client, agentId, { loop: options.steps, stepMs: options.stepMs });
  const sends: CompactionSend[] = [];
  for (const at of options.at) {
    await until(`step ${at} of ${agentId}`, () => mine().length >= at);
    await sleep(jitter(options.stepMs)); // anywhere in the step: its model call, its tool, or between
    const sentAtStep = mine().length;
    const summariesBefore = model.summaries();
    const started = performance.now();
    const result = await agentHandle(client, agentId).executeUpdate(api.compactUpdate, {
      args: [{ strategy: 'summarize', evenIfLarger: true }],
    });
    const updateMs = performance.now() - started;
    if (!result.compacted)
      throw new Error(`bench control: the compaction sent at step ${sentAtStep}: ${result.reason}`);
    // The first request with a summary written after the send.
    const carries = (a: Arrival) =>
      [...allText(a.messages).matchAll(SUMMARY_MARK)].some((m) => Number(m[1]) > summariesBefore);
    await until(`the request carrying the compaction sent at step ${sentAtStep}`, () => mine().some(carries));
    const appliedAtStep = mine().findIndex(carries) + 1;
    sends.push({ sentAtStep, appliedAtStep, steps: appliedAtStep - 1 - sentAtStep, updateMs });
  }
  const result = await turn;
  if (result.reply !== `looped ${options.steps} steps`) {
    throw new Error(`bench control: the compacted turn ended with ${JSON.stringify(result.reply)}`);
  }
  await closeAgent(client, agentId);
  return sends;
}

async function steers(
  client: Client,
  taskQueue: string,
  model: Awaited<ReturnType<typeof startModel>>,
  options: ControlOptions['steer'],
) {
  const agentId = `bench-ctl-steer-${randomUUID().slice(0, 8)}`;
  await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
  const mine = () => model.arrivals.filter((a) => a.agent === agentId);
  const latencies: number[] = [];
  const stepDurations: number[] = [];
  let turn: Promise<SendResult> | undefined;
  let turnStart = 0;
  /** Ends the loop turn in progress and keeps the durations of its steps. */
  const endTurn = async () => {
    await agentHandle(client, agentId).executeUpdate(api.interruptUpdate, { args: [{}] });
    await turn;
    const times = mine()
      .slice(turnStart)
      .map((a) => a.at);
    for (let i = 1 + WARM_UP_STEPS; i < times.length; i++) stepDurations.push(times[i]! - times[i - 1]!);
  };
  for (let i = 0; i < options.steers; i++) {
    if (!turn || mine().length - turnStart > STEER_LOOP_STEPS - 10) {
      if (turn) await endTurn();
      turnStart = mine().length;
      turn = turnOf(client, agentId, { loop: STEER_LOOP_STEPS, stepMs: options.stepMs });
      await until(`step ${1 + WARM_UP_STEPS} of ${agentId}`, () => mine().length - turnStart >= 1 + WARM_UP_STEPS);
    }
    await sleep(jitter(1.5 * options.stepMs)); // anywhere in a step
    const text = `steer ${i}: ${randomUUID().slice(0, 8)}`;
    const started = performance.now();
    const landed = await agentHandle(client, agentId).executeUpdate(api.steerUpdate, { args: [{ text }] });
    if (landed.opened) throw new Error(`bench control: steer ${i} opened a turn (the loop had ended)`);
    await until(`the request carrying ${text}`, () => mine().some((a) => allText(a.messages).includes(text)));
    latencies.push(mine().find((a) => allText(a.messages).includes(text))!.at - started);
  }
  await endTurn();
  await closeAgent(client, agentId);
  return { latencies, stepDurations };
}

async function interrupts(
  client: Client,
  taskQueue: string,
  model: Awaited<ReturnType<typeof startModel>>,
  options: ControlOptions['interrupt'],
) {
  const agentId = `bench-ctl-interrupt-${randomUUID().slice(0, 8)}`;
  sleepyStarted.clear(); // a run before this one in the same process used the same call ids
  sleepyAborted.clear();
  await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
  const handle = agentHandle(client, agentId);
  const tool = {
    updateMs: [] as number[],
    sendMs: [] as number[],
    /** From the send to the tool's abort signal, and from there to the Update's answer. */
    toToolMs: [] as number[],
    afterToolMs: [] as number[],
    cancelled: 0,
  };
  const modelCall = { updateMs: [] as number[], sendMs: [] as number[] };
  for (let i = 0; i < options.tool + options.model; i++) {
    const onTool = i < options.tool;
    const callId = `s-${i}`;
    const requestsBefore = model.arrivals.length;
    const turn = onTool ? turnOf(client, agentId, { sleepy: i }) : turnOf(client, agentId, { slowModel: true });
    if (onTool) await until(`${callId} running`, () => sleepyStarted.has(callId));
    else await until(`the slow model call of ${agentId}`, () => model.arrivals.length > requestsBefore);
    await sleep(100 + jitter(options.withinMs - 100));
    const started = performance.now();
    const result = await handle.executeUpdate(api.interruptUpdate, { args: [{}] });
    const answered = performance.now() - started;
    const sent = await turn;
    const ended = performance.now() - started;
    if (!result.interrupted || !sent.interrupted) {
      throw new Error(`bench control: interrupt ${i} did not end the turn: ${result.reason}`);
    }
    const figures = onTool ? tool : modelCall;
    figures.updateMs.push(answered);
    figures.sendMs.push(ended);
    const aborted = sleepyAborted.get(callId);
    if (onTool && aborted !== undefined) {
      tool.cancelled++;
      tool.toToolMs.push(aborted - started);
      tool.afterToolMs.push(answered - (aborted - started));
    }
  }
  await closeAgent(client, agentId);
  return { tool, modelCall };
}

/** Logs `rows` as columns padded to their widest cell. */
function table(log: (line: string) => void, rows: string[][]): void {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  for (const row of rows)
    log(
      row
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join('  ')
        .trimEnd(),
    );
}

const ms = (value: number | undefined) => (value === undefined ? 'n/a' : `${value.toFixed(0)} ms`);

/** The control step, on `stack` (`npm run bench`'s) or on one of its own. */
export async function benchControl(
  log: (line: string) => void,
  options: ControlOptions = CONTROL_FULL,
  stack?: BenchStack,
) {
  return onBenchStack(log, stack, ({ temporal, s3 }) => controlOn(temporal, s3, log, options));
}

async function controlOn(temporal: TemporalTarget, s3: S3Target, log: (line: string) => void, options: ControlOptions) {
  const model = await startModel();
  const modelClosed = onStop(() => model.server.close());
  const agents = await startInProcessAgents({
    temporal,
    taskQueue: `bench-ctl-${randomUUID()}`,
    deps: {
      store: new S3BlobStore(s3),
      openai: createOpenAI({ apiKey: 'bench', baseURL: model.server.baseURL, timeoutMs: 120_000 }),
      summaryModel: SUMMARY_MODEL,
      tools: new ToolRegistry([work, sleepy]),
    },
  });
  const { client, taskQueue } = agents;
  try {
    const sends = await forcedCompactions(client, taskQueue, model, options.compaction);
    const forcedCompactionSteps = Math.max(...sends.map((s) => s.steps));
    log(
      `forced compaction during a ${options.compaction.steps}-step turn (${options.compaction.stepMs} ms tool steps): ` +
        sends.map((s) => `sent in step ${s.sentAtStep}, first carried by step ${s.appliedAtStep}`).join('; '),
    );
    const steer = await steers(client, taskQueue, model, options.steer);
    const steerLatencyP99Ms = percentile(steer.latencies, 99)!;
    const stepP99Ms = percentile(steer.stepDurations, 99)!;
    const steerMarginMs = stepP99Ms + 250 - steerLatencyP99Ms;
    log(
      `steer (${options.steer.stepMs} ms tool steps): ${steer.latencies.length} steers, p50 ` +
        `${ms(percentile(steer.latencies, 50))}; a step p50 ${ms(percentile(steer.stepDurations, 50))} over ` +
        `${steer.stepDurations.length} steps`,
    );
    const interrupt = await interrupts(client, taskQueue, model, options.interrupt);
    const interruptLatencyP99Ms = percentile(interrupt.tool.updateMs, 99)!;
    log(
      `interrupt during a tool that honours its cancellation: ${interrupt.tool.updateMs.length} interrupts, p50 ` +
        `${ms(percentile(interrupt.tool.updateMs, 50))}; to the send's answer p99 ` +
        `${ms(percentile(interrupt.tool.sendMs, 99))}; the tool saw its cancellation ${interrupt.tool.cancelled} times, ` +
        `p50 ${ms(percentile(interrupt.tool.toToolMs, 50))} / p99 ${ms(percentile(interrupt.tool.toToolMs, 99))} after ` +
        `the send, and the Update answered p50 ${ms(percentile(interrupt.tool.afterToolMs, 50))} / p99 ` +
        `${ms(percentile(interrupt.tool.afterToolMs, 99))} after that`,
    );
    const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
    table(log, [
      ['figure', 'value', 'target', ''],
      [
        'control.forcedCompactionSteps',
        `${forcedCompactionSteps} (of ${sends.length} sends)`,
        '≤ 1',
        met(forcedCompactionSteps <= 1),
      ],
      [
        'control.steerLatencyP99Ms',
        ms(steerLatencyP99Ms),
        `≤ step p99 + 250 ms = ${ms(stepP99Ms + 250)}`,
        `${met(steerMarginMs >= 0)} (margin ${steerMarginMs.toFixed(0)} ms)`,
      ],
      ['control.stepP99Ms', ms(stepP99Ms), '', ''],
      ['control.interruptLatencyP99Ms', ms(interruptLatencyP99Ms), '≤ 2000 ms', met(interruptLatencyP99Ms <= 2_000)],
      ['interrupt during a model call', interrupt.modelCall.updateMs.map((v) => ms(v)).join(', '), '', ''],
    ]);
    return {
      forcedCompactionSteps,
      forcedCompactions: sends,
      steerLatencyP50Ms: percentile(steer.latencies, 50)!,
      steerLatencyP99Ms,
      stepP50Ms: percentile(steer.stepDurations, 50)!,
      stepP99Ms,
      steerMarginMs,
      steers: steer.latencies.length,
      steps: steer.stepDurations.length,
      interruptLatencyP50Ms: percentile(interrupt.tool.updateMs, 50)!,
      interruptLatencyP99Ms,
      interruptSendP99Ms: percentile(interrupt.tool.sendMs, 99)!,
      interrupts: interrupt.tool.updateMs.length,
      interruptsSeenByTool: interrupt.tool.cancelled,
      interruptToToolP50Ms: percentile(interrupt.tool.toToolMs, 50) ?? null,
      interruptToToolP99Ms: percentile(interrupt.tool.toToolMs, 99) ?? null,
      interruptAfterToolP99Ms: percentile(interrupt.tool.afterToolMs, 99) ?? null,
      interruptModelCallMs: interrupt.modelCall.updateMs,
      interruptModelCallSendMs: interrupt.modelCall.sendMs,
    };
  } finally {
    await agents.close();
    await model.server.close();
    modelClosed();
  }
}
