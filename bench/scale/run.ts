/**
 * The scale benchmark's driver: a Temporal server and MinIO of its own (the dev server, or cluster mode), the
 * scripted model on loopback in this process, one or two worker processes (bench/scale/worker.ts), and N agents
 * driven with the client library as a team's scripts drive them: started over a ramp, each sent its messages at
 * Poisson-distributed times, one turn at a time. With `registered` above N, the idle agents are registered first
 * (registration.ts) and left alone; through the run, steers go to active agents mid-turn (steers.ts). Every few
 * seconds it samples the workers' memory and everyone's CPU (/proc), the turns done, their latency minus the model's
 * time, and the workers' Prometheus metrics, and prints a progress line. At the end it reads every workflow run
 * (status, history size, compactions) and the server's log.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { Client, ConnectionOptions } from '@temporalio/client';
import { sendMessage, startAgent } from '../../client/agents.ts';
import { loadSettings, PROJECT_ROOT } from '../../config/settings.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import type { TemporalTarget } from '../../config/temporal.ts';
import { SEARCH_ATTRIBUTES } from '../../contract/search-attributes.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { BINARIES } from '../../stack/binaries.ts';
import { startEmbeddedStack } from '../../stack/index.ts';
import type { EmbeddedStack } from '../../stack/index.ts';
import { freePorts } from '../../stack/ports.ts';
import { startClusterStack } from '../../stack/cluster.ts';
import { ensureBinaries, ensureClusterBinaries } from '../../stack/setup.ts';
import { serversEnv, WorkerProcess } from '../../stack/worker-process.ts';
import { percentile } from '../stats.ts';
import { scaleResponder } from './model.ts';
import { descendants, memoryOf, peakSinceReset, resetPeakRss } from './procs.ts';
import type { ProcKind } from './procs.ts';
import { classifyAgents, latencySummary, peakRate, quantileBucket, steadyRss } from './results.ts';
import { hitRate, mean, MetricsDiff, scrapeAll } from './metrics.ts';
import type { AgentTally, RegistrationSummary, Sample, ScaleResult } from './results.ts';
import { registerIdle } from './registration.ts';
import { startSteers } from './steers.ts';
import { agentName, agentStart, poissonSchedule, startOffsets, userMessage } from './workload.ts';

export interface ScaleOptions {
  label: string;
  /** Active agents: started over the ramp, sent messages through the run. */
  agents: number;
  /**
   * Agents in all (0: as many as `agents`). The ones past `agents` are idle: registered before the timed run (each
   * started and sent one message, its reply waited for) and left alone for the run.
   */
  registered: number;
  /** Idle agents registered at a time. */
  registerConcurrency: number;
  /** Steers a minute to active agents in a turn, through the sending window (0: none). */
  steersPerMinute: number;
  /** The sending window: messages are due from the start until then. */
  minutes: number;
  /** Mean gap between an agent's messages, s. */
  intervalS: number;
  /** Agents start evenly over this many seconds; 0: all in the same second. */
  rampS: number;
  /** Workflow cache size of each worker. */
  cache: number;
  workers: number;
  /** Restart the worker (SIGTERM, then a new process) halfway through the steady state; every agent is sent a
   * message at that moment. */
  restart: boolean;
  /**
   * Every agent is sent a message at the moment `restart` would restart the worker, without the restart: the same
   * surge of messages with the worker running throughout, the floor of the restart's recovery.
   */
  surge: boolean;
  stack: 'dev' | 'cluster';
  /** The agents' model window (tokens): small, so that they compact within a few turns. */
  window: number;
  /** History events after which the server suggests continue-as-new. */
  continueAsNewEvents: number;
  /** Share of turns that call the `lookup` tool once. */
  toolShare: number;
  latencyMs: { min: number; max: number };
  seed: number;
  /** After the sending window, how long agents behind schedule may catch up and turns in flight finish, s. */
  drainS: number;
  /** An agent with turns left and none completed for this long at the end is stuck, s. */
  stuckAfterS: number;
  sampleS: number;
  log: (line: string) => void;
  /** Ends the run early (Ctrl-C): the results are read and written as at the end of the drain, with a note. */
  interrupt?: AbortSignal;
}

