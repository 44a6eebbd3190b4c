/**
 * Build B of the release test (test/e2e/release.test.ts): the agent's workflow code with this module in its bundle
 * too. It does nothing, so B behaves as A; only its bundle, and so its build id, differ.
 */
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => ({});
