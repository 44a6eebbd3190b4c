/**
 * How `longrun replay` leaves nothing of its agent in a namespace it did not start: every run of the agent's
 * workflow is deleted, then the namespace's list is watched until it no longer shows any of them. Temporal deletes
 * a run and updates its visibility list asynchronously (slowly on a loaded dev server), so a deletion is only
 * reported done once the list is empty; past the bound the report says which runs are still listed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { agentWorkflowId } from '../contract/agent.ts';

/** How long the namespace's list is watched for the deleted runs to leave it. */
export const UNLISTED_BOUND_MS = 60_000;
/** How often the list is read meanwhile. */
export const UNLISTED_POLL_MS = 250;
/** A wait longer than this is reported on the log, and again every UNLISTED_PROGRESS_MS. */
export const UNLISTED_QUIET_MS = 3_000;
export const UNLISTED_PROGRESS_MS = 5_000;

/** What became of the replay's agent in the namespace it ran in. */
export interface AgentDeletion {
  namespace: string;
  workflowId: string;
  /** The namespace's list showed no run of the workflow when the wait ended. */
  gone: boolean;
  /** Runs deleted (the chain of continued-as-new runs and any other the list showed). */
  deletedRuns: number;
  /** Run ids the namespace's list still showed when the wait ended (none when gone, or when `error` is set). */
  stillListed: string[];
  /** Why the deletion could not be done or checked (a server error); the agent may be left then. */
  error?: string;
  /** How long the list was watched after the first deletion. */
  waitedMs: number;
}

export interface UnlistedWait {
  /** The run ids the list shows now. */
  list: () => Promise<string[]>;
  /** Deletes these runs again (a run that had just closed can be written to the list again after its deletion). */
  deleteAgain: (runIds: string[]) => Promise<void>;
  /** What the waiting lines name, e.g. `workflow agent-x in namespace default`. */
  what: string;
  log: (line: string) => void;
  boundMs?: number;
  pollMs?: number;
  quietMs?: number;
  progressMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Reads the list until it is empty or the bound passes, deleting again what it still shows; says on the log what it
 * waits for once the wait passes `quietMs`, then every `progressMs`. Returns the run ids still listed at the end
 * (none: gone) and how long it watched.
 *
 * @example
 * const { stillListed } = await waitUntilUnlisted({ list, deleteAgain, what: 'workflow agent-x', log: console.error });
 */
export async function waitUntilUnlisted(wait: UnlistedWait): Promise<{ stillListed: string[]; waitedMs: number }> {
  const boundMs = wait.boundMs ?? UNLISTED_BOUND_MS;
  const pollMs = wait.pollMs ?? UNLISTED_POLL_MS;
  const quietMs = wait.quietMs ?? UNLISTED_QUIET_MS;
  const progressMs = wait.progressMs ?? UNLISTED_PROGRESS_MS;
  const now = wait.now ?? Date.now;
  const pause = wait.sleep ?? ((ms: number) => sleep(ms));
  const started = now();
  let nextProgress = started + quietMs;
  for (;;) {
    const listed = await wait.list();
    const waitedMs = now() - started;
    if (listed.length === 0 || waitedMs >= boundMs) return { stillListed: listed, waitedMs };
    if (now() >= nextProgress) {
      wait.log(
        `[replay] deleted ${wait.what}; waiting for the namespace's list to drop its ${listed.length} run(s) ` +
          `(Temporal updates it asynchronously): ${seconds(waitedMs)} of at most ${seconds(boundMs)}`,
      );
      nextProgress = now() + progressMs;
    }
    await pause(Math.min(pollMs, Math.max(0, started + boundMs - now())));
    await wait.deleteAgain(listed);
  }
}

/**
 * Deletes every run of the agent's workflow (Temporal terminates a running one first): the runs continue-as-new
 * chained, walked back from the current one through each run's start, and any other the list shows; then waits
 * (waitUntilUnlisted) until the namespace's list shows none of them.
 */
export async function deleteAgentRuns(
  client: Client,
  agentId: string,
  log: (line: string) => void,
  wait: Partial<Pick<UnlistedWait, 'boundMs' | 'pollMs' | 'quietMs' | 'progressMs'>> = {},
): Promise<AgentDeletion> {
  const workflowId = agentWorkflowId(agentId);
  const namespace = client.options.namespace;
  const deleted = new Set<string>();
  const deleteRun = async (runId: string) => {
    await client.workflowService
      .deleteWorkflowExecution({ namespace, workflowExecution: { workflowId, runId } })
      .catch((error: unknown) => {
        if (!(error instanceof Error && /not found/i.test(error.message))) throw error;
      });
    deleted.add(runId);
  };
  const runs = new Set<string>();
  let runId = await client.workflow
    .getHandle(workflowId)
    .describe()
    .then((description) => description.runId)
    .catch(() => undefined);
  while (runId && !runs.has(runId)) {
    runs.add(runId);
    const history = await client.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution: { workflowId, runId },
      maximumPageSize: 1,
    });
    runId = history.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  for (const run of runs) await deleteRun(run);
  const list = async () => {
    const listed: string[] = [];
    for await (const execution of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
      listed.push(execution.runId);
    }
    return listed;
  };
  const { stillListed, waitedMs } = await waitUntilUnlisted({
    ...wait,
    list,
    deleteAgain: async (listed) => {
      for (const run of listed) await deleteRun(run);
    },
    what: `workflow ${workflowId} in namespace ${namespace}`,
    log,
  });
  return { namespace, workflowId, gone: stillListed.length === 0, deletedRuns: deleted.size, stillListed, waitedMs };
}

/**
 * deleteAgentRuns that never throws: a server error is the deletion's `error`. Says on the log when the agent is not
 * gone (the report says it too; the log is what a failed replay leaves).
 */
export async function deleteReplayAgent(
  client: Client,
  agentId: string,
  log: (line: string) => void,
): Promise<AgentDeletion> {
  const deletion = await deleteAgentRuns(client, agentId, log).catch((error: unknown): AgentDeletion => ({
    namespace: client.options.namespace,
    workflowId: agentWorkflowId(agentId),
    gone: false,
    deletedRuns: 0,
    stillListed: [],
    waitedMs: 0,
    error: error instanceof Error ? error.message : String(error),
  }));
  if (!deletion.gone) log(`[replay] ${renderDeletion(deletion)}`);
  return deletion;
}

/** The deletion as one line: gone, or what is still listed and what to do about it. */
export function renderDeletion(d: AgentDeletion): string {
  if (d.error !== undefined) {
    return (
      `replay agent NOT DELETED: could not delete workflow ${d.workflowId} from namespace ${d.namespace} ` +
      `(${d.error}): delete it yourself`
    );
  }
  if (d.gone) {
    return (
      `replay agent deleted: ${d.deletedRuns} run(s) of workflow ${d.workflowId}, none listed in namespace ` +
      `${d.namespace} (after ${seconds(d.waitedMs)})`
    );
  }
  return (
    `replay agent NOT GONE: namespace ${d.namespace} still lists ${d.stillListed.length} run(s) of workflow ` +
    `${d.workflowId} ${seconds(d.waitedMs)} after deleting them (Temporal may still drop them; else delete workflow ` +
    `${d.workflowId} yourself)`
  );
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
