/**
 * Where Temporal and S3 are: the one answer every longrun process gives (each CLI command, the client library's
 * `loadTemporalTarget`, the worker, the main job), and in words for its messages, naming the variable that chose it.
 *
 * Temporal, the first that applies:
 * 1. `TEMPORAL_ADDRESS`: a server longrun does not start;
 * 2. a temporal CLI profile the user chose (`TEMPORAL_PROFILE` or `TEMPORAL_CONFIG_FILE` set) that names an address;
 * 3. `LONGRUN_TEMPORAL_PORT`: 127.0.0.1 on that port, where `npm start` runs its own server;
 * 4. the temporal CLI's default profile (its default config file), when it names an address;
 * 5. 127.0.0.1:7233, where `npm start` runs its own server by default.
 * The rest of the connection (namespace, API key, TLS) comes from the same place: the profile with TEMPORAL_*
 * over it for 1, 2 and 4; TEMPORAL_* alone for 3 and 5.
 *
 * S3: `AWS_ENDPOINT_URL_S3`, then `AWS_ENDPOINT_URL` (the AWS SDK's chain gives the rest: credentials, region),
 * then `npm start`'s own MinIO on 127.0.0.1 at `LONGRUN_MINIO_PORT` (default 9000) with its local-only credentials.
 */
import { loadClientConfigProfile } from '@temporalio/envconfig';
import type { ClientConfigProfile } from '@temporalio/envconfig';
import { DEFAULTS, readInt } from './settings.ts';
import type { Env } from './settings.ts';

/** The loopback address `npm start`'s servers listen on. */
const LOOPBACK = '127.0.0.1';

/** Where an address came from. */
export type AddressOrigin =
  | 'TEMPORAL_ADDRESS'
  | 'profile'
  | 'LONGRUN_TEMPORAL_PORT'
  | 'AWS_ENDPOINT_URL_S3'
  | 'AWS_ENDPOINT_URL'
  | 'LONGRUN_MINIO_PORT'
  | 'default'
  /** The server this very process started (the main job's, `longrun replay`'s, a test's). */
  | 'started'
  /** Given in code (a target built by hand). */
  | 'given';

export interface AddressChoice {
  /** `host:port` for Temporal, a URL for S3. */
  address: string;
  origin: AddressOrigin;
  /** The address and what chose it, for messages: "TEMPORAL_ADDRESS=127.0.0.1:17233 (from the environment)". */
  text: string;
  /** A server longrun does not start (an environment variable or a profile names it): the main job uses it as is. */
  external: boolean;
  /** The profile's name, when a profile chose it. */
  profile?: string;
}

export interface TemporalChoice extends AddressChoice {
  /** The connection's profile: the address above, the namespace, API key and TLS from the same place. */
  config: ClientConfigProfile;
}

