/**
 * The longrun worker: polls the task queue, runs agent workflows (bundled from workflows/) and their activities.
 */
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import type { WorkerInterceptors, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../activities/index.ts';
import type { ActivityDeps } from '../activities/index.ts';
import { DEFAULTS, modulePath } from '../config/settings.ts';
import type { TemporalTarget } from '../config/temporal.ts';
import { CachedBlobStore } from '../storage/cache.ts';

export const WORKFLOWS_PATH = modulePath(import.meta.url, '../workflows/index');

/**
 * Cached workflows per worker. Each costs about 0.34 MB plus 4.4× its state (measured with SDK 1.24), so the size is
 * set explicitly rather than derived from the heap limit (an oversized cache can crash the worker: sdk-typescript
 * #2227). LONGRUN_WORKFLOW_CACHE_SIZE sets it for the main job.
 */
export const DEFAULT_WORKFLOW_CACHE_SIZE = DEFAULTS.workflowCacheSize;

/** Bundles the workflow code once (a few seconds); pass the bundle to several workers to skip re-bundling. */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

export interface AgentWorkerOptions {
  temporal: TemporalTarget;
  taskQueue: string;
  deps: ActivityDeps;
  workflowBundle?: WorkflowBundleWithSourceMap;
  maxCachedWorkflows?: number;
  identity?: string;
  /** Worker interceptors (the in-process agents use one to tell which activities are in flight). */
  interceptors?: WorkerInterceptors;
}

export async function createAgentWorker(
  options: AgentWorkerOptions,
): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect(options.temporal.connectionOptions);
  try {
    const worker = await Worker.create({
      connection,
      namespace: options.temporal.namespace,
      taskQueue: options.taskQueue,
      ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
      // Bodies are read again every turn; a worker-side cache keeps the recent ones.
      activities: createActivities({ ...options.deps, store: new CachedBlobStore(options.deps.store) }),
      maxCachedWorkflows: options.maxCachedWorkflows ?? DEFAULT_WORKFLOW_CACHE_SIZE,
      ...(options.identity ? { identity: options.identity } : {}),
      ...(options.interceptors ? { interceptors: options.interceptors } : {}),
    });
    return { worker, connection };
  } catch (error) {
    await connection.close();
    throw error;
  }
}
