/**
 * What a failed call to Temporal means for an Update that is out (client/updates.ts): a connection-level failure that
 * says nothing about the Update (send it again with the same id), a refusal for now (send it again), or anything else
 * (report it); and a failure in a few words for the progress lines and errors.
 */
import { status } from '@grpc/grpc-js';
import {
  isGrpcServiceError,
  isRetryableError,
  ServiceError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';

/**
 * What a connection-level failure says, or undefined for any other error. Such a failure says nothing about the
 * Update (the server may have it, may have applied it): the cure is to ask again with the same id.
 */
export function transientFailure(error: unknown): string | undefined {
  // A call cut short by a deadline or a cancelled stream (the server shutting down).
  if (error instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return describeFailure(error);
  const cause = error instanceof ServiceError ? error.cause : error;
  if (isGrpcServiceError(cause)) {
    const grpcStatus = { code: cause.code, details: cause.details ?? '', metadata: cause.metadata };
    const code: status = Number(cause.code);
    const connection = isRetryableError(grpcStatus) || code === status.DEADLINE_EXCEEDED || code === status.CANCELLED;
    return connection ? describeFailure(cause) : undefined;
  }
  return undefined;
}

/**
 * Why the server refused an Update for now, not for good, or undefined for any other error: the agent's workflow task
 * is being retried (a worker died or froze holding it: "Workflow Task in failed state"), or the agent has as many
 * Updates in flight as the server allows. The Update was not applied; sending it again with the same id is safe.
 */
export function refusedForNow(error: unknown): string | undefined {
  const cause = error instanceof ServiceError ? error.cause : error;
  if (!isGrpcServiceError(cause)) return undefined;
  const code: status = Number(cause.code);
  if (code === status.FAILED_PRECONDITION && /workflow task in failed state/i.test(cause.details)) {
    return 'its workflow task is being retried';
  }
  if (code === status.RESOURCE_EXHAUSTED && /in-?flight/i.test(cause.details)) return 'too many updates in flight';
  return undefined;
}

/** A failure in a few words: "connect ECONNREFUSED 127.0.0.1:7233", "no answer in time", or its message. */
export function describeFailure(error: unknown): string {
  const cause =
    (error instanceof ServiceError || error instanceof WorkflowUpdateRPCTimeoutOrCancelledError) && error.cause
      ? error.cause
      : error;
  if (isGrpcServiceError(cause)) {
    const code: status = Number(cause.code);
    if (code === status.DEADLINE_EXCEEDED) return 'no answer in time';
    const details = cause.details || cause.message;
    // grpc-js: "No connection established. Last error: Error: connect ECONNREFUSED …. Resolution note: "
    return /Last error: (?:Error: )?(.*?)\.? Resolution note/.exec(details)?.[1] ?? details;
  }
  return error instanceof Error ? error.message : String(error);
}
