/**
 * The soak: one agent through `tasks × stepsPerTask` tool steps under a handful of user messages, on a Temporal dev
 * server and a MinIO of its own (the chaos run's stack), the worker a child process, the model a scripted loopback
 * server (script.ts). Compaction on with the default preset in a `window`-token window (background compaction
 * included, no reviewer); the model searches and pins now and then; a steer every `steerEvery` steps and an interrupt
 * (then a resume) every `interruptEvery`; the worker killed (SIGKILL) every `killEvery` steps, the Temporal server
 * killed and started again once, MinIO down for `storageDownMs` once.
 *
 * Every `sampleEvery` steps it samples from the outside (sample.ts); every step's wall time is known from the model's
 * side (when each step was asked for, how long the model took to answer) and the tool's own time from the worker
 * (tools.log), so a step's overhead is what longrun added. At the end it reads back what the agent stored and checks
 * the chaos run's invariants on it (nothing lost or duplicated, every steer once and in order, the stream whole, every
 * request valid). The figures: report.ts.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { agentState, closeAgentAndWait, sendMessage, startAgent } from '../../client/agents.ts';
import { interruptAgent, steerAgent } from '../../client/control.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { agentLife } from '../../contract/keys.ts';
import type { AgentState } from '../../contract/state.ts';
import type { AgentLife } from '../../contract/keys.ts';
import { lifePrefix } from '../../contract/keys.ts';
import { segmentStartOf } from '../../contract/stream.ts';
import type { StreamSegment } from '../../contract/stream.ts';
import { pairViewOf, toolPairViolations } from '../../engine/tool-pairs.ts';
import { asksForSummary, startChatServer } from '../../llm/chat-server.ts';
import { startMinio } from '../../stack/minio.ts';
import { startTemporal } from '../../stack/temporal.ts';
import { serversEnv, WorkerProcess } from '../../stack/worker-process.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import {
  eventsInStep,
  everyMessageOnce,
  noFailedWorkflow,
  referencedKeysExist,
  requestsValidAndCovered,
  steersOnce,
  streamWhole,
} from '../chaos/invariants.ts';
import type { InvariantResult, SteerSent, StreamAgentOutcome } from '../chaos/invariants.ts';
import { inBatches, listAll, outcomeOf } from '../chaos/outcome.ts';
import { killGroup, startStack } from '../chaos/run.ts';
import type { Stack } from '../chaos/run.ts';
import { Sampler } from './sample.ts';
import type { Sample } from './sample.ts';
import { positionOf, resumeText, soakReply, steerText, taskText } from './script.ts';
import type { Position } from './script.ts';

export interface SoakOptions {
  tasks: number;
  stepsPerTask: number;
  window: number;
  /** Steps between two worker kills (0: none). */
  killEvery: number;
  steerEvery: number;
  /** Steps between two interrupts (0: none; each task is then one turn). */
  interruptEvery: number;
  /** Steps after which the Temporal server is killed and started again, and after which MinIO goes down. */
  serverKillAt?: number;
  storageDownAt?: number;
  storageDownMs: number;
  sampleEvery: number;
  log: (line: string) => void;
  /** Called once the steps are done, before the read-back: what was measured so far (main.ts saves it at once). */
  onMeasured?: (measured: Measured) => void;
}

export const FULL: Omit<SoakOptions, 'log'> = {
  tasks: 5,
  stepsPerTask: 2_000,
  window: 32_000,
  killEvery: 450,
  steerEvery: 200,
  interruptEvery: 900,
  serverKillAt: 3_300,
  storageDownAt: 6_600,
  storageDownMs: 30_000,
  sampleEvery: 100,
};

/**
 * The short mode (`npm test`): 120 steps, kills at steps 55 and 100 (`killEvery` plus half of `sampleEvery`), the
 * interrupt at step 100 too, so that it lands while the worker running the step is killed or just started again.
 */
export const SHORT: Omit<SoakOptions, 'log'> = {
  tasks: 2,
  stepsPerTask: 60,
  window: 32_000,
  killEvery: 45,
  steerEvery: 40,
  interruptEvery: 100,
  storageDownAt: 80,
  storageDownMs: 3_000,
  sampleEvery: 20,
};

/** A step as the model saw it: when it was first asked for, how long that answer took, and its call id. */
export interface StepTiming {
  step: number;
  askedAt: number;
  modelMs: number;
  callId: string;
}

