/**
 * What a waiting client sees of an agent (client/updates.ts): its workflow's description and the workers polling its
 * task queue, and what they say in words for the progress lines and the errors.
 */
import type { Client, WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import protos from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../contract/search-attributes.ts';
import { transientFailure } from './connection-failures.ts';

/**
 * A worker counts as polling when the server saw one of its polls within this long. The server notes a poller when
 * each long poll starts and when it ends (matching's task_queue_partition_manager.go), and an idle poll lasts up to
 * its long-poll interval, one minute: a live worker has always been seen within about a minute.
 */
export const WORKER_SEEN_WITHIN_MS = 70_000;
/** How long each look at the agent (and each other check a waiting client makes) may take. */
export const CHECK_DEADLINE_MS = 5_000;

const { DescribeTaskQueueMode, PendingActivityState, PendingWorkflowTaskState, TaskQueueKind, TaskQueueType } =
  protos.temporal.api.enums.v1;

/** What the client sees of the agent while it waits. */
export interface Observation {
  taskQueue: string;
  running: boolean;
  /** False when the task queue could not be described: whether a worker polls is then unknown. */
  workersKnown: boolean;
  /** How long ago a worker last polled the task queue; undefined: none in the server's poller history. */
  workerAgeMs?: number | undefined;
  workerIdentity?: string | undefined;
  /** The activities the agent has out, described. */
  activities: string[];
  /** A workflow task scheduled and not started: how long it has waited, and its attempt. */
  taskWaitingMs?: number | undefined;
  taskAttempt?: number | undefined;
  /** The agent's `AgentStatus` search attribute (`awaiting-review`: a draft waits for approve or discard). */
  status?: string | undefined;
}

type PollerInfo = { lastAccessTime?: Parameters<typeof timestampMs>[0]; identity?: string | null };

/** A look at the agent: its description and the workers polling its task queue, within {@link CHECK_DEADLINE_MS}. */
export async function observeAgent(client: Client, handle: WorkflowHandle): Promise<Observation> {
  const deadline = Date.now() + CHECK_DEADLINE_MS;
  const description = await client.connection.withDeadline(deadline, () => handle.describe());
  const taskQueue = description.taskQueue;
  const pollers = await client.connection.withDeadline(deadline, () => pollersOf(client, taskQueue));
  const now = Date.now();
  let newest: { at: number; identity: string } | undefined;
  for (const poller of pollers ?? []) {
    const at = timestampMs(poller.lastAccessTime);
    if (at !== undefined && (newest === undefined || at > newest.at)) {
      newest = { at, identity: poller.identity ?? '' };
    }
  }
  const raw = description.raw;
  const task = raw.pendingWorkflowTask;
  const taskScheduled =
    task && task.state === PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED
      ? timestampMs(task.scheduledTime)
      : undefined;
  const workers = { workersKnown: pollers !== undefined, workerAgeMs: newest && Math.max(0, now - newest.at) };
  return {
    taskQueue,
    running: description.status.name === 'RUNNING',
    ...workers,
    workerIdentity: newest?.identity,
    // An activity that failed waits out its retry backoff, not for a worker, when one polls.
    activities: pendingActivities(description, now, workerPolling(workers)),
    taskWaitingMs: taskScheduled === undefined ? undefined : Math.max(0, now - taskScheduled),
    taskAttempt: task?.attempt ?? undefined,
    status: description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.status),
  };
}

/** An activity the agent has out that failed and is tried again: `longrun state` shows it as `failing`. */
export interface RetriedActivity {
  activity: string;
  /** Attempts that failed so far. */
  failures: number;
  /** The attempt running or next. */
  attempt: number;
  /** The most its retry policy allows (absent: no limit). */
  maximumAttempts?: number;
  /** The next attempt runs now (a worker has it). */
  running: boolean;
  /** Waiting to be tried again: in how long (ms; 0 when due). */
  retryInMs?: number;
  /** The last attempt's failure (a model call's names its model and endpoint). */
  lastFailure: string;
}

type PendingActivity = NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number];

