/** Classifies model API errors: for Temporal's retry policy, and by class for the metrics. */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { ModelErrorClass } from '../contract/metrics.ts';

/** Statuses that will not succeed on retry: bad key, no access, unknown model, malformed request. */
const PERMANENT_STATUSES = new Set([400, 401, 403, 404, 409, 422]);

import { FAILURE, MODEL_HTTP_PREFIX, modelHttpType } from '../contract/failures.ts';
import { shownEndpoint } from '../llm/openai.ts';

/** How providers say the request is over the window: OpenAI's code, and the wording of vLLM, gateways and others. */
const OVERFLOW_WORDING =
  /context[_ ]length|maximum context|context window|too many tokens|prompt is too long|input is too long/i;

/** The provider says the request is over the model's window. */
function isOverflow(error: { status?: unknown; code?: unknown; message: string }): boolean {
  const { status } = error;
  return (
    (status === 400 || status === 413) &&
    (error.code === 'context_length_exceeded' || OVERFLOW_WORDING.test(error.message))
  );
}

/**
 * Turns an OpenAI API error into a Temporal failure that names the model and, given its base URL, the endpoint asked
 * ({@link shownEndpoint}: no credentials): permanent ones are not retried, 429 honours Retry-After, a context overflow
 * gets its own type ({@link FAILURE.contextOverflow}), and an endpoint that did not answer (refused, reset, timed out)
 * is {@link FAILURE.modelUnreachable} or {@link FAILURE.modelTimeout}, retried.
 */
export function modelFailure(error: unknown, model: string, baseURL?: string): unknown {
  if (!(error instanceof OpenAI.APIError)) return error;
  const asked = `model ${model}${baseURL !== undefined ? ` at ${shownEndpoint(baseURL)}` : ''}`;
  if (error instanceof OpenAI.APIUserAbortError) return error;
  if (error instanceof OpenAI.APIConnectionError) {
    const timeout = error instanceof OpenAI.APIConnectionTimeoutError;
    return ApplicationFailure.create({
      message: `${asked}: ${error.message}`,
      type: timeout ? FAILURE.modelTimeout : FAILURE.modelUnreachable,
      cause: error,
    });
  }
  const status = error.status as number | undefined;
  if (status === undefined) return error;
  const message = `${asked}: HTTP ${status}: ${error.message}`;
  if (isOverflow(error)) return ApplicationFailure.nonRetryable(message, FAILURE.contextOverflow);
  if (PERMANENT_STATUSES.has(status)) return ApplicationFailure.nonRetryable(message, modelHttpType(status));
  const headers = error.headers as Headers | undefined;
  const retryAfter = Number(headers?.get('retry-after'));
  return ApplicationFailure.create({
    message,
    type: modelHttpType(status),
    ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { nextRetryDelay: retryAfter * 1000 } : {}),
  });
}

/** The class of an HTTP status the provider answered with. */
function statusClass(status: number): ModelErrorClass {
  if (status === 429) return 'rate_limit';
  if (status === 401 || status === 403) return 'auth';
  if (status >= 500) return 'server';
  return status >= 400 ? 'bad_request' : 'other';
}

/**
 * A failed model call's class, for `longrun_model_call_errors` (docs/metrics.md): from the openai package's error, or
 * from the failure {@link modelFailure} and the reply checks (activities/model-reply.ts) made of it.
 */
export function modelErrorClass(error: unknown): ModelErrorClass {
  if (error instanceof ApplicationFailure) {
    if (error.type === FAILURE.contextOverflow) return 'context_overflow';
    if (error.type === FAILURE.emptyReply) return 'empty_reply';
    if (error.type === FAILURE.badReply) return 'bad_reply';
    if (error.type === FAILURE.modelTimeout) return 'timeout';
    if (error.type === FAILURE.modelUnreachable) return 'connection';
    const status = error.type?.startsWith(MODEL_HTTP_PREFIX) ? Number(error.type.slice(MODEL_HTTP_PREFIX.length)) : NaN;
    return Number.isInteger(status) ? statusClass(status) : 'other';
  }
  if (error instanceof CancelledFailure || error instanceof OpenAI.APIUserAbortError) return 'cancelled';
  if (error instanceof OpenAI.APIConnectionTimeoutError) return 'timeout';
  if (error instanceof OpenAI.APIConnectionError) return 'connection';
  if (error instanceof OpenAI.APIError) {
    if (isOverflow(error)) return 'context_overflow';
    const status = error.status as number | undefined;
    return status === undefined ? 'other' : statusClass(status);
  }
  // The body was not JSON (the openai package parses it with JSON.parse).
  if (error instanceof SyntaxError) return 'malformed';
  return 'other';
}
