/**
 * The chaos run: the same scripted long sessions twice, once without faults and once under fire, on a Temporal dev
 * server and a MinIO of its own, with the worker as a child process; then the invariants (invariants.ts) on
 * what each run left, and the second compared with the first.
 *
 * Faults of the second run: F1 the worker killed (SIGKILL) 0.5–5 s after each start, `kills` times; F2 those kills
 * land on a tool with a side effect as often as on anything else (its runs and its effects are counted); F3 the
 * worker frozen (SIGSTOP) for `freezeMs`; F4 the Temporal server killed and started again on its database; F5 MinIO
 * down for `storageDownMs`; F6 the model failing `modelFaultRate` of its requests (model.ts); F7 one more agent
 * sent 16 messages at once, more Updates than the server lets in flight (10); F8 the clients'
 * Updates go on through F4 (the client library's reconnection). Each of F4, F5 and F3 once, at a quarter, half and
 * three quarters of the kills. Then a third run on the same servers, F9 (stream.ts): agents in streaming turns,
 * steered, the worker killed `stream.kills` times mid-output; its invariants are I7 and I8.
 *
 * The driver itself must not die: an uncaught exception or unhandled rejection during the run (capture.ts), or an
 * error that ends a phase (a server that does not start again, a worker that exits before it polls), stops the run,
 * its worker and servers, and makes it a failed run with that cause ({@link DRIVER_INVARIANT}).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { captureProcessErrors } from './capture.ts';
import type { Client } from '@temporalio/client';
import { closeAgentAndWait, sendMessage, startAgent } from '../../client/agents.ts';
import { loadSettings, PROJECT_ROOT } from '../../config/settings.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { BINARIES } from '../../stack/binaries.ts';
import { minioOptionsIn, temporalOptionsIn } from '../../stack/index.ts';
import { startMinio } from '../../stack/minio.ts';
import type { MinioOptions, RunningMinio } from '../../stack/minio.ts';
import { freePorts } from '../../stack/ports.ts';
import { ensureBinaries } from '../../stack/setup.ts';
import { startTemporal } from '../../stack/temporal.ts';
import { serversEnv, WorkerProcess } from '../../stack/worker-process.ts';
import type { RunningTemporal, TemporalDevServerOptions } from '../../stack/temporal.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import { bundleWorkflows } from '../../worker/worker.ts';
import { percentile } from '../stats.ts';
import { listAll, outcomeOf } from './outcome.ts';
import { runStreamPhase } from './stream.ts';
import type { StreamFaultOptions } from './stream.ts';
import {
  eventsInStep,
  everyMessageOnce,
  noFailedWorkflow,
  referencedKeysExist,
  requestsValidAndCovered,
  sameAsWithoutFaults,
  steersOnce,
  streamWhole,
} from './invariants.ts';
import type { AgentOutcome, InvariantResult } from './invariants.ts';
import { chaosResponder, MODEL_FAULTS, taskMessage } from './model.ts';
import type { ModelFault } from './model.ts';

export interface ChaosOptions {
  agents: number;
  /** Tasks per agent (each 2–6 tool steps). */
  tasks: number;
  /** Worker kills (F1) in the run under fire, while the agents work (a script too short makes fewer). */
  kills: number;
  freezeMs: number;
  storageDownMs: number;
  modelFaultRate: number;
  seed: number;
  /** The model's window: small, so that compaction runs often. */
  window: number;
  /** History events after which the server suggests continue-as-new (so runs are crossed often). */
  continueAsNewEvents: number;
  /** F9, a run of its own after the others: worker kills while model output streams, with steers (stream.ts). */
  stream: Omit<StreamFaultOptions, 'seed'>;
  log: (line: string) => void;
  /** Called as each run starts (tests inject a fault of the driver's own there). */
  onPhase?: (phase: 'clean' | 'faulty' | 'stream') => void;
}