/** What the soak measured before reading back what was stored. */
export type Measured = Omit<SoakRaw, 'invariants' | 'lost' | 'duplicated' | 'streamGaps' | 'steersOutOfOrder'>;

export interface SoakRaw {
  options: Omit<SoakOptions, 'log'>;
  steps: StepTiming[];
  /** The tool's own time by call id (its last run), and every activity run with its end and time. */
  toolMs: Record<string, number>;
  activities: { at: number; name: string; ms: number; ok: boolean }[];
  samples: Sample[];
  /** The step count at each worker kill. */
  kills: number[];
  serverKills: number;
  storageDowns: number;
  interrupts: number;
  resumes: number;
  steers: { sent: number; failed: number };
  requests: number;
  invalidRequests: number;
  toolEffects: number;
  toolCalls: number;
  invariants: InvariantResult[];
  lost: number;
  duplicated: number;
  streamGaps: number;
  steersOutOfOrder: number;
  durationMs: number;
}

const AGENT_ID = 'soak-1';
const TASK_QUEUE = 'soak';
/** A steer or an interrupt goes only to a task with at least this many steps to go (it lands in that turn). */
const MARGIN = 8;

/** Lines of a log the worker appends to, split in fields (absent: nothing yet). */
function logLines(file: string): string[][] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' '));
}

