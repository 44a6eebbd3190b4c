/** Which refusals of an Update the client sends again (same id) and which it reports (client/connection-failures.ts). */
import { describe, expect, it } from 'vitest';
import { refusedForNow, transientFailure } from '../../client/connection-failures.ts';

const grpc = (code: number, details: string) => Object.assign(new Error(details), { code, details, metadata: {} });

describe('refusedForNow', () => {
  it('names a workflow task being retried and too many updates in flight', () => {
    const failing = grpc(9, 'Unable to perform workflow execution update due to Workflow Task in failed state.');
    expect(refusedForNow(failing)).toBe('its workflow task is being retried');
    const inFlight = grpc(8, 'limit on number of in-flight updates has been reached (10)');
    expect(refusedForNow(inFlight)).toBe('too many updates in flight');
    expect(transientFailure(failing)).toBeUndefined(); // not a connection failure: Temporal answered
  });

  it('leaves every other refusal to the caller', () => {
    for (const error of [
      grpc(9, 'workflow execution already completed'),
      grpc(8, 'namespace rate limit exceeded'),
      grpc(3, 'invalid argument'),
      new Error('Workflow Task in failed state'),
    ]) {
      expect(refusedForNow(error), error.message).toBeUndefined();
    }
  });
});