export const FULL: Omit<ChaosOptions, 'log'> = {
  agents: 4,
  tasks: 60,
  kills: 100,
  freezeMs: 30_000,
  storageDownMs: 30_000,
  modelFaultRate: 0.08,
  seed: 7,
  window: 6_000,
  continueAsNewEvents: 300,
  stream: { agents: 2, kills: 20, steps: 12, chunkDelayMs: 25, window: 24_000 },
};

export const SHORT: Omit<ChaosOptions, 'log'> = {
  ...FULL,
  agents: 2,
  tasks: 6,
  kills: 4,
  freezeMs: 3_000,
  storageDownMs: 3_000,
  modelFaultRate: 0.15, // so that each kind of model fault comes up in a short run
  stream: { ...FULL.stream, kills: 2 },
};

export interface FaultFigures {
  name: string;
  passed: boolean;
  /** How many times it was injected. */
  count: number;
  /** From each injection to the next turn any agent completed (ms). */
  recoveryP50Ms?: number;
  recoveryP99Ms?: number;
  [figure: string]: unknown;
}

/** The invariant a run breaks when the driver saw an uncaught error, or an error ended it before the end. */
export const DRIVER_INVARIANT = 'the driver ran to the end (no uncaught exception, no unhandled rejection)';

export interface ChaosResult {
  options: Omit<ChaosOptions, 'log' | 'onPhase'>;
  kills: number;
  turns: number;
  lost: number;
  duplicated: number;
  invariants: Record<string, boolean>;
  violations: Record<string, string[]>;
  faults: FaultFigures[];
  toolRuns: number;
  toolCalls: number;
  toolEffects: number;
  runsCrossed: number;
  compactions: number;
  /** F9: the streaming run's figures (I7, I8). */
  stream: StreamFigures;
  durationMs: { clean: number; faulty: number; stream: number };
  /** What broke {@link DRIVER_INVARIANT}: each error with its stack (empty when it held). */
  errors: string[];
}

/** What the streaming run (F9) counted, from what it stored. */
export interface StreamFigures {
  kills: number;
  turns: number;
  /** Stream items stored, offsets missing (gaps), offsets or items twice (duplicates), model attempts superseded. */
  items: number;
  gaps: number;
  duplicates: number;
  supersededAttempts: number;
  steers: { sent: number; answered: number; applied: number; resent: number; lost: number; duplicated: number };
}

const NO_STREAM: StreamFigures = {
  kills: 0,
  turns: 0,
  items: 0,
  gaps: 0,
  duplicates: 0,
  supersededAttempts: 0,
  steers: { sent: 0, answered: 0, applied: 0, resent: 0, lost: 0, duplicated: 0 },
};

/** The Temporal server, MinIO, the workflow bundle and the scratch folder the runs share. */
export interface Stack {
  dir: string;
  temporalOptions: TemporalDevServerOptions;
  minioOptions: MinioOptions;
  temporal: RunningTemporal;
  minio: RunningMinio;
  bundlePath: string;
}

/**
 * A Temporal dev server (on disk, so a killed one starts again on its data) and a MinIO of the run's own, and the
 * workflow bundle; `continueAsNewEvents`: the history length at which the server suggests continue-as-new (default:
 * the server's own).
 */