export async function runSoak(options: SoakOptions): Promise<SoakRaw> {
  const started = Date.now();
  const { log } = options;
  const total = options.tasks * options.stepsPerTask;
  log(`[soak] starting a Temporal dev server and MinIO of its own, bundling the workflows`);
  const stack: Stack = await startStack({}, 'soak');
  const dir = join(stack.dir, 'worker');
  // The model's view: every step by its first request, the answer time of each request, the task's position.
  const steps: StepTiming[] = [];
  const seen = new Set<string>();
  const stepOfRequest = new Map<number, StepTiming>();
  let asked: Position | undefined;
  let requests = 0;
  let invalidRequests = 0;
  const model = await startChatServer(
    (request, index) => {
      requests++;
      const messages = request.body.messages;
      if (toolPairViolations(messages.map(pairViewOf)).length > 0) invalidRequests++;
      const summary = asksForSummary(request.body);
      if (!summary) {
        const at = positionOf(messages);
        if (at !== undefined && at !== 'done') {
          asked = at;
          const key = `${at.task}/${at.step}`;
          if (!seen.has(key)) {
            seen.add(key);
            const timing = {
              step: steps.length + 1,
              askedAt: Date.now(),
              modelMs: 0,
              callId: `soak-t${at.task}-s${at.step}-r${at.run}`,
            };
            steps.push(timing);
            stepOfRequest.set(index, timing);
          }
        }
      }
      return soakReply(messages, summary);
    },
    {
      record: false,
      onAnswered: (index, ms) => {
        const timing = stepOfRequest.get(index);
        if (timing) {
          timing.modelMs = ms;
          stepOfRequest.delete(index);
        }
      },
    },
  );
  const worker = new WorkerProcess(
    join(PROJECT_ROOT, 'bench/soak/worker.ts'),
    {
      ...process.env,
      ...serversEnv(stack.temporal, stack.minio.target),
      LONGRUN_TASK_QUEUE: TASK_QUEUE,
      LONGRUN_SUMMARY_MODEL: 'summary-model',
      LONGRUN_DATA_DIR: dir,
      OPENAI_BASE_URL: model.baseURL,
      SOAK_DIR: dir,
      SOAK_BUNDLE: stack.bundlePath,
    },
    '[soak-worker] polling',
  );
  let client: Client | undefined;
  const kills: number[] = [];
  let serverKills = 0;
  let storageDowns = 0;
  let interrupts = 0;
  let resumes = 0;
  const steerList: SteerSent[] = [];
  const script: string[] = [];
  const samples: Sample[] = [];
  let done = false;
  const resends: Promise<void>[] = [];
  try {
    await worker.start();
    client = await connectClient(localTemporalTarget(stack.temporal.address, stack.temporal.namespace));
    const c = client;
    await startAgent(c, {
      agentId: AGENT_ID,
      model: 'gpt-4o-mini',
      taskQueue: TASK_QUEUE,
      modelOverride: { window: options.window },
      turnBudget: { steps: options.stepsPerTask + 100 },
    });
    const wait = { workerTimeoutMs: 900_000 };
    let inTurn = false;
    let inFlight: SteerSent | undefined;
    let life: AgentLife | undefined;

    // The user: each task in one message; a turn that ends before its task does (an interrupt) is resumed.
    const user = (async () => {
      for (let task = 1; task <= options.tasks; task++) {
        let text = taskText(task, options.stepsPerTask);
        for (let run = 0; ;) {
          script.push(text);
          inTurn = true;
          try {
            await sendMessage(c, AGENT_ID, text, { updateId: `soak-${task}-${run}`, ...wait });
          } finally {
            inTurn = false;
          }
          if (asked?.task !== task) break; // a turn that never asked for a step (cannot happen with this model)
          const finished = steps.length >= task * options.stepsPerTask && seen.has(`${task}/${options.stepsPerTask}`);
          if (finished) break;
          run++;
          resumes++;
          text = resumeText(task, run, asked.step, options.stepsPerTask);
        }
        log(
          `[soak] task ${task} of ${options.tasks} done: ${steps.length} steps (${((Date.now() - started) / 1000).toFixed(0)} s)`,
        );
      }
    })().finally(() => (done = true));

    // Steers and interrupts, one at a time, while a turn has steps to go.
    const control = (async () => {
      let nextSteer = options.steerEvery;
      let nextInterrupt = options.interruptEvery;
      let seq = 0;
      while (!done) {
        await sleep(100);
        const n = steps.length;
        const togo = asked ? asked.of - asked.step : 0;
        if (!inTurn || togo < MARGIN) continue;
        if (options.interruptEvery > 0 && n >= nextInterrupt) {
          nextInterrupt += options.interruptEvery;
          try {
            await interruptAgent(c, AGENT_ID, wait);
            interrupts++;
          } catch (error) {
            log(`[soak] interrupt failed: ${String(error).split('\n')[0]}`);
          }
        } else if (n >= nextSteer) {
          nextSteer += options.steerEvery;
          seq++;
          const steer: SteerSent = { seq, text: steerText(seq), updateId: `soak-steer-${seq}`, resent: [] };
          steerList.push(steer);
          script.push(steer.text);
          inFlight = steer;
          try {
            steer.answered = await steerAgent(c, AGENT_ID, steer.text, { updateId: steer.updateId, ...wait });
          } catch (error) {
            steer.error = String(error);
          } finally {
            inFlight = undefined;
          }
        }
      }
    })();

    // The faults, by step count.
    const faults = (async () => {
      // Halfway between two samples: a sample reads a worker that has run since the last kill, not one being killed.
      let nextKill = options.killEvery + Math.floor(options.sampleEvery / 2);
      while (!done) {
        await sleep(50);
        const n = steps.length;
        if (options.serverKillAt !== undefined && n >= options.serverKillAt && serverKills === 0) {
          serverKills++;
          log(`[soak] step ${n}: kill -9 of the Temporal server`);
          killGroup(stack.temporal.process.pid);
          await stack.temporal.process.stop();
          await sleep(2_000);
          stack.temporal = await startTemporal(stack.temporalOptions);
        }
        if (options.storageDownAt !== undefined && n >= options.storageDownAt && storageDowns === 0) {
          storageDowns++;
          log(`[soak] step ${n}: MinIO down for ${options.storageDownMs / 1000} s`);
          killGroup(stack.minio.process.pid);
          await stack.minio.process.stop();
          await sleep(options.storageDownMs);
          stack.minio = await startMinio(stack.minioOptions);
        }
        if (options.killEvery > 0 && n >= nextKill && n < total - MARGIN) {
          nextKill += options.killEvery;
          kills.push(n);
          await worker.kill();
          const steer = inFlight;
          if (steer) {
            // Sent again with the same Update id, as a client that lost its wait does: applied once all the same.
            resends.push(
              steerAgent(c, AGENT_ID, steer.text, { updateId: steer.updateId, ...wait }).then(
                (answered) => void steer.resent.push({ answered }),
                (error: unknown) => void steer.resent.push({ error: String(error) }),
              ),
            );
          }
          await worker.start();
          log(`[soak] step ${n}: worker kill ${kills.length}`);
        }
      }
    })();

    // The samples, one at a time.
    const store = new S3BlobStore(stack.minio.target);
    const sampler = new Sampler(c, store, AGENT_ID, dir);
    const sampling = (async () => {
      let next = options.sampleEvery;
      while (!done) {
        await sleep(100);
        if (steps.length < next || !asked) continue;
        const step = steps.length;
        next = (Math.floor(step / options.sampleEvery) + 1) * options.sampleEvery;
        life ??= await agentState(c, AGENT_ID)
          .then(agentLife)
          .catch(() => undefined);
        if (!life) continue;
        const sample = await sampler.take(step, { task: asked.task, step: asked.step }, life);
        samples.push(sample);
        if (samples.length % 10 === 0 || sample.errors) {
          log(
            `[soak] step ${step}: rss ${sample.rssMb?.toFixed(0)} MB, history ${sample.historyEvents} events, ` +
              `context ${sample.contextTokens} tokens, runs ${sample.runs}, compactions ${sample.compactions}` +
              (sample.errors ? `; not read: ${sample.errors.join('; ')}` : ''),
          );
        }
      }
    })();

    await Promise.all([user, control, faults, sampling]);
    await Promise.allSettled(resends);
    const toolLines = logLines(join(dir, 'tools.log'));
    const measured: Measured = {
      options: Object.fromEntries(Object.entries(options).filter(([k]) => k !== 'log' && k !== 'onMeasured')) as Omit<
        SoakOptions,
        'log'
      >,
      steps,
      toolMs: Object.fromEntries(toolLines.map(([id, ms]) => [id!, Number(ms)])),
      activities: logLines(join(dir, 'activities.log')).map(([at, name, ms, ok]) => ({
        at: Number(at),
        name: name!,
        ms: Number(ms),
        ok: ok === 'ok',
      })),
      samples,
      kills,
      serverKills,
      storageDowns,
      interrupts,
      resumes,
      steers: {
        sent: steerList.length,
        failed: steerList.filter((s) => !s.answered && !s.resent.some((r) => r.answered)).length,
      },
      requests,
      invalidRequests,
      toolEffects: existsSync(join(dir, 'effects')) ? readdirSync(join(dir, 'effects')).length : 0,
      toolCalls: new Set(toolLines.map(([id]) => id)).size,
      durationMs: Date.now() - started,
    };
    options.onMeasured?.(measured);
    const final = await closeAgentAndWait(c, AGENT_ID, wait);
    await worker.stop();
    log(
      `[soak] ${steps.length} steps in ${((Date.now() - started) / 1000).toFixed(0)} s; reading back what was stored`,
    );
    try {
      return { ...measured, ...(await readBack(c, store, script, steerList, final)) };
    } catch (error) {
      const why = (error as Error).stack ?? String(error);
      const invariants = [{ name: READ_BACK, passed: false, violations: why.split('\n').slice(0, 8) }];
      return { ...measured, invariants, lost: 0, duplicated: 0, streamGaps: 0, steersOutOfOrder: 0 };
    }
  } finally {
    done = true;
    await Promise.allSettled(resends);
    await worker.stop();
    await client?.connection.close();
    await model.close();
    await Promise.all([stack.temporal.process.stop(), stack.minio.process.stop()]);
    rmSync(stack.dir, { recursive: true, force: true });
  }
}