export const DEFAULTS: Omit<ScaleOptions, 'log' | 'interrupt'> = {
  label: '',
  agents: 1_000,
  registered: 0, // 0: as many as there are agents (none idle)
  registerConcurrency: 40,
  steersPerMinute: 20,
  minutes: 10,
  intervalS: 60,
  rampS: 60,
  cache: 0, // 0: as many as there are agents
  workers: 1,
  restart: false,
  surge: false,
  stack: 'dev',
  window: 12_000,
  continueAsNewEvents: 80,
  toolShare: 0.25,
  latencyMs: { min: 1_000, max: 5_000 },
  seed: 16,
  drainS: 60,
  stuckAfterS: 60,
  sampleS: 5,
};

interface TurnRecord {
  /** When the reply came (ms since the epoch). */
  at: number;
  latencyMs: number;
  modelMs: number;
}

/** The servers the run talks to: the Temporal dev server (SQLite in memory) or cluster mode (Temporal on PostgreSQL). */
async function startStack(options: ScaleOptions): Promise<EmbeddedStack> {
  const settings = loadSettings({ ...process.env, LONGRUN_S3_BUCKET: 'longrun-scale' });
  const dynamicConfig = { 'limit.historyCount.suggestContinueAsNew': options.continueAsNewEvents };
  const common = { mode: 'ephemeral', settings, dynamicConfig, log: options.log } as const;
  if (options.stack === 'cluster') {
    const binaries = await ensureClusterBinaries({ cacheDir: settings.cacheDir, log: options.log });
    return startClusterStack({ ...common, binaries, historyShards: settings.historyShards });
  }
  const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir, log: options.log });
  return startEmbeddedStack({ ...common, binaries });
}

function gitCommit(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: PROJECT_ROOT }).toString().trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: PROJECT_ROOT })
      .toString()
      .trim();
    return dirty ? `${commit} (with uncommitted changes)` : commit;
  } catch {
    return 'unknown';
  }
}

/** Busy and total CPU time of the whole machine (/proc/stat's first line, in ticks): others' load shows here. */
function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - fields[3]! - fields[4]!, total }; // less idle and iowait
}

/**
 * A gRPC interceptor that counts the client's calls by method (the client library's own looks at an agent while a
 * turn is out included), and the client's connection with it and Temporal's default retries.
 */
function countingTarget(address: string, namespace: string, calls: Record<string, number>): TemporalTarget {
  type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number];
  const counting: Interceptor = (options, nextCall) => {
    const method = options.method_definition.path.split('/').pop() ?? '?';
    calls[method] = (calls[method] ?? 0) + 1;
    // gRPC takes the next call's interface as it is (it wraps what an interceptor returns).
    return nextCall(options) as ReturnType<Interceptor>;
  };
  const target = localTemporalTarget(address, namespace);
  // connectClient hands these options to Connection.connect, which takes interceptors.
  const connectionOptions: ConnectionOptions = {
    address,
    interceptors: [counting, makeGrpcRetryInterceptor(defaultGrpcRetryOptions())],
  };
  return { ...target, connectionOptions: connectionOptions as TemporalTarget['connectionOptions'] };
}

