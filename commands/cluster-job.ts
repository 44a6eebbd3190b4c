/**
 * `longrun up --cluster`: the main job in cluster mode, what docker-compose.yml runs, here without Docker. The
 * cluster (stack/cluster.ts: PostgreSQL, the Temporal server, its UI, MinIO unless AWS_ENDPOINT_URL_S3 names an S3),
 * persistent under <LONGRUN_DATA_DIR>/cluster, then {@link CLUSTER_WORKERS} worker processes (worker/main.ts, as the
 * Docker image runs it) polling the task queue, each supervised with its log in the data folder, then what runs
 * beside them (the demo) from this process, which runs no worker itself. Ctrl-C stops the workers (each finishes its
 * work in flight, for up to the supervisor's grace period) and then the servers; a second Ctrl-C stops at once.
 */
import { join } from 'node:path';
import { EncryptionCodec } from '../codec/payload-codec.ts';
import { modulePath, SettingsError } from '../config/settings.ts';
import type { Settings } from '../config/settings.ts';
import { anotherTerminalHint } from '../config/addresses.ts';
import { connectClient, loadTemporalTarget, localTemporalTarget } from '../config/temporal.ts';
import { usesReplayedModel } from '../llm/endpoint.ts';
import { startClusterStack } from '../stack/cluster.ts';
import type { ClusterStack } from '../stack/cluster.ts';
import { sizeOfFile, textOfFileFrom } from '../stack/logs.ts';
import { ServerProcess } from '../stack/process.ts';
import { ensureClusterBinaries } from '../stack/setup.ts';
import { serversEnv } from '../stack/worker-process.ts';
import { s3EndpointConfigured, s3TargetFromEnv, S3BlobStore } from '../storage/s3.ts';
import { runStopHooks } from '../worker/process.ts';
import type { ReadyWorker } from '../worker/process.ts';
import { listenForStop, STOPPED_AT_ONCE_EXIT_CODE } from '../worker/stopping.ts';

/** Worker processes the cluster job runs, as compose could scale its `worker` service. */
export const CLUSTER_WORKERS = 2;
const WORKER_ENTRY = modulePath(import.meta.url, '../worker/main');
const WORKER_START_TIMEOUT_MS = 120_000;

export interface ClusterJobOptions {
  settings: Settings;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
  /** Runs once the workers poll (a Ctrl-C meanwhile stops the job without waiting for it). */
  whenReady?: (ready: ReadyWorker) => Promise<unknown>;
  /** Exit once `whenReady` is done instead of running until Ctrl-C. */
  exitWhenDone?: boolean;
}

/**
 * The Prometheus address of worker `index` (1-based) when LONGRUN_METRICS_ADDRESS names one: each worker process
 * serves its own metrics, on the named port and the ones after it.
 */
export function workerMetricsAddress(address: string, index: number): string {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1)) + index - 1;
  if (port > 65_535) {
    throw new SettingsError(
      'LONGRUN_METRICS_ADDRESS',
      `cluster mode serves each of its ${CLUSTER_WORKERS} workers' metrics on the port after the previous one; ` +
        `${address} leaves no room (got port ${port})`,
    );
  }
  return `${address.slice(0, colon)}:${port}`;
}

/** The environment of worker `index`: the cluster's servers, the rest of ours. */
export function clusterWorkerEnv(env: NodeJS.ProcessEnv, servers: NodeJS.ProcessEnv, index: number): NodeJS.ProcessEnv {
  const metrics = env.LONGRUN_METRICS_ADDRESS;
  return {
    ...env,
    ...servers,
    ...(metrics ? { LONGRUN_METRICS_ADDRESS: workerMetricsAddress(metrics, index) } : {}),
  };
}

async function startWorker(index: number, env: NodeJS.ProcessEnv, logPath: string): Promise<ServerProcess> {
  // The log is appended to across starts: only what this start writes counts.
  const from = sizeOfFile(logPath);
  return ServerProcess.start({
    name: `Worker ${index}`,
    command: process.execPath,
    args: [WORKER_ENTRY],
    env,
    logPath,
    startTimeoutMs: WORKER_START_TIMEOUT_MS,
    // The worker says so once it polls (worker/process.ts).
    healthy: () => Promise.resolve(textOfFileFrom(logPath, from).includes('[worker] polling task queue')),
  });
}

