/**
 * An Update sent to an agent and seen through to its outcome (the CLI and scripts alike use it through
 * `sendMessage`, `compactAgent` and `closeAgentAndWait`):
 *
 * - Nothing is sent until a worker is polling the agent's task queue, so giving up never leaves a message half-sent.
 * - The caller hears what it waits for (`onProgress`): after a few seconds, then periodically.
 * - The Update carries an id the client keeps. When the connection fails while waiting (a server restarting), the
 *   same id is sent again until the real outcome arrives: the server answers an id it already has in the current
 *   run, and the workflow answers one applied in an earlier run (workflows/applied-updates.ts). Never applied twice.
 * - An Update answered `handedOver` (the agent's run continued as new inside a turn while it waited) is sent again,
 *   with the same id, to the next run, which carries it (workflows/hand-over.ts): callers never see that answer.
 * - Every way it can end is a named error saying what became of the message (update-errors.ts).
 *
 * What the client sees of the agent while it waits is agent-observation.ts's; what a failed call means,
 * connection-failures.ts's.
 *
 * @example
 *   const reply = await executeAgentUpdate(client, handle, 'trip', sendUpdate, [{ text: 'hi' }], {
 *     onProgress: (line) => console.error(line),
 *   });
 */
import { randomUUID } from 'node:crypto';
import { status as grpcStatus } from '@grpc/grpc-js';
import protos from '@temporalio/proto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Connection,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  WorkflowUpdateStage,
} from '@temporalio/client';
import type {
  Client,
  UpdateDefinition,
  WorkflowHandle,
  WorkflowUpdateHandle,
  WorkflowUpdateOptions,
} from '@temporalio/client';
import {
  CHECK_DEADLINE_MS,
  observeAgent,
  seconds,
  workerPolling,
  workersText,
  workflowTaskText,
} from './agent-observation.ts';
import type { Observation } from './agent-observation.ts';
import { agentWorkflowId } from '../contract/agent.ts';
import { isHandedOver } from '../contract/results.ts';
import { refusedForNow, transientFailure } from './connection-failures.ts';
import {
  AgentUpdateError,
  NoWorkerError,
  TemporalUnreachableError,
  UpdateOutcomeUnknownError,
} from './update-errors.ts';

/** When the first progress line comes, and how often the next ones do. */
export const PROGRESS_FIRST_MS = 3_000;
export const PROGRESS_EVERY_MS = 15_000;
/** Default of {@link UpdateWaitOptions.workerTimeoutMs}. */
export const DEFAULT_WORKER_TIMEOUT_MS = 60_000;
/** Default of {@link UpdateWaitOptions.reconnectTimeoutMs}. */
export const DEFAULT_RECONNECT_TIMEOUT_MS = 120_000;
/** How often the state is looked at while waiting for a worker before sending. */
const CHECK_EVERY_MS = 2_000;
/**
 * While an Update is out, the agent is looked at when the first progress line is due (without `onProgress`, when the
 * periodic one would be: the looks then only watch for a worker gone), then at intervals doubling up to the progress
 * lines' own period: a turn of a few seconds costs one look at most, a turn held up by a slow server a look every
 * {@link PROGRESS_EVERY_MS} (a fixed 2-s period made the client ask a slowed server most when it was slowest).
 */
export function watchDelays(first: number = PROGRESS_FIRST_MS): Generator<number, never> {
  return (function* () {
    let delay = first;
    for (;;) {
      yield delay;
      delay = Math.min(delay * 2, Math.max(first, PROGRESS_EVERY_MS));
    }
  })();
}
/**
 * A worker found polling a task queue is trusted this long before an Update to any agent on that queue checks again:
 * a thousand agents on one queue cost one check per period, not one per message.
 */
const WORKER_CONFIRMED_MS = 10_000;
/** Pause before sending the Update again after a connection failure. */
const RESEND_PAUSE_MS = 1_000;
/** Pause before sending an Update answered `handedOver` to the agent's next run. */
const HANDED_OVER_PAUSE_MS = 200;

export interface UpdateWaitOptions {
  /** The Update's id (default: a new UUID). Passing the id of an earlier call attaches to that Update. */
  updateId?: string;
  /** Told what the call is waiting for, after a few seconds and then periodically (one line, no newline). */
  onProgress?: (line: string) => void;
  /**
   * How long to wait for a worker: before sending (nothing is sent), for the Update to be accepted, and after that
   * for a worker to come back. Default {@link DEFAULT_WORKER_TIMEOUT_MS}.
   */
  workerTimeoutMs?: number;
  /** How long to keep sending the Update again while Temporal cannot be reached. Default 120 s. */
  reconnectTimeoutMs?: number;
  /** Called once, with the Update's id, when it is first sent (a worker was found polling the agent's queue). */
  onSent?: (updateId: string) => void;
}

