/**
 * The project's own settings, read from the environment and validated once at start.
 *
 * Connection settings follow each ecosystem's conventions and are NOT read here:
 * - Temporal: `@temporalio/envconfig` (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*,
 *   TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE), exactly as the temporal CLI reads them. See `config/temporal.ts`.
 * - S3: the AWS SDK's own chain (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
 *   AWS_PROFILE, ...). See `storage/s3.ts`.
 * - The model: the `openai` package's OPENAI_API_KEY and OPENAI_BASE_URL. See `llm/openai.ts`.
 * - Traces: OpenTelemetry's OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, ... See `config/tracing.ts`.
 *
 * Everything below is longrun's own, prefixed LONGRUN_. A bad value is a {@link SettingsError} naming the variable.
 */
import { homedir } from 'node:os';
import { existsSync, readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KEY_BYTES, KEY_ID, Keyring } from '../codec/keys.ts';

/** Thrown when an environment variable holds a value longrun cannot use. The message names the variable. */
export class SettingsError extends Error {
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'SettingsError';
    this.variable = variable;
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

/** The project's root folder: the nearest folder above this file with a package.json (works from dist/ too). */
export const PROJECT_ROOT = findProjectRoot(fileURLToPath(new URL('.', import.meta.url)));

function findProjectRoot(start: string): string {
  let dir = start;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) return resolve(start, '..');
    dir = parent;
  }
  return dir;
}

export const DEFAULTS = {
  taskQueue: 'longrun-agents',
  bucket: 'longrun',
  model: 'gpt-4o-mini',
  temporalPort: 7233,
  temporalUiPort: 8233,
  minioPort: 9000,
  minioConsolePort: 9001,
  /** Local-only credentials of the embedded MinIO (never used for a real deployment). */
  minioUser: 'longrun',
  minioPassword: 'longrun-local-secret',
  region: 'us-east-1',
  modelTimeoutMs: 60_000,
  /** Cached workflows per worker (what each costs in memory, measured: see BENCHMARKS.md, The workflow's state). */
  workflowCacheSize: 500,
  /** The codec server's port (`longrun codec-server`, and the main job's when encryption is on). */
  codecPort: 8081,
  /** History shards of a cluster-mode Temporal server (docker-compose's server has the same). */
  historyShards: 4,
} as const;

export interface Settings {
  /** Temporal task queue the worker polls and clients start agents on. LONGRUN_TASK_QUEUE */
  taskQueue: string;
  /**
   * Worker Deployment Versioning: the deployment this worker belongs to. Each agent run is then pinned to the
   * worker's version (its build id, from its workflow code) and moves to the deployment's current version when it
   * continues as new (docs/operations.md, Rolling out a release). Needs Temporal Server 1.30 or later.
   * LONGRUN_DEPLOYMENT (default: unversioned workers)
   */
  deployment?: string;
  /** S3 bucket holding message bodies and offloaded context. LONGRUN_S3_BUCKET */
  bucket: string;
  /** Path-style S3 addressing, which MinIO and most S3-compatible stores need. LONGRUN_S3_FORCE_PATH_STYLE (default true) */
  forcePathStyle: boolean;
  /** Default model for new agents. LONGRUN_MODEL */
  model: string;
  /** The model that writes compaction summaries (often a cheaper one). LONGRUN_SUMMARY_MODEL (default: LONGRUN_MODEL) */
  summaryModel: string;
  /** Per-call timeout of a model request, in ms. LONGRUN_MODEL_TIMEOUT_MS */
  modelTimeoutMs: number;
  /** Extra headers on every model request, for gateways. LONGRUN_MODEL_HEADERS, a JSON object of strings. */
  modelHeaders: Record<string, string>;
  /** The summary model's window in tokens, when the registry does not know it. LONGRUN_SUMMARY_WINDOW */
  summaryWindow?: number;
  /** Agent workflows each worker keeps in its cache. LONGRUN_WORKFLOW_CACHE_SIZE */
  workflowCacheSize: number;
  /**
   * A break of the coverage invariant fails the turn or compaction (tests) instead of being recorded and the agent
   * going on (production). LONGRUN_STRICT_INVARIANTS (default false)
   */
  strictInvariants: boolean;
  /** Where the embedded stack keeps its data and logs. LONGRUN_DATA_DIR */
  dataDir: string;
  /** Per-user cache of the Temporal and MinIO binaries. LONGRUN_CACHE_DIR */
  cacheDir: string;
  /**
   * History shards of the Temporal server in cluster mode (`longrun up --cluster`), fixed when its database is
   * created. LONGRUN_HISTORY_SHARDS
   */
  historyShards: number;
  /** Ports of the embedded stack (main job only; tests choose free ports). */
  ports: { temporal: number; temporalUi: number; minio: number; minioConsole: number };
  /**
   * The keys that encrypt Temporal payloads and S3 objects, the last the newest; absent: encryption is off.
   * LONGRUN_ENCRYPTION_KEYS or LONGRUN_ENCRYPTION_KEYS_FILE (docs/encryption.md).
   */
  encryptionKeys?: Keyring;
  /** The codec server the Temporal UI decodes payloads through (docs/encryption.md#the-codec-server). */
  codecServer: CodecServerSettings;
  /**
   * Where the worker serves its Prometheus metrics (`/metrics`), as `ip:port`; absent: no metrics endpoint.
   * LONGRUN_METRICS_ADDRESS (docs/metrics.md).
   */
  metricsAddress?: string;
}

