/**
 * A team's own worker in one call: the agent workflows and activities with the team's tools and model endpoint,
 * connected as the main job connects (Temporal from TEMPORAL_* or a profile, S3 from the AWS SDK's chain or the
 * embedded MinIO's local defaults, LONGRUN_* settings). Starts no servers. Runs until SIGINT or SIGTERM, on which
 * Temporal's runtime stops the worker after the tasks in flight. With LONGRUN_METRICS_ADDRESS it installs the
 * Temporal runtime with the Prometheus endpoint (so the process must not have installed one); with
 * OTEL_EXPORTER_OTLP_ENDPOINT it traces (docs/metrics.md).
 */
import { ToolRegistry } from '../activities/tools.ts';
import type { ToolDefinition } from '../activities/tools.ts';
import { loadSettings } from '../config/settings.ts';
import type { Env } from '../config/settings.ts';
import { loadTemporalTarget } from '../config/temporal.ts';
import { flushTracing } from '../config/tracing.ts';
import { S3BlobStore, s3TargetFromEnv } from '../storage/s3.ts';
import { installRuntime } from './telemetry.ts';
import { activityDeps, createAgentWorker } from './worker.ts';

export interface RunAgentWorkerOptions {
  /** The team's tools, made with `defineTool` (`context_reload` is built in). */
  tools?: readonly ToolDefinition[];
  /** The model endpoint; without it, the openai package's OPENAI_BASE_URL and OPENAI_API_KEY. */
  model?: { baseURL?: string | undefined; apiKey?: string | undefined; headers?: Record<string, string> };
  /** Where settings are read (default: process.env). */
  env?: Env;
  /** Hears what the worker connected to (default: console.log). */
  log?: (line: string) => void;
}

export async function runAgentWorker(options: RunAgentWorkerOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => console.log(line));
  const settings = loadSettings(env);
  if (settings.metricsAddress) installRuntime(settings);
  const temporal = loadTemporalTarget(env);
  const store = new S3BlobStore(s3TargetFromEnv(settings, env));
  await store.ensureBucket();
  const { baseURL, apiKey, headers } = options.model ?? {};
  const { worker, connection } = await createAgentWorker({
    temporal,
    taskQueue: settings.taskQueue,
    maxCachedWorkflows: settings.workflowCacheSize,
    deps: activityDeps(settings, {
      store,
      endpoint: {
        ...(baseURL !== undefined ? { baseURL } : {}),
        ...(apiKey !== undefined ? { apiKey } : {}),
        timeoutMs: settings.modelTimeoutMs,
      },
      ...(headers ? { headers } : {}),
      tools: new ToolRegistry(options.tools),
    }),
  });
  const address = String(temporal.connectionOptions.address ?? 'localhost:7233');
  if (settings.metricsAddress) log(`[metrics] Prometheus metrics at http://${settings.metricsAddress}/metrics`);
  if (temporal.tracing) log(`[traces] OpenTelemetry spans exported to ${temporal.tracing.url}`);
  log(`[worker] polling task queue ${settings.taskQueue} at ${address} (namespace ${temporal.namespace})`);
  try {
    await worker.run();
  } finally {
    await connection.close();
    await flushTracing();
  }
}
