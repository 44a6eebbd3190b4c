/**
 * The worker process: the servers (the configured ones, or the embedded stack when TEMPORAL_ADDRESS /
 * AWS_ENDPOINT_URL_S3 name none), the model, the worker, then running until Ctrl-C (a second Ctrl-C stops at once).
 * The worker's entry point (worker/main.ts) runs it alone; `longrun up` (commands/main-job.ts) runs its demo once the
 * worker is up.
 */
import type { Client } from '@temporalio/client';
import { anotherTerminalHint } from '../config/addresses.ts';
import type { Settings } from '../config/settings.ts';
import type { TemporalTarget } from '../config/temporal.ts';
import { resolveModel } from '../llm/endpoint.ts';
import { startServers } from '../stack/servers.ts';
import { S3BlobStore } from '../storage/s3.ts';
import { startInProcessAgents } from './in-process.ts';
import { activityDeps, WORKER_IDENTITY } from './worker.ts';
import { trailReportTool } from '../activities/demo-tool.ts';
import { ToolRegistry } from '../activities/tools.ts';
import { flushTracing } from '../config/tracing.ts';
import { installRuntime } from './telemetry.ts';
import { describeInFlight, listenForStop, STOP_REPORT_EVERY_MS, STOPPED_AT_ONCE_EXIT_CODE } from './stopping.ts';
import type { StopSignals } from './stopping.ts';

/** The running worker, as what runs beside it sees it. */
export interface ReadyWorker {
  client: Client;
  temporal: TemporalTarget;
  /** The embedded Temporal UI, when the process started the server. */
  uiUrl?: string;
  /** The model is the offline replayed one (no API key): it answers with recorded turns. */
  replayed: boolean;
  /**
   * Work to do when the job stops, while its worker still runs (the demo closes its agent); given
   * {@link STOP_HOOK_MS} before the worker stops anyway.
   */
  onStop(hook: () => Promise<void>): void;
}

/** How long the offline demo's tool takes per call: long enough for `longrun watch` to show each step go by. */
const DEMO_TOOL_DELAY_MS = 1_500;

/** How long the stop hooks of what ran beside the worker may take. */
export const STOP_HOOK_MS = 15_000;

