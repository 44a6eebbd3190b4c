/**
 * What a waiting client and `longrun state` say of the activities an agent has out (client/agent-observation.ts): one
 * that failed and waits out its retry backoff while a worker polls waits to retry, not for a worker.
 */
import type { WorkflowExecutionDescription } from '@temporalio/client';
import protos from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { pendingActivities, retriedActivities } from '../../client/agent-observation.ts';

const { PendingActivityState } = protos.temporal.api.enums.v1;
const NOW = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
const FAILURE = 'model gpt-4o-mini at http://127.0.0.1:8080/v1: Connection error.';

/** A description with one pending callModel activity. */
function described(activity: Record<string, unknown>): WorkflowExecutionDescription {
  return {
    raw: { pendingActivities: [{ activityType: { name: 'callModel' }, maximumAttempts: 8, ...activity }] },
  } as unknown as WorkflowExecutionDescription;
}

const backingOff = described({
  state: PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
  attempt: 3,
  scheduledTime: at(NOW + 4_000),
  lastFailure: { message: FAILURE },
});

describe('pendingActivities', () => {
  it('a failed call in its retry backoff, a worker polling: retrying in N s after a failure', () => {
    expect(pendingActivities(backingOff, NOW, true)).toEqual([
      `callModel (attempt 3, retrying in 4 s after a failure, last failure: ${FAILURE})`,
    ]);
    // The client may not look at the workers: it is assumed that one polls.
    expect(pendingActivities(backingOff, NOW, undefined)[0]).toContain('retrying in 4 s after a failure');
  });

  it('no worker polling: it waits for a worker, whatever failed before', () => {
    expect(pendingActivities(backingOff, NOW, false)).toEqual([
      `callModel (attempt 3, waiting for a worker, last failure: ${FAILURE})`,
    ]);
    const first = described({ state: PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED, attempt: 1 });
    expect(pendingActivities(first, NOW, true)).toEqual(['callModel (attempt 1, waiting for a worker)']);
  });

  it('a retry that is due, and one that runs', () => {
    const due = described({
      state: PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
      attempt: 2,
      scheduledTime: at(NOW - 100),
      lastFailure: { message: FAILURE },
    });
    expect(pendingActivities(due, NOW, true)[0]).toContain('attempt 2, retrying now after a failure');
    const running = described({
      state: PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
      attempt: 2,
      lastStartedTime: at(NOW - 3_000),
      lastFailure: { message: FAILURE },
    });
    expect(pendingActivities(running, NOW, true)[0]).toContain('attempt 2, running 3 s');
  });
});

describe('retriedActivities', () => {
  it('lists a failed activity with its attempts, its next try and its last failure; none before a failure', () => {
    expect(retriedActivities(backingOff, NOW)).toEqual([
      {
        activity: 'callModel',
        failures: 2,
        attempt: 3,
        maximumAttempts: 8,
        running: false,
        retryInMs: 4_000,
        lastFailure: FAILURE,
      },
    ]);
    const first = described({ state: PendingActivityState.PENDING_ACTIVITY_STATE_STARTED, attempt: 1 });
    expect(retriedActivities(first, NOW)).toEqual([]);
  });
});
