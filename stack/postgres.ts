/**
 * PostgreSQL for cluster mode (stack/cluster.ts): the OS's own build (Debian's `postgresql` package), a database
 * cluster in a folder of longrun's, listening on one loopback port (no Unix socket), the user and password
 * docker-compose.yml gives Temporal.
 *
 * Where the programs come from, in order: LONGRUN_POSTGRES_BIN_DIR (a folder holding `initdb`, `postgres` and
 * `pg_isready`); those three together on PATH; the newest `/usr/lib/postgresql/<major>/bin` (Debian's layout);
 * otherwise the setup step installs the `postgresql` package with apt-get (as root), or says how to.
 *
 * PostgreSQL refuses to run as root. Run by root, longrun runs `initdb` and `postgres` as the `postgres` account the
 * package creates, through `setpriv` (which execs in place, so the supervisor's signals reach `postgres` itself), and
 * gives that account the data folder; run by anyone else, as that user.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import {
  accessSync,
  chownSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { promisify } from 'node:util';
import { delimiter, join } from 'node:path';
import { tailOfText } from './logs.ts';
import { LOOPBACK } from './ports.ts';
import { ServerProcess } from './process.ts';

/** The programs of one PostgreSQL installation. */
export interface PostgresBinaries {
  initdb: string;
  postgres: string;
  pgIsready: string;
}

export const POSTGRES_BIN_DIR_VAR = 'LONGRUN_POSTGRES_BIN_DIR';
const PROGRAMS = { initdb: 'initdb', postgres: 'postgres', pgIsready: 'pg_isready' } as const;
const DEBIAN_ROOT = '/usr/lib/postgresql';
/** The OS account PostgreSQL runs as when longrun runs as root (created by the distribution's package). */
export const POSTGRES_ACCOUNT = 'postgres';

/**
 * Temporal's user in PostgreSQL, as docker-compose.yml has it (local-only credentials: PostgreSQL listens on
 * loopback only).
 */
export const TEMPORAL_DB_USER = 'temporal';
export const TEMPORAL_DB_PASSWORD = 'temporal';

/** Thrown when PostgreSQL cannot be found, installed, set up or started; says what to do. */
export class PostgresError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PostgresError';
  }
}

/** What the lookup can observe about the machine. */
export interface PostgresProbes {
  env: Readonly<Record<string, string | undefined>>;
  isExecutable: (path: string) => boolean;
  /** Entries of a folder ([] when it is missing). */
  list: (dir: string) => string[];
  isRoot: boolean;
  hasAptGet: boolean;
}

export type PostgresLookup =
  | { kind: 'found'; binaries: PostgresBinaries; source: 'env' | 'path' | 'debian' }
  | { kind: 'install' }
  | { kind: 'missing'; message: string };

function inDir(dir: string): PostgresBinaries {
  return {
    initdb: join(dir, PROGRAMS.initdb),
    postgres: join(dir, PROGRAMS.postgres),
    pgIsready: join(dir, PROGRAMS.pgIsready),
  };
}

function complete(binaries: PostgresBinaries, probes: PostgresProbes): boolean {
  return [binaries.initdb, binaries.postgres, binaries.pgIsready].every((path) => probes.isExecutable(path));
}

