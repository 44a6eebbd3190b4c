/**
 * What the agent's handlers hand to its loop: inputs queued in arrival order, Updates applied once (across
 * continue-as-new too), and the counts the handlers check (the turn a message would open, Updates this run).
 */
import { ApplicationFailure, condition, currentUpdateInfo } from '@temporalio/workflow';
import type { ActivityFailure } from '@temporalio/workflow';
import type {
  AgentCarry,
  ApproveInput,
  DiscardInput,
  DiscardResult,
  CompactInput,
  CompactResult,
  RevertInput,
  RevertResult,
  SendInput,
  SendResult,
  UpdateResult,
} from '../contract/agent.ts';
import { appliedFromCarry, appliedResult, rememberApplied } from './applied-updates.ts';

/** An input waiting for the loop; an Update's handler waits for its `result` or `failure`. */
export type Pending = { failure?: string; failureType?: string; cause?: ActivityFailure } & (
  | { kind: 'send'; input: SendInput; result?: SendResult }
  | { kind: 'compact'; input: CompactInput; result?: CompactResult }
  | { kind: 'revert'; input: RevertInput; result?: RevertResult }
  | { kind: 'approve'; input: ApproveInput; result?: CompactResult }
  | { kind: 'discard'; input: DiscardInput; result?: DiscardResult }
);

export class Inbox {
  private readonly queue: Pending[] = [];
  private readonly applied;
  /** A close was asked for: the loop ends once the queue is empty. */
  closing = false;
  /** Updates this run has handled (the server refuses more than 2,000 per run). */
  updatesThisRun = 0;
  /** Messages queued or being answered. */
  private openSends = 0;

  constructor(carried: AgentCarry['applied'] | undefined) {
    this.applied = appliedFromCarry(carried);
  }

  /** The turn a new message would open, the agent having finished `turns`. */
  nextTurn(turns: number): number {
    return turns + this.openSends + 1;
  }

  get waiting(): boolean {
    return this.queue.length > 0;
  }

  /** Inputs waiting for the loop (the one it is on not counted). */
  get queued(): number {
    return this.queue.length;
  }

  /** The result of the current Update if it was applied already (delivered again); throws if it was let go. */
  appliedResult(): UpdateResult | undefined {
    return appliedResult(this.applied, currentUpdateInfo()?.id);
  }

  /** Queues a Signal's input (checked by its handler). */
  push(pending: Pending): void {
    if (pending.kind === 'send') this.openSends++;
    this.queue.push(pending);
  }

  /**
   * Applies an Update once: one delivered again (to the next run, after continue-as-new) is answered with its
   * result; otherwise it is queued and awaited. A failure is the Update's, of `failureType`, with the activity's
   * failure as its cause.
   */
  async applyOnce<R extends UpdateResult>(pending: Pending, failureType: string): Promise<R> {
    this.updatesThisRun++;
    const updateId = currentUpdateInfo()?.id;
    const done = appliedResult(this.applied, updateId);
    if (done) return done as R;
    this.push(pending);
    await condition(() => pending.result !== undefined || pending.failure !== undefined);
    if (pending.failure !== undefined) {
      throw ApplicationFailure.create({
        message: pending.failure,
        type: pending.failureType ?? failureType,
        cause: pending.cause,
      });
    }
    if (updateId !== undefined) rememberApplied(this.applied, updateId, pending.result!);
    return pending.result as R;
  }

  /** The next input, in arrival order. */
  take(): Pending | undefined {
    return this.queue.shift();
  }

  /** An `approve` or `discard` is queued (the decision a draft of an automatic compaction waits for). */
  get decisionQueued(): boolean {
    return this.queue.some(isDecision);
  }

  /**
   * Takes the first queued `approve` or `discard` out of its turn: the draft of an automatic compaction waits for it
   * while the inputs before it (messages, a turn blocked on the draft) wait for the draft.
   */
  takeDecision(): (Pending & { kind: 'approve' | 'discard' }) | undefined {
    const at = this.queue.findIndex(isDecision);
    return at === -1 ? undefined : (this.queue.splice(at, 1)[0] as Pending & { kind: 'approve' | 'discard' });
  }

  /** The loop is done with `pending` (answered or failed). */
  done(pending: Pending): void {
    if (pending.kind === 'send') this.openSends--;
  }

  /** The applied Updates the next run carries. */
  carried(): AgentCarry['applied'] {
    return [...this.applied];
  }
}

function isDecision(pending: Pending): boolean {
  return pending.kind === 'approve' || pending.kind === 'discard';
}

/** The innermost cause of an activity failure, with the activity's name: what a user needs to fix it. */
export function failureMessage(error: ActivityFailure): string {
  let cause: Error = error;
  while (cause.cause instanceof Error) cause = cause.cause;
  return `${error.activityType ?? 'activity'} failed: ${cause.message}`;
}