/** The invariant broken when what the agent stored could not be read back. */
export const READ_BACK = 'R0 what the agent stored read back';

/** What the agent stored, read back and checked as the chaos run checks its agents. */
async function readBack(
  client: Client,
  store: S3BlobStore,
  script: string[],
  steers: SteerSent[],
  final: AgentState,
): Promise<Pick<SoakRaw, 'invariants' | 'lost' | 'duplicated' | 'streamGaps' | 'steersOutOfOrder'>> {
  const outcome = await outcomeOf(client, store, 'soak', script, final);
  const keys = await listAll(store, `${lifePrefix(final)}stream/`);
  const segments = await inBatches(
    keys.filter((key) => segmentStartOf(key) !== undefined),
    async (key) => ({
      start: segmentStartOf(key)!,
      items: (JSON.parse((await store.get(key))!) as StreamSegment).items,
    }),
  );
  const agent: StreamAgentOutcome = { ...outcome, segments, steers };
  const stored = new Set(await listAll(store, lifePrefix(final)));
  const i1 = everyMessageOnce([agent]);
  const i7 = streamWhole([agent]);
  const i8 = steersOnce([agent]);
  return {
    invariants: [
      { name: READ_BACK, passed: true, violations: [] },
      i1,
      requestsValidAndCovered([agent], []),
      eventsInStep([agent]),
      noFailedWorkflow([agent]),
      referencedKeysExist([agent], stored),
      i7,
      i8,
    ],
    lost: i1.lost,
    duplicated: i1.duplicated,
    streamGaps: i7.gaps,
    steersOutOfOrder: i8.violations.filter((v) => v.includes('in the order')).length,
  };
}