export async function runClusterJob(options: ClusterJobOptions): Promise<void> {
  const { settings, env, log } = options;
  const configured = loadTemporalTarget(env);
  if (configured.configured) {
    throw new SettingsError(
      'TEMPORAL_ADDRESS',
      `--cluster starts a Temporal cluster of its own, but TEMPORAL_ADDRESS or a temporal CLI profile names a ` +
        `server (${String(configured.connectionOptions.address)}): unset it, or drop --cluster to run against that server`,
    );
  }
  const stop = listenForStop();
  let stack: ClusterStack | undefined;
  const workers: ServerProcess[] = [];
  let closeClient = async () => {};
  const stopHooks: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    await closeClient();
    await Promise.all(workers.map((worker) => worker.stop()));
    await stack?.stop();
  };
  stop.onSecond(() => {
    log('[cluster] stopping at once: the workers and the servers are killed (work in flight runs again later)');
    for (const worker of workers) if (worker.pid) killGroup(worker.pid);
    void (stack?.stop() ?? Promise.resolve()).catch(() => {}).finally(() => process.exit(STOPPED_AT_ONCE_EXIT_CODE));
  });
  try {
    const withMinio = !s3EndpointConfigured(env);
    const binaries = await ensureClusterBinaries({ cacheDir: settings.cacheDir, minio: withMinio, log });
    if (stop.requested) return;
    const keys = settings.encryptionKeys;
    stack = await startClusterStack({
      mode: 'persistent',
      settings,
      binaries,
      log,
      ...(keys ? { codec: new EncryptionCodec(keys) } : {}),
    });
    if (stop.requested) return;
    const { temporal, minio } = stack;
    const s3 = minio ? { ...minio.target, ...(keys ? { encryption: keys } : {}) } : s3TargetFromEnv(settings, env);
    if (!minio) await new S3BlobStore(s3).ensureBucket();
    log(
      `[stack] Temporal ${temporal.address} (namespace ${temporal.namespace}), ${stack.historyShards} history shards`,
    );
    log(
      `[stack] Temporal UI ${temporal.uiUrl}${temporal.codecEndpoint ? ` (decodes payloads through ${temporal.codecEndpoint})` : ''}`,
    );
    log(`[stack] S3 ${s3.endpoint ?? 'from the AWS SDK configuration'}, bucket ${s3.bucket}`);

    const servers = serversEnv(temporal, s3);
    const started = await Promise.allSettled(
      Array.from({ length: CLUSTER_WORKERS }, (_, i) =>
        startWorker(i + 1, clusterWorkerEnv(env, servers, i + 1), join(stack!.dataDir, 'logs', `worker-${i + 1}.log`)),
      ),
    );
    // Keep whatever did start, so that the cleanup reaches it when another failed.
    for (const result of started) if (result.status === 'fulfilled') workers.push(result.value);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    if (stop.requested) return;
    log(
      `[worker] ${CLUSTER_WORKERS} worker processes polling task queue ${settings.taskQueue} ` +
        `(logs: ${join(stack.dataDir, 'logs', 'worker-<n>.log')})`,
    );

    if (options.whenReady) {
      const target = localTemporalTarget(temporal.address, temporal.namespace, configured);
      const client = await connectClient(target);
      closeClient = () => client.connection.close();
      const ready = options.whenReady({
        client,
        temporal: target,
        uiUrl: temporal.uiUrl,
        replayed: usesReplayedModel(env),
        onStop: (hook) => stopHooks.push(hook),
      });
      ready.catch(() => {}); // left behind when a signal comes first; rethrown below otherwise
      if ((await Promise.race([ready.then(() => 'done' as const), stop.first])) === 'done') await ready;
    }
    if (options.exitWhenDone || stop.requested) return;
    log(`\n[cluster] running; ${anotherTerminalHint(env)}. Ctrl-C to stop.`);
    // The servers and workers are children this process does not wait on (they must not keep it alive once it is
    // done): a timer keeps it running until Ctrl-C, or until a worker ends, which ends the job.
    const keepAlive = setInterval(() => {}, 60_000);
    try {
      const ended = await Promise.race([
        stop.first.then(() => undefined),
        ...workers.map((worker) => worker.exited.then(() => worker)),
      ]);
      if (ended) {
        throw new Error(
          `${ended.name} exited on its own (its log: ${ended.logPath}); stopping the cluster. Start it again with ` +
            '`longrun up --cluster`: the agents continue where they were.',
        );
      }
    } finally {
      clearInterval(keepAlive);
    }
    log(
      '\n[cluster] stopping: the workers finish their work in flight, then the servers. Ctrl-C again to stop at once.',
    );
    await runStopHooks(stopHooks, log);
  } finally {
    await cleanup();
    stop.dispose();
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
