/**
 * The servers longrun runs, as Go modules: the two of the embedded stack (the temporal CLI's dev server, MinIO), and
 * for cluster mode (stack/cluster.ts) the Temporal server, its SQL schema tool and the Temporal UI server. The order
 * in which longrun finds each:
 *
 *   1. an explicit path from the environment (LONGRUN_TEMPORAL_BIN, LONGRUN_MINIO_BIN, LONGRUN_TEMPORAL_SERVER_BIN,
 *      LONGRUN_TEMPORAL_SQL_TOOL_BIN, LONGRUN_TEMPORAL_UI_SERVER_BIN);
 *   2. a matching version on PATH;
 *   3. a previous build in the per-user cache, `<cacheDir>/bin/<name>-<version>/<name>`;
 *   4. otherwise: build it there with `go install` (see `stack/build.ts`).
 *
 * This file is the pure decision; `stack/setup.ts` supplies the probes (file system, PATH, `go`).
 */
import { dirname, join } from 'node:path';

export interface BinarySpec {
  /** Executable name, also the cache folder prefix. */
  name: 'temporal' | 'minio' | 'temporal-server' | 'temporal-sql-tool' | 'temporal-ui-server';
  /** `go install` target without the version. */
  module: string;
  /** The name `go install` gives the executable, when it is not `name` (the build renames it). */
  installedAs?: string;
  /**
   * Files of the main module the binary reads at run time, by their path in the module; the build copies them beside
   * the binary (same relative path), and a binary found elsewhere must have them beside it too.
   */
  moduleFiles?: readonly string[];
  /** The main module of the build, as `go version -m` reports it. */
  mainModule: string;
  /** Exact module version (a tag or a pseudo-version). */
  version: string;
  /** Environment variable that names an explicit path. */
  envVar: string;
  /** Arguments that make the binary print its version. */
  versionArgs: string[];
  /** Whether `<binary> <versionArgs>` output shows the pinned version. */
  matchesVersion: (output: string) => boolean;
  /** How long the first build took on a 2-core machine with an empty module cache (for the progress message). */
  typicalBuild: string;
}

/** Temporal CLI v1.5.1: dev server (Server 1.29.1) with the Temporal UI (2.42.1) built in. */
export const TEMPORAL: BinarySpec = {
  name: 'temporal',
  module: 'github.com/temporalio/cli/cmd/temporal',
  mainModule: 'github.com/temporalio/cli',
  version: 'v1.5.1',
  envVar: 'LONGRUN_TEMPORAL_BIN',
  versionArgs: ['--version'],
  // A release prints "temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)"; a go-installed build prints 0.0.0-DEV.
  matchesVersion: (out) => /version 1\.5\.1 /.test(out),
  typicalBuild: '5 to 10 minutes',
};

/**
 * MinIO at its last published commit. Its RELEASE.* tags are not semver, so the module proxy only serves it by
 * pseudo-version. A go-installed minio prints DEVELOPMENT.GOGET as its version, so one found on PATH is
 * recognised by its build info (`go version -m`) or a version line naming the commit.
 */
export const MINIO: BinarySpec = {
  name: 'minio',
  module: 'github.com/minio/minio',
  mainModule: 'github.com/minio/minio',
  version: 'v0.0.0-20260212201848-7aac2a2c5b7c',
  envVar: 'LONGRUN_MINIO_BIN',
  versionArgs: ['--version'],
  matchesVersion: (out) => out.includes('7aac2a2c5b7c'),
  typicalBuild: '4 to 10 minutes',
};

export const BINARIES = [TEMPORAL, MINIO] as const;

/** Temporal server v1.29.1, the version the dev server above embeds: cluster mode's server. */
export const TEMPORAL_SERVER: BinarySpec = {
  name: 'temporal-server',
  module: 'go.temporal.io/server/cmd/server',
  installedAs: 'server',
  mainModule: 'go.temporal.io/server',
  version: 'v1.29.1',
  envVar: 'LONGRUN_TEMPORAL_SERVER_BIN',
  versionArgs: ['--version'],
  matchesVersion: (out) => /^temporal version 1\.29\.1\s*$/m.test(out),
  typicalBuild: '5 to 10 minutes',
};