/** The activity, when it has failed and is tried again (attempt 2 or later, a failure recorded). */
function retriedActivity(activity: PendingActivity, now: number): RetriedActivity | undefined {
  const attempt = activity.attempt ?? 1;
  const lastFailure = activity.lastFailure?.message;
  if (attempt <= 1 || !lastFailure) return undefined;
  const running = activity.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
  const next = timestampMs(activity.nextAttemptScheduleTime ?? activity.scheduledTime);
  return {
    activity: activity.activityType?.name ?? 'activity',
    failures: attempt - 1,
    attempt,
    ...(activity.maximumAttempts ? { maximumAttempts: activity.maximumAttempts } : {}),
    running,
    ...(!running && next !== undefined ? { retryInMs: Math.max(0, next - now) } : {}),
    lastFailure,
  };
}

/** The activities the agent has out that failed and are tried again (a model endpoint that is down, say). */
export function retriedActivities(description: WorkflowExecutionDescription, now: number): RetriedActivity[] {
  return (description.raw.pendingActivities ?? []).flatMap((activity) => retriedActivity(activity, now) ?? []);
}

/** When a failed activity is tried again, in words: "retrying in 4 s", "retrying now". */
export function retrying(retried: RetriedActivity): string {
  const inSeconds = Math.round((retried.retryInMs ?? 0) / 1000);
  return inSeconds > 0 ? `retrying in ${inSeconds} s` : 'retrying now';
}

/**
 * The activities a workflow has out, described: "callModel (attempt 1, running 3 s)", "callModel (attempt 3, retrying
 * in 4 s after a failure, last failure: …)". `polled`: whether a worker polls the task queue; an activity not started
 * waits for a worker only when none does, or when it has not failed (a failed one waits out its retry backoff).
 */
export function pendingActivities(
  description: WorkflowExecutionDescription,
  now: number,
  polled: boolean | undefined = undefined,
): string[] {
  return (description.raw.pendingActivities ?? []).map((activity) => {
    const started = timestampMs(activity.lastStartedTime);
    const retried = retriedActivity(activity, now);
    const where =
      activity.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && started !== undefined
        ? `running ${seconds(now - started)}`
        : retried && polled !== false
          ? `${retrying(retried)} after a failure`
          : 'waiting for a worker';
    const parts = [
      `attempt ${activity.attempt ?? 1}`,
      where,
      ...(activity.lastFailure?.message ? [`last failure: ${activity.lastFailure.message}`] : []),
    ];
    return `${activity.activityType?.name ?? 'activity'} (${parts.join(', ')})`;
  });
}

/**
 * The workers seen polling the task queue for workflow tasks, on every partition (a task queue has four by default,
 * and a poll lands on any of them). The "enhanced" describe gathers them from all partitions, as the temporal CLI's
 * `task-queue describe` does; a server without it is asked the old way (the root partition's pollers). Undefined
 * when the client may not look (a role without DescribeTaskQueue): the workers are then unknown, not absent.
 */
async function pollersOf(client: Client, taskQueue: string): Promise<PollerInfo[] | undefined> {
  const service = client.workflowService;
  const namespace = client.options.namespace;
  const queue = { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL };
  const unlessTransient = (error: unknown) => {
    if (transientFailure(error) !== undefined) throw error;
    return undefined;
  };
  const enhanced = await service
    .describeTaskQueue({
      namespace,
      taskQueue: queue,
      apiMode: DescribeTaskQueueMode.DESCRIBE_TASK_QUEUE_MODE_ENHANCED,
      taskQueueTypes: [TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW],
      reportPollers: true,
    })
    .catch(unlessTransient);
  const found = Object.values(enhanced?.versionsInfo ?? {}).flatMap((version) =>
    Object.values(version.typesInfo ?? {}).flatMap((type) => type.pollers ?? []),
  );
  // (The enhanced describe lists no worker of a Worker Deployment version: those the old way does list.)
  if (found.length > 0) return found;
  const legacy = await service
    .describeTaskQueue({ namespace, taskQueue: queue, taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW })
    .catch(unlessTransient);
  if (legacy) return legacy.pollers ?? [];
  return enhanced ? [] : undefined;
}

