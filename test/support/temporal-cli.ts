/** The temporal CLI (the pinned binary the setup built) against a harness's server, with JSON output. */
import { execFile } from 'node:child_process';
import { loadSettings } from '../../config/settings.ts';
import { AGENT_WORKFLOW, agentWorkflowId } from '../../contract/agent.ts';
import { TEMPORAL } from '../../stack/binaries.ts';
import { ensureBinaries } from '../../stack/setup.ts';
import type { Harness } from './harness.ts';

/** A function that runs `temporal <args> --address … --namespace … -o json` and resolves to its stdout. */
export async function temporalCli(h: Pick<Harness, 'temporal'>): Promise<(...args: string[]) => Promise<string>> {
  const binary = (await ensureBinaries([TEMPORAL], { cacheDir: loadSettings().cacheDir })).temporal!;
  const connection = ['--address', String(h.temporal.connectionOptions.address), '--namespace', h.temporal.namespace];
  // Asynchronous: the worker answering the CLI runs in the test's own process.
  return (...args) =>
    new Promise((resolve, reject) => {
      execFile(binary, [...args, ...connection, '-o', 'json'], { timeout: 30_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
      );
    });
}

/** `temporal workflow start` of an agent on `taskQueue` with `input` as its JSON input; resolves to the CLI's stdout. */
export function startWithTemporalCli(
  temporal: (...args: string[]) => Promise<string>,
  taskQueue: string,
  input: { agentId: string } & Record<string, unknown>,
): Promise<string> {
  return temporal(
    'workflow',
    'start',
    '--type',
    AGENT_WORKFLOW,
    '--task-queue',
    taskQueue,
    '--workflow-id',
    agentWorkflowId(input.agentId),
    '--input',
    JSON.stringify(input),
  );
}
