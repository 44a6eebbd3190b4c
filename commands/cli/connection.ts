/**
 * The CLI's way to Temporal: a client per command, how it waits for an Update, and the exit code of each failure an
 * agent command meets (a missing or closed agent, a refused or failed Update).
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { readInt } from '../../config/settings.ts';
import { connectClient, loadTemporalTarget } from '../../config/temporal.ts';
import { agentHandle, AgentClosedError } from '../../client/agents.ts';
import { AgentUpdateError } from '../../client/update-errors.ts';
import { DEFAULT_RECONNECT_TIMEOUT_MS, DEFAULT_WORKER_TIMEOUT_MS } from '../../client/updates.ts';
import type { UpdateWaitOptions } from '../../client/updates.ts';
import { InvalidInputError } from '../../contract/inputs.ts';
import { FAILURE } from '../../contract/failures.ts';
import type { FailureType } from '../../contract/failures.ts';
import { CliExit, EXIT, UsageError } from './parse.ts';

/** The exit code and wording of each failure an Update reports (contract/failures.ts); any other is an error. */
const UPDATE_FAILURES: Partial<Record<FailureType, { exit: number; prefix: string }>> = {
  [FAILURE.turnFailed]: { exit: EXIT.error, prefix: 'the turn failed' },
  [FAILURE.compactionFailed]: { exit: EXIT.error, prefix: 'the compaction failed' },
  [FAILURE.agentClosed]: { exit: EXIT.closed, prefix: 'rejected' },
  [FAILURE.invalidInput]: { exit: EXIT.error, prefix: 'rejected' },
};

/**
 * Runs `fn` with a client of the Temporal target (config/addresses.ts: TEMPORAL_ADDRESS, a chosen profile,
 * LONGRUN_TEMPORAL_PORT, …), closed afterwards. A server that does not answer is exit 1 naming the variable that
 * pointed there and what to do (TemporalNotAnsweringError).
 */
export async function withClient<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await connectClient(loadTemporalTarget());
  try {
    return await fn(client);
  } finally {
    await client.connection.close();
  }
}

/**
 * Maps Temporal errors about a missing or finished agent to exit codes a script can trust. An Update to a completed
 * workflow also reports "not found", so a not-found agent is described to tell the two apart.
 */
export async function classify(error: unknown, agentId: string): Promise<unknown> {
  if (error instanceof AgentClosedError) return new CliExit(EXIT.closed, error.message);
  // Input the workflow would refuse or drop, found before anything was sent.
  if (error instanceof InvalidInputError) return new UsageError(error.message);
  if (error instanceof WorkflowNotFoundError) {
    const status = await withClient((client) => agentHandle(client, agentId).describe()).then(
      (description) => description.status.name,
      () => undefined,
    );
    if (status && status !== 'RUNNING') {
      return new CliExit(EXIT.closed, `agent ${agentId} is closed (${status.toLowerCase()})`);
    }
    return new CliExit(EXIT.unknownAgent, `unknown agent ${agentId}: no such workflow (start it with longrun start)`);
  }
  if (error instanceof AgentUpdateError) {
    const known = UPDATE_FAILURES[error.type as FailureType];
    return new CliExit(known?.exit ?? EXIT.error, `${known?.prefix ?? 'rejected'}: ${error.message}`);
  }
  return error;
}

/** How the CLI waits for an Update: progress lines on stderr, the timeouts from the environment (`longrun help`). */
export function waitOptions(): UpdateWaitOptions {
  return {
    onProgress: (line) => console.error(`longrun: ${line}`),
    workerTimeoutMs: readInt(process.env, 'LONGRUN_WORKER_TIMEOUT_MS', DEFAULT_WORKER_TIMEOUT_MS, 1_000, 86_400_000),
    reconnectTimeoutMs: readInt(
      process.env,
      'LONGRUN_RECONNECT_TIMEOUT_MS',
      DEFAULT_RECONNECT_TIMEOUT_MS,
      1_000,
      86_400_000,
    ),
  };
}
