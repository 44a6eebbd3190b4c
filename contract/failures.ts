/**
 * The failures that cross Temporal, by their `ApplicationFailure` type: what a client, the CLI or the workflow can
 * match on. Each says who throws it and when. Nothing else throws an `ApplicationFailure` with a type of its own.
 */
import { ApplicationFailure } from '@temporalio/common';

export const FAILURE = {
  /**
   * `callModel`: the request is over the model's window, counted before sending or reported by the provider
   * (`context_length_exceeded`). Not retried: the workflow compacts with the `overflow` trigger and calls again.
   */
  contextOverflow: 'ContextOverflow',
  /**
   * `callModel`, `summarizeSpan`: the model endpoint did not answer (refused, reset, unreachable); the message names
   * the model and the endpoint's base URL. Retried.
   */
  modelUnreachable: 'ModelUnreachable',
  /** `callModel`, `summarizeSpan`: the model endpoint did not answer within the client's timeout. Retried. */
  modelTimeout: 'ModelTimeout',
  /** `callModel`: the provider answered with no choices. Retried. */
  emptyReply: 'EmptyReply',
  /**
   * `callModel`: the provider's reply is not a message longrun can keep and send back (content that is not text,
   * tool_calls that are not a list, a call without a string id or name, an id given twice); the message names the
   * field. Not retried: the turn fails, nothing of the reply enters the context, the next message goes on.
   */
  badReply: 'BadReply',
  /** `callModel`: the view breaks a tool call from its result (a bug, never a user's input). Not retried. */
  toolPairViolation: 'ToolPairViolation',
  /**
   * `applyCompaction` and `reportViolation`, with LONGRUN_STRICT_INVARIANTS on (tests): the coverage invariant is
   * broken (a message would reach the model twice or not at all; a bug, never a user's input). Not retried.
   */
  invariantViolated: 'InvariantViolated',
  /** Any activity: an object the workflow refers to is not in the store (deleted under it). Not retried. */
  missingObject: 'MissingObject',
  /** `describeModel`: the model or the compaction policy is unknown or out of range; the message names the field. */
  badConfiguration: 'BadConfiguration',
  /**
   * The workflow at its start, and the Update validators: input that breaks the contract (the message names the
   * field and the limit). A rejected Update never enters history. Also any activity whose input names an agent other
   * than the one its workflow id names (worker/own-agent.ts). Not retried.
   */
  invalidInput: 'InvalidInput',
  /** The Update validators: the agent is closed (or closing) and takes no more input. */
  agentClosed: 'AgentClosed',
  /** The `send` Update: the turn could not finish (retries exhausted); its cause is the activity's failure. */
  turnFailed: 'TurnFailed',
  /**
   * `runTool`: the tool itself threw (not a `ToolInputError`) at {@link TOOL_ERROR_ATTEMPTS} attempts. Not retried
   * again; attempts lost to a worker that died or froze (heartbeat timeouts) do not count toward it.
   */
  toolFailed: 'ToolFailed',
  /** The `compact` Update: the compaction could not finish; its cause is the activity's failure. */
  compactionFailed: 'CompactionFailed',
} as const;

/**
 * A tool's own errors are retried until this many of the call's attempts have failed with one (1 s, 2 s apart).
 * The activity may take more attempts than that in all (`runTool`'s retry policy allows 10), for the attempts that a
 * worker's death or freeze cost: those are faults of the machine, not of the tool.
 */
export const TOOL_ERROR_ATTEMPTS = 3;

export type FailureType = (typeof FAILURE)[keyof typeof FAILURE];

/** `callModel`: the provider's HTTP status, as `ModelHttp<status>`; 400, 401, 403, 404, 422 are not retried. */
export const MODEL_HTTP_PREFIX = 'ModelHttp';

export function modelHttpType(status: number): string {
  return `${MODEL_HTTP_PREFIX}${status}`;
}

/** The Update validators' and the workflow's rejection of bad input (see {@link FAILURE.invalidInput}). */
export function invalidInput(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, FAILURE.invalidInput);
}

/** The Update validators' rejection of input to a closed agent (see {@link FAILURE.agentClosed}). */
export function agentClosed(agentId: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`agent ${agentId} is closed`, FAILURE.agentClosed);
}
