/**
 * What cluster mode (stack/cluster.ts) hands its servers, as docker-compose.yml does: the shared configuration files,
 * the Temporal server's environment and command line, the SQL tool's schema runs, the UI server's environment,
 * command line and base configuration, the dynamic config with values on top. Pure: test/unit/deploy/compose.test.ts
 * checks it against compose.
 */
import { join } from 'node:path';
import { PROJECT_ROOT, SettingsError } from '../config/settings.ts';
import { LOOPBACK } from './ports.ts';
import { TEMPORAL_DB_PASSWORD, TEMPORAL_DB_USER } from './postgres.ts';
import type { DynamicConfig } from './temporal.ts';

/** The files cluster mode shares with docker-compose.yml. */
export const SERVER_CONFIG_FILE = join(PROJECT_ROOT, 'deploy', 'temporal-server.yaml');
export const DYNAMIC_CONFIG_FILE = join(PROJECT_ROOT, 'deploy', 'temporal-dynamicconfig.yaml');
/** The server's `--env`: the name of its configuration file without `.yaml`. */
export const SERVER_CONFIG_ENV = 'temporal-server';

/** Retention of the namespace's closed workflows, as compose's temporal-setup registers it (`--retention 7d`). */
export const NAMESPACE_RETENTION_DAYS = 7;

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
