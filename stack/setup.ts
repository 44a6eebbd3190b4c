/**
 * The setup step: make sure the Temporal CLI and MinIO binaries are at hand, building them once if needed.
 * Both README commands run it (`npm test` runs this file; `npm start` calls {@link ensureBinaries}). Cluster mode's
 * programs (the Temporal server, its SQL tool, the UI server, PostgreSQL) only when asked for:
 * `npm run test:cluster` runs `node stack/setup.ts cluster`, `longrun up --cluster` calls {@link ensureClusterBinaries}.
 *
 *   node stack/setup.ts            # ensure both, and the Temporal server the release test runs (npm test)
 *   node stack/setup.ts temporal   # ensure one
 *   node stack/setup.ts cluster    # ensure what cluster mode runs (and MinIO)
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { loadSettings } from '../config/settings.ts';
import {
  BINARIES,
  BinaryNotFoundError,
  CLUSTER_BINARIES,
  TEMPORAL_SERVER_VERSIONING,
  lookupBinary,
  MINIO,
  TEMPORAL_SERVER,
  TEMPORAL_SQL_TOOL,
  TEMPORAL_UI_SERVER,
} from './binaries.ts';
import type { BinaryProbes, BinarySpec } from './binaries.ts';
import { buildBinary, formatDuration } from './build.ts';
import type { ClusterBinaries } from './cluster.ts';
import { ensurePostgres } from './postgres.ts';

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The real machine, as the lookup sees it. */
export function machineProbes(env: NodeJS.ProcessEnv = process.env): BinaryProbes {
  return {
    env,
    isExecutable,
    isFile,
    which: (name) =>
      (env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, name))
        .find(isExecutable),
    run: (path, args) => {
      const result = spawnSync(path, args, { encoding: 'utf8', timeout: 15_000 });
      return result.status === 0 ? `${result.stdout}${result.stderr}` : undefined;
    },
    buildInfo: (path) => {
      const result = spawnSync('go', ['version', '-m', path], { encoding: 'utf8', timeout: 15_000 });
      return result.status === 0 ? result.stdout : undefined;
    },
    hasGo: spawnSync('go', ['version'], { stdio: 'ignore', timeout: 15_000 }).status === 0,
  };
}

/** Finds (or builds) each binary in `specs`; resolves to their paths by name. Throws {@link BinaryNotFoundError}. */
export async function ensureBinaries(
  specs: readonly BinarySpec[],
  options: { cacheDir: string; log?: (line: string) => void; probes?: BinaryProbes },
): Promise<Record<string, string>> {
  const log = options.log ?? ((line: string) => console.error(line));
  const probes = options.probes ?? machineProbes();
  const paths: Record<string, string> = {};
  // Builds of different modules run at once (downloads of one overlap the compile of the other); builds from the
  // same module run one after the other, the later reusing what the first compiled.
  const byModule = new Map<string, Promise<void>>();
  for (const spec of specs) {
    const found = lookupBinary(spec, options.cacheDir, probes);
    if (found.kind === 'missing') throw new BinaryNotFoundError(found.message);
    if (found.kind === 'found') {
      paths[spec.name] = found.path;
      continue;
    }
    const before = byModule.get(spec.mainModule) ?? Promise.resolve();
    byModule.set(
      spec.mainModule,
      before.then(async () => {
        paths[spec.name] = await buildBinary(spec, found.path, log);
      }),
    );
  }
  await Promise.all(byModule.values());
  return paths;
}

/**
 * What cluster mode runs: the Temporal server, its SQL tool and the UI server (found or built), PostgreSQL (found,
 * or installed with apt-get), and MinIO unless `minio` is false.
 */
export async function ensureClusterBinaries(options: {
  cacheDir: string;
  minio?: boolean;
  log?: (line: string) => void;
  probes?: BinaryProbes;
}): Promise<ClusterBinaries> {
  const log = options.log ?? ((line: string) => console.error(line));
  const withMinio = options.minio ?? true;
  const [paths, postgres] = await Promise.all([
    ensureBinaries(
      CLUSTER_BINARIES.filter((spec) => withMinio || spec !== MINIO),
      { cacheDir: options.cacheDir, log, ...(options.probes ? { probes: options.probes } : {}) },
    ),
    ensurePostgres(log),
  ]);
  return {
    temporalServer: paths[TEMPORAL_SERVER.name]!,
    sqlTool: paths[TEMPORAL_SQL_TOOL.name]!,
    uiServer: paths[TEMPORAL_UI_SERVER.name]!,
    ...(withMinio ? { minio: paths[MINIO.name]! } : {}),
    postgres,
  };
}

async function main(): Promise<void> {
  const settings = loadSettings();
  const names = process.argv.slice(2);
  const started = Date.now();
  if (names.includes('cluster')) {
    const binaries = await ensureClusterBinaries({ cacheDir: settings.cacheDir });
    const { postgres, ...rest } = binaries;
    for (const [name, path] of Object.entries(rest)) console.error(`[setup] ${name}: ${path}`);
    console.error(`[setup] postgres: ${postgres.postgres}`);
  } else {
    const specs =
      names.length === 0
        ? [...BINARIES, TEMPORAL_SERVER_VERSIONING]
        : BINARIES.filter((spec) => names.includes(spec.name));
    const paths = await ensureBinaries(specs, { cacheDir: settings.cacheDir });
    for (const [name, path] of Object.entries(paths)) console.error(`[setup] ${name}: ${path}`);
  }
  console.error(`[setup] ready in ${formatDuration(Date.now() - started)}`);
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
