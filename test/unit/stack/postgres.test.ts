/** Where cluster mode's PostgreSQL comes from, and how it is run. */
import { describe, expect, it } from 'vitest';
import {
  initdbArgs,
  lookupPostgres,
  postgresAccountPrefix,
  postgresArgs,
  TEMPORAL_DB_USER,
} from '../../../stack/postgres.ts';
import type { PostgresProbes } from '../../../stack/postgres.ts';

function machine(options: {
  env?: Record<string, string>;
  executables?: string[];
  dirs?: Record<string, string[]>;
  isRoot?: boolean;
  hasAptGet?: boolean;
}): PostgresProbes {
  const executables = new Set(options.executables ?? []);
  return {
    env: options.env ?? {},
    isExecutable: (path) => executables.has(path),
    list: (dir) => options.dirs?.[dir] ?? [],
    isRoot: options.isRoot ?? false,
    hasAptGet: options.hasAptGet ?? false,
  };
}
const programs = (dir: string) => ['initdb', 'postgres', 'pg_isready'].map((name) => `${dir}/${name}`);

describe('PostgreSQL lookup', () => {
  it('1. LONGRUN_POSTGRES_BIN_DIR wins; a folder missing a program is an error naming the variable and it', () => {
    const probes = machine({ env: { LONGRUN_POSTGRES_BIN_DIR: '/opt/pg/bin' }, executables: programs('/opt/pg/bin') });
    expect(lookupPostgres(probes)).toEqual({
      kind: 'found',
      source: 'env',
      binaries: { initdb: '/opt/pg/bin/initdb', postgres: '/opt/pg/bin/postgres', pgIsready: '/opt/pg/bin/pg_isready' },
    });
    const partial = machine({
      env: { LONGRUN_POSTGRES_BIN_DIR: '/opt/pg/bin' },
      executables: ['/opt/pg/bin/postgres', '/usr/lib/postgresql/15/bin/initdb'],
    });
    expect(lookupPostgres(partial)).toEqual({
      kind: 'missing',
      message: 'LONGRUN_POSTGRES_BIN_DIR is set to /opt/pg/bin, but initdb, pg_isready are not there.',
    });
  });

  it('2. the three programs together on PATH; one folder with only some of them is passed over', () => {
    const probes = machine({
      env: { PATH: '/usr/local/bin:/usr/bin' },
      // /usr/local/bin links initdb and postgres only (no pg_isready), as Debian's alternatives may.
      executables: ['/usr/local/bin/initdb', '/usr/local/bin/postgres', ...programs('/usr/bin')],
    });
    expect(lookupPostgres(probes)).toMatchObject({
      kind: 'found',
      source: 'path',
      binaries: { initdb: '/usr/bin/initdb' },
    });
  });

  it("3. the newest of Debian's /usr/lib/postgresql/<major>/bin", () => {
    const probes = machine({
      dirs: { '/usr/lib/postgresql': ['9', '15', '13', 'README'] },
      executables: [...programs('/usr/lib/postgresql/13/bin'), ...programs('/usr/lib/postgresql/15/bin')],
    });
    expect(lookupPostgres(probes)).toMatchObject({
      kind: 'found',
      source: 'debian',
      binaries: { postgres: '/usr/lib/postgresql/15/bin/postgres' },
    });
  });

  it('4. none: installed with apt-get when root; otherwise a message naming every way out', () => {
    expect(lookupPostgres(machine({ isRoot: true, hasAptGet: true }))).toEqual({ kind: 'install' });
    const user = lookupPostgres(machine({ hasAptGet: true }));
    expect(user.kind).toBe('missing');
    const message = user.kind === 'missing' ? user.message : '';
    expect(message).toContain('sudo apt-get install postgresql');
    expect(message).toContain('LONGRUN_POSTGRES_BIN_DIR');
    expect(message).toContain('docker compose');
    const noApt = lookupPostgres(machine({ isRoot: true }));
    expect(noApt.kind === 'missing' && noApt.message).toContain("install PostgreSQL 12 or newer with your system's");
  });
});

describe('PostgreSQL command lines', () => {
  it('listens on one loopback port and no Unix socket', () => {
    expect(postgresArgs({ dataDir: '/d/postgres', port: 41000 })).toEqual([
      '-D',
      '/d/postgres',
      '-p',
      '41000',
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
    ]);
  });

  it("initdb makes Temporal's user the superuser, with a password (SCRAM) from a file", () => {
    const args = initdbArgs('/d/postgres', '/d/.pw');
    expect(args).toEqual(expect.arrayContaining(['-U', TEMPORAL_DB_USER, '--pwfile=/d/.pw', '--auth=scram-sha-256']));
    expect(args.slice(0, 2)).toEqual(['-D', '/d/postgres']);
  });

  it('root runs them as the postgres account through setpriv, which execs in place (signals reach postgres)', () => {
    expect(postgresAccountPrefix(101, 104)).toEqual(['setpriv', '--reuid=101', '--regid=104', '--clear-groups', '--']);
  });
});