/** Shared by an Update's sender and its watcher. */
interface WaitState {
  /** When Temporal last answered (the watcher's looks; the check before sending). */
  lastReached: number;
  /** Since when Temporal has not answered: set by the sender's first connection failure, cleared when it answers. */
  lostSince: number | undefined;
  /** Aborted when the outcome is in: the watcher stops, its calls are cancelled. */
  done: AbortController;
}

/**
 * The handle's Update calls for any argument list. Their overloads tell an Update with arguments from one without,
 * which a generic `Args` cannot satisfy; the definition still types the result.
 */
function updateCalls(handle: WorkflowHandle): {
  execute<Ret, Args extends unknown[]>(
    def: UpdateDefinition<Ret, Args>,
    options: WorkflowUpdateOptions & { args: Args },
  ): Promise<Ret>;
  start<Ret, Args extends unknown[]>(
    def: UpdateDefinition<Ret, Args>,
    options: WorkflowUpdateOptions & { args: Args; waitForStage: typeof WorkflowUpdateStage.ACCEPTED },
  ): Promise<WorkflowUpdateHandle<Ret>>;
} {
  type Loose = (def: unknown, options: unknown) => Promise<never>;
  return {
    execute: (def, options) => (handle.executeUpdate as Loose)(def, options),
    start: (def, options) => (handle.startUpdate as Loose)(def, options),
  };
}

/** By client: the task queues a worker was found polling, and when; the task queue of each agent seen. */
interface WorkersSeen {
  queues: Map<string, number>;
  agents: Map<string, string>;
}
const workersSeen = new WeakMap<Client, WorkersSeen>();

/**
 * Sends the Update `def` with `args` to the agent's workflow and returns its result, as described at the top of this
 * file. Throws {@link AgentUpdateError}, {@link NoWorkerError}, {@link UpdateOutcomeUnknownError},
 * {@link TemporalUnreachableError}, or the client's own errors (WorkflowNotFoundError for an unknown or closed agent).
 */
export async function executeAgentUpdate<Ret, Args extends unknown[]>(
  client: Client,
  handle: WorkflowHandle,
  agentId: string,
  def: UpdateDefinition<Ret, Args>,
  args: Args,
  options: UpdateWaitOptions = {},
): Promise<Ret> {
  const wait = new UpdateWait(client, handle, agentId, def.name, options);
  await wait.untilWorker();
  return wait.send(def, args);
}

class UpdateWait {
  readonly updateId: string;
  private readonly workerTimeoutMs: number;
  private readonly reconnectTimeoutMs: number;
  private readonly started = Date.now();
  private lastProgress: { at: number; kind: string } | undefined;
  private readonly client: Client;
  private readonly handle: WorkflowHandle;
  private readonly agentId: string;
  private readonly update: string;
  private readonly options: UpdateWaitOptions;

  constructor(client: Client, handle: WorkflowHandle, agentId: string, update: string, options: UpdateWaitOptions) {
    this.client = client;
    this.handle = handle;
    this.agentId = agentId;
    this.update = update;
    this.options = options;
    this.updateId = options.updateId ?? randomUUID();
    this.workerTimeoutMs = options.workerTimeoutMs ?? DEFAULT_WORKER_TIMEOUT_MS;
    this.reconnectTimeoutMs = options.reconnectTimeoutMs ?? DEFAULT_RECONNECT_TIMEOUT_MS;
  }