/** Runs the stop hooks, each at most {@link STOP_HOOK_MS}; a failure is said, not thrown (the job is stopping). */
export async function runStopHooks(hooks: (() => Promise<void>)[], log: (line: string) => void): Promise<void> {
  for (const hook of hooks) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_HOOK_MS)));
    try {
      if ((await Promise.race([hook().then(() => 'done' as const), late])) === 'late') {
        log(`[worker] a stop step took over ${STOP_HOOK_MS / 1000} s; stopping without it`);
      }
    } catch (error) {
      log(`[worker] a stop step failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

export interface WorkerProcessOptions {
  settings: Settings;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
  /** Runs once the worker polls (a Ctrl-C meanwhile stops the process without waiting for it). */
  whenReady?: (ready: ReadyWorker) => Promise<unknown>;
  /** Exit once `whenReady` is done instead of running until Ctrl-C. */
  exitWhenDone?: boolean;
}

/** Runs the worker process: the runtime's logger at WARN, and Ctrl-C / SIGTERM (the first stops gracefully, a second
 * at once: worker/stopping.ts) listened to until it ends. */
export async function runWorkerProcess(options: WorkerProcessOptions): Promise<void> {
  // With the Prometheus endpoint when LONGRUN_METRICS_ADDRESS names one. The runtime does not stop the worker on a
  // signal: this process does, after its stop steps (the demo's agent is closed by the worker still running).
  installRuntime(options.settings, undefined, []);
  const stop = listenForStop();
  try {
    await serve(options, stop);
  } finally {
    stop.dispose();
  }
}

/** Runs an entry point's `main`: exit 0 when it is done, 1 with its message when it fails. */
export function runAsEntryPoint(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(`longrun: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}

async function serve(
  { settings, env, log, whenReady, exitWhenDone = false }: WorkerProcessOptions,
  stop: StopSignals,
): Promise<void> {
  // 1. Servers: the configured ones, or the embedded stack (stack/servers.ts decides).
  const servers = await startServers({ settings, env, mode: 'persistent', log });
  const { stack, temporal, s3 } = servers;
  const cleanups: (() => Promise<void>)[] = [
    async () => {
      if (stack && stop.requested) log(`[stack] stopping ${servers.started}`);
      await servers.stop();
    },
  ];
  const cleanup = async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch((error: unknown) => console.error(error));
  };
  let reporting: NodeJS.Timeout | undefined;
  const stopHooks: (() => Promise<void>)[] = [];

  try {
    if (stop.requested) return; // stopped while the servers started
    const store = new S3BlobStore(s3);
    if (!stack?.minio) await store.ensureBucket();
    const uiUrl = stack?.temporal?.uiUrl;
    const codecEndpoint = stack?.temporal?.codecEndpoint;
    log(`[stack] Temporal ${String(temporal.connectionOptions.address)} (namespace ${temporal.namespace})`);
    if (uiUrl)
      log(`[stack] Temporal UI ${uiUrl}${codecEndpoint ? ` (decodes payloads through ${codecEndpoint})` : ''}`);
    log(`[stack] S3 ${s3.endpoint ?? 'from the AWS SDK configuration'}, bucket ${s3.bucket}`);
    if (settings.metricsAddress) log(`[metrics] Prometheus metrics at http://${settings.metricsAddress}/metrics`);
    if (temporal.tracing) {
      log(`[traces] OpenTelemetry spans exported to ${temporal.tracing.url}`);
      cleanups.push(flushTracing); // what is pending goes out before the process ends
    }
    const keys = settings.encryptionKeys;
    if (keys) {
      log(
        `[encryption] on: Temporal payloads and S3 bodies encrypted with key ${keys.newest!.id}` +
          (keys.keys.length > 1
            ? ` (older keys still read: ${keys.keys
                .slice(0, -1)
                .map((k) => k.id)
                .join(', ')})`
            : ''),
      );
    }

    // 2. The model and the worker.
    const model = await resolveModel(env, settings.modelTimeoutMs);
    cleanups.push(() => model.close());
    log(`[model] ${settings.model} via ${model.label}`);
    log(
      model.replayed
        ? '[model] summaries: EXTRACTIVE (replayed model, no summary model): compaction quotes, it does not rewrite'
        : `[model] summaries: ${settings.summaryModel}`,
    );
    const agents = await startInProcessAgents({
      temporal,
      taskQueue: settings.taskQueue,
      identity: WORKER_IDENTITY,
      maxCachedWorkflows: settings.workflowCacheSize,
      deps: activityDeps(settings, {
        store,
        endpoint: model.endpoint,
        headers: { 'x-longrun-worker': WORKER_IDENTITY },
        extractive: model.replayed,
        // Offline, the recorded tool loop's tool (demo/trail-session.jsonl calls it).
        ...(model.replayed ? { tools: new ToolRegistry([trailReportTool({ delayMs: DEMO_TOOL_DELAY_MS })]) } : {}),
      }),
    });
    cleanups.push(() => agents.close());
    log(`[worker] polling task queue ${settings.taskQueue}`);

    // 3. What runs beside the worker (the demo of `longrun up`).
    if (whenReady && !stop.requested) {
      const ready = whenReady({
        client: agents.client,
        temporal,
        ...(uiUrl ? { uiUrl } : {}),
        replayed: model.replayed,
        onStop: (hook) => stopHooks.push(hook),
      });
      ready.catch(() => {}); // left behind when a signal comes first; rethrown below otherwise
      if ((await Promise.race([ready.then(() => 'done' as const), stop.first])) === 'done') await ready;
    }
    if (exitWhenDone && !stop.requested) return;

    if (!stop.requested) {
      log(`\n[worker] running; ${anotherTerminalHint(env)}. Ctrl-C to stop.`);
      await Promise.race([stop.first, agents.running]);
    }
    // Say what stopping waits for, and offer the way out.
    const work = describeInFlight(agents.inFlight());
    log(
      work === 'nothing'
        ? '\n[worker] stopping (no work in flight). Ctrl-C again to stop at once.'
        : `\n[worker] stopping: waiting for ${work} to finish. Ctrl-C again to stop at once (the work in flight ` +
            'then runs again when a worker next starts).',
    );
    stop.onSecond(() => {
      log(
        `[worker] stopping at once: abandoning ${describeInFlight(agents.inFlight())} ` +
          `(Temporal runs it again when a worker next starts)${stack ? `; stopping ${servers.started}` : ''}`,
      );
      void (stack?.stop() ?? Promise.resolve()).catch(() => {}).finally(() => process.exit(STOPPED_AT_ONCE_EXIT_CODE));
    });
    reporting = setInterval(() => {
      const work = agents.inFlight();
      if (work.activities.length > 0 || work.workflowTasks > 0)
        log(`[worker] still waiting for ${describeInFlight(work)}`);
    }, STOP_REPORT_EVERY_MS);
    await runStopHooks(stopHooks, log);
  } finally {
    await cleanup();
    clearInterval(reporting);
  }
}