export async function startStack(options: { continueAsNewEvents?: number }, name = 'chaos'): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), `longrun-${name}-`));
  const settings = loadSettings(process.env);
  const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir });
  const [port, uiPort, s3Port, consolePort] = (await freePorts(4)) as [number, number, number, number];
  // On disk: a server killed by a fault is started again with the same options, on its data.
  const temporalOptions = temporalOptionsIn(
    dir,
    {
      binary: binaries.temporal!,
      port,
      uiPort,
      namespace: 'default',
      ...(options.continueAsNewEvents !== undefined
        ? { dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': options.continueAsNewEvents } }
        : {}),
    },
    true,
  );
  const minioOptions = minioOptionsIn(dir, { binary: binaries.minio!, port: s3Port, consolePort, bucket: name });
  // Settled together: a server that started is stopped when another part failed (not left running).
  const [temporal, minio, bundle] = await Promise.allSettled([
    startTemporal(temporalOptions),
    startMinio(minioOptions),
    bundleWorkflows(),
  ]);
  if (temporal.status === 'rejected' || minio.status === 'rejected' || bundle.status === 'rejected') {
    await Promise.all([
      temporal.status === 'fulfilled' ? temporal.value.process.stop() : undefined,
      minio.status === 'fulfilled' ? minio.value.process.stop() : undefined,
    ]);
    rmSync(dir, { recursive: true, force: true });
    throw [temporal, minio, bundle].find((r) => r.status === 'rejected')!.reason;
  }
  const bundlePath = join(dir, 'workflows.json');
  writeFileSync(bundlePath, JSON.stringify(bundle.value));
  return { dir, temporalOptions, minioOptions, temporal: temporal.value, minio: minio.value, bundlePath };
}

/** Messages sent at once to one agent (F7): more than the 10 Updates the server lets be in flight. */
export const BURST = 16;

/** Steps of an agent's task: 2 to 6, the same for the same agent and task in every run. */
const stepsOf = (agent: number, task: number) => 2 + ((agent * 7 + task * 3) % 5);

interface PhaseOutcome {
  agents: AgentOutcome[];
  stored: Set<string>;
  requests: { messages: ChatMessage[] }[];
  /** When each turn completed (ms since the epoch). */
  turnsDone: number[];
  durationMs: number;
  injected: Record<ModelFault, number>;
}

/**
 * One run of the script: `agents` agents, each sending its tasks one after the other. With `fire`, the faults run
 * meanwhile and it returns when both the script and the kills are done.
 */
async function runPhase(
  stack: Stack,
  tag: string,
  options: ChaosOptions,
  signal: AbortSignal,
  fire?: (worker: WorkerProcess, progress: () => boolean) => Promise<void>,
): Promise<PhaseOutcome> {
  const started = Date.now();
  signal.throwIfAborted();
  const { responder, injected } = chaosResponder({
    rate: fire ? options.modelFaultRate : 0,
    seed: options.seed,
    hangMs: 8_000,
  });
  const model: ChatServer = await startChatServer(responder);
  const taskQueue = `chaos-${tag}`;
  const worker = new WorkerProcess(
    join(PROJECT_ROOT, 'bench/chaos/worker.ts'),
    {
      ...process.env,
      ...serversEnv(stack.temporal, stack.minio.target),
      LONGRUN_TASK_QUEUE: taskQueue,
      LONGRUN_SUMMARY_MODEL: 'summary-model',
      LONGRUN_DATA_DIR: join(stack.dir, tag),
      OPENAI_BASE_URL: model.baseURL,
      CHAOS_DIR: join(stack.dir, tag),
      CHAOS_BUNDLE: stack.bundlePath,
    },
    '[chaos-worker] polling',
  );
  const turnsDone: number[] = [];
  let firing: Promise<void> | undefined;
  let connected: Client | undefined;
  try {
    await worker.start();
    const client = await connectClient(localTemporalTarget(stack.temporal.address, stack.temporal.namespace));
    connected = client;
    const names = Array.from({ length: options.agents }, (_, i) => `a${i + 1}`);
    const scripts = new Map(
      names.map((name, i) => [
        name,
        Array.from({ length: options.tasks }, (_, t) => taskMessage(name, t + 1, stepsOf(i + 1, t + 1))),
      ]),
    );
    let scriptDone = false;
    const script = Promise.all(
      names.map(async (name) => {
        const agentId = `chaos-${tag}-${name}`;
        await startAgent(client, {
          agentId,
          model: 'gpt-4o-mini',
          taskQueue,
          modelOverride: { window: options.window },
          turnBudget: { steps: 20 },
        });
        for (const [t, text] of scripts.get(name)!.entries()) {
          await sendMessage(client, agentId, text, { updateId: `${agentId}-task-${t + 1}`, workerTimeoutMs: 600_000 });
          turnsDone.push(Date.now());
        }
        return closeAgentAndWait(client, agentId, { workerTimeoutMs: 600_000 });
      }),
    ).finally(() => (scriptDone = true));
    // F7: one more agent gets BURST messages at once, more Updates than the server lets in flight (10).
    const burstId = `chaos-${tag}-b1`;
    const burstScript = Array.from({ length: BURST }, (_, k) => `b1 note ${k + 1}`);
    const burst = (async () => {
      await startAgent(client, {
        agentId: burstId,
        model: 'gpt-4o-mini',
        taskQueue,
        modelOverride: { window: options.window },
      });
      await Promise.all(
        burstScript.map((text, k) =>
          sendMessage(client, burstId, text, { updateId: `${burstId}-${k + 1}`, workerTimeoutMs: 600_000 }).then(() =>
            turnsDone.push(Date.now()),
          ),
        ),
      );
      return closeAgentAndWait(client, burstId, { workerTimeoutMs: 600_000 });
    })();
    firing = fire?.(worker, () => scriptDone || signal.aborted);
    const [finals, burstFinal] = await untilAborted(Promise.all([script, burst, firing]), signal);
    await worker.stop();
    const store = new S3BlobStore(stack.minio.target);
    const agents = await Promise.all([
      ...names.map((name, i) => outcomeOf(client, store, name, scripts.get(name)!, finals[i]!)),
      outcomeOf(client, store, 'b1', burstScript, burstFinal).then((o) => ({ ...o, unordered: true })),
    ]);
    const stored = new Set(await listAll(store, `agents/chaos-${tag}-`));
    return {
      agents,
      stored,
      requests: model.requests.map((r) => ({ messages: r.body.messages })),
      turnsDone,
      durationMs: Date.now() - started,
      injected,
    };
  } finally {
    await worker.stop();
    // The faults end at once on an abort (their sleeps are cut short); one may have started the worker again.
    await firing?.catch(() => undefined);
    await worker.stop();
    await connected?.connection.close();
    await model.close();
  }
}