  /**
   * Returns once a worker polls the agent's task queue (or the agent is closed: the server answers then). A look that
   * fails for a reason that passes (the server slow to answer, the connection lost) is made again, with progress
   * lines, for as long as the sender would wait to reconnect: nothing has been sent yet, so nothing is lost by waiting.
   */
  async untilWorker(): Promise<void> {
    const seenBy = workersSeen.get(this.client) ?? {
      queues: new Map<string, number>(),
      agents: new Map<string, string>(),
    };
    workersSeen.set(this.client, seenBy);
    const knownQueue = seenBy.agents.get(this.handle.workflowId);
    if (knownQueue !== undefined && Date.now() - (seenBy.queues.get(knownQueue) ?? -Infinity) < WORKER_CONFIRMED_MS) {
      return;
    }
    let lostSince: number | undefined;
    for (;;) {
      let seen: Observation;
      const lookedAt = Date.now();
      try {
        seen = await observeAgent(this.client, this.handle);
      } catch (error) {
        const failure = transientFailure(error);
        if (failure === undefined || this.callerGaveUp()) throw error;
        lostSince ??= lookedAt;
        const triedMs = Date.now() - lostSince;
        if (triedMs >= this.reconnectTimeoutMs) throw new TemporalUnreachableError(this.agentId, error, triedMs);
        this.progress('unreachable', `cannot reach Temporal to look for a worker (${failure}); looking again`);
        await sleep(RESEND_PAUSE_MS);
        continue;
      }
      lostSince = undefined;
      seenBy.agents.set(this.handle.workflowId, seen.taskQueue);
      if (!seen.running) return;
      if (workerPolling(seen)) {
        seenBy.queues.set(seen.taskQueue, Date.now());
        return;
      }
      const waited = Date.now() - this.started;
      if (waited >= this.workerTimeoutMs) {
        throw new NoWorkerError({ ...this.ids(seen), stage: 'not sent', workers: workersText(seen), waitedMs: waited });
      }
      this.progress('no worker', `waiting for a worker on task queue ${seen.taskQueue} (${workersText(seen)})`);
      // The next look: in CHECK_EVERY_MS, or when the first progress line is due, or at the timeout.
      const firstLineIn = PROGRESS_FIRST_MS - waited;
      await sleep(Math.min(CHECK_EVERY_MS, this.workerTimeoutMs - waited, firstLineIn > 0 ? firstLineIn : Infinity));
    }
  }

  /** Sends the Update, sending it again with the same id after a connection failure, until its outcome. */
  async send<Ret, Args extends unknown[]>(def: UpdateDefinition<Ret, Args>, args: Args): Promise<Ret> {
    const sentAt = Date.now();
    this.options.onSent?.(this.updateId);
    // The caller's own deadline or abort signal (Connection.withDeadline / withAbortSignal) still ends the wait.
    const caller = this.callerContext();
    const abort = new AbortController();
    const signal = caller?.abortSignal ? AbortSignal.any([caller.abortSignal, abort.signal]) : abort.signal;
    let gaveUp!: (error: Error) => void;
    const givingUp = new Promise<never>((_, reject) => (gaveUp = reject));
    givingUp.catch(() => {});
    const state: WaitState = { lastReached: sentAt, lostSince: undefined, done: new AbortController() };
    const watching = this.watch(sentAt, state, def, args, (error) => {
      gaveUp(error);
      abort.abort();
    });
    let refusedSince: number | undefined;
    try {
      for (;;) {
        const attempt = this.client.connection.withAbortSignal(signal, () =>
          updateCalls(this.handle).execute(def, { args, updateId: this.updateId }),
        );
        attempt.catch(() => {}); // it is left behind when the wait gives up
        try {
          const result = await Promise.race([attempt, givingUp]);
          if (!isHandedOver(result)) return result;
          // The agent's run handed over inside a turn while the Update waited: the next run carries it, and answers
          // it when sent again with the same id (workflows/hand-over.ts). The old run may answer once more before it
          // ends: then again, after a pause.
          const { turn, step } = result.handedOver;
          this.progress('handed over', `the agent went on in a new run (turn ${turn}, step ${step}); waiting there`);
          await sleep(HANDED_OVER_PAUSE_MS);
          continue;
        } catch (error) {
          if (abort.signal.aborted) throw await givingUp.catch((reason: unknown) => reason);
          if (error instanceof WorkflowUpdateFailedError) {
            throw new AgentUpdateError(this.agentId, this.update, this.updateId, error.cause);
          }
          const refused = refusedForNow(error) ?? (await this.droppedAtContinueAsNew(error));
          if (refused !== undefined && !this.callerGaveUp()) {
            // Not applied, and not for good: sent again with the same id until the agent takes it (or, when it
            // refuses for longer than a worker may take to come back, the caller hears why).
            refusedSince ??= Date.now();
            if (Date.now() - refusedSince >= this.workerTimeoutMs) throw error;
            this.progress('refused', `Temporal refuses update ${this.updateId} for now (${refused}); sending it again`);
            await sleep(RESEND_PAUSE_MS);
            continue;
          }
          const failure = transientFailure(error);
          if (failure === undefined || this.callerGaveUp()) throw error;
          // Lost since Temporal last answered: the SDK's own retries came before this failure (about 20 s: the SDK's
          // documented default gRPC backoff, 10 attempts from 100 ms growing 1.7× up to 5 s; not our measurement).
          state.lostSince ??= state.lastReached;
          const lostFor = Date.now() - state.lostSince;
          if (lostFor >= this.reconnectTimeoutMs) {
            throw new UpdateOutcomeUnknownError(this.agentId, this.updateId, lostFor, error);
          }
          this.progress('unreachable', `cannot reach Temporal (${failure}); sending update ${this.updateId} again`);
          await sleep(RESEND_PAUSE_MS);
        }
      }
    } finally {
      state.done.abort();
      await watching;
    }
  }