/** Decides where PostgreSQL comes from, in the documented order. Runs nothing. */
export function lookupPostgres(probes: PostgresProbes): PostgresLookup {
  const explicit = probes.env[POSTGRES_BIN_DIR_VAR];
  if (explicit) {
    const binaries = inDir(explicit);
    if (complete(binaries, probes)) return { kind: 'found', binaries, source: 'env' };
    const absent = Object.values(PROGRAMS).filter((name) => !probes.isExecutable(join(explicit, name)));
    return {
      kind: 'missing',
      message: `${POSTGRES_BIN_DIR_VAR} is set to ${explicit}, but ${absent.join(', ')} ${absent.length === 1 ? 'is' : 'are'} not there.`,
    };
  }
  for (const dir of (probes.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const binaries = inDir(dir);
    if (complete(binaries, probes)) return { kind: 'found', binaries, source: 'path' };
  }
  const majors = probes
    .list(DEBIAN_ROOT)
    .filter((entry) => /^\d+$/.test(entry))
    .sort((a, b) => Number(b) - Number(a));
  for (const major of majors) {
    const binaries = inDir(join(DEBIAN_ROOT, major, 'bin'));
    if (complete(binaries, probes)) return { kind: 'found', binaries, source: 'debian' };
  }
  if (probes.isRoot && probes.hasAptGet) return { kind: 'install' };
  return {
    kind: 'missing',
    message: [
      'Cluster mode needs PostgreSQL (initdb, postgres, pg_isready), and none was found.',
      'Any one of these fixes it:',
      probes.hasAptGet
        ? '  - sudo apt-get install postgresql (longrun installs it itself when run as root);'
        : "  - install PostgreSQL 12 or newer with your system's packages;",
      `  - set ${POSTGRES_BIN_DIR_VAR} to the folder holding initdb, postgres and pg_isready;`,
      '  - run the production-shaped stack with docker compose (see README), or the embedded one (without --cluster).',
    ].join('\n'),
  };
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The real machine, as the lookup sees it. */
export function postgresProbes(env: NodeJS.ProcessEnv = process.env): PostgresProbes {
  return {
    env,
    isExecutable: isExecutableFile,
    list: (dir) => {
      try {
        return readdirSync(dir);
      } catch {
        return [];
      }
    },
    isRoot: process.getuid?.() === 0,
    hasAptGet: spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0,
  };
}

const INSTALL_PROGRESS_EVERY_MS = 15_000;

/** Runs a command with its output to `logLines`, a progress line every 15 s; resolves to its exit code. */
function runLogged(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  what: string,
  log: (line: string) => void,
  output: string[],
): Promise<number | null> {
  const started = Date.now();
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const collect = (chunk: Buffer) => output.push(chunk.toString());
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const timer = setInterval(
    () => log(`[setup]   ${what}: ${Math.round((Date.now() - started) / 1000)}s elapsed`),
    INSTALL_PROGRESS_EVERY_MS,
  );
  return new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  }).finally(() => clearInterval(timer));
}

/** Installs Debian's `postgresql` package (root only): `apt-get update`, then `apt-get install -y postgresql`. */
async function installPostgres(log: (line: string) => void): Promise<void> {
  log('[setup] PostgreSQL is not installed; installing the postgresql package with apt-get (first time only)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'postgresql']]) {
    const output: string[] = [];
    const code = await runLogged('apt-get', args, env, `apt-get ${args[0]}`, log, output);
    if (code !== 0) {
      throw new PostgresError(
        `apt-get ${args.join(' ')} failed (exit ${code}); PostgreSQL is needed for cluster mode. Install it yourself ` +
          `and run again, or set ${POSTGRES_BIN_DIR_VAR} to its programs' folder. Last lines of apt-get:\n` +
          tailOfText(output.join(''), 15),
      );
    }
  }
}

/** Finds PostgreSQL's programs, installing the package when missing and allowed. Throws {@link PostgresError}. */
export async function ensurePostgres(
  log: (line: string) => void,
  probes: PostgresProbes = postgresProbes(),
): Promise<PostgresBinaries> {
  const found = lookupPostgres(probes);
  if (found.kind === 'found') return found.binaries;
  if (found.kind === 'missing') throw new PostgresError(found.message);
  await installPostgres(log);
  const after = lookupPostgres({ ...probes, isRoot: false });
  if (after.kind !== 'found') {
    throw new PostgresError(`apt-get installed postgresql, but its programs are not under ${DEBIAN_ROOT}/<major>/bin.`);
  }
  log(`[setup] PostgreSQL: ${after.binaries.postgres}`);
  return after.binaries;
}

/** Who runs PostgreSQL's programs: as ourselves, or (when we are root) as the `postgres` account through setpriv. */
export interface RunAs {
  /** The command line prefix (empty when we run them as ourselves). */
  prefix: string[];
  uid?: number;
  gid?: number;
}

function idOf(flag: '-u' | '-g', account: string): number | undefined {
  const result = spawnSync('id', [flag, account], { encoding: 'utf8' });
  return result.status === 0 ? Number(result.stdout.trim()) : undefined;
}

/** How to run PostgreSQL's programs on this machine. Throws {@link PostgresError} when root has no account to use. */
export function postgresRunAs(isRoot = process.getuid?.() === 0): RunAs {
  if (!isRoot) return { prefix: [] };
  const uid = idOf('-u', POSTGRES_ACCOUNT);
  const gid = idOf('-g', POSTGRES_ACCOUNT);
  if (uid === undefined || gid === undefined) {
    throw new PostgresError(
      `PostgreSQL refuses to run as root, and there is no '${POSTGRES_ACCOUNT}' account to run it as (its package ` +
        `creates one): create it (useradd --system ${POSTGRES_ACCOUNT}) or run longrun as another user.`,
    );
  }
  if (spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status !== 0) {
    throw new PostgresError(
      `PostgreSQL refuses to run as root; longrun runs it as '${POSTGRES_ACCOUNT}' with setpriv (util-linux), which ` +
        'is not installed: install util-linux, or run longrun as another user.',
    );
  }
  return { prefix: postgresAccountPrefix(uid, gid), uid, gid };
}

