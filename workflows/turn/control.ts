/**
 * What reaches a turn while it works: the step in flight, which an `interrupt` cancels (the model call or
 * the tool calls, as activity cancellations), and the tool calls waiting for a person's approval, which
 * `approveTool` / `denyTool` answer. One per run, made by the agent's loop (agent.ts); the turn (turn.ts) runs its
 * steps through it and the handlers (handlers.ts) reach it.
 *
 * Runs recorded before reachable turns took every input after the turn in progress and ran their activities in the
 * workflow's root scope; where a run's first turn begins, the {@link REACHABLE_TURNS_PATCH} marker decides, once per
 * run, which way the whole run goes (docs/changing-workflows.md), so their commands, and the order of them, stay.
 */
import { ActivityFailure, CancellationScope, isCancellation, patched } from '@temporalio/workflow';
import type { ApprovalProgress } from '../../contract/progress.ts';

export const REACHABLE_TURNS_PATCH = 'reachable-turns';

/**
 * Since this patch, an activity an interrupt asked to cancel that fails instead ends the step as interrupted, as its
 * cancellation does. That happens when its worker died before it could confirm: the server then ends the attempt at
 * its heartbeat timeout and, a cancel being asked, starts no other. Histories of before failed the turn there.
 */
export const INTERRUPT_ENDS_FAILED_STEP_PATCH = 'interrupt-ends-failed-step';

/** A tool call of the turn in progress waiting for approval, and what became of it. */
export interface WaitingCall extends ApprovalProgress {
  decision?: { approved: boolean; reason?: string; by: 'person' | 'timeout' };
}

/** Longest arguments a waiting call shows, in characters. */
const SHOWN_ARGUMENT_CHARS = 2_000;

export class TurnControl {
  /** Whether this run's turns are reachable (decided by the patch marker where its first turn begins). */
  private reachable: boolean | undefined;
  /** The scopes of the step's activities in flight (the model call, or each of the step's tool calls). */
  private readonly inFlight = new Set<CancellationScope>();
  /** The calls waiting for approval, by call id, in the order they began to wait. */
  readonly waiting = new Map<string, WaitingCall>();

  /** Decides, once per run, whether turns are reachable (new runs: yes; runs recorded before: no). */
  get reachableTurns(): boolean {
    this.reachable ??= patched(REACHABLE_TURNS_PATCH);
    return this.reachable;
  }

  /**
   * Runs a step's activities so that an interrupt can cancel them (their promises reject with a cancellation; each
   * activity waits for its worker to confirm, so none writes after the turn moved on). Runs of before: as they were.
   */
  run<T>(work: () => Promise<T>): Promise<T> {
    if (!this.reachable) return work();
    const scope = new CancellationScope({ cancellable: true });
    this.inFlight.add(scope);
    const done = scope.run(work);
    const left = () => void this.inFlight.delete(scope);
    void done.then(left, left);
    return done;
  }

  /** The scopes of the step's delegations in flight (child agents waited for: workflows/delegation.ts). */
  private readonly delegations = new Set<CancellationScope>();
  /** A close was asked for: no new delegation starts, the ones waited for are cancelled. */
  closing = false;

  /**
   * Runs a delegation (starting a child agent and waiting for it) so that an interrupt, or a close of the agent,
   * cancels it: the child is asked to cancel and the promise rejects with a cancellation at once.
   */
  runDelegation<T>(work: () => Promise<T>): Promise<T> {
    const scope = new CancellationScope({ cancellable: true });
    this.inFlight.add(scope);
    this.delegations.add(scope);
    const done = scope.run(work);
    const left = () => {
      this.inFlight.delete(scope);
      this.delegations.delete(scope);
    };
    void done.then(left, left);
    return done;
  }

  /** The agent is closing: the delegations waited for are cancelled (no other work is; nothing at all in runs of before). */
  closeDelegations(): void {
    this.closing = true;
    for (const scope of this.delegations) scope.cancel();
  }

  /** An interrupt arrived: the step's activities in flight are cancelled (the turn notices at once). */
  cancelInFlight(): void {
    for (const scope of this.inFlight) scope.cancel();
  }

  /** A call begins to wait for approval. */
  waitFor(call: WaitingCall): void {
    this.waiting.set(call.callId, call);
  }

  /** A call's wait ended (decided, timed out, interrupted). */
  stopWaiting(callId: string): void {
    this.waiting.delete(callId);
  }

  /** The calls waiting, oldest first, as the `progress` query shows them. */
  awaiting(): ApprovalProgress[] {
    return [...this.waiting.values()]
      .filter((call) => call.decision === undefined)
      .map(({ decision: _, ...call }) => call);
  }
}

/** A call's arguments as a waiting call shows them. */
export function shownArguments(args: string): string {
  return args.length > SHOWN_ARGUMENT_CHARS ? `${args.slice(0, SHOWN_ARGUMENT_CHARS)}…` : args;
}

/** Whether an activity's failure is its cancellation (an interrupt cancelled it). */
export function wasCancelled(error: unknown): boolean {
  return isCancellation(error) || (error instanceof ActivityFailure && isCancellation(error.cause));
}

/**
 * Whether a step's activity that did not complete ended by the interrupt queued (`interruptQueued`): its
 * cancellation, or any failure of an activity the interrupt asked to cancel (its worker gone before it confirmed:
 * {@link INTERRUPT_ENDS_FAILED_STEP_PATCH}). Without an interrupt queued, a cancellation is the workflow's own.
 */
export function endedByInterrupt(error: unknown, interruptQueued: boolean): boolean {
  if (!interruptQueued) return false;
  if (wasCancelled(error)) return true;
  return error instanceof ActivityFailure && patched(INTERRUPT_ENDS_FAILED_STEP_PATCH);
}
