/**
 * Reading an agent without a dead end. A query needs a worker to answer it (for a closed agent, to replay it): with
 * none, Temporal holds the query until its deadline and then says only "Failed to query Workflow". So a read first
 * describes the agent and checks whether a worker polls its task queue ({@link taskQueuePolled}):
 * - a closed agent that completed answers from its result, with no worker;
 * - with no worker polling, the read fails at once with {@link AgentNotAnsweringError}: what Temporal knows of the
 *   agent without one (its {@link AgentSnapshot}: status, search attributes, pending activities) and why;
 * - otherwise it queries with a short deadline, and when none answered by then and no worker has polled since (the
 *   one seen had stopped: the server keeps a stopped worker's last poll for minutes) and none holds one of the
 *   agent's workflow tasks, fails the same way after asking once more ({@link SECOND_LOOK_MS}: a live worker under
 *   load answers late); a worker that polled since (it took the query, and replays or is busy) or holds a task of the
 *   agent (the query waits for it) keeps it waiting, up to 30 s.
 */
import { isGrpcServiceError, ServiceError } from '@temporalio/client';
import type { Client, QueryDefinition, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import { status as grpcStatus } from '@grpc/grpc-js';
import protos from '@temporalio/proto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentState } from '../contract/state.ts';
import { SEARCH_ATTRIBUTES } from '../contract/search-attributes.ts';
import { CHECK_DEADLINE_MS, pendingActivities, taskQueuePolled } from './agent-observation.ts';
import type { TaskQueuePolling } from './agent-observation.ts';

/** What Temporal knows of an agent without asking a worker: its workflow's description. */
export interface AgentSnapshot {
  agentId: string;
  /** The workflow's status: RUNNING, COMPLETED, TERMINATED, FAILED, TIMED_OUT, CANCELLED, CONTINUED_AS_NEW. */
  workflowStatus: string;
  taskQueue: string;
  /** Whether a worker polls the task queue. */
  worker: Omit<TaskQueuePolling, 'text'>;
  /** Its search attributes (the context's tokens as of its last turn or step). */
  status?: string;
  model?: string;
  contextTokens?: number;
  compactions?: number;
  startedAt: string;
  closedAt?: string;
  historyLength: number;
  /** The activities it has out, described ("callModel (attempt 3, waiting for a worker)"). */
  pendingActivities: string[];
}

/**
 * Thrown by a read of an agent no worker answers for: `reason` says why ("no worker polls task queue X (…)"),
 * `snapshot` what Temporal knows of the agent without a worker.
 */
export class AgentNotAnsweringError extends Error {
  readonly agentId: string;
  readonly reason: string;
  readonly snapshot: AgentSnapshot;
  constructor(snapshot: AgentSnapshot, reason: string) {
    const closed = snapshot.workflowStatus !== 'RUNNING';
    super(
      `agent ${snapshot.agentId}${closed ? ` is closed (${snapshot.workflowStatus.toLowerCase()}) and` : ''} ` +
        `cannot be asked: ${reason}. A worker answers for it: start one on task queue ${snapshot.taskQueue} ` +
        `(\`npm start\` with LONGRUN_TASK_QUEUE=${snapshot.taskQueue}, or your own) and ask again`,
    );
    this.name = 'AgentNotAnsweringError';
    this.agentId = snapshot.agentId;
    this.reason = reason;
    this.snapshot = snapshot;
  }
}

/** How long a read waits for a worker's answer before it checks whether one is there at all. */
export const QUERY_DEADLINE_MS = 1_500;
/**
 * How long it asks again when none answered and nothing says whether the worker seen polling is there: a live worker
 * under load can take longer than {@link QUERY_DEADLINE_MS} to answer (its answer waits behind a busy event loop),
 * and nothing on the server tells it from one that stopped moments ago.
 */
export const SECOND_LOOK_MS = 2_500;
/** How long a read takes at most to say that no worker answers, when one was seen polling (the poll outlives it). */
export const NO_WORKER_VERDICT_MS = QUERY_DEADLINE_MS + SECOND_LOOK_MS;
/** How long it waits in all when a worker is there (a long replay, a busy worker). */
const QUERY_PATIENCE_MS = 30_000;
/** How long a query waits for a run that has just continued-as-new to take its first workflow task. */
const NOT_SCHEDULED_RETRY_MS = 10_000;

export interface ReadOptions {
  /** How long to wait for an answer before checking whether a worker is there (default {@link QUERY_DEADLINE_MS}). */
  queryDeadlineMs?: number;
}

/**
 * Asks the agent `query`, without a dead end (above). `fromResult`: the answer from a completed agent's final state,
 * read from its result with no worker; without it a completed agent is asked as any closed one is.
 */
export async function readAgent<R, A extends unknown[]>(
  client: Client,
  handle: WorkflowHandle,
  agentId: string,
  query: QueryDefinition<R, A>,
  args: A,
  fromResult?: (final: AgentState) => R,
  options: ReadOptions = {},
): Promise<R> {
  let deadlineMs = options.queryDeadlineMs ?? QUERY_DEADLINE_MS;
  const description = await client.connection.withDeadline(Date.now() + CHECK_DEADLINE_MS, () => handle.describe());
  if (description.status.name === 'COMPLETED' && fromResult) {
    const final = (await client.workflow.getHandle(description.workflowId, description.runId).result()) as AgentState;
    return fromResult(final);
  }
  const polling = await firstPollSeen(client, description.taskQueue);
  if (polling.polled === false)
    throw new AgentNotAnsweringError(snapshotOf(agentId, description, polling), polling.text);
  const sent = Date.now();
  let lookedAgain = false;
  for (let patience = sent + QUERY_PATIENCE_MS; ;) {
    try {
      return await client.connection.withDeadline(Math.min(Date.now() + deadlineMs, patience), () =>
        handle.query(query, ...args),
      );
    } catch (error) {
      const said = String((error as Error).cause ?? error);
      const notYet = /not scheduled yet/.test(said);
      if (notYet && Date.now() < sent + NOT_SCHEDULED_RETRY_MS) {
        await sleep(50);
        continue;
      }
      // The server's own verdict: no worker polled the task queue lately (matching says so once it has looked).
      const serverSaysNone = /no poller seen for task queue recently/.test(said);
      if (!serverSaysNone && (!timedOut(error) || Date.now() >= patience)) throw error;
      if (serverSaysNone) await sleep(250); // it answers at once: asked again below, not in a tight loop
      // No answer yet: a worker that polled since the query was sent is there (it took the query: its poll ended
      // then; it replays, or is busy); keep waiting for it. A worker that stopped just before may have its last poll
      // recorded late, newer than the one seen before but from before the question: that one does not count. (The
      // server's clock against this one's: a skew only makes the wait shorter or longer, never wrong about an answer.)
      // A worker that holds one of the agent's workflow tasks is there too: the server gives the query to the worker
      // that has the agent cached (its sticky queue, whose polls the task queue's do not show), after the task in
      // flight; under load that task may take seconds. Ask again at the short deadline: if that worker died, its
      // task times out and goes back to scheduled, and the next look says so.
      const [now, holding] = await Promise.all([
        taskQueuePolled(client, description.taskQueue),
        workflowTaskHeld(client, handle),
      ]);
      const pollAt = now.lastPollAt;
      if (pollAt !== undefined && pollAt > (polling.lastPollAt ?? 0) && pollAt >= sent) {
        deadlineMs = QUERY_PATIENCE_MS;
        continue;
      }
      if (holding) continue;
      if (!serverSaysNone && !lookedAgain && now.polled) {
        lookedAgain = true;
        deadlineMs = SECOND_LOOK_MS;
        continue;
      }
      const waited = Math.round((Date.now() - sent) / 1000);
      throw new AgentNotAnsweringError(
        snapshotOf(agentId, description, now),
        `no worker polls task queue ${description.taskQueue} now: none answered within ${waited} s` +
          (now.lastPollAt !== undefined
            ? ` (the last poll was ${Math.round((Date.now() - now.lastPollAt) / 1000)} s ago` +
              `${now.identity ? ` by ${now.identity}` : ''}, before the question)`
            : ''),
      );
    }
  }
}

/**
 * Whether a worker polls the task queue; when the server has seen none poll it at all, looked at again for up to
 * {@link SECOND_LOOK_MS}: a worker started a moment ago (a replay's own, a team's just deployed) is listed once its
 * first poll has reached the server. A worker seen polling before is not waited for (its last poll says when).
 */
async function firstPollSeen(client: Client, taskQueue: string): Promise<TaskQueuePolling> {
  const until = Date.now() + SECOND_LOOK_MS;
  for (;;) {
    const polling = await taskQueuePolled(client, taskQueue);
    if (polling.polled !== false || polling.lastPollAt !== undefined || Date.now() >= until) return polling;
    await sleep(250);
  }
}

/** Whether a worker has started one of the agent's workflow tasks and not finished it. */
async function workflowTaskHeld(client: Client, handle: WorkflowHandle): Promise<boolean> {
  const now = await client.connection.withDeadline(Date.now() + CHECK_DEADLINE_MS, () => handle.describe());
  return (
    now.raw.pendingWorkflowTask?.state ===
    protos.temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED
  );
}

/**
 * A query cut off by its deadline: "Failed to query Workflow" with the call cancelled (the client's deadline) or
 * DEADLINE_EXCEEDED (the server's) under it.
 */
function timedOut(error: unknown): boolean {
  const cause = error instanceof ServiceError ? (error.cause ?? error) : error;
  if (!isGrpcServiceError(cause)) return false;
  const code: grpcStatus = Number(cause.code);
  return code === grpcStatus.DEADLINE_EXCEEDED || code === grpcStatus.CANCELLED;
}

function snapshotOf(
  agentId: string,
  description: WorkflowExecutionDescription,
  polling: TaskQueuePolling,
): AgentSnapshot {
  const attributes = description.typedSearchAttributes;
  const { text: _, ...worker } = polling;
  const status = attributes.get(SEARCH_ATTRIBUTES.status);
  const model = attributes.get(SEARCH_ATTRIBUTES.model);
  const contextTokens = attributes.get(SEARCH_ATTRIBUTES.contextTokens);
  const compactions =
    attributes.get(SEARCH_ATTRIBUTES.compactions) ?? attributes.get(SEARCH_ATTRIBUTES.compactionsFormerName);
  return {
    agentId,
    workflowStatus: description.status.name,
    taskQueue: description.taskQueue,
    worker,
    ...(status !== undefined ? { status } : {}),
    ...(model !== undefined ? { model } : {}),
    ...(contextTokens !== undefined ? { contextTokens } : {}),
    ...(compactions !== undefined ? { compactions } : {}),
    startedAt: description.startTime.toISOString(),
    ...(description.closeTime ? { closedAt: description.closeTime.toISOString() } : {}),
    historyLength: description.historyLength,
    pendingActivities: pendingActivities(description, Date.now(), polling.polled),
  };
}