/** `work`, or a rejection with the abort's reason as soon as `signal` aborts. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason as Error);
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    }),
  ]);
}

/** SIGKILL to a server's process group; a group already gone is no error (it died by itself). */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Recovery of each injection: the time to the next turn completed after it. */
function recoveries(injections: number[], turnsDone: number[]): number[] {
  return injections.flatMap((at) => {
    const next = turnsDone.filter((t) => t > at).sort((a, b) => a - b)[0];
    return next === undefined ? [] : [next - at];
  });
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const capture = captureProcessErrors();
  const abort = new AbortController();
  void capture.first.then((error) => {
    options.log(`[chaos] the driver failed, stopping the run: ${error.split('\n')[0]}`);
    abort.abort(new Error(`stopped after ${error.split('\n')[0]}`));
  });
  const kills: number[] = [];
  const started = Date.now();
  try {
    const result = await chaosRun(options, abort.signal, kills);
    if (capture.errors.length === 0)
      return { ...result, invariants: { ...result.invariants, [DRIVER_INVARIANT]: true } };
    const failure = driverFailure(capture.errors);
    return {
      ...result,
      invariants: { ...result.invariants, ...failure.invariants },
      violations: { ...result.violations, ...failure.violations },
      errors: failure.errors,
    };
  } catch (error) {
    // Stopped after an uncaught error (that error is the cause), or ended by an error of its own.
    const errors = capture.errors.length > 0 ? [...capture.errors] : [(error as Error).stack ?? String(error)];
    return {
      options: optionsOf(options),
      kills: kills.length,
      turns: 0,
      lost: 0,
      duplicated: 0,
      faults: [],
      toolRuns: 0,
      toolCalls: 0,
      toolEffects: 0,
      runsCrossed: 0,
      compactions: 0,
      stream: NO_STREAM,
      durationMs: { clean: 0, faulty: Date.now() - started, stream: 0 },
      ...driverFailure(errors),
    };
  } finally {
    capture.dispose();
  }
}

