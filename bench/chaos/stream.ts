/**
 * F9 of the chaos run: worker kill -9 while model output streams, with steers sent during the turns. `agents`
 * agents work through long tool-loop turns (tasks of `steps` steps, one after the other until the kills are done);
 * the model (model.ts `streamingResponder`) writes each step's text and tool call in chunks `chunkDelayMs` apart, so
 * the output is mid-flight most of the time. Meanwhile each agent is steered, one steer after the other, each with
 * its sequence number in its text, while its turn has steps to go; and the worker is killed (SIGKILL) `kills` times,
 * each time 20–80 % into a reply being streamed and while a steer's Update is in flight, then started again as the
 * rest of the run does. At each kill, the
 * steers whose Updates are in flight are sent again with the same Update id (what a client that lost its wait does).
 *
 * What it returns is read from what was stored (S3 and the workflows), not from logs: each agent's transcript,
 * context and events, its stream's segments as stored, and the steers with what their Updates answered; the
 * invariants are I7 and I8 (invariants.ts).
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { closeAgentAndWait, sendMessage, startAgent } from '../../client/agents.ts';
import { steerAgent } from '../../client/control.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { lifePrefix } from '../../contract/keys.ts';
import { segmentStartOf } from '../../contract/stream.ts';
import type { StreamSegment } from '../../contract/stream.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { RunningMinio } from '../../stack/minio.ts';
import type { RunningTemporal } from '../../stack/temporal.ts';
import { serversEnv, WorkerProcess } from '../../stack/worker-process.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import type { SteerSent, StreamAgentOutcome } from './invariants.ts';
import { steerMessage, streamingResponder, taskMessage } from './model.ts';
import { listAll, outcomeOf } from './outcome.ts';

export interface StreamFaultOptions {
  agents: number;
  /** Worker kills while output streams. */
  kills: number;
  /** Steps of each task (one turn each). */
  steps: number;
  /** Between two chunks of a streamed reply (ms). */
  chunkDelayMs: number;
  /** The agents' model window. */
  window: number;
  seed: number;
}

export interface StreamPhaseOutcome {
  agents: StreamAgentOutcome[];
  requests: { messages: ChatMessage[] }[];
  stored: Set<string>;
  /** When each kill was (ms since the epoch). */
  kills: number[];
  turnsDone: number[];
  durationMs: number;
}

/** A steer goes only to a turn with at least this many steps to go: it lands in that turn, not after it. */
const STEER_MARGIN_STEPS = 4;

