/**
 * Build C of the release test (test/e2e/release.test.ts) as a release ships it with `patched()`: the same timer as
 * build-c.ts, for runs that begin on C only. A run begun on an older build has no marker of the patch in its history,
 * so `patched` is false when C replays it and the run goes on as it began.
 */
import { patched, sleep } from '@temporalio/workflow';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

/** The patch of release C. */
export const RELEASE_C_PATCH = 'release-test-c-timer';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      execute(input, next) {
        if (patched(RELEASE_C_PATCH)) void sleep(1);
        return next(input);
      },
    },
  ],
});
