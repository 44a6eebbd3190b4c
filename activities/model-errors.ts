/** Classifies model API errors for Temporal's retry policy. */
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';

/** Statuses that will not succeed on retry: bad key, no access, unknown model, malformed request. */
const PERMANENT_STATUSES = new Set([400, 401, 403, 404, 409, 422]);

import { FAILURE, modelHttpType } from '../contract/failures.ts';

/** How providers say the request is over the window: OpenAI's code, and the wording of vLLM, gateways and others. */
const OVERFLOW_WORDING =
  /context[_ ]length|maximum context|context window|too many tokens|prompt is too long|input is too long/i;

/**
 * Turns an OpenAI API error into a Temporal failure: permanent ones are not retried, 429 honours Retry-After, and a
 * context overflow gets its own type ({@link FAILURE.contextOverflow}).
 */
export function modelFailure(error: unknown, model: string): unknown {
  if (!(error instanceof OpenAI.APIError)) return error;
  const status = error.status as number | undefined;
  if (status === undefined) return error;
  const message = `model ${model}: HTTP ${status}: ${error.message}`;
  if (
    (status === 400 || status === 413) &&
    (error.code === 'context_length_exceeded' || OVERFLOW_WORDING.test(error.message))
  ) {
    return ApplicationFailure.nonRetryable(message, FAILURE.contextOverflow);
  }
  if (PERMANENT_STATUSES.has(status)) return ApplicationFailure.nonRetryable(message, modelHttpType(status));
  const headers = error.headers as Headers | undefined;
  const retryAfter = Number(headers?.get('retry-after'));
  return ApplicationFailure.create({
    message,
    type: modelHttpType(status),
    ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { nextRetryDelay: retryAfter * 1000 } : {}),
  });
}
