import { describe, expect, it } from 'vitest';
import {
  cachedBinaryPath,
  lookupBinary,
  MINIO,
  TEMPORAL,
  TEMPORAL_SERVER,
  TEMPORAL_SQL_TOOL,
  TEMPORAL_UI_SERVER,
} from '../../../stack/binaries.ts';
import type { BinaryProbes } from '../../../stack/binaries.ts';

const CACHE = '/home/u/.cache/longrun';

/** A machine with the given executables, PATH entries and build infos. */
function machine(options: {
  env?: Record<string, string>;
  executables?: string[];
  path?: Record<string, string>;
  buildInfo?: Record<string, string>;
  versionOutput?: Record<string, string>;
  hasGo?: boolean;
  /** Plain files (besides the executables). */
  files?: string[];
}): BinaryProbes {
  const executables = new Set([...(options.executables ?? []), ...Object.values(options.path ?? {})]);
  return {
    env: options.env ?? {},
    isExecutable: (p) => executables.has(p),
    isFile: (p) => executables.has(p) || (options.files ?? []).includes(p),
    which: (name) => options.path?.[name],
    run: (p) => options.versionOutput?.[p],
    buildInfo: (p) => options.buildInfo?.[p],
    hasGo: options.hasGo ?? true,
  };
}

const cachedTemporal = cachedBinaryPath(CACHE, TEMPORAL);
const temporalBuildInfo =
  'x: go1.26\n\tpath\tgithub.com/temporalio/cli/cmd/temporal\n\tmod\tgithub.com/temporalio/cli\tv1.5.1\th1:abc=\n';

describe('binary lookup order', () => {
  it('keys the cache folder by name and version', () => {
    expect(cachedTemporal).toBe('/home/u/.cache/longrun/bin/temporal-v1.5.1/temporal');
    expect(cachedBinaryPath(CACHE, MINIO)).toBe(
      '/home/u/.cache/longrun/bin/minio-v0.0.0-20260212201848-7aac2a2c5b7c/minio',
    );
  });

  it('1. an explicit path from the environment wins over everything', () => {
    const probes = machine({
      env: { LONGRUN_TEMPORAL_BIN: '/opt/temporal' },
      executables: ['/opt/temporal', cachedTemporal],
      path: { temporal: '/usr/bin/temporal' },
      buildInfo: { '/usr/bin/temporal': temporalBuildInfo },
    });
    expect(lookupBinary(TEMPORAL, CACHE, probes)).toEqual({ kind: 'found', path: '/opt/temporal', source: 'env' });
  });

  it('an explicit path that is not there is an error naming the variable, not a silent fallback', () => {
    const probes = machine({ env: { LONGRUN_TEMPORAL_BIN: '/nope' }, executables: [cachedTemporal] });
    const result = lookupBinary(TEMPORAL, CACHE, probes);
    expect(result.kind).toBe('missing');
    expect(result.kind === 'missing' && result.message).toContain('LONGRUN_TEMPORAL_BIN is set to /nope');
  });

  it('2. a matching version on PATH comes before the cache', () => {
    const probes = machine({
      executables: [cachedTemporal],
      path: { temporal: '/usr/bin/temporal' },
      buildInfo: { '/usr/bin/temporal': temporalBuildInfo },
    });
    expect(lookupBinary(TEMPORAL, CACHE, probes)).toEqual({ kind: 'found', path: '/usr/bin/temporal', source: 'path' });
  });

  it('recognises a released temporal by its version line when there is no build info', () => {
    const probes = machine({
      path: { temporal: '/usr/bin/temporal' },
      versionOutput: { '/usr/bin/temporal': 'temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)\n' },
    });
    expect(lookupBinary(TEMPORAL, CACHE, probes)).toMatchObject({ kind: 'found', source: 'path' });
  });

  it('3. skips another version on PATH and uses the cached build', () => {
    const probes = machine({
      executables: [cachedTemporal],
      path: { temporal: '/usr/bin/temporal' },
      versionOutput: { '/usr/bin/temporal': 'temporal version 1.4.0 (Server 1.28.0, UI 2.40.0)\n' },
    });
    expect(lookupBinary(TEMPORAL, CACHE, probes)).toEqual({ kind: 'found', path: cachedTemporal, source: 'cache' });
  });

  it('does not take a go-installed minio of another commit from PATH', () => {
    const other = 'x\n\tmod\tgithub.com/minio/minio\tv0.0.0-20250101000000-aaaaaaaaaaaa\th1:x=\n';
    const probes = machine({ path: { minio: '/usr/bin/minio' }, buildInfo: { '/usr/bin/minio': other } });
    expect(lookupBinary(MINIO, CACHE, probes)).toEqual({ kind: 'build', path: cachedBinaryPath(CACHE, MINIO) });
  });

  it('4. builds into the cache when nothing is found and Go is there', () => {
    expect(lookupBinary(TEMPORAL, CACHE, machine({}))).toEqual({ kind: 'build', path: cachedTemporal });
  });

  it('without Go, stops with a message naming every alternative', () => {
    const result = lookupBinary(TEMPORAL, CACHE, machine({ hasGo: false }));
    expect(result.kind).toBe('missing');
    const message = result.kind === 'missing' ? result.message : '';
    expect(message).toContain('Go is not installed');
    expect(message).toContain('install the temporal CLI');
    expect(message).toContain('docker compose');
    expect(message).toContain('TEMPORAL_ADDRESS');
    expect(message).toContain('LONGRUN_TEMPORAL_BIN');
    const minio = lookupBinary(MINIO, CACHE, machine({ hasGo: false }));
    expect(minio.kind === 'missing' && minio.message).toContain('AWS_ENDPOINT_URL_S3');
  });
});

