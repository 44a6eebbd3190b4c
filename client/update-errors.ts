/**
 * The ways an Update sent to an agent can end other than with its result (client/updates.ts), each a named error that
 * says what became of the message.
 */
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { seconds } from './agent-observation.ts';
import { describeFailure } from './connection-failures.ts';

/**
 * Thrown when the workflow fails or rejects an Update: `message` is the workflow's own message, `type` its failure
 * type (one of contract/failures.ts: 'TurnFailed' and 'CompactionFailed' with the activity's failure as their cause,
 * 'InvalidInput' and 'AgentClosed' for input the validator refused). Still a
 * WorkflowUpdateFailedError whose `cause` is the failure the workflow raised.
 *
 * @example
 *   catch (error) { if (error instanceof AgentUpdateError && error.type === 'TurnFailed') console.error(error.message); }
 */
export class AgentUpdateError extends WorkflowUpdateFailedError {
  /** The failure's type: the ApplicationFailure type, or the error class name. */
  readonly type: string;
  readonly agentId: string;
  /** The Update's name: 'send', 'compact', 'close'. */
  readonly update: string;
  readonly updateId: string;

  constructor(agentId: string, update: string, updateId: string, failure: Error | undefined) {
    super(failure?.message ?? `update ${update} failed`, failure);
    this.type = (failure instanceof ApplicationFailure ? failure.type : failure?.name) ?? 'Unknown';
    this.agentId = agentId;
    this.update = update;
    this.updateId = updateId;
  }
}
// The parent's `name` is a read-only prototype property (the SDK's instanceof marker): shadow it the same way.
Object.defineProperty(AgentUpdateError.prototype, 'name', { value: 'AgentUpdateError' });

/** How far an Update got before the client gave up on it. */
export type UpdateStage = 'not sent' | 'sent, not accepted' | 'accepted';

/** Thrown when no worker takes the agent's work within the timeout; `stage` says what became of the Update. */
export class NoWorkerError extends Error {
  readonly agentId: string;
  readonly taskQueue: string;
  readonly updateId: string;
  readonly stage: UpdateStage;

  constructor(details: {
    agentId: string;
    taskQueue: string;
    updateId: string;
    stage: UpdateStage;
    /** What was seen of the workers, e.g. "the server has seen no worker poll it". */
    workers: string;
    waitedMs: number;
  }) {
    const { agentId, taskQueue, updateId, stage, workers } = details;
    const waited = seconds(details.waitedMs);
    super(
      stage === 'not sent'
        ? `no worker is polling task queue ${taskQueue} of agent ${agentId} (${workers}); gave up after ${waited}. ` +
            'Nothing was sent: start a worker (npm start, or longrun up), then send again ' +
            '(LONGRUN_WORKER_TIMEOUT_MS sets how long to wait).'
        : stage === 'sent, not accepted'
          ? `update ${updateId} reached agent ${agentId} but no worker took it within ${waited} ` +
            `(task queue ${taskQueue}: ${workers}). Its outcome is unknown: the server keeps it in memory, a worker ` +
            `that starts soon applies it, a server restart drops it. Read \`longrun state ${agentId}\` before ` +
            'sending it again.'
          : `update ${updateId} was accepted by agent ${agentId}, but no worker has polled task queue ${taskQueue} ` +
            `for ${waited} (${workers}). It is recorded and completes when a worker runs: do not send it again; ` +
            `read the outcome later with \`longrun state ${agentId}\` or \`longrun context ${agentId}\`.`,
    );
    this.name = 'NoWorkerError';
    this.agentId = agentId;
    this.taskQueue = taskQueue;
    this.updateId = updateId;
    this.stage = stage;
  }
}

/** Thrown when Temporal cannot be reached for longer than the reconnect timeout while an Update is out. */
export class UpdateOutcomeUnknownError extends Error {
  readonly agentId: string;
  readonly updateId: string;

  constructor(agentId: string, updateId: string, waitedMs: number, cause: unknown) {
    super(
      `lost the connection to Temporal while waiting for update ${updateId} of agent ${agentId}, and could not ` +
        `reach it for ${seconds(waitedMs)} (${describeFailure(cause)}). Its outcome is unknown (it is ` +
        `applied at most once): when Temporal is back, read \`longrun state ${agentId}\` before sending it again.`,
      { cause },
    );
    this.name = 'UpdateOutcomeUnknownError';
    this.agentId = agentId;
    this.updateId = updateId;
  }
}

/** Thrown when Temporal could not be reached to look for a worker for as long as the client waits: nothing was sent. */
export class TemporalUnreachableError extends Error {
  readonly agentId: string;

  constructor(agentId: string, cause: unknown, triedMs: number) {
    super(
      `cannot reach Temporal to look for agent ${agentId}'s worker (${describeFailure(cause)}; tried for ` +
        `${seconds(triedMs)}); nothing was sent`,
      { cause },
    );
    this.name = 'TemporalUnreachableError';
    this.agentId = agentId;
  }
}
