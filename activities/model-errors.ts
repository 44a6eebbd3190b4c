/** Classifies model API errors for Temporal's retry policy. */
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';

/** Statuses that will not succeed on retry: bad key, no access, unknown model, malformed request. */
const PERMANENT_STATUSES = new Set([400, 401, 403, 404, 409, 422]);

/** Turns an OpenAI API error into a Temporal failure: permanent ones are not retried, 429 honours Retry-After. */
export function modelFailure(error: unknown, model: string): unknown {
  if (!(error instanceof OpenAI.APIError)) return error;
  const status = error.status as number | undefined;
  if (status === undefined) return error;
  const message = `model ${model}: HTTP ${status}: ${error.message}`;
  if (PERMANENT_STATUSES.has(status)) return ApplicationFailure.nonRetryable(message, `ModelHttp${status}`);
  const headers = error.headers as Headers | undefined;
  const retryAfter = Number(headers?.get('retry-after'));
  return ApplicationFailure.create({
    message,
    type: `ModelHttp${status}`,
    ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { nextRetryDelay: retryAfter * 1000 } : {}),
  });
}