describe("cluster mode's binaries", () => {
  const ui = cachedBinaryPath(CACHE, TEMPORAL_UI_SERVER);

  it('have cache folders by name and version, and recognise their version lines', () => {
    expect(cachedBinaryPath(CACHE, TEMPORAL_SERVER)).toBe(
      '/home/u/.cache/longrun/bin/temporal-server-v1.29.1/temporal-server',
    );
    expect(cachedBinaryPath(CACHE, TEMPORAL_SQL_TOOL)).toBe(
      '/home/u/.cache/longrun/bin/temporal-sql-tool-v1.29.1/temporal-sql-tool',
    );
    expect(ui).toBe('/home/u/.cache/longrun/bin/temporal-ui-server-v2.42.1/temporal-ui-server');
    // What each prints for --version.
    expect(TEMPORAL_SERVER.matchesVersion('temporal version 1.29.1\n')).toBe(true);
    expect(TEMPORAL_SERVER.matchesVersion('temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)\n')).toBe(false);
    expect(TEMPORAL_SQL_TOOL.matchesVersion('temporal-sql-tool version 1.29.1\n')).toBe(true);
    expect(TEMPORAL_UI_SERVER.matchesVersion('Temporal UI version 2.42.1\n')).toBe(true);
    expect(TEMPORAL_UI_SERVER.matchesVersion('Temporal UI version 2.41.0\n')).toBe(false);
  });

  it("the UI server counts as found only with the image's config/docker.yaml beside it", () => {
    const config = '/home/u/.cache/longrun/bin/temporal-ui-server-v2.42.1/config/docker.yaml';
    expect(lookupBinary(TEMPORAL_UI_SERVER, CACHE, machine({ executables: [ui] }))).toEqual({
      kind: 'build',
      path: ui,
    });
    expect(lookupBinary(TEMPORAL_UI_SERVER, CACHE, machine({ executables: [ui], files: [config] }))).toEqual({
      kind: 'found',
      path: ui,
      source: 'cache',
    });
    const explicit = lookupBinary(
      TEMPORAL_UI_SERVER,
      CACHE,
      machine({ env: { LONGRUN_TEMPORAL_UI_SERVER_BIN: '/opt/ui/server' }, executables: ['/opt/ui/server'] }),
    );
    expect(explicit).toEqual({
      kind: 'missing',
      message:
        'LONGRUN_TEMPORAL_UI_SERVER_BIN is set to /opt/ui/server, but config/docker.yaml (from ' +
        'github.com/temporalio/ui-server/v2@v2.42.1) must be beside it, as the build puts it.',
    });
  });

  it('without Go, say how to get them, never pointing at TEMPORAL_ADDRESS (cluster mode runs its own server)', () => {
    const result = lookupBinary(TEMPORAL_SERVER, CACHE, machine({ hasGo: false }));
    const message = result.kind === 'missing' ? result.message : '';
    expect(message).toContain('Cannot find temporal-server v1.29.1 (cluster mode), and Go is not installed');
    expect(message).toContain('go install go.temporal.io/server/cmd/server@v1.29.1');
    expect(message).toContain('LONGRUN_TEMPORAL_SERVER_BIN');
    expect(message).not.toContain('TEMPORAL_ADDRESS');
  });
});
