/**
 * Worker processes with the slow tools of tool-worker.ts, for tests that kill a worker while it works: each started
 * against the shared stack on one task queue and model, its tool's log (TOOL_LOG, created empty) and release file
 * (TOOL_RELEASE) in the test's folder; `stop` ends the ones still running (SIGTERM) and waits for them.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnWorker } from './harness.ts';

export function toolWorkers(dir: string, taskQueue: string) {
  const toolLog = join(dir, 'tool.log');
  const release = join(dir, 'release');
  const workers: ChildProcessWithoutNullStreams[] = [];
  writeFileSync(toolLog, '');
  return {
    /** Each run of `slow_side_effect` appends its call id here. */
    toolLog,
    /** `slow_side_effect` waits until this file exists. */
    release,
    /** Starts one more worker on the model at `modelUrl`; resolves once it polls. */
    async start(modelUrl: string): Promise<ChildProcessWithoutNullStreams> {
      const child = await spawnWorker('test/support/tool-worker.ts', {
        LONGRUN_TASK_QUEUE: taskQueue,
        LONGRUN_DATA_DIR: dir,
        OPENAI_API_KEY: 'test-key',
        OPENAI_BASE_URL: modelUrl,
        TOOL_LOG: toolLog,
        TOOL_RELEASE: release,
      });
      workers.push(child);
      return child;
    },
    /** Stops the workers still running and waits until they exited. */
    async stop(): Promise<void> {
      const running = workers.filter((w) => w.exitCode === null && w.signalCode === null);
      const exits = running.map((w) => new Promise((resolve) => w.on('exit', resolve)));
      for (const worker of running) worker.kill('SIGTERM');
      await Promise.all(exits);
    },
  };
}
