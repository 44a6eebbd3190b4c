/**
 * When an agent's run hands over to a new one (continue-as-new): when the server suggests it, or before the run
 * passes longrun's own budget, well under Temporal's hard limits (history terminated at 50 MB / 51,200 events;
 * at most 2,000 Updates per run). Pure, so it is deterministic in workflow code and unit-tested.
 */

export interface HistoryBudget {
  /** History events per run. */
  maxEvents: number;
  /** History bytes per run. */
  maxBytes: number;
  /** Updates handled per run (the server refuses more than 2,000 per run). */
  maxUpdates: number;
  /**
   * A run lives at least this long (ms) before it hands over. The server delays the first workflow task of a run
   * that continued-as-new sooner than its minimum interval (1 s), and Server 1.29 lets that delay accumulate over
   * back-to-back short runs (temporalio/temporal#11839): measured here, a stall during which the agent answered
   * nothing (how long: see BENCHMARKS.md, Figures from earlier sessions).
   */
  minRunMs: number;
}

/** The budget of runs recorded before patch `history-budget-2mib` (an agent's events average about 300 B). */
export const DEFAULT_HISTORY_BUDGET: HistoryBudget = {
  maxEvents: 8_000,
  maxBytes: 8 * 1024 * 1024,
  maxUpdates: 1_500,
  minRunMs: 2_000,
};

/**
 * The budget since patch `history-budget-2mib`: a run also hands over at 2 MiB of history, so every run of a long
 * agent stays under 2 MB (at 8,000 events of about 300 B, a run reached 2.4 MB). What a run's replay costs a worker
 * (a cache miss, a new worker) is bounded by it.
 */
export const HISTORY_BUDGET: HistoryBudget = { ...DEFAULT_HISTORY_BUDGET, maxBytes: 2 * 1024 * 1024 };

/** The patch that brings {@link HISTORY_BUDGET} to a run (workflows/agent.ts `handOver`). */
export const HISTORY_BUDGET_PATCH = 'history-budget-2mib';

export interface RunProgress {
  suggested: boolean;
  historyLength: number;
  historySize: number;
  updates: number;
  /** How long this run has lived (workflow time). */
  runAgeMs: number;
  /**
   * A release asks for a new run: a `renew` Signal for a run that began before its rollout, or (Worker Deployment
   * Versioning) the server's word that the agent's deployment has a new current version. At once, however young
   * the run.
   */
  renew?: string;
}

/** Why the run should continue as new now, or undefined to go on. */
export function continueAsNewReason(
  run: RunProgress,
  budget: HistoryBudget = DEFAULT_HISTORY_BUDGET,
): string | undefined {
  // A release's ask comes once per run (its rollout asks only runs that began before it): not held back by the
  // minimum age, which guards against back-to-back hand-overs of a growing history.
  if (run.renew !== undefined) return run.renew;
  if (run.runAgeMs < budget.minRunMs) return undefined;
  if (run.suggested) return 'suggested by the server';
  if (run.historyLength >= budget.maxEvents)
    return `history has ${run.historyLength} events (budget ${budget.maxEvents})`;
  if (run.historySize >= budget.maxBytes) return `history has ${run.historySize} bytes (budget ${budget.maxBytes})`;
  if (run.updates >= budget.maxUpdates) return `${run.updates} updates in this run (budget ${budget.maxUpdates})`;
  return undefined;
}