export async function runScale(options: ScaleOptions): Promise<ScaleResult> {
  const { log } = options;
  const cache = options.cache > 0 ? options.cache : options.agents;
  const registered = Math.max(options.registered, options.agents);
  log(
    `[scale] ${options.agents} agents${registered > options.agents ? ` active of ${registered} registered` : ''} on ` +
      `${options.workers} worker process(es) (cache ${cache} each), ` +
      `${options.minutes} min, a message every ${options.intervalS} s on average, ramp ${options.rampS} s, ` +
      `${options.stack} server${options.restart ? ', worker restart halfway' : ''}`,
  );
  const stack = await startStack(options);
  const { responder, tally: modelTally } = scaleResponder({
    seed: options.seed,
    latencyMs: options.latencyMs,
    toolShare: options.toolShare,
  });
  const model = await startChatServer(responder, { record: false });
  const runTag = randomUUID().slice(0, 6);
  const taskQueue = `scale-${runTag}`;
  const metricsPorts = await freePorts(options.workers);
  const memoryLog = (port: number | string) => join(tmpdir(), `longrun-scale-${runTag}-worker-${port}.jsonl`);
  const workers = metricsPorts.map(
    (port) =>
      new WorkerProcess(
        join(PROJECT_ROOT, 'bench/scale/worker.ts'),
        {
          ...process.env,
          ...serversEnv(stack.temporal!, stack.minio!.target),
          LONGRUN_TASK_QUEUE: taskQueue,
          LONGRUN_WORKFLOW_CACHE_SIZE: String(cache),
          LONGRUN_SUMMARY_MODEL: 'gpt-4o-mini',
          LONGRUN_MODEL_TIMEOUT_MS: '30000',
          OPENAI_BASE_URL: model.baseURL,
          OPENAI_API_KEY: 'scale-benchmark',
          LONGRUN_METRICS_ADDRESS: `127.0.0.1:${port}`,
          LONGRUN_SCALE_MEMORY_LOG: memoryLog(port),
        },
        '[worker] polling',
      ),
  );
  try {
    log(
      `[scale] stack up; starting ${options.workers} worker process(es) (their memory every 15 s: ` +
        `${memoryLog('*')})`,
    );
    await Promise.all(workers.map((w) => w.start()));
    const rpcs: Record<string, number> = {};
    const client = await connectClient(countingTarget(stack.temporal!.address, stack.temporal!.namespace, rpcs));
    const running = { stack, client, rpcs, workers, metricsPorts, taskQueue, runTag, cache, registered, modelTally };
    const registration = registered > options.agents ? await registerIdleAgents(options, running) : undefined;
    return await drive(options, { ...running, ...registration });
  } finally {
    // The client's connection stays open: calls abandoned at the end may still retry, and a closed channel throws
    // from their timers. The process exits once the results are written.
    await Promise.all(workers.map((w) => w.stop()));
    await model.close();
    await stack.stop();
  }
}

interface Running {
  stack: EmbeddedStack;
  client: Client;
  /** The client's gRPC calls so far, by method. */
  rpcs: Record<string, number>;
  workers: WorkerProcess[];
  metricsPorts: number[];
  taskQueue: string;
  runTag: string;
  cache: number;
  /** Agents in all, the idle ones included. */
  registered: number;
  modelTally: ReturnType<typeof scaleResponder>['tally'];
  registration?: RegistrationSummary;
  /** Each worker's VmHWM just after its peak was reset at the end of the registration, MB (none: never reset). */
  peakFloorMb?: number[];
}

/**
 * The idle agents' registration, before the timed run: agents `agents` … `registered` − 1 started and sent one
 * message each. Then the workers' peak RSS is set back to their RSS now, so the run's peak is its own, and the
 * client's gRPC calls so far are moved to the registration's figures.
 */
async function registerIdleAgents(
  options: ScaleOptions,
  running: Running,
): Promise<{ registration: RegistrationSummary; peakFloorMb?: number[] }> {
  const { workers, rpcs } = running;
  const { log } = options;
  const done = await registerIdle({
    client: running.client,
    taskQueue: running.taskQueue,
    prefix: `scale-${running.runTag}-`,
    from: options.agents,
    to: running.registered,
    // No more at a time than the cache holds: a workflow evicted mid-turn is replayed for each of its next tasks.
    concurrency: Math.min(options.registerConcurrency, running.cache),
    window: options.window,
    log,
    ...(options.interrupt ? { signal: options.interrupt } : {}),
  });
  const memory = workers.map((w) => (w.pid !== undefined ? memoryOf(w.pid) : undefined));
  const reset = workers.every((w) => w.pid !== undefined && resetPeakRss(w.pid));
  if (!reset) log(`[scale] could not reset the workers' peak RSS: the run's peak includes the registration's`);
  const floors = workers.map((w) => (w.pid !== undefined ? (memoryOf(w.pid)?.peakMb ?? 0) : 0));
  const clientRpcs = { ...rpcs };
  for (const method of Object.keys(rpcs)) delete rpcs[method];
  const summary: RegistrationSummary = {
    ...done,
    peakRssMb: Math.round(Math.max(0, ...memory.map((m) => m?.peakMb ?? 0))),
    rssAtEndMb: Math.round(Math.max(0, ...memory.map((m) => m?.rssMb ?? 0))),
    clientRpcs,
  };
  log(
    `[scale] registration done: ${summary.registered} of ${summary.agents} idle agents in ` +
      `${(summary.ms / 60_000).toFixed(1)} min (${summary.perSec.toFixed(1)}/s), ${summary.failed} failed; ` +
      `worker RSS ${summary.rssAtEndMb} MB (peak ${summary.peakRssMb} MB); the timed run starts`,
  );
  return { registration: summary, ...(reset ? { peakFloorMb: floors } : {}) };
}

