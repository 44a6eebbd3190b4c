/**
 * Every activity the agent workflow calls, and the options it calls each with: the one place for their timeouts,
 * heartbeats and retries. Workflow code imports the activities as types only (their code runs on the worker:
 * activities/index.ts) and schedules them through these proxies, each call with `executeWithOptions` and one of the
 * options below plus a `summary` the Temporal UI shows.
 */
import { ActivityCancellationType, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type * as activities from '../activities/index.ts';

export type Activities = ReturnType<typeof activities.createActivities>;

/** Storage writes and reads: short, retried until they succeed. */
export const STORE_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
};

/**
 * Model calls: retried with backoff on 429, 5xx, resets and timeouts (2 s, 4 s, 8 s, … up to 1 min; a Retry-After
 * header sets the next delay), at most 8 attempts; permanent errors (401, 403, 404, 400) are not retried.
 */
export const MODEL_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds', // the activity heartbeats every 0.5 s while the request is out
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 8 },
};

/**
 * Tool calls: each may do real work; a tool's own input errors come back as results, not failures. Any other error
 * of the tool is retried (1 s, 2 s) until its third (`TOOL_ERROR_ATTEMPTS`: the activity then fails it for good),
 * and fails the turn; the unanswered call leaves the context. The activity heartbeats every 0.5 s while the tool
 * runs: a worker that dies or freezes meanwhile is noticed within 15 s, and the call runs again on another worker
 * (tools are called at least once; `callId` tells a retry apart). Such lost attempts are not the tool's errors: up to
 * 10 attempts in all.
 */
export const TOOL_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 10 },
};

/**
 * A model call that runs its reply's plain tool calls too (`runCalls`): the model's time and the tools' (in
 * parallel, each within `runTool`'s five minutes). It heartbeats throughout, as either does; a tool gets the
 * heartbeat timeout it has in `runTool`.
 */
export const MODEL_AND_TOOLS_OPTIONS: ActivityOptions = {
  ...MODEL_OPTIONS,
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: TOOL_OPTIONS.heartbeatTimeout!,
};

/**
 * A model call or tool call an interrupt cancels ends when its worker says so (or it completes): nothing it would
 * store can come after the turn has moved on (workflows/turn/control.ts). A model call that runs its reply's tool
 * calls (`runCalls`) completes after an interrupt asked it to cancel, once its reply is stored: with the reply and
 * the results that came, the cancelled calls left unanswered. Waiting for the cancellation to complete, the SDK
 * resolves the activity's promise with that result (a completed resolution resolves whatever was asked:
 * @temporalio/workflow `resolveActivity`), and the turn answers the rest as interrupted.
 */
export const UNTIL_CANCELLED = { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED };

/**
 * Compaction's planning and applying (and reverting, and drafts): storage and CPU only, retried until they succeed
 * (or fail for good on a bug). They heartbeat every 2 s: a worker that dies in the middle is noticed within 10 s, not
 * at the 2-minute timeout.
 */
export const STEP_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
};

/** The summary call: heartbeating, retried with backoff a few times; then the plan's fallback runs instead. */
export const SUMMARIZE_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '2 seconds', maximumInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: 4 },
};

/** A child agent's final answer read back for its parent's `delegate` call: storage reads, retried until they succeed. */
export const DELEGATION_REPORT_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
};

export const { runTool, storeMessage, storePin, describeModel, readReply, publishStream } =
  proxyActivities<Activities>(STORE_OPTIONS);
export const { callModel } = proxyActivities<Activities>(MODEL_OPTIONS);
export const { planCompaction, applyCompaction, reportViolation, revertContext, storeDraft, reviseSummary } =
  proxyActivities<Activities>(STEP_OPTIONS);
export const { summarizeSpan } = proxyActivities<Activities>(SUMMARIZE_OPTIONS);
export const { reportDelegation } = proxyActivities<Activities>(DELEGATION_REPORT_OPTIONS);

/**
 * Adding what a compaction cost to its stored event: one read and one write, run as a local activity (a marker in
 * the history, no task of its own), retried with backoff until it succeeds.
 */
export const { recordEventSpent } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
