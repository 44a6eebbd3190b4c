/**
 * The worker process of a harness that kills and starts its worker (the chaos run, the soak): longrun's agent
 * workflows from a bundle the driver built once (so a start takes about a second, not a bundling), its activities with
 * the harness's tools, the model at OPENAI_BASE_URL. Prints `[<name>] polling <task queue>` once it polls (what the
 * driver's WorkerProcess waits for), and runs until it is stopped or killed.
 */
import { readFileSync } from 'node:fs';
import type { WorkerInterceptors, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { ToolRegistry } from '../activities/tools.ts';
import type { ToolDefinition } from '../activities/tools.ts';
import { loadSettings } from '../config/settings.ts';
import { loadTemporalTarget } from '../config/temporal.ts';
import { S3BlobStore, s3TargetFromEnv } from '../storage/s3.ts';
import { activityDeps, createAgentWorker } from '../worker/worker.ts';

export async function runHarnessWorker(options: {
  name: string;
  /** The file the driver wrote the workflow bundle to. */
  bundleFile: string;
  tools: ToolDefinition[];
  modelTimeoutMs: number;
  interceptors?: WorkerInterceptors;
}): Promise<void> {
  const settings = loadSettings(process.env);
  const { worker, connection } = await createAgentWorker({
    temporal: loadTemporalTarget(process.env),
    taskQueue: settings.taskQueue,
    workflowBundle: JSON.parse(readFileSync(options.bundleFile, 'utf8')) as WorkflowBundleWithSourceMap,
    deps: activityDeps(settings, {
      store: new S3BlobStore(s3TargetFromEnv(settings, process.env)),
      endpoint: { baseURL: process.env.OPENAI_BASE_URL!, apiKey: options.name, timeoutMs: options.modelTimeoutMs },
      tools: new ToolRegistry(options.tools),
    }),
    ...(options.interceptors ? { interceptors: options.interceptors } : {}),
  });
  console.log(`[${options.name}] polling ${settings.taskQueue}`);
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}