function set(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** The loopback port `npm start` runs Temporal on (LONGRUN_TEMPORAL_PORT, validated as loadSettings does). */
export function temporalPort(env: Env): number {
  return readInt(env, 'LONGRUN_TEMPORAL_PORT', DEFAULTS.temporalPort, 1, 65_535);
}

/** Where Temporal is, by the precedence above. Throws on a bad LONGRUN_TEMPORAL_PORT or a named profile missing. */
export function chooseTemporal(env: Env): TemporalChoice {
  const vars = env as Record<string, string>;
  const fromEnv = set(env, 'TEMPORAL_ADDRESS');
  const chosenProfile = Boolean(set(env, 'TEMPORAL_PROFILE') || set(env, 'TEMPORAL_CONFIG_FILE'));
  const full = loadClientConfigProfile({ overrideEnvVars: vars });
  if (fromEnv) {
    return {
      config: { ...full, address: fromEnv },
      address: fromEnv,
      origin: 'TEMPORAL_ADDRESS',
      text: `TEMPORAL_ADDRESS=${fromEnv} (from the environment)`,
      external: true,
    };
  }
  const portGiven = set(env, 'LONGRUN_TEMPORAL_PORT') !== undefined;
  const port = temporalPort(env);
  if (full.address && (chosenProfile || !portGiven)) {
    const name = set(env, 'TEMPORAL_PROFILE') ?? 'default';
    const file = set(env, 'TEMPORAL_CONFIG_FILE');
    return {
      config: full,
      address: full.address,
      origin: 'profile',
      text: `${full.address} (from the temporal CLI's profile "${name}"${file ? ` in ${file}` : ''})`,
      external: true,
      profile: name,
    };
  }
  const address = `${LOOPBACK}:${port}`;
  const envOnly = loadClientConfigProfile({ overrideEnvVars: vars, disableFile: true });
  return {
    config: { ...envOnly, address },
    address,
    origin: portGiven ? 'LONGRUN_TEMPORAL_PORT' : 'default',
    text: portGiven
      ? `${address} (LONGRUN_TEMPORAL_PORT=${port}, where \`npm start\` runs its Temporal)`
      : `${address} (the default: none of TEMPORAL_ADDRESS, LONGRUN_TEMPORAL_PORT or a temporal CLI profile is set)`,
    external: false,
  };
}

/** Where S3 is, by the precedence above. `minioPort`: LONGRUN_MINIO_PORT as loadSettings read it. */
export function chooseS3(env: Env, minioPort: number): AddressChoice {
  for (const name of ['AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL'] as const) {
    const value = set(env, name);
    if (value) return { address: value, origin: name, text: `${name}=${value} (from the environment)`, external: true };
  }
  const address = `http://${LOOPBACK}:${minioPort}`;
  const portGiven = set(env, 'LONGRUN_MINIO_PORT') !== undefined;
  return {
    address,
    origin: portGiven ? 'LONGRUN_MINIO_PORT' : 'default',
    text: portGiven
      ? `${address} (LONGRUN_MINIO_PORT=${minioPort}, where \`npm start\` runs its MinIO)`
      : `${address} (the default: neither AWS_ENDPOINT_URL_S3 nor LONGRUN_MINIO_PORT is set)`,
    external: false,
  };
}

/** What to do when the Temporal `choice` names does not answer a client (a CLI command, a script, a worker). */
export function temporalAdvice(choice: AddressChoice): string {
  switch (choice.origin) {
    case 'TEMPORAL_ADDRESS':
      return (
        'start the server it names or correct TEMPORAL_ADDRESS; for the server `npm start` runs, unset it ' +
        '(and export the LONGRUN_TEMPORAL_PORT `npm start` runs with, if not 7233)'
      );
    case 'profile':
      return 'start the server it names, choose another profile (TEMPORAL_PROFILE), or set TEMPORAL_ADDRESS';
    case 'LONGRUN_TEMPORAL_PORT':
      return (
        `is \`npm start\` running with the same LONGRUN_TEMPORAL_PORT? Start it, or set TEMPORAL_ADDRESS to your ` +
        'server'
      );
    case 'default':
      return (
        'is `npm start` running? Start it; if it runs on other ports, export the LONGRUN_TEMPORAL_PORT it runs ' +
        'with here; for another server, set TEMPORAL_ADDRESS'
      );
    default:
      return 'the server may have stopped';
  }
}

/** What to do when the Temporal a main job was pointed at does not answer (it starts no server of its own then). */
export function mainJobTemporalAdvice(choice: AddressChoice, env: Env): string {
  const variable = choice.origin === 'profile' ? `the profile "${choice.profile ?? 'default'}"` : choice.origin;
  return (
    `\`npm start\` starts no Temporal of its own while ${variable} names a server: start that server, or ` +
    `unset ${choice.origin === 'profile' ? 'TEMPORAL_PROFILE / TEMPORAL_CONFIG_FILE' : choice.origin} to have it ` +
    `start one on ${LOOPBACK}:${temporalPort(env)} (LONGRUN_TEMPORAL_PORT), where the CLI finds it with the same ` +
    'LONGRUN_TEMPORAL_PORT'
  );
}

/** What to do when the S3 `choice` names does not answer. */
export function s3Advice(choice: AddressChoice): string {
  return choice.external
    ? `start the store it names or correct ${choice.origin}; for the MinIO \`npm start\` runs, unset it (and ` +
        'export the LONGRUN_MINIO_PORT `npm start` runs with, if not 9000)'
    : 'is `npm start` running, with the same LONGRUN_MINIO_PORT? Start it, export the LONGRUN_MINIO_PORT it runs ' +
        'with, or set AWS_ENDPOINT_URL_S3 to your store';
}

/** Variables that decide where a longrun process goes and what it reads: another shell needs the same ones. */
const SHARED_VARIABLES = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_PROFILE',
  'TEMPORAL_CONFIG_FILE',
  'LONGRUN_TEMPORAL_PORT',
  'AWS_ENDPOINT_URL_S3',
  'AWS_ENDPOINT_URL',
  'LONGRUN_MINIO_PORT',
  'LONGRUN_S3_BUCKET',
  'LONGRUN_TASK_QUEUE',
] as const;

/** Secrets another shell needs too: named, never printed. */
const SHARED_SECRETS = [
  'TEMPORAL_API_KEY',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'LONGRUN_ENCRYPTION_KEYS',
  'LONGRUN_ENCRYPTION_KEYS_FILE',
] as const;

/**
 * What a CLI in another shell needs set to reach what this process reaches: `export A=1 B=2` for the variables set
 * here, and the secrets set here by name only (never their values).
 */
export function exportsForAnotherShell(env: Env): { command?: string; secrets: string[] } {
  const values = SHARED_VARIABLES.flatMap((name) => {
    const value = set(env, name);
    return value === undefined ? [] : [`${name}=${/^[\w.:/@,+-]+$/.test(value) ? value : JSON.stringify(value)}`];
  });
  return {
    ...(values.length > 0 ? { command: `export ${values.join(' ')}` } : {}),
    secrets: SHARED_SECRETS.filter((name) => set(env, name) !== undefined),
  };
}

/**
 * The main job's hint for another terminal: the command, and what to export there first to reach the same servers
 * ("try `npx longrun state <agent>` from another terminal, after `export LONGRUN_TEMPORAL_PORT=17233` there").
 */
export function anotherTerminalHint(env: Env): string {
  const { command, secrets } = exportsForAnotherShell(env);
  const needs = [...(command ? [`\`${command}\``] : []), ...(secrets.length ? [`the same ${secrets.join(', ')}`] : [])];
  return (
    'try `npx longrun state <agent>` from another terminal' +
    (needs.length ? `, with ${needs.join(' and ')} there (to reach these servers)` : '')
  );
}
