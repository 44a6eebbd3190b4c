/**
 * The stack the bench's agent, stream and control steps run on: the embedded Temporal dev server and MinIO
 * (ephemeral, bucket `longrun-bench`). `npm run bench` starts one for the whole run and passes it to each step
 * (run.ts); a step run alone (`--only`, its own entry point, a test) starts one of its own and stops it after
 * ({@link onBenchStack}). Each step brings its own model on loopback and its own in-process worker.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadSettings } from '../config/settings.ts';
import { localTemporalTarget } from '../config/temporal.ts';
import type { TemporalTarget } from '../config/temporal.ts';
import { BINARIES } from '../stack/binaries.ts';
import { startEmbeddedStack } from '../stack/index.ts';
import { ensureBinaries } from '../stack/setup.ts';
import type { S3Target } from '../storage/s3.ts';
import { onStop } from './lifecycle.ts';

/** Where a bench step's agents run: the Temporal target and the S3 bucket. */
export interface BenchStack {
  temporal: TemporalTarget;
  s3: S3Target;
}

/**
 * Starts the embedded stack (its `stack: Temporal …, MinIO …` line logged), registered with lifecycle.ts so a stop
 * signal stops it. The Temporal runtime is installed first without its own SIGINT / SIGTERM handling (it would stop
 * the workers and leave the bench waiting for them forever); one already installed (a test file that ran a worker
 * first) is kept.
 */
export async function startBenchStack(log: (line: string) => void): Promise<BenchStack & { stop(): Promise<void> }> {
  try {
    Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  } catch {
    // installed before
  }
  const settings = loadSettings({ ...process.env, LONGRUN_S3_BUCKET: 'longrun-bench' });
  const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir });
  const stack = await startEmbeddedStack({ mode: 'ephemeral', settings, binaries });
  const stackStopped = onStop(() => stack.stop());
  log(`stack: Temporal ${stack.temporal!.address}, MinIO ${stack.minio!.endpoint}`);
  return {
    temporal: localTemporalTarget(stack.temporal!.address, stack.temporal!.namespace),
    s3: stack.minio!.target,
    async stop() {
      await stack.stop();
      stackStopped();
    },
  };
}

/** Runs `use` on `shared`, or, without one, on a stack of its own started before and stopped after. */
export async function onBenchStack<T>(
  log: (line: string) => void,
  shared: BenchStack | undefined,
  use: (stack: BenchStack) => Promise<T>,
): Promise<T> {
  if (shared) return use(shared);
  const own = await startBenchStack(log);
  try {
    return await use(own);
  } finally {
    await own.stop();
  }
}
