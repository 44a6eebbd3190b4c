/** A storage outage is waited out inside the activity; a refusal is not retried. */
import { describe, expect, it } from 'vitest';
import { isTransientStorageError, untilStored } from '../../activities/stored.ts';
import { StorageNotAnsweringError } from '../../storage/s3.ts';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9000'), { code: 'ECONNREFUSED' });
const status = (httpStatusCode: number) =>
  Object.assign(new Error(`HTTP ${httpStatusCode}`), { $metadata: { httpStatusCode } });

describe('isTransientStorageError', () => {
  it('passes an unreachable endpoint, resets, timeouts, 5xx and throttling', () => {
    for (const error of [
      refused,
      Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
      Object.assign(new Error('fetch failed'), { cause: { code: 'UND_ERR_SOCKET' } }),
      Object.assign(new Error('timed out'), { name: 'TimeoutError' }),
      status(500),
      status(503),
      status(429),
      // What the store says of an endpoint that does not answer, naming what pointed there: still waited out.
      new StorageNotAnsweringError({ bucket: 'b', forcePathStyle: true }, refused.message, refused),
      new StorageNotAnsweringError({ bucket: 'b', forcePathStyle: true }, 'no answer in time', {
        name: 'TimeoutError',
      }),
    ]) {
      expect(isTransientStorageError(error), error.message).toBe(true);
    }
  });

  it('does not pass a refusal or a bug', () => {
    for (const error of [status(403), status(404), status(400), new TypeError('x is undefined')]) {
      expect(isTransientStorageError(error), error.message).toBe(false);
    }
  });
});

describe('untilStored', () => {
  it('retries through an outage and returns what the operation returned', async () => {
    let calls = 0;
    const result = await untilStored(() => {
      calls++;
      return calls < 3 ? Promise.reject(refused) : Promise.resolve('stored');
    });
    expect(result).toBe('stored');
    expect(calls).toBe(3);
  });

  it('throws a refusal at once, and an outage longer than its budget', async () => {
    let calls = 0;
    await expect(
      untilStored(() => {
        calls++;
        return Promise.reject(status(403));
      }),
    ).rejects.toThrow('HTTP 403');
    expect(calls).toBe(1);
    await expect(untilStored(() => Promise.reject(refused), 1_500)).rejects.toThrow('ECONNREFUSED');
  });
});
