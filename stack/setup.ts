/**
 * The setup step: make sure the Temporal CLI and MinIO binaries are at hand, building them once if needed.
 * Both README commands run it (`npm test` runs this file; `npm start` calls {@link ensureBinaries}).
 *
 *   node stack/setup.ts            # ensure both
 *   node stack/setup.ts temporal   # ensure one
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { loadSettings } from '../config/settings.ts';
import { BINARIES, BinaryNotFoundError, lookupBinary } from './binaries.ts';
import type { BinaryProbes, BinarySpec } from './binaries.ts';
import { buildBinary, formatDuration } from './build.ts';

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
  const builds: Promise<void>[] = [];
  for (const spec of specs) {
    const found = lookupBinary(spec, options.cacheDir, probes);
    if (found.kind === 'missing') throw new BinaryNotFoundError(found.message);
    if (found.kind === 'found') {
      paths[spec.name] = found.path;
      continue;
    }
    // Both builds run at once: downloads of one overlap the compile of the other.
    builds.push(
      buildBinary(spec, found.path, log).then((path) => {
        paths[spec.name] = path;
      }),
    );
  }
  await Promise.all(builds);
  return paths;
}

async function main(): Promise<void> {
  const settings = loadSettings();
  const names = process.argv.slice(2);
  const specs = names.length === 0 ? BINARIES : BINARIES.filter((spec) => names.includes(spec.name));
  const started = Date.now();
  const paths = await ensureBinaries(specs, { cacheDir: settings.cacheDir });
  for (const [name, path] of Object.entries(paths)) console.error(`[setup] ${name}: ${path}`);
  console.error(`[setup] ready in ${formatDuration(Date.now() - started)}`);
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
