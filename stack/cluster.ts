/**
 * Cluster mode: the production shape of docker-compose.yml, run here without Docker, from the same pinned versions
 * and the same configuration files: PostgreSQL (stack/postgres.ts), its two databases set up by the Temporal SQL
 * tool (schemas compiled into the tool), the Temporal server 1.29.1 configured by deploy/temporal-server.yaml with
 * deploy/temporal-dynamicconfig.yaml and several history shards, the namespace and longrun's search attributes
 * registered as compose's temporal-setup does, the Temporal UI server 2.42.1 with the temporalio/ui image's own
 * configuration, and MinIO. Everything on loopback, every server supervised (stack/process.ts), logs in the data
 * folder's `logs/`. `longrun up --cluster` (commands/cluster-job.ts) adds two worker processes and the demo.
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
import { execFile } from 'node:child_process';
import {
  chmodSync,
  createWriteStream,
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
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time.js';
import protos from '@temporalio/proto';
import type { CodecServer } from '../codec/server.ts';
import { PROJECT_ROOT, SettingsError } from '../config/settings.ts';
import type { Settings } from '../config/settings.ts';
import { SEARCH_ATTRIBUTE_TYPES } from '../contract/search-attributes.ts';
import type { S3Target } from '../storage/s3.ts';
import {
  assertStandardPortsFree,
  EPHEMERAL_START_ATTEMPTS,
  minioOptionsIn,
  retryPortRaces,
  startUiCodecServer,
} from './index.ts';
import type { EmbeddedStack } from './index.ts';
import { tailOfText } from './logs.ts';
import { startMinio } from './minio.ts';
import type { RunningMinio } from './minio.ts';
import { freePorts, freePortsBetween, LOOPBACK } from './ports.ts';
import { postgresRunAs, startPostgres, TEMPORAL_DB_PASSWORD, TEMPORAL_DB_USER } from './postgres.ts';
import type { PostgresBinaries, RunningPostgres } from './postgres.ts';
import { ServerProcess } from './process.ts';
import type { DynamicConfig } from './temporal.ts';

/** The files cluster mode shares with docker-compose.yml. */
export const SERVER_CONFIG_FILE = join(PROJECT_ROOT, 'deploy', 'temporal-server.yaml');
export const DYNAMIC_CONFIG_FILE = join(PROJECT_ROOT, 'deploy', 'temporal-dynamicconfig.yaml');
/** The server's `--env`: the name of its configuration file without `.yaml`. */
const SERVER_CONFIG_ENV = 'temporal-server';

/** Retention of the namespace's closed workflows, as compose's temporal-setup registers it (`--retention 7d`). */
export const NAMESPACE_RETENTION_DAYS = 7;

/**
 * How often each server service re-reads namespaces (the server's `system.namespaceCacheRefreshInterval`, 2 s by
 * default): a namespace or search attribute registered now is known to every service after one interval.
 */
const NAMESPACE_REFRESH_MS = 2_000;

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