async function drive(options: ScaleOptions, running: Running): Promise<ScaleResult> {
  const { log } = options;
  const { client, workers, taskQueue, runTag, modelTally } = running;
  const rampMs = options.rampS * 1_000;
  const sendMs = options.minutes * 60_000;
  const steadyFromMs = Math.min(Math.max(rampMs, 1_000), sendMs);
  const restartAtMs = options.restart || options.surge ? Math.round((steadyFromMs + sendMs) / 2) : undefined;
  const offsets = startOffsets(options.agents, rampMs);
  const t0 = Date.now() + 1_000;
  const endOfSending = t0 + sendMs;
  const endOfDrain = endOfSending + options.drainS * 1_000;

  const tallies: AgentTally[] = [];
  const turns: TurnRecord[] = [];
  const clientErrors: Record<string, number> = {};
  const workerCrashes: string[] = [];
  const errorSamples: string[] = [];
  let started = 0;
  let inFlight = 0;
  let errors = 0;
  let withTool = 0;
  /** The active agents in a turn now (a message sent, its reply not back yet), by index: the steers' targets. */
  const inTurn = new Set<number>();
  const restartDone = new Map<string, number>(); // agent → when its restart message was answered
  const noteError = (error: unknown) => {
    errors++;
    const name = error instanceof Error ? error.name : 'Error';
    clientErrors[name] = (clientErrors[name] ?? 0) + 1;
    if (errorSamples.length < 10)
      errorSamples.push(error instanceof Error ? error.message.slice(0, 300) : String(error));
  };

  // Aborted at the end of the drain: the turns still out are abandoned (their calls cancelled).
  const stopped = new AbortController();
  const agentIdOf = (index: number) => `scale-${runTag}-${agentName(index)}`;
  const agentLoop = async (index: number) => {
    const name = agentName(index);
    const agentId = agentIdOf(index);
    const due = poissonSchedule(options.seed, name, offsets[index]!, sendMs, options.intervalS * 1_000);
    if (restartAtMs !== undefined && offsets[index]! < restartAtMs) {
      due.push(restartAtMs); // every agent has a message at the restart
      due.sort((a, b) => a - b);
    }
    // Until it starts, its progress is its planned start: an agent that never starts ends up stuck.
    const tally: AgentTally = {
      name,
      scheduled: due.length,
      completed: 0,
      errors: 0,
      lastProgressAt: t0 + offsets[index]!,
    };
    tallies.push(tally);
    await sleep(Math.max(0, t0 + offsets[index]! - Date.now()));
    try {
      await client.connection.withAbortSignal(stopped.signal, () =>
        startAgent(client, agentStart(agentId, name, taskQueue, options.window)),
      );
      started++;
      tally.lastProgressAt = Date.now();
    } catch (error) {
      if (!stopped.signal.aborted) noteError(error);
      return;
    }
    for (const [k, at] of due.entries()) {
      const wait = t0 + at - Date.now();
      if (wait > 0) await sleep(wait);
      if (Date.now() >= endOfDrain) return;
      const n = k + 1;
      const modelBefore = modelTally.get(name)?.modelMs ?? 0;
      const sentAt = Date.now();
      inFlight++;
      inTurn.add(index);
      try {
        const result = await client.connection.withAbortSignal(stopped.signal, () =>
          sendMessage(client, agentId, userMessage(options.seed, name, n), {
            updateId: `${agentId}-${n}`,
            workerTimeoutMs: 300_000,
          }),
        );
        const now = Date.now();
        turns.push({ at: now, latencyMs: now - sentAt, modelMs: (modelTally.get(name)?.modelMs ?? 0) - modelBefore });
        tally.completed++;
        tally.lastProgressAt = now;
        if (result.toolCalls > 0) withTool++;
        if (at === restartAtMs && !restartDone.has(name)) restartDone.set(name, now);
      } catch (error) {
        if (stopped.signal.aborted) return; // abandoned at the end of the drain: neither done nor an error
        tally.errors++;
        noteError(error);
      } finally {
        inFlight--;
        inTurn.delete(index);
      }
    }
  };

  // Sampling: every sampleS, until the drain ends.
  const series: Sample[] = [];
  const metrics = new MetricsDiff();
  let lastMachine = machineTicks();
  const peakRss = workers.map(() => 0);
  const lastCpu = new Map<number, { kind: ProcKind; cpuMs: number }>();
  let lastSampleAt = Date.now();
  let lastTurns = 0;
  let sampling = true;
  const cpuTotals = { worker: 0, temporal: 0, minio: 0, postgres: 0, driver: 0, machine: 0 };
  let cpuWindowMs = 0;
  // The starting point of the CPU times and the workers' counters: the stack's start, the worker's bundling and the
  // idle agents' registration are before it, in no sample.
  const workerPidsNow = new Set(workers.map((w) => w.pid).filter((pid): pid is number => pid !== undefined));
  for (const proc of descendants(workerPidsNow)) lastCpu.set(proc.pid, { kind: proc.kind, cpuMs: proc.cpuMs });
  metrics.baseline(await scrapeAll(running.metricsPorts));
  const sample = async () => {
    const now = Date.now();
    const spanMs = Math.max(1, now - lastSampleAt);
    const workerPids = new Set(workers.map((w) => w.pid).filter((pid): pid is number => pid !== undefined));
    const procs = descendants(workerPids);
    const step: Record<ProcKind | 'machine', number> = {
      temporal: 0,
      minio: 0,
      postgres: 0,
      worker: 0,
      driver: 0,
      other: 0,
      machine: 0,
    };
    for (const proc of procs) {
      const before = lastCpu.get(proc.pid);
      step[proc.kind] += proc.cpuMs - (before?.cpuMs ?? 0);
      lastCpu.set(proc.pid, { kind: proc.kind, cpuMs: proc.cpuMs });
    }
    const machine = machineTicks();
    step.machine =
      ((machine.busy - lastMachine.busy) / Math.max(1, machine.total - lastMachine.total)) * cpus().length * spanMs;
    lastMachine = machine;
    const cpuPct = {
      machine: (step.machine / spanMs) * 100,
      worker: (step.worker / spanMs) * 100,
      temporal: (step.temporal / spanMs) * 100,
      minio: (step.minio / spanMs) * 100,
      postgres: (step.postgres / spanMs) * 100,
      driver: (step.driver / spanMs) * 100,
    };
    if (now > t0 && now <= endOfSending + options.sampleS * 1_000) {
      for (const key of Object.keys(cpuTotals) as (keyof typeof cpuTotals)[]) cpuTotals[key] += step[key];
      cpuWindowMs += spanMs;
    }
    const rss = workers.map((w, i) => {
      const memory = w.pid !== undefined ? memoryOf(w.pid) : undefined;
      // After a registration, VmHWM was reset to the RSS of that moment: the run's own peak, not the registration's.
      if (memory) peakRss[i] = Math.max(peakRss[i]!, peakSinceReset(memory, running.peakFloorMb?.[i] ?? 0));
      return memory ? Math.round(memory.rssMb) : 0;
    });
    const recent = turns.slice(lastTurns).map((t) => t.latencyMs - t.modelMs);
    const m = metrics.step(await scrapeAll(running.metricsPorts));
    const cacheHitRate = hitRate(m.counters);
    const taskWait = mean(m.counters.wftS2sSum, m.counters.wftS2sCount);
    const actS2s = mean(m.counters.actS2sSum, m.counters.actS2sCount);
    const entry: Sample = {
      t: Math.round((now - t0) / 100) / 10,
      agentsStarted: started,
      turnsDone: turns.length,
      turnsPerSec: ((turns.length - lastTurns) * 1_000) / spanMs,
      inFlight,
      workerRssMb: rss,
      cpuPct,
      ...(recent.length ? { overheadP50Ms: percentile(recent, 50)!, overheadP99Ms: percentile(recent, 99)! } : {}),
      errors,
      ...(cacheHitRate !== undefined ? { cacheHitRate } : {}),
      ...(taskWait !== undefined ? { scheduleToStartMs: taskWait } : {}),
      ...(actS2s !== undefined ? { activityScheduleToStartMs: actS2s } : {}),
      ...(metrics.measured ? { slotsUsed: { workflow: m.workflowSlotsUsed, activity: m.activitySlotsUsed } } : {}),
      rpcs: Object.values(running.rpcs).reduce((a, b) => a + b, 0),
    };
    series.push(entry);
    for (const [i, w] of workers.entries()) {
      // A worker that died on its own: said at once and kept for the results (its RSS reads 0 from now on).
      if (w.crashed && !workerCrashes.includes(w.crashed)) {
        workerCrashes.push(w.crashed);
        log(`[scale] WORKER ${i + 1} CRASHED: ${w.crashed}`);
      }
    }
    lastSampleAt = now;
    lastTurns = turns.length;
    const pct = (v: number) => `${v.toFixed(0)}%`;
    log(
      `[scale] ${entry.t.toFixed(0)} s: ${started}/${options.agents} agents, ${entry.turnsDone} turns ` +
        `(${entry.turnsPerSec.toFixed(1)}/s), ${inFlight} in flight, worker RSS ${rss.join('+')} MB; CPU machine ` +
        `${pct(cpuPct.machine)}, worker ${pct(cpuPct.worker)} temporal ${pct(cpuPct.temporal)}` +
        `${cpuPct.postgres ? ` postgres ${pct(cpuPct.postgres)}` : ''} minio ${pct(cpuPct.minio)} ` +
        `driver ${pct(cpuPct.driver)}; minus model p50/p99 ` +
        `${entry.overheadP50Ms?.toFixed(0) ?? '—'}/${entry.overheadP99Ms?.toFixed(0) ?? '—'} ms` +
        `${taskWait !== undefined ? `, task wait ${taskWait.toFixed(0)} ms` : ''}` +
        `${cacheHitRate !== undefined ? `, cache hits ${(cacheHitRate * 100).toFixed(0)}%` : ''}, errors ${errors}`,
    );
  };
  const sampler = (async () => {
    while (sampling) {
      await sleep(options.sampleS * 1_000);
      if (sampling) await sample();
    }
  })();

  // The worker restart: a graceful stop, then a new process; every agent has a message due at this moment.
  let restart: { at: number; downMs: number; stopMs: number } | undefined;
  const restarter = (async () => {
    if (restartAtMs === undefined || !options.restart) return;
    await sleep(Math.max(0, t0 + restartAtMs - Date.now()), undefined, { signal: stopped.signal }).catch(() => {});
    if (stopped.signal.aborted) return;
    const at = Date.now();
    log(`[scale] restarting the worker (SIGTERM, then a new process)`);
    await workers[0]!.stop();
    const stopMs = Date.now() - at;
    await workers[0]!.start();
    restart = { at, downMs: Date.now() - at, stopMs };
    log(`[scale] worker back after ${(restart.downMs / 1000).toFixed(1)} s`);
  })();

  const loops = Promise.all(Array.from({ length: options.agents }, (_, i) => agentLoop(i)));
  const steers = startSteers({
    client,
    perMinute: options.steersPerMinute,
    fromMs: t0,
    untilMs: endOfSending,
    seed: options.seed,
    inTurn,
    agentIdOf,
    nameOf: agentName,
    signal: stopped.signal,
    noteError: (error) => {
      if (errorSamples.length < 10)
        errorSamples.push(`steer: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300));
    },
  });
  const interrupted = new Promise<void>((resolve) => {
    if (options.interrupt?.aborted) resolve();
    options.interrupt?.addEventListener('abort', () => resolve());
  });
  await Promise.race([loops, sleep(Math.max(0, endOfDrain - Date.now())), interrupted]);
  const endMs = Math.min(Date.now(), endOfDrain);
  const abandoned = inFlight;
  stopped.abort();
  await restarter;
  await steers.done;
  const steerSummary = steers.summary();
  sampling = false;
  await sampler;
  await sample();
  log(`[scale] sending done; reading every workflow run and the server's log`);

  const cls = classifyAgents(tallies, endMs, options.stuckAfterS * 1_000);
  const notes: string[] = [];
  if (options.interrupt?.aborted) notes.push(`interrupted at ${Math.round((endMs - t0) / 1000)} s`);
  if (abandoned > 0) notes.push(`${abandoned} turns still out at the end of the drain were abandoned`);
  const registration = running.registration;
  if (registration && registration.registered < registration.agents) {
    notes.push(
      `${registration.agents - registration.registered} of ${registration.agents} idle agents not registered ` +
        `(${registration.failed} failed${options.interrupt?.aborted ? '; interrupted' : ''})`,
    );
  }
  const runs = await readRuns(client, taskQueue).catch((error: unknown) => {
    notes.push(`reading the workflow runs failed: ${error instanceof Error ? error.message : String(error)}`);
    return { failed: [], closedSizes: [], agentsContinued: 0, compactions: 0, agentsCompacted: 0 };
  });
  const logErrors = serverLogErrors(running.stack);
  const steady = turns.filter((t) => t.at >= t0 + steadyFromMs && t.at <= endOfSending);
  const s2s = metrics.measured ? metrics.total.wftS2s : undefined;
  const totals = metrics.total.counters;
  // From the restart (or the surge's moment) to each agent's first turn completed after it.
  const surgeAt = restart?.at ?? (options.surge && restartAtMs !== undefined ? t0 + restartAtMs : undefined);
  const restartRecovery =
    surgeAt !== undefined ? [...restartDone.values()].map((at) => at - surgeAt).filter((ms) => ms >= 0) : [];
  const recovery = {
    recoveryMs: latencySummary(restartRecovery),
    agents: tallies.filter((a) => a.scheduled > 0 && restartAtMs !== undefined).length,
    recoveredWithin30s: restartRecovery.filter((ms) => ms <= 30_000).length,
  };
  const summaries = [...modelTally.values()].reduce((sum, t) => sum + t.summaries, 0);
  return {
    label: options.label,
    at: new Date().toISOString(),
    commit: gitCommit(),
    machine: { cpus: cpus().length, node: process.version },
    options: {
      ...Object.fromEntries(Object.entries(options).filter(([k]) => k !== 'log' && k !== 'interrupt')),
      cache: running.cache,
    },
    stack: options.stack,
    registered: running.registered,
    agents: options.agents,
    workers: options.workers,
    peakRssMb: Math.round(Math.max(...peakRss)),
    peakRssMbPerWorker: peakRss.map(Math.round),
    steadyRssMbPerWorker: steadyRss(series, steadyFromMs / 1_000, sendMs / 1_000),
    progressingShare: cls.progressingShare,
    progressing: cls.progressing,
    steerP99Ms: steerSummary.latencyMs?.p99 ?? null,
    steers: steerSummary,
    ...(running.registration ? { registration: running.registration } : {}),
    failed: runs.failed.length,
    failedRuns: runs.failed.slice(0, 20),
    stuck: cls.stuck.length,
    stuckAgents: cls.stuck.slice(0, 20),
    behindAgents: cls.behind.slice(0, 20),
    turnsPerSec: (steady.length * 1_000) / Math.max(1, sendMs - steadyFromMs),
    peakTurnsPerSec: peakRate(series, 30),
    turns: {
      scheduled: tallies.reduce((sum, a) => sum + a.scheduled, 0),
      completed: turns.length,
      errors: tallies.reduce((sum, a) => sum + a.errors, 0),
      withTool,
    },
    latencyMs: {
      turn: latencySummary(turns.map((t) => t.latencyMs)),
      model: latencySummary(turns.map((t) => t.modelMs)),
      overhead: latencySummary(turns.map((t) => t.latencyMs - t.modelMs)),
    },
    cpuPct: Object.fromEntries(
      Object.entries(cpuTotals).map(([kind, ms]) => [kind, (ms / Math.max(1, cpuWindowMs)) * 100]),
    ) as Sample['cpuPct'],
    cacheHitRate: metrics.measured ? (hitRate(totals) ?? null) : null,
    scheduleToStartMs:
      s2s && totals.wftS2sCount > 0
        ? {
            mean: mean(totals.wftS2sSum, totals.wftS2sCount)!,
            p50UpTo: bound(quantileBucket(s2s, 0.5)),
            p99UpTo: bound(quantileBucket(s2s, 0.99)),
            activityMean: mean(totals.actS2sSum, totals.actS2sCount) ?? 0,
          }
        : null,
    clientRpcs: { ...running.rpcs },
    historyPerRun: runs.closedSizes.length
      ? {
          runs: runs.closedSizes.length,
          bytesP50: percentile(
            runs.closedSizes.map((r) => r.bytes),
            50,
          )!,
          bytesMax: Math.max(...runs.closedSizes.map((r) => r.bytes)),
          eventsP50: percentile(
            runs.closedSizes.map((r) => r.events),
            50,
          )!,
        }
      : null,
    compactions: { total: runs.compactions, agents: runs.agentsCompacted, summaries },
    continuedAsNew: { runs: runs.closedSizes.length, agents: runs.agentsContinued },
    errors: {
      client: clientErrors,
      serverLog: logErrors.errors,
      serverTimeouts: logErrors.timeouts,
      serverLogSample: [...logErrors.sample, ...errorSamples.map((e) => `client: ${e}`)].slice(0, 12),
      ...(workerCrashes.length ? { workerCrashes } : {}),
    },
    ...(restart
      ? {
          restart: {
            atS: Math.round((restart.at - t0) / 1000),
            downMs: restart.downMs,
            stopMs: restart.stopMs,
            ...recovery,
          },
        }
      : {}),
    ...(options.surge && surgeAt !== undefined
      ? {
          surge: {
            atS: Math.round((surgeAt - t0) / 1000),
            ...recovery,
          },
        }
      : {}),
    notes,
    series,
  };
}

const bound = (le: number | undefined) => (le === undefined || le === Infinity ? null : le);

/** Every run of the benchmark's agents: the failed ones, the history of those that continued as new, compactions. */
async function readRuns(client: Client, taskQueue: string) {
  const failed: { workflowId: string; status: string }[] = [];
  const closedSizes: { bytes: number; events: number }[] = [];
  const continued = new Set<string>();
  const compactionsByAgent = new Map<string, number>();
  for await (const run of client.workflow.list({ query: `TaskQueue = "${taskQueue}"` })) {
    const status = run.status.name;
    if (status === 'FAILED' || status === 'TERMINATED' || status === 'TIMED_OUT') {
      failed.push({ workflowId: run.workflowId, status });
    }
    if (status === 'CONTINUED_AS_NEW') {
      continued.add(run.workflowId);
      closedSizes.push({ bytes: run.historySize ?? 0, events: run.historyLength });
    }
    const compactions = run.typedSearchAttributes.get(SEARCH_ATTRIBUTES.compactions) ?? 0;
    compactionsByAgent.set(run.workflowId, Math.max(compactionsByAgent.get(run.workflowId) ?? 0, compactions));
  }
  const counts = [...compactionsByAgent.values()];
  return {
    failed,
    closedSizes,
    agentsContinued: continued.size,
    compactions: counts.reduce((a, b) => a + b, 0),
    agentsCompacted: counts.filter((c) => c > 0).length,
  };
}

/**
 * Errors in the Temporal server's log (it logs at WARN and above), and those that are timeouts: a call whose
 * deadline passed ('context deadline exceeded'), or whose client gave up waiting ('context canceled').
 */
function serverLogErrors(stack: EmbeddedStack): { errors: number; timeouts: number; sample: string[] } {
  // The dev server's log, or cluster mode's Temporal server's.
  const path = ['temporal.log', 'temporal-server.log']
    .map((name) => join(stack.dataDir, 'logs', name))
    .find((file) => existsSync(file));
  if (!path) return { errors: 0, timeouts: 0, sample: [] };
  const lines = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => /"level":"error"|\bERROR\b|level=error/i.test(line));
  const timeouts = lines.filter((line) => /deadline exceeded|context canceled|timeout|timed out/i.test(line));
  return { errors: lines.length, timeouts: timeouts.length, sample: lines.slice(0, 6).map((l) => l.slice(0, 300)) };
}