/**
 * Temporal server v1.32.1, the first release built here on which Worker Deployment Versioning moves a pinned run to
 * the current version at continue-as-new (1.29.1 keeps it on its version; the temporal CLI releases after 1.5.1,
 * whose dev servers would have it, cannot be built from the module proxy: their `cliext` module is not served).
 * The release test runs it on SQLite in memory (test/support/versioning-server.ts); `npm test` builds it once.
 */
export const TEMPORAL_SERVER_VERSIONING: BinarySpec = {
  ...TEMPORAL_SERVER,
  version: 'v1.32.1',
  envVar: 'LONGRUN_TEMPORAL_SERVER_VERSIONING_BIN',
  matchesVersion: (out) => /^temporal version 1\.32\.1\s*$/m.test(out),
};

/** The SQL schema tool of the same server module (temporal-sql-tool); the schemas are compiled into it. */
export const TEMPORAL_SQL_TOOL: BinarySpec = {
  name: 'temporal-sql-tool',
  module: 'go.temporal.io/server/cmd/tools/sql',
  installedAs: 'sql',
  mainModule: 'go.temporal.io/server',
  version: 'v1.29.1',
  envVar: 'LONGRUN_TEMPORAL_SQL_TOOL_BIN',
  versionArgs: ['--version'],
  matchesVersion: (out) => /^temporal-sql-tool version 1\.29\.1\s*$/m.test(out),
  typicalBuild: 'under a minute after the server (it shares its packages)',
};

/**
 * The Temporal UI server v2.42.1, what the temporalio/ui:2.42.1 image runs (the UI's files are compiled into it),
 * with the image's configuration: the module's `config/docker.yaml`, a template filled from TEMPORAL_* variables.
 */
export const TEMPORAL_UI_SERVER: BinarySpec = {
  name: 'temporal-ui-server',
  module: 'github.com/temporalio/ui-server/v2/cmd/server',
  installedAs: 'server',
  moduleFiles: ['config/docker.yaml'],
  mainModule: 'github.com/temporalio/ui-server/v2',
  version: 'v2.42.1',
  envVar: 'LONGRUN_TEMPORAL_UI_SERVER_BIN',
  versionArgs: ['--version'],
  matchesVersion: (out) => /^Temporal UI version 2\.42\.1\s*$/m.test(out),
  typicalBuild: '1 to 3 minutes',
};

/** What cluster mode runs besides PostgreSQL (stack/postgres.ts), which comes from the OS's packages. */
export const CLUSTER_BINARIES = [TEMPORAL_SERVER, TEMPORAL_SQL_TOOL, TEMPORAL_UI_SERVER, MINIO] as const;

/** Where a cached build of `spec` lives. */
export function cachedBinaryPath(cacheDir: string, spec: BinarySpec): string {
  return join(cacheDir, 'bin', `${spec.name}-${spec.version}`, spec.name);
}

/** What the lookup can observe about the machine. */
export interface BinaryProbes {
  env: Readonly<Record<string, string | undefined>>;
  /** Is there an executable file at this path? */
  isExecutable: (path: string) => boolean;
  /** Is there a file at this path? */
  isFile: (path: string) => boolean;
  /** Full path of `name` on PATH, if any. */
  which: (name: string) => string | undefined;
  /** Output of running the binary with `args` (stdout + stderr), or undefined if it failed to run. */
  run: (path: string, args: string[]) => string | undefined;
  /** `go version -m <path>` output (the module versions a Go binary was built from), if Go can read it. */
  buildInfo: (path: string) => string | undefined;
  /** Is `go` available to build with? */
  hasGo: boolean;
}

export type BinarySource = 'env' | 'path' | 'cache';

export type BinaryLookup =
  | { kind: 'found'; path: string; source: BinarySource }
  | { kind: 'build'; path: string }
  | { kind: 'missing'; message: string };