export interface ClusterPorts {
  postgres: number;
  frontend: number;
  frontendHttp: number;
  frontendMembership: number;
  history: number;
  historyMembership: number;
  matching: number;
  matchingMembership: number;
  worker: number;
  workerMembership: number;
  ui: number;
  minio: number;
  minioConsole: number;
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

/** The Temporal server's environment: what deploy/temporal-server.yaml reads (see its header). */
export function temporalServerEnv(options: {
  ports: ClusterPorts;
  historyShards: number;
  dynamicConfigFile: string;
}): Record<string, string> {
  const { ports } = options;
  return {
    POSTGRES_SEEDS: LOOPBACK,
    DB_PORT: String(ports.postgres),
    POSTGRES_USER: TEMPORAL_DB_USER,
    POSTGRES_PWD: TEMPORAL_DB_PASSWORD,
    NUM_HISTORY_SHARDS: String(options.historyShards),
    LOG_LEVEL: 'warn',
    BIND_ON_IP: LOOPBACK,
    TEMPORAL_BROADCAST_ADDRESS: LOOPBACK,
    DYNAMIC_CONFIG_FILE_PATH: options.dynamicConfigFile,
    FRONTEND_GRPC_PORT: String(ports.frontend),
    FRONTEND_HTTP_PORT: String(ports.frontendHttp),
    FRONTEND_MEMBERSHIP_PORT: String(ports.frontendMembership),
    HISTORY_GRPC_PORT: String(ports.history),
    HISTORY_MEMBERSHIP_PORT: String(ports.historyMembership),
    MATCHING_GRPC_PORT: String(ports.matching),
    MATCHING_MEMBERSHIP_PORT: String(ports.matchingMembership),
    WORKER_GRPC_PORT: String(ports.worker),
    WORKER_MEMBERSHIP_PORT: String(ports.workerMembership),
  };
}

/** The server's command line: its configuration from `<root>/config/temporal-server.yaml`, no authorizer. */
export function temporalServerArgs(root: string): string[] {
  return ['--root', root, '--config', 'config', '--env', SERVER_CONFIG_ENV, '--allow-no-auth', 'start'];
}

/** The two databases and their schemas, as the SQL tool names them (the schemas are compiled into the tool). */
export const DATABASES = [
  { database: 'temporal', schema: 'postgresql/v12/temporal' },
  { database: 'temporal_visibility', schema: 'postgresql/v12/visibility' },
] as const;

/**
 * The SQL tool's runs that create and update both databases, in order. Each is idempotent: on a database already
 * set up, create and setup change nothing and update applies only the versions it lacks.
 */
export function schemaCommands(postgresPort: number): string[][] {
  const connection = ['--plugin', 'postgres12', '--ep', LOOPBACK, '-p', String(postgresPort)];
  const login = ['-u', TEMPORAL_DB_USER, '--pw', TEMPORAL_DB_PASSWORD];
  return DATABASES.flatMap(({ database, schema }) => {
    const on = [...connection, ...login, '--db', database];
    return [
      [...on, 'create-database'],
      [...on, 'setup-schema', '-v', '0.0'],
      [...on, 'update-schema', '--schema-name', schema],
    ];
  });
}

/** The UI server's environment: the variables of the image's `config/docker.yaml`, as compose sets them. */
export function uiServerEnv(options: {
  temporalAddress: string;
  port: number;
  namespace: string;
  codecEndpoint?: string;
}): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: options.temporalAddress,
    TEMPORAL_UI_PORT: String(options.port),
    TEMPORAL_DEFAULT_NAMESPACE: options.namespace,
    ...(options.codecEndpoint ? { TEMPORAL_CODEC_ENDPOINT: options.codecEndpoint } : {}),
  };
}

/**
 * What cluster mode adds to the image's UI configuration, as `base.yaml` (read before `docker.yaml`, which does not
 * set it): listen on loopback only. In a container the UI listens on every interface.
 */
export const UI_BASE_CONFIG = `host: ${LOOPBACK}\n`;

/** The UI server's command line: the image's configuration (`--env docker`) from `<root>/config/`. */
export function uiServerArgs(root: string): string[] {
  return ['--root', root, '--config', 'config', '--env', 'docker', 'start'];
}

/**
 * The dynamic config file for `overrides` on top of the shared one: the shared file's text with the entries of the
 * overridden keys removed, then one entry per override (each a value with no constraint: it applies everywhere).
 */