  /**
   * Looks at the agent every few seconds while the Update is out: reports progress, notices that Temporal is
   * reachable again, and gives up when no worker takes the work.
   */
  private async watch<Ret, Args extends unknown[]>(
    sentAt: number,
    state: WaitState,
    def: UpdateDefinition<Ret, Args>,
    args: Args,
    giveUp: (error: Error) => void,
  ): Promise<void> {
    let accepted = false;
    let staleSince: number | undefined;
    // Without a progress callback the looks only watch for a worker gone: the first at the timeout at the latest.
    const delays = watchDelays(
      this.options.onProgress ? PROGRESS_FIRST_MS : Math.min(PROGRESS_EVERY_MS, this.workerTimeoutMs),
    );
    for (let next = sentAt + delays.next().value; ; next += delays.next().value) {
      const done = state.done.signal;
      await sleep(Math.max(0, next - Date.now()), undefined, { signal: done }).catch(() => {});
      if (done.aborted) return;
      let seen: Observation;
      try {
        seen = await this.client.connection.withAbortSignal(done, () => observeAgent(this.client, this.handle));
      } catch (error) {
        if (done.aborted) return;
        const failure = transientFailure(error);
        if (failure !== undefined) {
          this.progress('unreachable', `cannot reach Temporal (${failure}); waiting for update ${this.updateId}`);
        }
        continue;
      }
      state.lastReached = Date.now();
      state.lostSince = undefined; // Temporal answers: a later connection failure starts a new count
      if (done.aborted) return;
      if (!seen.running) continue;
      const now = Date.now();
      staleSince = workerPolling(seen) ? undefined : (staleSince ?? now);
      if (!accepted && now - sentAt >= this.workerTimeoutMs) {
        const stage = await this.client.connection.withAbortSignal(done, () => this.acceptance(def, args));
        if (done.aborted) return;
        if (stage === 'unknown') continue; // ask again at the next look
        accepted = stage === 'accepted';
        if (!accepted) {
          const why = workerPolling(seen) ? workflowTaskText(seen) : workersText(seen);
          giveUp(
            new NoWorkerError({ ...this.ids(seen), stage: 'sent, not accepted', workers: why, waitedMs: now - sentAt }),
          );
          return;
        }
      }
      if (accepted && staleSince !== undefined && now - staleSince >= this.workerTimeoutMs) {
        const waitedMs = now - staleSince;
        giveUp(new NoWorkerError({ ...this.ids(seen), stage: 'accepted', workers: workersText(seen), waitedMs }));
        return;
      }
      if (!workerPolling(seen)) {
        this.progress('no worker', `waiting for a worker on task queue ${seen.taskQueue} (${workersText(seen)})`);
      } else if (seen.status === 'awaiting-review') {
        this.progress(
          'review',
          `the agent waits for a review of its automatic compaction's draft: approve or discard it ` +
            `(longrun watch ${this.agentId} names the draft and its timeout)`,
        );
      } else if (seen.status === 'awaiting-approval') {
        this.progress(
          'approval',
          `the agent waits for approval of a tool call: approve or deny it ` +
            `(longrun tools ${this.agentId} lists the calls and the commands that answer them)`,
        );
      } else if (seen.activities.length > 0) {
        this.progress('working', `the agent is working: ${seen.activities.join('; ')}`);
      } else if ((seen.taskWaitingMs ?? 0) >= CHECK_EVERY_MS || (seen.taskAttempt ?? 1) > 1) {
        this.progress('task', `waiting for the worker to take the agent's task (${workflowTaskText(seen)})`);
      } else {
        this.progress('waiting', `waiting for agent ${this.agentId} to answer`);
      }
    }
  }