export interface CodecServerSettings {
  /** LONGRUN_CODEC_PORT (default 8081) */
  port: number;
  /** Browser origins allowed to call it besides the embedded UI's. LONGRUN_CODEC_ORIGINS, comma-separated. */
  origins: string[];
  /** The exact Authorization header value a request must carry. LONGRUN_CODEC_AUTHORIZATION */
  authorization?: string;
}

function readString(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw.trim() !== raw)
    throw new SettingsError(name, `must not start or end with spaces (got ${JSON.stringify(raw)})`);
  return raw;
}

/** A deployment name: letters, digits, `_` and `-` (Temporal joins it to the build id with `:` and `.`). */
const DEPLOYMENT_NAME = /^[A-Za-z0-9_-]{1,200}$/;

function readDeployment(env: Env): { deployment?: string } {
  const name = readString(env, 'LONGRUN_DEPLOYMENT', '');
  if (name === '') return {};
  if (!DEPLOYMENT_NAME.test(name)) {
    throw new SettingsError(
      'LONGRUN_DEPLOYMENT',
      `must be 1 to 200 letters, digits, underscores or hyphens (got ${JSON.stringify(name)})`,
    );
  }
  return { deployment: name };
}

/** A value that must never reach a message or a log (a key, a password): errors name the variable only. */
function readSecret(env: Env, name: string): string {
  const raw = env[name] ?? '';
  if (raw.trim() !== raw) throw new SettingsError(name, 'must not start or end with spaces');
  return raw;
}

/** Reads an integer within [min, max]; the error names the variable, the value and the range. */
export function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new SettingsError(name, `must be an integer from ${min} to ${max} (got ${JSON.stringify(raw)})`);
  }
  return value;
}

function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new SettingsError(name, `must be true or false (got ${JSON.stringify(raw)})`);
}

/** Header names as HTTP allows them (RFC 9110 tokens). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function readHeaders(env: Env, name: string): Record<string, string> {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new SettingsError(
      name,
      `must be a JSON object of header names to strings, e.g. {"x-team":"agents"} (got ${JSON.stringify(raw)})`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SettingsError(name, `must be a JSON object of header names to strings (got ${JSON.stringify(raw)})`);
  }
  for (const [header, text] of Object.entries(value)) {
    if (!HEADER_NAME.test(header))
      throw new SettingsError(name, `${JSON.stringify(header)} is not a valid header name`);
    if (typeof text !== 'string') throw new SettingsError(name, `the value of ${header} must be a string`);
  }
  return value as Record<string, string>;
}

/** At most this many keys: enough for years of rotations, and a typo (a pasted file) is caught. */
export const MAX_ENCRYPTION_KEYS = 100;
const KEY_HINT = 'id:base64key, the key 32 random bytes in base64 (e.g. `openssl rand -base64 32`)';

/**
 * The encryption keys: LONGRUN_ENCRYPTION_KEYS (`id:base64key,…`) or LONGRUN_ENCRYPTION_KEYS_FILE (a file of the same
 * entries, one a line or comma-separated; blank lines and `#` comments skipped). The last entry is the newest key.
 * Undefined when neither is set. Errors name the variable and the entry, never a key's bytes.
 */