/** Thrown when a binary cannot be found or built. */
export class BinaryNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BinaryNotFoundError';
  }
}

/** Decides where `spec` comes from, in the documented order. Never runs `go`. */
export function lookupBinary(spec: BinarySpec, cacheDir: string, probes: BinaryProbes): BinaryLookup {
  const explicit = probes.env[spec.envVar];
  if (explicit) {
    if (!probes.isExecutable(explicit)) {
      return { kind: 'missing', message: `${spec.envVar} is set to ${explicit}, but no executable file is there.` };
    }
    const absent = missingModuleFiles(spec, explicit, probes);
    if (absent.length === 0) return { kind: 'found', path: explicit, source: 'env' };
    return {
      kind: 'missing',
      message:
        `${spec.envVar} is set to ${explicit}, but ${absent.join(', ')} (from ${spec.mainModule}@${spec.version}) ` +
        `must be beside it, as the build puts ${absent.length === 1 ? 'it' : 'them'}.`,
    };
  }
  const onPath = probes.which(spec.name);
  if (onPath && missingModuleFiles(spec, onPath, probes).length === 0) {
    if (isPinnedBuild(spec, probes, onPath)) return { kind: 'found', path: onPath, source: 'path' };
  }
  const cached = cachedBinaryPath(cacheDir, spec);
  if (probes.isExecutable(cached) && missingModuleFiles(spec, cached, probes).length === 0) {
    return { kind: 'found', path: cached, source: 'cache' };
  }
  if (probes.hasGo) return { kind: 'build', path: cached };
  return { kind: 'missing', message: missingMessage(spec, cached) };
}

/** The module files `spec` needs that are not beside the binary at `path`. */
function missingModuleFiles(spec: BinarySpec, path: string, probes: BinaryProbes): string[] {
  return (spec.moduleFiles ?? []).filter((file) => !probes.isFile(join(dirname(path), file)));
}

/** Is the binary at `path` the pinned version? Build info is exact; the version line is the fallback. */
export function isPinnedBuild(spec: BinarySpec, probes: BinaryProbes, path: string): boolean {
  const info = probes.buildInfo(path);
  if (info !== undefined && new RegExp(`\\bmod\\s+${spec.mainModule}\\s+${spec.version}\\s`).test(info)) return true;
  const output = probes.run(path, spec.versionArgs);
  return output !== undefined && spec.matchesVersion(output);
}

function missingMessage(spec: BinarySpec, cached: string): string {
  if (spec.name !== 'temporal' && spec.name !== 'minio') {
    return [
      `Cannot find ${spec.name} ${spec.version} (cluster mode), and Go is not installed to build it.`,
      `Any one of these fixes it:`,
      `  - install Go (https://go.dev/dl/) and run again: longrun builds ${spec.name} once into ${cached};`,
      `  - go install ${spec.module}@${spec.version} on another machine and set ${spec.envVar} to the binary` +
        (spec.moduleFiles ? ` (with ${spec.moduleFiles.join(', ')} of the module beside it);` : ';'),
      `  - run the production-shaped stack with docker compose (see README), or the embedded one (without --cluster).`,
    ].join('\n');
  }
  const serverVar = spec.name === 'temporal' ? 'TEMPORAL_ADDRESS' : 'AWS_ENDPOINT_URL_S3';
  return [
    `Cannot find ${spec.name} ${spec.version}, and Go is not installed to build it.`,
    `Any one of these fixes it:`,
    `  - install Go (https://go.dev/dl/) and run again: longrun builds ${spec.name} once into ${cached};`,
    `  - go install ${spec.module}@${spec.version} on another machine and set ${spec.envVar} to the binary;`,
    spec.name === 'temporal'
      ? `  - install the temporal CLI ${spec.version} so that \`temporal\` is on PATH;`
      : `  - put minio built from commit 7aac2a2c5b7c on PATH;`,
    `  - run the production-shaped stack with docker compose (see README), or`,
    `  - point ${serverVar} at a running server, and longrun starts none.`,
  ].join('\n');
}
