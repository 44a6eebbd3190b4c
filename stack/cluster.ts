/**
 * Cluster mode: the production shape of docker-compose.yml, run here without Docker, from the same pinned versions
 * and the same configuration files: PostgreSQL (stack/postgres.ts), its two databases set up by the Temporal SQL
 * tool (schemas compiled into the tool), the Temporal server 1.29.1 configured by deploy/temporal-server.yaml with
 * deploy/temporal-dynamicconfig.yaml and several history shards, the namespace and longrun's search attributes
 * registered as compose's temporal-setup does, the Temporal UI server 2.42.1 with the temporalio/ui image's own
 * configuration, and MinIO. Everything on loopback, every server supervised (stack/process.ts), logs in the data
 * folder's `logs/`. `longrun up --cluster` (commands/cluster-job.ts) adds two worker processes and the demo. What the
 * servers are handed is stack/cluster-config.ts's; how each is set up and started, stack/cluster-servers.ts's.
 *
 *   startClusterStack({
 *     mode: 'persistent' | 'ephemeral',  // persistent: <LONGRUN_DATA_DIR>/cluster, the standard ports (LONGRUN_*_PORT);
 *                                        // ephemeral: a temporary folder removed on stop, free ports
 *     settings: Settings,
 *     binaries: ClusterBinaries,         // ensureClusterBinaries() in stack/setup.ts finds or builds them
 *     historyShards?: number,            // default settings.historyShards (LONGRUN_HISTORY_SHARDS, 4)
 *     dynamicConfig?: DynamicConfig,     // values on top of deploy/temporal-dynamicconfig.yaml
 *     namespace?: string,                // default 'default'
 *     codec?: PayloadCodec,              // encryption on: the UI decodes through a codec server in this process
 *     log?: (line: string) => void,
 *   }): Promise<ClusterStack>            // EmbeddedStack's shape (temporal.address, namespace, uiUrl, minio.target,
 *                                        // dataDir, stop()), plus postgres, processes and restart()
 *
 * Ports: the frontend, the UI and MinIO take the standard ports when persistent; PostgreSQL and the server's
 * internal services take free ports at every start. Temporal keeps each service's membership port in a SMALLINT
 * column, so those are drawn below 32768 (the OS hands out free ports above it).
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { PayloadCodec } from '@temporalio/common';
import type { CodecServer } from '../codec/server.ts';
import type { Settings } from '../config/settings.ts';
import type { S3Target } from '../storage/s3.ts';
import {
  DYNAMIC_CONFIG_FILE,
  dynamicConfigWith,
  SERVER_CONFIG_ENV,
  SERVER_CONFIG_FILE,
  shardMismatch,
  temporalServerEnv,
  UI_BASE_CONFIG,
  uiServerEnv,
} from './cluster-config.ts';
import type { ClusterPorts } from './cluster-config.ts';
import { setUpNamespace, setUpSchema, startTemporalServer, startUiServer } from './cluster-servers.ts';
import {
  assertStandardPortsFree,
  START_ATTEMPTS,
  minioOptionsIn,
  retryPortRaces,
  startUiCodecServer,
} from './index.ts';
import type { EmbeddedStack } from './index.ts';
import { startMinio } from './minio.ts';
import type { RunningMinio } from './minio.ts';
import { freePorts, freePortsBetween, LOOPBACK } from './ports.ts';
import { postgresRunAs, startPostgres } from './postgres.ts';
import type { PostgresBinaries, RunningPostgres } from './postgres.ts';
import type { ServerProcess } from './process.ts';
import type { DynamicConfig } from './temporal.ts';

/** Highest port Temporal can keep as a membership port (PostgreSQL SMALLINT). */
export const MAX_MEMBERSHIP_PORT = 32_767;
const MEMBERSHIP_PORT_FLOOR = 20_000;

export interface ClusterBinaries {
  temporalServer: string;
  sqlTool: string;
  uiServer: string;
  /** Absent: no MinIO is started (S3 is configured elsewhere). */
  minio?: string;
  postgres: PostgresBinaries;
}

export interface ClusterStackOptions {
  mode: 'persistent' | 'ephemeral';
  settings: Settings;
  binaries: ClusterBinaries;
  historyShards?: number;
  dynamicConfig?: DynamicConfig;
  namespace?: string;
  codec?: PayloadCodec;
  log?: (line: string) => void;
}