export function readEncryptionKeys(env: Env): Keyring | undefined {
  const inline = (env.LONGRUN_ENCRYPTION_KEYS ?? '').trim();
  const file = readString(env, 'LONGRUN_ENCRYPTION_KEYS_FILE', '');
  if (inline && file) {
    throw new SettingsError('LONGRUN_ENCRYPTION_KEYS_FILE', 'cannot go with LONGRUN_ENCRYPTION_KEYS: set one of them');
  }
  if (!inline && !file) return undefined;
  const variable = file ? 'LONGRUN_ENCRYPTION_KEYS_FILE' : 'LONGRUN_ENCRYPTION_KEYS';
  let text = inline;
  if (file) {
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new SettingsError(variable, `cannot read ${file} (${(error as Error).message})`);
    }
  }
  const entries = text
    .split(/[\n,]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '' && !entry.startsWith('#'));
  if (entries.length === 0) throw new SettingsError(variable, `names no key (each entry: ${KEY_HINT})`);
  if (entries.length > MAX_ENCRYPTION_KEYS) {
    throw new SettingsError(variable, `names ${entries.length} keys; at most ${MAX_ENCRYPTION_KEYS}`);
  }
  const seen = new Set<string>();
  const keys = entries.map((entry, index) => {
    const colon = entry.indexOf(':');
    const id = colon < 0 ? '' : entry.slice(0, colon).trim();
    const encoded = colon < 0 ? '' : entry.slice(colon + 1).trim();
    const which = `entry ${index + 1}`;
    if (colon < 0 || !id || !encoded) throw new SettingsError(variable, `${which} must be ${KEY_HINT}`);
    if (!KEY_ID.test(id)) {
      throw new SettingsError(variable, `${which}: the key id must be 1 to 64 letters, digits, '.', '_' or '-'`);
    }
    if (seen.has(id)) throw new SettingsError(variable, `key id ${id} appears twice; every key needs its own id`);
    seen.add(id);
    const key = Buffer.from(encoded, 'base64');
    if (
      !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) ||
      key.toString('base64').replace(/=+$/, '') !== encoded.replace(/=+$/, '')
    ) {
      throw new SettingsError(variable, `key ${id} is not valid base64 (${KEY_HINT})`);
    }
    if (key.length !== KEY_BYTES) {
      throw new SettingsError(
        variable,
        `key ${id} is ${key.length} bytes; AES-256 needs exactly ${KEY_BYTES} (${KEY_HINT})`,
      );
    }
    return { id, key: new Uint8Array(key) };
  });
  return new Keyring(keys, file ? `LONGRUN_ENCRYPTION_KEYS_FILE (${file})` : 'LONGRUN_ENCRYPTION_KEYS');
}

/** Browser origins, comma-separated: each `scheme://host[:port]`, nothing after it. `name` is what errors name. */
export function parseOrigins(raw: string, name: string): string[] {
  return raw
    .split(',')
    .map((origin) => origin.trim())
    .filter(Boolean)
    .map((origin) => {
      let parsed: URL | undefined;
      try {
        parsed = new URL(origin);
      } catch {
        parsed = undefined;
      }
      if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin) {
        throw new SettingsError(
          name,
          `${JSON.stringify(origin)} is not an origin like http://localhost:8080 (no path)`,
        );
      }
      return origin;
    });
}

/** The most history shards cluster mode accepts (each shard is owned and loaded by the history service). */
export const MAX_HISTORY_SHARDS = 4_096;

const ADDRESS_HINT =
  'an IP address and a port, e.g. 127.0.0.1:9464 (this machine only) or 0.0.0.0:9464 (every interface)';

/**
 * A socket address to listen on, `ip:port` (an IPv6 address in brackets: `[::1]:9464`), as the Temporal runtime's
 * metrics server takes it (it resolves no host name). Empty or unset: undefined.
 */
export function readListenAddress(env: Env, name: string): string | undefined {
  const raw = readString(env, name, '');
  if (raw === '') return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(raw);
  const ip = match?.[1] ?? match?.[2];
  const ipOk = match?.[1] !== undefined ? isIPv6(match[1]) : ip !== undefined && isIPv4(ip);
  const port = Number(match?.[3]);
  if (!match || !ipOk) throw new SettingsError(name, `must be ${ADDRESS_HINT} (got ${JSON.stringify(raw)})`);
  if (port < 1 || port > 65_535) {
    throw new SettingsError(name, `the port must be from 1 to 65535 (got ${JSON.stringify(raw)})`);
  }
  return raw;
}

