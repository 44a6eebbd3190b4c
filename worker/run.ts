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
import { chooseS3 } from '../config/addresses.ts';
import { loadSettings, SettingsError } from '../config/settings.ts';
import type { Env } from '../config/settings.ts';
import { loadTemporalTarget } from '../config/temporal.ts';
import { flushTracing } from '../config/tracing.ts';
import { S3BlobStore, s3TargetFromEnv } from '../storage/s3.ts';
import { installRuntime } from './telemetry.ts';
import { activityDeps, createAgentWorker, WORKER_IDENTITY } from './worker.ts';

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

/** The openai package's own default endpoint, named in the start line when neither option nor variable sets one. */
const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * The model endpoint from the options, else the openai package's variables (read from `env`, which may not be
 * process.env). No key at all is a {@link SettingsError} naming both places, before anything connects: the openai
 * package would throw its own error, with a stack, at the worker's start.
 */
function modelEndpoint(model: RunAgentWorkerOptions['model'], env: Env): { baseURL: string; apiKey: string } {
  const baseURL = model?.baseURL || env.OPENAI_BASE_URL || OPENAI_DEFAULT_BASE_URL;
  const apiKey = model?.apiKey || env.OPENAI_API_KEY;
  if (!apiKey) {
    throw new SettingsError(
      'OPENAI_API_KEY',
      `runAgentWorker has no API key for the model endpoint ${baseURL}: pass model.apiKey (it was ` +
        `${model?.apiKey === undefined ? 'undefined' : 'empty'}) or set OPENAI_API_KEY; a server that takes no key ` +
        'still needs a non-empty value',
    );
  }
  return { baseURL, apiKey };
}

export async function runAgentWorker(options: RunAgentWorkerOptions = {}): Promise<void> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => console.log(line));
  const settings = loadSettings(env);
  const model = modelEndpoint(options.model, env);
  if (settings.metricsAddress) installRuntime(settings);
  const temporal = loadTemporalTarget(env);
  const s3 = s3TargetFromEnv(settings, env);
  const store = new S3BlobStore(s3);
  await store.ensureBucket();
  const { worker, connection } = await createAgentWorker({
    temporal,
    taskQueue: settings.taskQueue,
    maxCachedWorkflows: settings.workflowCacheSize,
    identity: WORKER_IDENTITY,
    ...(settings.deployment !== undefined ? { deployment: settings.deployment } : {}),
    deps: activityDeps(settings, {
      store,
      endpoint: { baseURL: model.baseURL, apiKey: model.apiKey, timeoutMs: settings.modelTimeoutMs },
      headers: { ...options.model?.headers, 'x-longrun-worker': WORKER_IDENTITY },
      tools: new ToolRegistry(options.tools),
    }),
  });
  const address = String(temporal.connectionOptions.address ?? 'localhost:7233');
  const s3Endpoint = chooseS3(env, settings.ports.minio).address; // the same lookup s3TargetFromEnv made
  if (settings.metricsAddress) log(`[metrics] Prometheus metrics at http://${settings.metricsAddress}/metrics`);
  if (temporal.tracing) log(`[traces] OpenTelemetry spans exported to ${temporal.tracing.url}`);
  log(
    `[worker] polling task queue ${settings.taskQueue} as ${WORKER_IDENTITY}: Temporal ${address} (namespace ` +
      `${temporal.namespace}), S3 ${s3Endpoint} (bucket ${s3.bucket}), model endpoint ${model.baseURL}`,
  );
  try {
    await worker.run();
  } finally {
    await connection.close();
    await flushTracing();
  }
}