export function dynamicConfigWith(shared: string, overrides: DynamicConfig): string {
  const overridden = new Set(Object.keys(overrides));
  let skipping = false;
  const kept = shared.split('\n').filter((line) => {
    const key = /^([^\s#][^:]*):/.exec(line)?.[1];
    if (key !== undefined) skipping = overridden.has(key);
    else if (/^\S/.test(line)) skipping = false; // a comment at the top level ends the entry before it
    return !skipping;
  });
  const added = Object.entries(overrides).map(([key, value]) => `${key}:\n  - value: ${JSON.stringify(value)}`);
  return [
    `# ${DYNAMIC_CONFIG_FILE} with values on top (written by longrun's cluster mode, stack/cluster.ts)`,
    kept.join('\n').trimEnd(),
    ...added,
    '',
  ].join('\n');
}

/** Thrown when the history shard count asked for differs from the one the cluster's database was created with. */
export function shardMismatch(asked: number, created: number, dataDir: string): SettingsError {
  return new SettingsError(
    'LONGRUN_HISTORY_SHARDS',
    `is ${asked}, but the cluster in ${dataDir} was created with ${created} history shards, and a Temporal cluster's ` +
      `shard count cannot change: set it to ${created}, or remove ${dataDir} to start a new cluster`,
  );
}

export async function startClusterStack(options: ClusterStackOptions): Promise<ClusterStack> {
  if (options.mode === 'persistent') return startOnce(options);
  return retryPortRaces(() => startOnce(options), EPHEMERAL_START_ATTEMPTS, options.log ?? (() => {}));
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

async function setUpSchema(sqlTool: string, port: number, logPath: string): Promise<void> {
  const log = createWriteStream(logPath, { flags: 'a' });
  try {
    for (const args of schemaCommands(port)) {
      try {
        const { stdout, stderr } = await promisify(execFile)(sqlTool, args, { timeout: 120_000 });
        log.write(`$ temporal-sql-tool ${args.join(' ')}\n${stdout}${stderr}`);
      } catch (error) {
        const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
        throw new Error(
          `The Temporal SQL tool failed to set up the databases (temporal-sql-tool ${args.join(' ')}):\n` +
            tailOfText(`${stdout}${stderr}`, 15),
          { cause: error },
        );
      }
    }
  } finally {
    await new Promise<void>((done) => log.end(done));
  }
}

const START_TIMEOUT_MS = 90_000;
/** gRPC status codes the namespace setup meets. */
const ALREADY_EXISTS = 6;
const SETUP_TIMEOUT_MS = 60_000;

async function startTemporalServer(binary: string, root: string, env: Record<string, string>, logPath: string) {
  const address = `${LOOPBACK}:${env.FRONTEND_GRPC_PORT}`;
  return ServerProcess.start({
    name: 'Temporal server',
    command: binary,
    args: temporalServerArgs(root),
    env: { ...process.env, ...env },
    logPath,
    startTimeoutMs: START_TIMEOUT_MS,
    healthy: async () => {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        const { status } = await connection.healthService.check({
          service: 'temporal.api.workflowservice.v1.WorkflowService',
        });
        return status === protos.grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING;
      } finally {
        await connection.close();
      }
    },
  });
}

const INDEXED_TYPES = {
  Int: protos.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Keyword: protos.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Datetime: protos.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
} as const;

/** A visibility query that names every attribute (the frontend refuses it until it knows them all). */
export function queryNaming(attributes: Readonly<Record<string, 'Int' | 'Keyword' | 'Datetime'>>): string {
  const sample = { Int: '0', Keyword: '""', Datetime: '"2000-01-01T00:00:00Z"' } as const;
  return Object.entries(attributes)
    .map(([name, type]) => `${name} = ${sample[type]}`)
    .join(' AND ');
}

/**
 * The namespace (7 days' retention) and longrun's search attributes, as compose's temporal-setup registers them;
 * waits until they can be used (a service knows them after its next namespace refresh).
 */
export async function setUpNamespace(address: string, namespace: string, log: (line: string) => void): Promise<void> {
  const connection = await Connection.connect({ address });
  const deadline = Date.now() + SETUP_TIMEOUT_MS;
  // Right after the server starts, or a registration, a service may not know the namespace yet: ask again.
  const retried = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        return await call();
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`${what}: ${(error as Error).message}`, { cause: error });
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };
  try {
    let registered = false;
    await retried(`registering namespace ${namespace}`, async () => {
      try {
        await connection.workflowService.registerNamespace({
          namespace,
          workflowExecutionRetentionPeriod: msToTs(`${NAMESPACE_RETENTION_DAYS}d`),
        });
        registered = true;
      } catch (error) {
        if ((error as { code?: number }).code !== ALREADY_EXISTS) throw error;
      }
    });
    const known = await retried('listing search attributes', () =>
      connection.operatorService.listSearchAttributes({ namespace }),
    );
    const missing = Object.entries(SEARCH_ATTRIBUTE_TYPES).filter(([name]) => !(name in known.customAttributes));
    if (missing.length > 0) {
      await retried('adding search attributes', () =>
        connection.operatorService.addSearchAttributes({
          namespace,
          searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, INDEXED_TYPES[type]])),
        }),
      );
    }
    if (registered || missing.length > 0) {
      log(
        `[stack] registered ${[registered && `namespace ${namespace}`, missing.length > 0 && `${missing.length} search attributes`].filter(Boolean).join(' and ')}`,
      );
      const query = queryNaming(SEARCH_ATTRIBUTE_TYPES);
      await retried('waiting for the search attributes', () =>
        connection.workflowService.countWorkflowExecutions({ namespace, query }),
      );
      // The frontend knows them; the history and matching services do after their next refresh.
      await new Promise((resolve) => setTimeout(resolve, NAMESPACE_REFRESH_MS + 500));
    }
  } finally {
    await connection.close();
  }
}

async function startUiServer(binary: string, root: string, env: Record<string, string>, logPath: string) {
  const url = `http://${LOOPBACK}:${env.TEMPORAL_UI_PORT}`;
  return ServerProcess.start({
    name: 'Temporal UI server',
    command: binary,
    args: uiServerArgs(root),
    env: { ...process.env, ...env },
    logPath,
    startTimeoutMs: START_TIMEOUT_MS,
    healthy: async () => (await fetch(url, { signal: AbortSignal.timeout(1_000) })).ok,
  });
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