/** S3 bucket names: 3–63 characters of lowercase letters, digits, dots and hyphens. */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Reads and validates every LONGRUN_ setting. Throws {@link SettingsError} on the first bad one. */
export function loadSettings(env: Env = process.env): Settings {
  const bucket = readString(env, 'LONGRUN_S3_BUCKET', DEFAULTS.bucket);
  if (!BUCKET_NAME.test(bucket)) {
    throw new SettingsError(
      'LONGRUN_S3_BUCKET',
      `must be 3 to 63 lowercase letters, digits, dots or hyphens (got ${JSON.stringify(bucket)})`,
    );
  }
  const port = (name: string, fallback: number) => readInt(env, name, fallback, 1, 65_535);
  const xdgCache = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache');
  const encryptionKeys = readEncryptionKeys(env);
  const codecAuthorization = readSecret(env, 'LONGRUN_CODEC_AUTHORIZATION');
  const metricsAddress = readListenAddress(env, 'LONGRUN_METRICS_ADDRESS');
  return {
    taskQueue: readString(env, 'LONGRUN_TASK_QUEUE', DEFAULTS.taskQueue),
    ...readDeployment(env),
    bucket,
    forcePathStyle: readBool(env, 'LONGRUN_S3_FORCE_PATH_STYLE', true),
    model: readString(env, 'LONGRUN_MODEL', DEFAULTS.model),
    summaryModel: readString(env, 'LONGRUN_SUMMARY_MODEL', readString(env, 'LONGRUN_MODEL', DEFAULTS.model)),
    modelTimeoutMs: readInt(env, 'LONGRUN_MODEL_TIMEOUT_MS', DEFAULTS.modelTimeoutMs, 1_000, 3_600_000),
    modelHeaders: readHeaders(env, 'LONGRUN_MODEL_HEADERS'),
    ...(env.LONGRUN_SUMMARY_WINDOW
      ? { summaryWindow: readInt(env, 'LONGRUN_SUMMARY_WINDOW', 0, 1_024, 10_000_000) }
      : {}),
    workflowCacheSize: readInt(env, 'LONGRUN_WORKFLOW_CACHE_SIZE', DEFAULTS.workflowCacheSize, 1, 100_000),
    strictInvariants: readBool(env, 'LONGRUN_STRICT_INVARIANTS', false),
    dataDir: resolve(readString(env, 'LONGRUN_DATA_DIR', join(PROJECT_ROOT, '.data'))),
    cacheDir: resolve(readString(env, 'LONGRUN_CACHE_DIR', join(xdgCache, 'longrun'))),
    historyShards: readInt(env, 'LONGRUN_HISTORY_SHARDS', DEFAULTS.historyShards, 1, MAX_HISTORY_SHARDS),
    ports: {
      temporal: port('LONGRUN_TEMPORAL_PORT', DEFAULTS.temporalPort),
      temporalUi: port('LONGRUN_TEMPORAL_UI_PORT', DEFAULTS.temporalUiPort),
      minio: port('LONGRUN_MINIO_PORT', DEFAULTS.minioPort),
      minioConsole: port('LONGRUN_MINIO_CONSOLE_PORT', DEFAULTS.minioConsolePort),
    },
    ...(encryptionKeys ? { encryptionKeys } : {}),
    codecServer: {
      port: port('LONGRUN_CODEC_PORT', DEFAULTS.codecPort),
      origins: parseOrigins(readString(env, 'LONGRUN_CODEC_ORIGINS', ''), 'LONGRUN_CODEC_ORIGINS'),
      ...(codecAuthorization ? { authorization: codecAuthorization } : {}),
    },
    ...(metricsAddress ? { metricsAddress } : {}),
  };
}

/**
 * Path of a sibling module, with the extension this module runs under (`.ts` from source, `.js` from `dist/`).
 * Used where a file is handed to another process or bundler by path (the supervisor, the workflow bundle).
 */
export function modulePath(importMetaUrl: string, relativeWithoutExtension: string): string {
  const extension = importMetaUrl.endsWith('.ts') ? '.ts' : '.js';
  return fileURLToPath(new URL(`${relativeWithoutExtension}${extension}`, importMetaUrl));
}
