/**
 * The class a failed model call is counted under (`longrun_model_call_errors`, activities/model-errors.ts
 * `modelErrorClass`): from the openai package's errors and from the failures the activity makes of them, every
 * class a value of the metric's label (contract/metrics.ts).
 */
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { modelErrorClass, modelFailure } from '../../activities/model-errors.ts';
import { FAILURE } from '../../contract/failures.ts';
import { LABEL_VALUES } from '../../contract/metrics.ts';
import type { ModelErrorClass } from '../../contract/metrics.ts';

const http = (status: number, message = 'failed', code?: string) =>
  OpenAI.APIError.generate(status, { error: { message, ...(code ? { code } : {}) } }, message, new Headers());

const cases: [string, unknown, ModelErrorClass][] = [
  ['429', http(429), 'rate_limit'],
  ['500', http(500), 'server'],
  ['503', http(503), 'server'],
  ['401', http(401), 'auth'],
  ['403', http(403), 'auth'],
  ['404 (unknown model)', http(404), 'bad_request'],
  ['422', http(422), 'bad_request'],
  ['400 context_length_exceeded', http(400, 'too long', 'context_length_exceeded'), 'context_overflow'],
  ['413 "prompt is too long"', http(413, 'prompt is too long'), 'context_overflow'],
  ['a timeout', new OpenAI.APIConnectionTimeoutError(), 'timeout'],
  ['a reset connection', new OpenAI.APIConnectionError({ message: 'Connection error.' }), 'connection'],
  ['a body that is not JSON', new SyntaxError('Unexpected end of JSON input'), 'malformed'],
  ['no choices', ApplicationFailure.create({ message: 'no choices', type: FAILURE.emptyReply }), 'empty_reply'],
  ['a reply that cannot be kept', ApplicationFailure.nonRetryable('bad', FAILURE.badReply), 'bad_reply'],
  ['the activity cancelled', new CancelledFailure('cancelled'), 'cancelled'],
  ['anything else', new Error('boom'), 'other'],
];

describe('modelErrorClass', () => {
  it.each(cases)('%s → its class', (_name, error, expected) => {
    expect(modelErrorClass(error)).toBe(expected);
  });

  it.each(cases.filter(([, error]) => error instanceof OpenAI.APIError))(
    '%s → the same class once the activity made a failure of it',
    (_name, error, expected) => {
      expect(modelErrorClass(modelFailure(error, 'gpt-4o-mini', 'http://127.0.0.1:8080/v1'))).toBe(expected);
    },
  );

  it('names only classes the metric lists, and each of them', () => {
    expect(new Set(cases.map(([, , expected]) => expected))).toEqual(new Set(LABEL_VALUES.class));
  });
});

describe('modelFailure names the model and its endpoint', () => {
  const endpoint = 'https://user:secret@gateway.example/v1?api-key=secret#x';

  it('an endpoint that does not answer: a retried failure with the model and the base URL, without credentials', () => {
    const failure = modelFailure(
      new OpenAI.APIConnectionError({ message: 'Connection error.' }),
      'gpt-4o-mini',
      endpoint,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({
      message: 'model gpt-4o-mini at https://gateway.example/v1: Connection error.',
      type: FAILURE.modelUnreachable,
      nonRetryable: false,
    });
    expect((failure as Error).message).not.toContain('secret');
  });

  it('a timeout: its own type, retried', () => {
    const failure = modelFailure(new OpenAI.APIConnectionTimeoutError(), 'gpt-4o-mini', 'http://127.0.0.1:8080/v1');
    expect(failure).toMatchObject({
      message: 'model gpt-4o-mini at http://127.0.0.1:8080/v1: Request timed out.',
      type: FAILURE.modelTimeout,
      nonRetryable: false,
    });
  });

  it('an HTTP error: the status after the model and the endpoint', () => {
    expect(modelFailure(http(401, 'Incorrect API key provided'), 'gpt-4o-mini', endpoint)).toMatchObject({
      message: 'model gpt-4o-mini at https://gateway.example/v1: HTTP 401: 401 Incorrect API key provided',
      nonRetryable: true,
    });
  });
});
