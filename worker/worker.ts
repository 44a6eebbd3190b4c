/**
 * The longrun worker: polls the task queue, runs agent workflows (bundled from workflows/) and their activities.
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import type { WorkerInterceptors, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../activities/index.ts';
import type { ActivityDeps } from '../activities/index.ts';
import type { ToolRegistry } from '../activities/tools.ts';
import type { Settings } from '../config/settings.ts';
import { createOpenAI } from '../llm/openai.ts';
import type { ModelEndpoint } from '../llm/openai.ts';
import type { BlobStore } from '../storage/s3.ts';
import { DEFAULTS, modulePath } from '../config/settings.ts';
import { checkSearchAttributes } from '../config/search-attributes.ts';
import { probeTemporal, TemporalNotAnsweringError } from '../config/temporal.ts';
import { SEARCH_ATTRIBUTE_TYPES } from '../contract/search-attributes.ts';
import type { TemporalTarget } from '../config/temporal.ts';
import { CachedBlobStore } from '../storage/cache.ts';
import { ownAgentOnly } from './own-agent.ts';
import { workerTracing, workflowInterceptorModules } from './telemetry.ts';

export const WORKFLOWS_PATH = modulePath(import.meta.url, '../workflows/index');

/**
 * How a worker process names itself: its identity in Temporal (the UI's pollers, workflow task events) and the
 * `x-longrun-worker` header on its model requests, so a gateway's logs lead back to the process.
 */
export const WORKER_IDENTITY = `longrun-worker-${process.pid}@${hostname()}`;

/**
 * Cached workflows per worker. Each costs a fixed amount plus a multiple of its state (measured with SDK 1.24: see
 * BENCHMARKS.md, The workflow's state), so the size is set explicitly rather than derived from the heap limit (an
 * oversized cache can crash the worker: sdk-typescript #2227). LONGRUN_WORKFLOW_CACHE_SIZE sets it for the main job.
 */
export const DEFAULT_WORKFLOW_CACHE_SIZE = DEFAULTS.workflowCacheSize;

/**
 * Bundles the workflow code once (a few seconds); pass the bundle to several workers to skip re-bundling. With
 * `tracing`, the bundle has the OpenTelemetry workflow interceptors too: a worker whose target traces
 * (OTEL_EXPORTER_OTLP_ENDPOINT) needs such a bundle for the workflow's spans.
 */
export function bundleWorkflows(
  options: { tracing?: boolean; interceptorModules?: string[] } = {},
): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: [
      ...workflowInterceptorModules(options.tracing ?? false),
      ...(options.interceptorModules ?? []),
    ],
    logger: quietBundlerLogger,
  });
}

/** The bundler's own lines (webpack's listing of every module) are for whoever debugs the SDK: warnings and errors only. */
const quietBundlerLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

/**
 * The activities' dependencies as the settings say: the store, the model client on `endpoint` with the settings'
 * headers (and `headers`, which win), the summary model and its window, the tools. `extractive`: no summary model
 * (a replayed model answers with recorded turns, not summaries; the extractive summarizer stands in).
 */
export function activityDeps(
  settings: Settings,
  parts: {
    store: BlobStore;
    endpoint: ModelEndpoint;
    headers?: Record<string, string>;
    tools?: ToolRegistry;
    extractive?: boolean;
  },
): ActivityDeps {
  return {
    store: parts.store,
    openai: createOpenAI({ ...parts.endpoint, headers: { ...settings.modelHeaders, ...parts.headers } }),
    ...(parts.tools ? { tools: parts.tools } : {}),
    ...(parts.extractive ? {} : { summaryModel: settings.summaryModel }),
    ...(settings.summaryWindow ? { summaryWindow: settings.summaryWindow } : {}),
    ...(settings.strictInvariants ? { strictInvariants: true } : {}),
  };
}

export interface AgentWorkerOptions {
  temporal: TemporalTarget;
  taskQueue: string;
  deps: ActivityDeps;
  workflowBundle?: WorkflowBundleWithSourceMap;
  maxCachedWorkflows?: number;
  identity?: string;
  /** Worker interceptors (the in-process agents use one to tell which activities are in flight). */
  interceptors?: WorkerInterceptors;
  /**
   * Worker Deployment Versioning (LONGRUN_DEPLOYMENT): this worker is the version of `deployment` named by its build
   * id, and every agent run it begins is pinned there. Absent: an unversioned worker.
   */
  deployment?: string;
}