export async function runStreamPhase(
  servers: { temporal: RunningTemporal; minio: RunningMinio; dir: string; bundlePath: string },
  options: StreamFaultOptions,
  signal: AbortSignal,
): Promise<StreamPhaseOutcome> {
  const started = Date.now();
  const tag = 'stream';
  const { responder, positions, streaming } = streamingResponder({ chunkDelayMs: options.chunkDelayMs });
  const model = await startChatServer(responder);
  const taskQueue = `chaos-${tag}`;
  const worker = new WorkerProcess(
    join(PROJECT_ROOT, 'bench/chaos/worker.ts'),
    {
      ...process.env,
      ...serversEnv(servers.temporal, servers.minio.target),
      LONGRUN_TASK_QUEUE: taskQueue,
      LONGRUN_SUMMARY_MODEL: 'summary-model',
      LONGRUN_DATA_DIR: join(servers.dir, tag),
      OPENAI_BASE_URL: model.baseURL,
      CHAOS_DIR: join(servers.dir, tag),
      CHAOS_BUNDLE: servers.bundlePath,
    },
    '[chaos-worker] polling',
  );
  let state = options.seed >>> 0 || 1;
  const draw = () => (state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
  const kills: number[] = [];
  const turnsDone: number[] = [];
  const killsDone = () => kills.length >= options.kills || signal.aborted;
  let connected: Client | undefined;
  const resends: Promise<void>[] = [];
  try {
    await worker.start();
    const client = await connectClient(localTemporalTarget(servers.temporal.address, servers.temporal.namespace));
    connected = client;
    const names = Array.from({ length: options.agents }, (_, i) => `s${i + 1}`);
    const inTurn = new Set<string>();
    const finished = new Set<string>();
    const inFlight = new Map<string, SteerSent>();
    const steers = new Map<string, SteerSent[]>(names.map((name) => [name, []]));
    const agentId = (name: string) => `chaos-${tag}-${name}`;
    const steerOf = (name: string, steer: SteerSent, updateId: string) =>
      steerAgent(client, agentId(name), steer.text, { updateId, workerTimeoutMs: 600_000 });

    const work = Promise.all(
      names.map(async (name) => {
        await startAgent(client, {
          agentId: agentId(name),
          model: 'gpt-4o-mini',
          taskQueue,
          modelOverride: { window: options.window },
          turnBudget: { steps: options.steps + 10 },
        });
        // Tasks one after the other until the kills are done (the last one ends as scripted).
        for (let task = 1; !killsDone(); task++) {
          inTurn.add(name);
          try {
            await sendMessage(client, agentId(name), taskMessage(name, task, options.steps), {
              updateId: `${agentId(name)}-task-${task}`,
              workerTimeoutMs: 600_000,
            });
          } finally {
            inTurn.delete(name);
          }
          turnsDone.push(Date.now());
        }
        finished.add(name);
        return closeAgentAndWait(client, agentId(name), { workerTimeoutMs: 600_000 });
      }),
    );
    // Each agent steered one steer after the other while its turn has steps to go, until its last task.
    const steering = Promise.all(
      names.map(async (name) => {
        let seq = 0;
        while (!finished.has(name) && !signal.aborted) {
          await sleep(600 + draw() * 1_200, undefined, { signal });
          const at = positions.get(name);
          if (!inTurn.has(name) || !at || at.of - at.step < STEER_MARGIN_STEPS) continue;
          seq++;
          const steer: SteerSent = {
            seq,
            text: steerMessage(name, seq),
            updateId: `${agentId(name)}-steer-${seq}`,
            resent: [],
          };
          steers.get(name)!.push(steer);
          inFlight.set(name, steer);
          try {
            steer.answered = await steerOf(name, steer, steer.updateId);
          } catch (error) {
            steer.error = String(error);
          } finally {
            inFlight.delete(name);
          }
        }
      }),
    );
    // The kills: each 20–80 % into a reply being streamed (one that began after the worker last started, of a model
    // call no kill has cut yet: a call killed at every attempt would end its turn after its 8 attempts, by design),
    // while a steer's Update is in flight.
    const cut = new Set<string>();
    const firing = (async () => {
      let since = Date.now();
      while (!killsDone()) {
        const share = 0.2 + draw() * 0.6;
        let target: number | undefined;
        // …and a steer's Update in flight (it is sent again after the kill).
        while (target === undefined || Date.now() < target || inFlight.size === 0) {
          await sleep(10, undefined, { signal });
          const now = Date.now();
          const live = streaming.filter(
            (s) => s.since >= since && s.since + s.ms > now && s.ms >= 200 && !cut.has(s.reply),
          );
          const chosen = live.at(-1);
          if (target === undefined && chosen) target = chosen.since + share * chosen.ms;
          if (target !== undefined && !live.some((s) => s.since + s.ms > target!)) target = undefined; // it ended
        }
        kills.push(Date.now());
        for (const s of streaming) if (s.since + s.ms > Date.now()) cut.add(s.reply);
        await worker.kill();
        // The steers whose Updates are in flight, sent again with the same id: applied once all the same.
        for (const [name, steer] of inFlight) {
          resends.push(
            steerOf(name, steer, steer.updateId).then(
              (answered) => void steer.resent.push({ answered }),
              (error: unknown) => void steer.resent.push({ error: String(error) }),
            ),
          );
        }
        if (signal.aborted) break;
        await worker.start();
        since = Date.now();
        await sleep(500 + draw() * 1_500, undefined, { signal });
      }
    })();
    const [finals] = await Promise.all([work, steering, firing]);
    await Promise.all(resends);
    await worker.stop();
    const store = new S3BlobStore(servers.minio.target);
    const agents = await Promise.all(
      names.map(async (name, i): Promise<StreamAgentOutcome> => {
        const final = finals[i]!;
        const outcome = await outcomeOf(client, store, name, [], final);
        const keys = await listAll(store, `${lifePrefix(final)}stream/`);
        const segments = await Promise.all(
          keys.flatMap((key) => {
            const start = segmentStartOf(key);
            if (start === undefined) return [];
            // As stored, offsets and all: I7 checks them (a segment whose items are not its key's offsets breaks it).
            return [store.get(key).then((body) => ({ start, items: (JSON.parse(body!) as StreamSegment).items }))];
          }),
        );
        return { ...outcome, segments, steers: steers.get(name)! };
      }),
    );
    return {
      agents,
      requests: model.requests.map((r) => ({ messages: r.body.messages })),
      stored: new Set(await listAll(store, `agents/chaos-${tag}-`)),
      kills,
      turnsDone,
      durationMs: Date.now() - started,
    };
  } finally {
    await Promise.allSettled(resends);
    await worker.stop();
    await connected?.connection.close();
    await model.close();
  }
}