/** Whether a worker polls a task queue, by the server's record of its pollers ({@link taskQueuePolled}). */
export interface TaskQueuePolling {
  taskQueue: string;
  /**
   * True: a worker polled it within {@link WORKER_SEEN_WITHIN_MS} (one that stopped just now still counts: the
   * server keeps its last poll); false: none did; undefined: the client may not look (no DescribeTaskQueue right).
   */
  polled: boolean | undefined;
  /** When the newest poll the server keeps was (ms since the epoch), and by whom; absent: none kept (5 minutes). */
  lastPollAt?: number;
  identity?: string;
  /** In words: "no worker polls task queue X (the last poll was 3 min ago by 123@host)". */
  text: string;
}

/**
 * Whether a worker polls `taskQueue` (workflow tasks, every partition), from the server's poller history: one
 * describeTaskQueue call, within {@link CHECK_DEADLINE_MS}. What `longrun state` and the client's reads check before
 * they ask an agent anything, so an agent without a worker is said at once instead of after a query's timeout.
 */
export async function taskQueuePolled(client: Client, taskQueue: string): Promise<TaskQueuePolling> {
  const deadline = Date.now() + CHECK_DEADLINE_MS;
  const pollers = await client.connection.withDeadline(deadline, () => pollersOf(client, taskQueue));
  let newest: { at: number; identity: string } | undefined;
  for (const poller of pollers ?? []) {
    const at = timestampMs(poller.lastAccessTime);
    if (at !== undefined && (newest === undefined || at > newest.at)) newest = { at, identity: poller.identity ?? '' };
  }
  const seen: Observation = {
    taskQueue,
    running: true,
    workersKnown: pollers !== undefined,
    workerAgeMs: newest && Math.max(0, Date.now() - newest.at),
    workerIdentity: newest?.identity,
    activities: [],
  };
  const polled = pollers === undefined ? undefined : workerPolling(seen);
  return {
    taskQueue,
    polled,
    ...(newest ? { lastPollAt: newest.at, identity: newest.identity } : {}),
    text:
      polled === undefined
        ? `whether a worker polls task queue ${taskQueue} is unknown (this client may not describe task queues)`
        : `${polled ? 'a worker polls' : 'no worker polls'} task queue ${taskQueue} (${workersText(seen)})`,
  };
}

/** Whether a worker polls the task queue (assumed when the client may not look). */
export function workerPolling(seen: Pick<Observation, 'workersKnown' | 'workerAgeMs'>): boolean {
  return !seen.workersKnown || (seen.workerAgeMs !== undefined && seen.workerAgeMs < WORKER_SEEN_WITHIN_MS);
}

/** What was seen of the workers, in words: when the last poll was, and by whom. */
export function workersText(seen: Observation): string {
  // The server keeps 5 minutes of polls (matching.PollerHistoryTTL), none across its own restart.
  if (seen.workerAgeMs === undefined) return 'the server has seen no worker poll it';
  const who = seen.workerIdentity ? ` by ${seen.workerIdentity}` : '';
  return workerPolling(seen)
    ? `last polled ${seconds(seen.workerAgeMs)} ago${who}`
    : `the last poll was ${seconds(seen.workerAgeMs)} ago${who}`;
}

/** What holds up the agent's workflow task, in words: how long it has waited, how often it failed. */
export function workflowTaskText(seen: Observation): string {
  const parts = [
    ...(seen.taskWaitingMs !== undefined ? [`its task has waited ${seconds(seen.taskWaitingMs)}`] : []),
    ...((seen.taskAttempt ?? 1) > 1
      ? [`the workflow task failed ${seen.taskAttempt! - 1} times: see the worker's log`]
      : []),
  ];
  return parts.length ? parts.join('; ') : `a worker polls task queue ${seen.taskQueue} but has not taken it`;
}

/** A duration in whole seconds: "12 s". */
export function seconds(ms: number): string {
  return `${Math.round(ms / 1000)} s`;
}

/** A protobuf Timestamp in ms (its seconds may be a Long). */
export function timestampMs(
  ts: { seconds?: number | { toNumber(): number } | null; nanos?: number | null } | null | undefined,
): number | undefined {
  const seconds = ts?.seconds;
  if (seconds === undefined || seconds === null) return undefined;
  return (typeof seconds === 'number' ? seconds : seconds.toNumber()) * 1000 + (ts?.nanos ?? 0) / 1e6;
}