export async function createAgentWorker(
  options: AgentWorkerOptions,
): Promise<{ worker: Worker; connection: NativeConnection }> {
  // A server that does not answer is an error naming what pointed there, not the Rust transport's text.
  await probeTemporal(options.temporal);
  const connection = await NativeConnection.connect(options.temporal.connectionOptions).catch((error: unknown) => {
    throw new TemporalNotAnsweringError(options.temporal, nativeFailure(error));
  });
  // Traces on (the target's tracing): spans of each activity and, through a sink, of the workflow.
  const tracing = options.temporal.tracing ? workerTracing(options.temporal.tracing) : undefined;
  try {
    // A namespace without longrun's search attributes would fail every workflow task that upserts one: say so now.
    const address = String(options.temporal.connectionOptions.address ?? 'localhost:7233');
    const unchecked = await checkSearchAttributes(connection, options.temporal.namespace, address);
    if (unchecked !== undefined) {
      console.warn(
        `[worker] the search attributes of namespace ${options.temporal.namespace} could not be listed (${unchecked}): ` +
          `not checked; the agent workflows upsert ${Object.keys(SEARCH_ATTRIBUTE_TYPES).join(', ')} ` +
          '(docs/operations.md)',
      );
    }
    if (options.deployment !== undefined) await checkVersioningServer(connection, options.temporal);
    // Bundled here rather than by Worker.create, which prints the bundler's module listing at INFO.
    const workflowBundle =
      options.workflowBundle ??
      (await bundleWorkflows({
        tracing: tracing !== undefined,
        ...(options.interceptors?.workflowModules ? { interceptorModules: options.interceptors.workflowModules } : {}),
      }));
    const worker = await Worker.create({
      connection,
      namespace: options.temporal.namespace,
      taskQueue: options.taskQueue,
      // Encryption on: every payload the worker sends is encrypted, every one it receives decrypted.
      ...(options.temporal.dataConverter ? { dataConverter: options.temporal.dataConverter } : {}),
      // The bundle has its workflow interceptor modules built in (bundleWorkflows).
      workflowBundle,
      ...versioning(workflowBundle, options.deployment),
      ...(tracing ? { sinks: tracing.sinks } : {}),
      // Bodies are read again every turn; a worker-side cache keeps the recent ones.
      activities: createActivities({ ...options.deps, store: new CachedBlobStore(options.deps.store) }),
      maxCachedWorkflows: options.maxCachedWorkflows ?? DEFAULT_WORKFLOW_CACHE_SIZE,
      // An interrupt cancels the activities in flight; each learns it from the answer to its next heartbeat.
      maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
      ...(options.identity ? { identity: options.identity } : {}),
      // Each activity reads and writes only the objects of the agent whose workflow scheduled it.
      interceptors: {
        ...options.interceptors,
        activity: [...(tracing ? [tracing.activity] : []), ownAgentOnly, ...(options.interceptors?.activity ?? [])],
        workflowModules: [],
      },
    });
    return { worker, connection };
  } catch (error) {
    await connection.close();
    throw error;
  }
}

/**
 * The worker's build id: `longrun+` and the first 12 hex digits of the SHA-256 of its workflow bundle, so a build id
 * still names the workflow code. The SDK's default (its package, version and the bundle's whole SHA-256, about 90
 * characters) is recorded in every workflow task and activity start: a third of a long agent's history events.
 * Unversioned, the build id only names the code; with a deployment it is the worker's version (see `versioning`).
 */
export function buildIdOf(bundle: { code: string }): string {
  return `longrun+${createHash('sha256').update(bundle.code).digest('hex').slice(0, 12)}`;
}

/**
 * How the worker names its code to Temporal: unversioned, its build id only; in a deployment, the version that build
 * id names, with every run pinned to it (a run replays only on the code that began it; the next run, after
 * continue-as-new, begins on the deployment's current version: workflows/hand-over.ts `continueAgent`).
 */
function versioning(bundle: { code: string }, deployment: string | undefined) {
  const buildId = buildIdOf(bundle);
  if (deployment === undefined) return { buildId };
  return {
    workerDeploymentOptions: {
      useWorkerVersioning: true as const,
      version: { deploymentName: deployment, buildId },
      defaultVersioningBehavior: 'PINNED' as const,
    },
  };
}

/** The first Temporal Server release on which a pinned run moves to the current version at continue-as-new. */
export const VERSIONING_SERVER = [1, 30] as const;

/**
 * Whether a server of `serverVersion` (GetSystemInfo's, e.g. "1.29.1") moves a pinned run at continue-as-new:
 * undefined when the version does not read as major.minor (a hosted service may report its own).
 */
export function versioningServer(serverVersion: string | undefined): boolean | undefined {
  const match = /^v?(\d+)\.(\d+)/.exec(serverVersion ?? '');
  if (!match) return undefined;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > VERSIONING_SERVER[0] || (major === VERSIONING_SERVER[0] && minor >= VERSIONING_SERVER[1]);
}

/**
 * Refuses a deployment on a server older than {@link VERSIONING_SERVER}: Server 1.29 keeps a pinned run's next run on
 * the old version (measured: docs/operations.md), so no agent could ever move to a new release. A version it cannot
 * read is said, not refused.
 */
async function checkVersioningServer(connection: NativeConnection, temporal: TemporalTarget): Promise<void> {
  const { serverVersion } = await connection.workflowService.getSystemInfo({});
  const supported = versioningServer(serverVersion);
  if (supported) return;
  const where = String(temporal.connectionOptions.address ?? 'the server');
  if (supported === undefined) {
    console.warn(
      `[worker] LONGRUN_DEPLOYMENT: ${where} reports server version ${JSON.stringify(serverVersion ?? '')}; ` +
        `agents move to a new release at continue-as-new only on Temporal Server ${VERSIONING_SERVER.join('.')} or later`,
    );
    return;
  }
  throw new Error(
    `LONGRUN_DEPLOYMENT needs Temporal Server ${VERSIONING_SERVER.join('.')} or later; ${where} runs ${serverVersion}: ` +
      'there a pinned agent would never move to a new release. Leave LONGRUN_DEPLOYMENT unset (docs/operations.md).',
  );
}

/**
 * The longest the worker holds an activity's heartbeat before sending it (the SDK's default: 80% of the heartbeat
 * timeout, 8 s for a model call): a cancellation is delivered in the answer to a heartbeat, so an interrupt reaches
 * the model call or tool in flight within about this.
 */
export const HEARTBEAT_THROTTLE = '1 second';

/** Why the worker's (Rust) connection failed, in words of its own: "connection refused", or "it failed". */
function nativeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/ConnectionRefused|connection refused/i.test(message)) return 'connection refused';
  if (/timed? ?out|deadline/i.test(message)) return 'no answer in time';
  if (/tls|certificate/i.test(message)) return 'the TLS handshake failed (check TEMPORAL_TLS_* or the profile)';
  return 'the connection failed';
}