export type ClusterServer = 'postgres' | 'temporal' | 'ui' | 'minio';

export interface ClusterStack extends EmbeddedStack {
  temporal: NonNullable<EmbeddedStack['temporal']>;
  postgres: { port: number; dataDir: string };
  historyShards: number;
  /** The running server processes (a test may kill one and {@link restart} it). */
  processes: Readonly<Record<ClusterServer, ServerProcess | undefined>>;
  /** Starts a server again on the same ports, configuration and data (after it died or was killed). */
  restart(server: 'temporal' | 'minio'): Promise<void>;
}

export async function startClusterStack(options: ClusterStackOptions): Promise<ClusterStack> {
  if (options.mode === 'persistent') return startOnce(options);
  return retryPortRaces(() => startOnce(options), START_ATTEMPTS, options.log ?? (() => {}));
}

async function clusterPorts(settings: Settings, ephemeral: boolean): Promise<ClusterPorts> {
  const [postgres, frontendHttp, history, matching, worker, ...standard] = await freePorts(ephemeral ? 9 : 5);
  const [frontendMembership, historyMembership, matchingMembership, workerMembership] = await freePortsBetween(
    MEMBERSHIP_PORT_FLOOR,
    MAX_MEMBERSHIP_PORT,
    4,
  );
  const [frontend, ui, minio, minioConsole] = ephemeral
    ? standard
    : [settings.ports.temporal, settings.ports.temporalUi, settings.ports.minio, settings.ports.minioConsole];
  return {
    postgres: postgres!,
    frontend: frontend!,
    frontendHttp: frontendHttp!,
    frontendMembership: frontendMembership!,
    history: history!,
    historyMembership: historyMembership!,
    matching: matching!,
    matchingMembership: matchingMembership!,
    worker: worker!,
    workerMembership: workerMembership!,
    ui: ui!,
    minio: minio!,
    minioConsole: minioConsole!,
  };
}

/** Makes `link` a symbolic link to `target` (replacing what is there). */
function linkTo(target: string, link: string): void {
  mkdirSync(dirname(link), { recursive: true });
  rmSync(link, { force: true });
  symlinkSync(target, link);
}

/** The history shard count of the cluster in `dataDir`, recorded when its database was created. */
function checkShards(dataDir: string, asked: number, fresh: boolean): void {
  const file = join(dataDir, 'history-shards');
  if (!fresh && existsSync(file)) {
    const created = Number(readFileSync(file, 'utf8').trim());
    if (created !== asked) throw shardMismatch(asked, created, dataDir);
  }
  writeFileSync(file, `${asked}\n`);
}