/** The setpriv prefix that runs a program as `uid`:`gid` with no supplementary groups. */
export function postgresAccountPrefix(uid: number, gid: number): string[] {
  return ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--'];
}

export interface PostgresOptions {
  binaries: PostgresBinaries;
  /** The database cluster's folder (created by initdb when it holds none yet). */
  dataDir: string;
  port: number;
  logPath: string;
  runAs: RunAs;
}

/** `postgres`'s arguments: loopback only, on `port`, no Unix socket. */
export function postgresArgs(options: Pick<PostgresOptions, 'dataDir' | 'port'>): string[] {
  return [
    '-D',
    options.dataDir,
    '-p',
    String(options.port),
    '-c',
    `listen_addresses=${LOOPBACK}`,
    '-c',
    'unix_socket_directories=',
  ];
}

/** `initdb`'s arguments: Temporal's user as the superuser, password (SCRAM) authentication, UTF-8. */
export function initdbArgs(dataDir: string, passwordFile: string): string[] {
  return [
    '-D',
    dataDir,
    '-U',
    TEMPORAL_DB_USER,
    `--pwfile=${passwordFile}`,
    '--auth=scram-sha-256',
    '-E',
    'UTF8',
    '--no-locale',
  ];
}

/** Creates the database cluster in `options.dataDir` unless one is there. */
export function initPostgres(options: PostgresOptions, log: (line: string) => void): void {
  const { dataDir, runAs } = options;
  if (existsSync(join(dataDir, 'PG_VERSION'))) return;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (runAs.uid !== undefined) {
    chownSync(dataDir, runAs.uid, runAs.gid!);
    const reach = spawnSync(runAs.prefix[0]!, [...runAs.prefix.slice(1), 'test', '-w', dataDir, '-a', '-x', dataDir]);
    if (reach.status !== 0) {
      throw new PostgresError(
        `The '${POSTGRES_ACCOUNT}' account that runs PostgreSQL cannot reach ${dataDir} (a folder above it is closed ` +
          'to other users): set LONGRUN_DATA_DIR to a folder it can reach, e.g. under /var/tmp.',
      );
    }
  }
  // initdb reads the password from a file, removed right after (it leaves it in the cluster as a SCRAM hash).
  const passwordFile = join(dataDir, '..', `.pwfile-${process.pid}`);
  writeFileSync(passwordFile, `${TEMPORAL_DB_PASSWORD}\n`, { mode: 0o600 });
  if (runAs.uid !== undefined) chownSync(passwordFile, runAs.uid, runAs.gid!);
  log(`[stack] creating the PostgreSQL database cluster in ${dataDir}`);
  try {
    const [command, ...prefixArgs] = [...runAs.prefix, options.binaries.initdb];
    const result = spawnSync(command, [...prefixArgs, ...initdbArgs(dataDir, passwordFile)], { encoding: 'utf8' });
    if (result.status !== 0) {
      rmSync(dataDir, { recursive: true, force: true });
      throw new PostgresError(
        `initdb failed (exit ${result.status ?? result.error?.message}):\n${tailOfText(`${result.stdout}${result.stderr}`, 15)}`,
      );
    }
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

const START_TIMEOUT_MS = 60_000;

export interface RunningPostgres {
  port: number;
  dataDir: string;
  process: ServerProcess;
}

/** Creates the database cluster if needed, starts `postgres` and waits until it accepts connections. */
export async function startPostgres(options: PostgresOptions, log: (line: string) => void): Promise<RunningPostgres> {
  initPostgres(options, log);
  const [command, ...prefixArgs] = [...options.runAs.prefix, options.binaries.postgres];
  const process = await ServerProcess.start({
    name: 'PostgreSQL',
    command,
    args: [...prefixArgs, ...postgresArgs(options)],
    logPath: options.logPath,
    startTimeoutMs: START_TIMEOUT_MS,
    // SIGINT is PostgreSQL's fast shutdown: it does not wait for clients to disconnect, as SIGTERM would.
    stopSignal: 'SIGINT',
    healthy: async () => {
      await promisify(execFile)(options.binaries.pgIsready, ['-q', '-h', LOOPBACK, '-p', String(options.port)], {
        timeout: 5_000,
      });
      return true; // exit 0: accepting connections (a rejection is "not yet")
    },
  });
  return { port: options.port, dataDir: options.dataDir, process };
}