  /**
   * Why the server dropped the Update without applying it, when it did so because the run it went to continued as
   * new before taking it: "update … not found" (WorkflowNotFoundError) while the agent runs on. Sending it again with
   * the same id is safe: the workflow answers an id it applied in an earlier run from what it carried
   * (workflows/applied-updates.ts). Undefined for any other error, or when the agent is closed or unknown.
   */
  private async droppedAtContinueAsNew(error: unknown): Promise<string | undefined> {
    if (!(error instanceof WorkflowNotFoundError) || this.callerGaveUp()) return undefined;
    try {
      const description = await this.client.connection.withDeadline(Date.now() + CHECK_DEADLINE_MS, () =>
        this.handle.describe(),
      );
      if (description.status.name !== 'RUNNING') return undefined;
    } catch (lookError) {
      // A look that fails for another reason says nothing against it: the send that follows finds out.
      if (lookError instanceof WorkflowNotFoundError) return undefined;
    }
    return 'the run it went to continued as new before taking it';
  }

  /** The caller's call context: its own deadline or abort signal (Connection.withDeadline / withAbortSignal). */
  private callerContext(): { abortSignal?: AbortSignal | undefined; deadline?: number | Date | undefined } | undefined {
    const connection = this.client.connection;
    return connection instanceof Connection ? connection.callContextStorage.getStore() : undefined;
  }

  /** Whether the caller's own deadline has passed or its abort signal fired: the wait ends with the failure it got. */
  private callerGaveUp(): boolean {
    const caller = this.callerContext();
    return caller?.abortSignal?.aborted === true || (caller?.deadline !== undefined && Date.now() >= +caller.deadline);
  }

  private ids(seen: Observation): { agentId: string; taskQueue: string; updateId: string } {
    return { agentId: this.agentId, taskQueue: seen.taskQueue, updateId: this.updateId };
  }

  /**
   * Whether the Update was accepted (or already decided): the same id sent again answers at once if so, and waits
   * out the deadline if not. 'unknown' when Temporal could not be asked.
   */
  private async acceptance<Ret, Args extends unknown[]>(
    def: UpdateDefinition<Ret, Args>,
    args: Args,
  ): Promise<'accepted' | 'not accepted' | 'unknown'> {
    try {
      await this.client.connection.withDeadline(Date.now() + CHECK_DEADLINE_MS, () =>
        updateCalls(this.handle).start(def, {
          args,
          updateId: this.updateId,
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        }),
      );
      return 'accepted';
    } catch (error) {
      if (error instanceof WorkflowUpdateFailedError) return 'accepted'; // decided: the sender sees how
      if (error instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return 'not accepted'; // our deadline
      return 'unknown';
    }
  }

  /** One progress line: the first after PROGRESS_FIRST_MS, then when the situation changes or every PROGRESS_EVERY_MS. */
  private progress(kind: string, text: string): void {
    const now = Date.now();
    if (!this.options.onProgress || now - this.started < PROGRESS_FIRST_MS) return;
    const last = this.lastProgress;
    if (last && last.kind === kind && now - last.at < PROGRESS_EVERY_MS) return;
    this.lastProgress = { at: now, kind };
    this.options.onProgress(`${this.update} to ${this.agentId}, ${seconds(now - this.started)}: ${text}`);
  }
}

/** Where an Update the client sent stands on the server, as {@link updateStage} finds it. */
export type UpdateStage = 'completed' | 'accepted' | 'not accepted yet' | 'not found' | 'unknown';

/**
 * Where Update `updateId` of agent `agentId` stands, asked without sending anything (a sender interrupted by Ctrl-C
 * says what became of its message): `completed` or `accepted` (the agent has it; it survives any crash), `not
 * accepted yet` (the server holds it for the agent's next workflow task, within `timeoutMs`), `not found` (the server
 * does not have it) or `unknown` (the server did not answer).
 */
export async function updateStage(
  client: Client,
  agentId: string,
  updateId: string,
  timeoutMs: number = CHECK_DEADLINE_MS,
): Promise<UpdateStage> {
  const { UpdateWorkflowExecutionLifecycleStage: Stage } = protos.temporal.api.enums.v1;
  try {
    const response = await client.connection.withDeadline(Date.now() + timeoutMs, () =>
      client.workflowService.pollWorkflowExecutionUpdate({
        namespace: client.options.namespace,
        updateRef: { workflowExecution: { workflowId: agentWorkflowId(agentId) }, updateId },
        identity: client.options.identity,
        waitPolicy: { lifecycleStage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED },
      }),
    );
    if (response.outcome) return 'completed';
    return response.stage === Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED
      ? 'not accepted yet'
      : 'accepted';
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === grpcStatus.NOT_FOUND) return 'not found';
    if (code === grpcStatus.DEADLINE_EXCEEDED) return 'not accepted yet';
    return 'unknown';
  }
}