function optionsOf(options: ChaosOptions): Omit<ChaosOptions, 'log' | 'onPhase'> {
  const { log: _log, onPhase: _onPhase, ...rest } = options;
  return rest;
}

/** The driver's invariant broken by `errors` (each with its stack), as the result records it. */
function driverFailure(errors: string[]): Pick<ChaosResult, 'invariants' | 'violations' | 'errors'> {
  return {
    invariants: { [DRIVER_INVARIANT]: false },
    violations: { [DRIVER_INVARIANT]: errors.flatMap((e) => e.split('\n')) },
    errors: [...errors],
  };
}

async function chaosRun(options: ChaosOptions, signal: AbortSignal, kills: number[]): Promise<ChaosResult> {
  const { log } = options;
  log(`[chaos] starting a Temporal dev server and MinIO of its own, bundling the workflows`);
  const stack = await startStack(options);
  try {
    log(`[chaos] run 1, without faults: ${options.agents} agents × ${options.tasks} tasks`);
    options.onPhase?.('clean');
    const clean = await runPhase(stack, 'clean', options, signal);
    log(`[chaos] run 1 done in ${(clean.durationMs / 1000).toFixed(0)} s; run 2, under fire (${options.kills} kills)`);

    const others: Record<'F3 freeze' | 'F4 server kill' | 'F5 storage down', number[]> = {
      'F3 freeze': [],
      'F4 server kill': [],
      'F5 storage down': [],
    };
    const draw = (() => {
      let state = options.seed;
      return () => (state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
    })();
    const fire = async (worker: WorkerProcess, done: () => boolean) => {
      // Faults only while the agents work: a kill of an idle worker proves nothing (a script too short for the kills
      // asked for shows as fewer kills in the result).
      while (!done()) {
        await sleep(500 + draw() * 4_500, undefined, { signal });
        if (done()) break;
        const n = kills.length;
        // F4, F5 and F3 once each, at a quarter, half and three quarters of the kills.
        const at = (share: number) => Math.max(1, Math.round(options.kills * share));
        if (n >= at(0.25) && others['F4 server kill'].length === 0) {
          others['F4 server kill'].push(Date.now());
          log('[chaos] F4: kill -9 of the Temporal server');
          killGroup(stack.temporal.process.pid);
          await stack.temporal.process.stop();
          await sleep(2_000, undefined, { signal });
          stack.temporal = await startTemporal(stack.temporalOptions);
        } else if (n >= at(0.5) && others['F5 storage down'].length === 0) {
          others['F5 storage down'].push(Date.now());
          log(`[chaos] F5: MinIO down for ${options.storageDownMs / 1000} s`);
          killGroup(stack.minio.process.pid);
          await stack.minio.process.stop();
          await sleep(options.storageDownMs, undefined, { signal });
          stack.minio = await startMinio(stack.minioOptions);
        } else if (n >= at(0.75) && others['F3 freeze'].length === 0) {
          others['F3 freeze'].push(Date.now());
          log(`[chaos] F3: worker frozen for ${options.freezeMs / 1000} s`);
          worker.signal('SIGSTOP');
          try {
            await sleep(options.freezeMs, undefined, { signal });
          } finally {
            worker.signal('SIGCONT');
          }
        }
        if (kills.length >= options.kills) continue; // the kills are done; the script goes on
        kills.push(Date.now());
        await worker.kill();
        if (kills.length % 10 === 0) log(`[chaos] F1: ${kills.length} of ${options.kills} worker kills`);
        if (done()) break; // aborted: no new worker
        await worker.start();
      }
    };
    options.onPhase?.('faulty');
    const faulty = await runPhase(stack, 'faulty', options, signal, fire);
    log(
      `[chaos] run 2 done in ${(faulty.durationMs / 1000).toFixed(0)} s; run 3, streaming turns and steers ` +
        `(${options.stream.kills} kills mid-output)`,
    );
    options.onPhase?.('stream');
    const streamed = await runStreamPhase(stack, { ...options.stream, seed: options.seed }, signal);
    log(`[chaos] run 3 done in ${(streamed.durationMs / 1000).toFixed(0)} s; checking the invariants`);

    const i1 = everyMessageOnce(faulty.agents);
    const i7 = streamWhole(streamed.agents);
    const i8 = steersOnce(streamed.agents);
    const invariants: InvariantResult[] = [
      i1,
      requestsValidAndCovered(faulty.agents, faulty.requests),
      eventsInStep(faulty.agents),
      noFailedWorkflow(faulty.agents),
      referencedKeysExist(faulty.agents, faulty.stored),
      sameAsWithoutFaults(faulty.agents, clean.agents),
      i7,
      i8,
    ];
    // The streaming run holds the invariants its script allows too (I1 and I6 compare with a script it does not
    // follow: its tasks go on until the kills are done, and steers are user messages too).
    for (const result of [
      requestsValidAndCovered(streamed.agents, streamed.requests),
      eventsInStep(streamed.agents),
      noFailedWorkflow(streamed.agents),
      referencedKeysExist(streamed.agents, streamed.stored),
    ]) {
      if (!result.passed) invariants.push({ ...result, name: `${result.name} (streaming run)` });
    }
    // The run without faults must hold them too (else the comparison proves nothing).
    const baseline = [
      everyMessageOnce(clean.agents),
      requestsValidAndCovered(clean.agents, clean.requests),
      eventsInStep(clean.agents),
      noFailedWorkflow(clean.agents),
      referencedKeysExist(clean.agents, clean.stored),
    ];
    for (const result of baseline) {
      if (!result.passed) invariants.push({ ...result, name: `${result.name} (run without faults)` });
    }
    const allHeld = invariants.every((r) => r.passed);
    const runsLog = join(stack.dir, 'faulty', 'runs.log');
    const toolRuns = existsSync(runsLog) ? readFileSync(runsLog, 'utf8').split('\n').filter(Boolean) : [];
    const toolCalls = new Set(toolRuns).size;
    const toolEffects = existsSync(join(stack.dir, 'faulty', 'effects'))
      ? readdirSync(join(stack.dir, 'faulty', 'effects')).length
      : 0;
    const figures = (name: string, at: number[], extra: Record<string, unknown> = {}): FaultFigures => {
      const r = recoveries(at, faulty.turnsDone);
      return {
        name,
        passed: allHeld && at.length > 0,
        count: at.length,
        ...(r.length ? { recoveryP50Ms: percentile(r, 50), recoveryP99Ms: percentile(r, 99) } : {}),
        ...extra,
      };
    };
    const modelFaults = MODEL_FAULTS.reduce((sum, f) => sum + faulty.injected[f], 0);
    const faults: FaultFigures[] = [
      figures('F1 worker kill -9', kills),
      {
        name: 'F2 tool with a side effect at the kill',
        passed: allHeld && toolEffects === toolCalls,
        count: toolRuns.length - toolCalls,
        toolRuns: toolRuns.length,
        toolCalls,
        effectsApplied: toolEffects,
      },
      figures('F3 worker frozen (SIGSTOP)', others['F3 freeze'], { ms: options.freezeMs }),
      figures('F4 Temporal server kill -9', others['F4 server kill']),
      figures('F5 MinIO down', others['F5 storage down'], { ms: options.storageDownMs }),
      { name: 'F6 model faults', passed: allHeld && modelFaults > 0, count: modelFaults, ...faulty.injected },
      { name: 'F7 more Updates in flight than allowed', passed: allHeld, count: BURST },
      {
        ...figures('F9 worker kill -9 mid-stream, with steers', streamed.kills, {
          supersededAttempts: i7.supersededAttempts,
          steers: i8.sent,
        }),
        // Recovered from: each kill to the next turn completed in the streaming run.
        ...(() => {
          const r = recoveries(streamed.kills, streamed.turnsDone);
          return r.length ? { recoveryP50Ms: percentile(r, 50), recoveryP99Ms: percentile(r, 99) } : {};
        })(),
        passed: allHeld && streamed.kills.length > 0 && i7.supersededAttempts > 0,
      },
    ];
    const runsCrossed = faulty.agents.reduce((sum, a) => sum + a.runs.length - 1, 0);
    return {
      options: optionsOf(options),
      kills: kills.length,
      turns: faulty.turnsDone.length,
      lost: i1.lost,
      duplicated: i1.duplicated,
      invariants: Object.fromEntries(invariants.map((r) => [r.name, r.passed])),
      violations: Object.fromEntries(invariants.filter((r) => !r.passed).map((r) => [r.name, r.violations])),
      faults,
      toolRuns: toolRuns.length,
      toolCalls,
      toolEffects,
      runsCrossed,
      compactions: faulty.agents.reduce((sum, a) => sum + a.events.length, 0),
      stream: {
        kills: streamed.kills.length,
        turns: streamed.turnsDone.length,
        items: i7.items,
        gaps: i7.gaps,
        duplicates: i7.duplicates,
        supersededAttempts: i7.supersededAttempts,
        steers: {
          sent: i8.sent,
          answered: i8.answered,
          applied: i8.applied,
          resent: i8.resent,
          lost: i8.lost,
          duplicated: i8.duplicated,
        },
      },
      durationMs: { clean: clean.durationMs, faulty: faulty.durationMs, stream: streamed.durationMs },
      errors: [],
    };
  } finally {
    await Promise.all([stack.temporal.process.stop(), stack.minio.process.stop()]);
    rmSync(stack.dir, { recursive: true, force: true });
  }
}

/** The table `npm run chaos` prints. */
export function chaosTable(result: ChaosResult): string {
  const rows = result.faults.map((f) =>
    [
      f.name.padEnd(40),
      String(f.count).padStart(6),
      (f.passed ? 'yes' : 'NO').padStart(7),
      (f.recoveryP50Ms !== undefined ? `${(f.recoveryP50Ms / 1000).toFixed(1)} s` : '—').padStart(10),
      (f.recoveryP99Ms !== undefined ? `${(f.recoveryP99Ms / 1000).toFixed(1)} s` : '—').padStart(10),
    ].join(' '),
  );
  return [
    `${'fault'.padEnd(40)} ${'count'.padStart(6)} ${'passed'.padStart(7)} ${'rec. p50'.padStart(10)} ${'rec. p99'.padStart(10)}`,
    ...rows,
    '',
    `turns ${result.turns}, lost ${result.lost}, duplicated ${result.duplicated}, kills ${result.kills}, ` +
      `runs crossed (continue-as-new) ${result.runsCrossed}, compactions ${result.compactions}`,
    `tool runs ${result.toolRuns} for ${result.toolCalls} calls, effects applied ${result.toolEffects}`,
    `streaming run: kills ${result.stream.kills} mid-output, turns ${result.stream.turns}, stream items ` +
      `${result.stream.items}, gaps ${result.stream.gaps}, duplicates ${result.stream.duplicates}, attempts ` +
      `superseded ${result.stream.supersededAttempts}; steers sent ${result.stream.steers.sent}, answered ` +
      `${result.stream.steers.answered}, applied ${result.stream.steers.applied}, sent again (same id) ` +
      `${result.stream.steers.resent}, lost ${result.stream.steers.lost}, duplicated ${result.stream.steers.duplicated}`,
    ...Object.entries(result.invariants).map(([name, held]) => `${held ? 'held  ' : 'BROKEN'} ${name}`),
    ...Object.entries(result.violations).flatMap(([name, lines]) => [`${name}:`, ...lines.map((l) => `  ${l}`)]),
  ].join('\n');
}
