/**
 * Builds a pinned Go binary into the per-user cache with `go install`, showing progress, since a first build takes
 * minutes. The build goes to a scratch folder first and is renamed into place, so an interrupted build never leaves
 * a half-written binary where the lookup would find it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, createWriteStream, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { BinarySpec } from './binaries.ts';
import { tailOfFile } from './logs.ts';

const PROGRESS_EVERY_MS = 15_000;

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** Runs `go install module@version` with GOBIN in the cache; resolves to the binary's path. */
export async function buildBinary(spec: BinarySpec, target: string, log: (line: string) => void): Promise<string> {
  const finalDir = dirname(target);
  const scratch = `${finalDir}.building-${process.pid}`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const logPath = `${scratch}.log`;
  const logFile = createWriteStream(logPath);
  const started = Date.now();
  log(
    `[setup] building ${spec.name} ${spec.version} with go install (first time only; ${spec.typicalBuild} on 2 cores)`,
  );
  log(`[setup]   into ${finalDir}; go's output: ${logPath}`);

  let downloads = 0;
  const child = spawn('go', ['install', `${spec.module}@${spec.version}`], {
    env: { ...process.env, GOBIN: scratch },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const onData = (chunk: Buffer) => {
    logFile.write(chunk);
    downloads += (chunk.toString().match(/go: downloading /g) ?? []).length;
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const timer = setInterval(() => {
    const phase = downloads > 0 ? `${downloads} modules downloaded, compiling` : 'compiling';
    log(`[setup]   ${spec.name}: ${formatDuration(Date.now() - started)} elapsed (${phase})`);
  }, PROGRESS_EVERY_MS);

  const code = await new Promise<number | null>((resolveExit, reject) => {
    child.on('error', reject);
    child.on('close', resolveExit);
  }).finally(() => clearInterval(timer));
  await new Promise<void>((done) => logFile.end(done));

  const built = join(scratch, spec.installedAs ?? spec.name);
  if (code !== 0 || !existsSync(built)) {
    throw new Error(
      `go install ${spec.module}@${spec.version} failed (exit ${code}). Last lines of ${logPath}:\n${tailOfFile(logPath, 20)}`,
    );
  }
  if (spec.installedAs) renameSync(built, join(scratch, spec.name));
  if (spec.moduleFiles) copyModuleFiles(spec, scratch);
  mkdirSync(dirname(finalDir), { recursive: true });
  if (existsSync(target)) {
    // Another process finished the same build first; keep theirs.
    rmSync(scratch, { recursive: true, force: true });
  } else {
    rmSync(finalDir, { recursive: true, force: true });
    renameSync(scratch, finalDir);
  }
  rmSync(logPath, { force: true });
  log(`[setup] built ${spec.name} in ${formatDuration(Date.now() - started)}`);
  return target;
}

/** Copies `spec.moduleFiles` from the module (in Go's module cache, where the install just put it) into `dir`. */
function copyModuleFiles(spec: BinarySpec, dir: string): void {
  const target = `${spec.mainModule}@${spec.version}`;
  const result = spawnSync('go', ['mod', 'download', '-json', target], { encoding: 'utf8', timeout: 300_000 });
  let moduleDir: string | undefined;
  try {
    moduleDir = (JSON.parse(result.stdout) as { Dir?: string }).Dir;
  } catch {
    moduleDir = undefined;
  }
  if (result.status !== 0 || !moduleDir) {
    throw new Error(`go mod download -json ${target} failed: ${(result.stderr || result.stdout).trim()}`);
  }
  for (const file of spec.moduleFiles ?? []) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(join(moduleDir, file), join(dir, file));
  }
}