async function startOnce(options: ClusterStackOptions): Promise<ClusterStack> {
  const { settings, binaries } = options;
  const log = options.log ?? (() => {});
  const ephemeral = options.mode === 'ephemeral';
  const historyShards = options.historyShards ?? settings.historyShards;
  const namespace = options.namespace ?? 'default';
  const runAs = postgresRunAs();
  let dataDir: string;
  if (ephemeral) {
    dataDir = mkdtempSync(join(tmpdir(), 'longrun-cluster-'));
    chmodSync(dataDir, 0o755); // PostgreSQL's account (when we are root) must reach its folder inside
  } else {
    dataDir = join(settings.dataDir, 'cluster');
    mkdirSync(dataDir, { recursive: true });
  }
  const ports = await clusterPorts(settings, ephemeral);
  if (!ephemeral) {
    await assertStandardPortsFree(settings, {
      temporal: true,
      minio: Boolean(binaries.minio),
      codec: Boolean(options.codec),
    });
  }
  const logs = join(dataDir, 'logs');
  const postgresDir = join(dataDir, 'postgres');
  const fresh = !existsSync(join(postgresDir, 'PG_VERSION'));
  checkShards(dataDir, historyShards, fresh);

  // The server reads the shared files through links in the data folder (so its command line names the folder).
  const serverRoot = join(dataDir, 'temporal');
  linkTo(SERVER_CONFIG_FILE, join(serverRoot, 'config', `${SERVER_CONFIG_ENV}.yaml`));
  let dynamicConfigFile = DYNAMIC_CONFIG_FILE;
  if (options.dynamicConfig && Object.keys(options.dynamicConfig).length > 0) {
    dynamicConfigFile = join(serverRoot, 'dynamicconfig.yaml');
    writeFileSync(
      dynamicConfigFile,
      dynamicConfigWith(readFileSync(DYNAMIC_CONFIG_FILE, 'utf8'), options.dynamicConfig),
    );
  }
  const uiRoot = join(dataDir, 'ui');
  linkTo(join(dirname(binaries.uiServer), 'config', 'docker.yaml'), join(uiRoot, 'config', 'docker.yaml'));
  writeFileSync(join(uiRoot, 'config', 'base.yaml'), UI_BASE_CONFIG);

  const serverEnv = temporalServerEnv({ ports, historyShards, dynamicConfigFile });
  const address = `${LOOPBACK}:${ports.frontend}`;
  const uiUrl = `http://${LOOPBACK}:${ports.ui}`;
  const minioOptions = binaries.minio
    ? minioOptionsIn(dataDir, {
        binary: binaries.minio,
        port: ports.minio,
        consolePort: ports.minioConsole,
        bucket: settings.bucket,
      })
    : undefined;

  const running: { -readonly [K in ClusterServer]: ServerProcess | undefined } = {
    postgres: undefined,
    temporal: undefined,
    ui: undefined,
    minio: undefined,
  };
  let minio: RunningMinio | undefined;
  let postgres: RunningPostgres | undefined;
  let codecServer: CodecServer | undefined;
  const stop = async () => {
    // Clients of PostgreSQL first, then PostgreSQL.
    await Promise.all([running.ui?.stop(), codecServer?.close(), running.minio?.stop()]);
    await running.temporal?.stop();
    await running.postgres?.stop();
    if (ephemeral) rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    const started = Date.now();
    log(
      `[stack] starting the cluster: PostgreSQL, Temporal server (${historyShards} history shards), Temporal UI` +
        `${binaries.minio ? ', MinIO' : ''} (data and logs: ${dataDir})`,
    );
    const [postgresResult, minioResult] = await Promise.allSettled([
      startPostgres(
        {
          binaries: binaries.postgres,
          dataDir: postgresDir,
          port: ports.postgres,
          logPath: join(logs, 'postgres.log'),
          runAs,
        },
        log,
      ),
      minioOptions ? startMinio(minioOptions) : undefined,
    ]);
    if (postgresResult.status === 'fulfilled') running.postgres = (postgres = postgresResult.value).process;
    if (minioResult.status === 'fulfilled' && minioResult.value) running.minio = (minio = minioResult.value).process;
    if (postgresResult.status === 'rejected') throw postgresResult.reason;
    if (minioResult.status === 'rejected') throw minioResult.reason;

    await setUpSchema(binaries.sqlTool, ports.postgres, join(logs, 'schema.log'));
    running.temporal = await startTemporalServer(
      binaries.temporalServer,
      serverRoot,
      serverEnv,
      join(logs, 'temporal-server.log'),
    );
    await setUpNamespace(address, namespace, log);
    if (options.codec) codecServer = await startUiCodecServer(options.codec, namespace, ports.ui, settings, ephemeral);
    running.ui = await startUiServer(
      binaries.uiServer,
      uiRoot,
      uiServerEnv({
        temporalAddress: address,
        port: ports.ui,
        namespace,
        ...(codecServer ? { codecEndpoint: codecServer.url } : {}),
      }),
      join(logs, 'temporal-ui.log'),
    );
    log(`[stack] cluster up in ${Date.now() - started} ms (PostgreSQL on ${LOOPBACK}:${ports.postgres})`);
  } catch (error) {
    await stop();
    throw error;
  }

  const minioTarget: S3Target | undefined = minio?.target;
  return {
    temporal: { address, namespace, uiUrl, ...(codecServer ? { codecEndpoint: codecServer.url } : {}) },
    ...(minio && minioTarget
      ? { minio: { endpoint: minio.endpoint, consoleUrl: minio.consoleUrl, target: minioTarget } }
      : {}),
    postgres: { port: postgres!.port, dataDir: postgresDir },
    historyShards,
    dataDir,
    processes: running,
    restart: async (server) => {
      if (server === 'temporal') {
        await running.temporal?.stop();
        running.temporal = await startTemporalServer(
          binaries.temporalServer,
          serverRoot,
          serverEnv,
          join(logs, 'temporal-server.log'),
        );
      } else {
        if (!minioOptions) throw new Error('this cluster runs no MinIO');
        await running.minio?.stop();
        running.minio = (await startMinio(minioOptions)).process;
      }
    },
    stop,
  };
}
