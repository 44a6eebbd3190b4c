/**
 * Build C of the release test (test/e2e/release.test.ts), as a release would break it: every run starts a timer
 * before the agent's own first commands. A run begun on an older build has other commands there, so its replay on C
 * fails (non-determinism) at the first workflow task C takes for it.
 */
import { sleep } from '@temporalio/workflow';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      execute(input, next) {
        void sleep(1);
        return next(input);
      },
    },
  ],
});
