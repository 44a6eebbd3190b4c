/** The `longrun` command (bin/longrun.js) as a child process, against a harness's server and the shared MinIO. */
import { execFile, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
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

/** A command in its own process group, as a shell runs it; its output collected; Ctrl-C sent to the group. */
export function inTerminal(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(command, args, { cwd: PROJECT_ROOT, env, detached: true });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (out.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out.stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    out,
    exited,
    ctrlC: () => process.kill(-child.pid!, 'SIGINT'),
    until: async (pattern: RegExp, stream: 'stdout' | 'stderr', timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(out[stream])) {
        if (Date.now() > deadline) throw new Error(`no ${String(pattern)} in ${stream}:\n${JSON.stringify(out)}`);
        await sleep(50);
      }
    },
    kill: () => child.kill('SIGKILL'),
  };
}
