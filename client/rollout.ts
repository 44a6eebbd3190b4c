/**
 * Rolling a release out to the agents that live on (docs/operations.md, Rolling out a release). Once the release's
 * workers run, every running agent whose run began before the rollout is asked to hand over to a new run (the
 * `renew` Signal): idle or waiting on a review draft at once, in a turn at its next step, with a tool call waiting
 * for approval once it is answered. A new run begins on the release's code: on unversioned workers the code that
 * polls now; under Worker Deployment Versioning (Server 1.30 or later) the deployment's current version.
 *
 * Afterwards no open run began before the release, so the old branches of the patches before it serve only closed
 * runs (docs/changing-workflows.md). An idle agent otherwise keeps its run until its history grows: for months.
 */
import type { Client } from '@temporalio/client';
import { AGENT_WORKFLOW, AGENT_WORKFLOW_ID_PREFIX, agentWorkflowId, renewSignal } from '../contract/agent.ts';
import { awaitingApproval } from './control.ts';

export interface RolloutOptions {
  /** Only the agents on this task queue (default: every agent of the namespace). */
  taskQueue?: string;
  /** Runs that began before this are renewed (default: now). */
  since?: Date;
  /** How long to wait until every agent is on a new run (default 10 minutes); 0: ask once and return. */
  timeoutMs?: number;
  /** How often to look (default 1 s). */
  pollMs?: number;
  /** How often to ask again an agent still on an old run (default 15 s: one that began under 2 s before waits). */
  askAgainMs?: number;
  /** Each look's progress. */
  onProgress?: (progress: RolloutProgress) => void;
}

/** An agent still on a run of before, and why, as far as the client can tell. */
export interface RolloutWaiting {
  agentId: string;
  runStartedAt: Date;
  why: string;
}

export interface RolloutProgress {
  /** When the rollout began: runs that began before are renewed. */
  since: Date;
  /** Agents asked to renew. */
  asked: number;
  /** Of those, the ones on a new run now (or closed). */
  renewed: number;
  /** The ones still on a run of before. */
  waiting: RolloutWaiting[];
  elapsedMs: number;
}

const DEFAULT_TIMEOUT_MS = 10 * 60_000;
/** Signals sent at once. */
const CONCURRENCY = 8;
/** Waiting agents explained per look (each costs a query). */
const EXPLAINED = 10;

/** Asks every agent on a run of before `since` to renew, and waits until none is left (or the timeout). */
export async function rollOut(client: Client, options: RolloutOptions = {}): Promise<RolloutProgress> {
  const since = options.since ?? new Date();
  const began = Date.now();
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const asked = new Set<string>();
  let lastAsked = Number.NEGATIVE_INFINITY;
  for (;;) {
    const old = await runsBefore(client, since, options.taskQueue);
    // Asked at the first look, then again while on a run of before (one reopened meanwhile is asked too).
    if (Date.now() - lastAsked >= (options.askAgainMs ?? 15_000)) {
      await askToRenew(client, old, since);
      lastAsked = Date.now();
    }
    for (const run of old) asked.add(run.agentId);
    const waiting = await explain(client, old);
    const progress = {
      since,
      asked: asked.size,
      renewed: asked.size - old.length,
      waiting,
      elapsedMs: Date.now() - began,
    };
    options.onProgress?.(progress);
    if (old.length === 0 || Date.now() - began >= timeoutMs) return progress;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 1_000));
  }
}

interface OldRun {
  agentId: string;
  runStartedAt: Date;
}

/** The running agents whose run began before `since` (visibility: the current run's own start time). */
async function runsBefore(client: Client, since: Date, taskQueue?: string): Promise<OldRun[]> {
  const query = [
    `WorkflowType = '${AGENT_WORKFLOW}'`,
    `ExecutionStatus = 'Running'`,
    `StartTime < '${since.toISOString()}'`,
    ...(taskQueue !== undefined ? [`TaskQueue = '${taskQueue.replaceAll("'", "\\'")}'`] : []),
  ].join(' AND ');
  const runs: OldRun[] = [];
  for await (const run of client.workflow.list({ query })) {
    if (!run.workflowId.startsWith(AGENT_WORKFLOW_ID_PREFIX)) continue;
    runs.push({ agentId: run.workflowId.slice(AGENT_WORKFLOW_ID_PREFIX.length), runStartedAt: run.startTime });
  }
  return runs;
}

async function askToRenew(client: Client, runs: OldRun[], since: Date): Promise<void> {
  for (let i = 0; i < runs.length; i += CONCURRENCY) {
    await Promise.all(
      runs.slice(i, i + CONCURRENCY).map(
        (run) =>
          client.workflow
            .getHandle(agentWorkflowId(run.agentId))
            .signal(renewSignal, { since: since.toISOString() })
            .catch(() => undefined), // closed meanwhile: nothing to renew
      ),
    );
  }
}

/** Why the first agents still wait: a tool call waiting for approval, or their next safe point not come yet. */
async function explain(client: Client, runs: OldRun[]): Promise<RolloutWaiting[]> {
  return Promise.all(
    runs.map(async (run, i) => {
      if (i >= EXPLAINED) return { ...run, why: 'not asked why (only the first are)' };
      const approvals = await awaitingApproval(client, run.agentId).catch((error: unknown) => error as Error);
      if (approvals instanceof Error) return { ...run, why: `no answer to a query: ${approvals.message}` };
      if (approvals.length > 0) {
        const until = approvals.map((a) => a.until).sort()[0];
        return { ...run, why: `a tool call waits for approval (until ${until}); it renews once that is answered` };
      }
      return { ...run, why: 'its next safe point has not come yet (a turn hands over at its next step)' };
    }),
  );
}
