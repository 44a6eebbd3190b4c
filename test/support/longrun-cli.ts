/** The `longrun` command (bin/longrun.js) as a child process, against a harness's server and the shared MinIO. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';

import { PROJECT_ROOT } from '../../config/settings.ts';
import { sharedStackEnv } from './harness.ts';
import type { Harness } from './harness.ts';

/** What a run of the CLI gave: its exit code, output and how long it took. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** A line of a stack trace: the CLI's output has none (errors are one line). */
export const STACK_TRACE = /^\s+at /m;

/** The environment the CLI needs to reach the harness's server and task queue and the shared MinIO, then `extra`. */
export function cliEnv(h: Harness, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...sharedStackEnv(),
    TEMPORAL_ADDRESS: h.temporal.connectionOptions.address,
    TEMPORAL_NAMESPACE: h.temporal.namespace,
    LONGRUN_TASK_QUEUE: h.taskQueue,
    LONGRUN_MODEL: 'gpt-4o-mini',
    ...extra,
  };
}

/**
 * Runs bin/longrun.js with `input` on its stdin and its stdout and stderr on pipes (as `longrun … | jq` does).
 * Asynchronous: the worker serving it runs in the test's own process.
 */
export function runLongrun(
  args: string[],
  options: { env: NodeJS.ProcessEnv; input?: string; timeoutMs?: number },
): Promise<CliRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [join(PROJECT_ROOT, 'bin/longrun.js'), ...args],
      { encoding: 'utf8', env: options.env, timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
      (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr, ms: Date.now() - started }),
    );
    child.stdin!.end(options.input ?? '');
  });
}
