/**
 * When an agent's run hands over to a new one (continue-as-new), and the hand-over inside a turn.
 *
 * Between inputs, the agent's loop (agent.ts) hands over when {@link HandOver.reason} says so. Inside a turn, a run
 * that reaches its history budget at a step boundary hands over there too (patch {@link TURN_HANDS_OVER_PATCH}), so
 * that a turn of thousands of steps keeps every run under the budget: the turn's own `send` Update and every queued
 * Update are answered `handedOver` (an Update cannot outlive its run: their clients send them again, with the same
 * ids), and the next run goes on with the turn at its next step, the queued inputs after it (workflows/inbox.ts).
 */
import { allHandlersFinished, condition, makeContinueAsNewFunc, patched, workflowInfo } from '@temporalio/workflow';
import type { AgentInput, RenewInput } from '../contract/inputs.ts';
import type { AgentCarry, AgentState, TurnCarry } from '../contract/state.ts';
import type { BackgroundCompaction } from './background-compaction.ts';
import { continueAsNewReason, HISTORY_BUDGET, HISTORY_BUDGET_PATCH } from './continue-as-new.ts';
import type { Conversation } from './conversation.ts';
import type { Inbox, Pending } from './inbox.ts';

/**
 * Since this patch, a turn hands over at a step boundary when its run reaches the history budget. Histories of
 * before go on with the turn in the same run (a turn's history was unbounded: one of 10,000 steps would pass
 * Temporal's 51,200 events). Asked only where a turn would hand over.
 */
export const TURN_HANDS_OVER_PATCH = 'turn-hands-over';

/** What a turn is told of the hand-over: at each of its step boundaries, whether the run hands over there. */
export interface TurnHandOver {
  /**
   * At a step boundary with every tool call answered: when the run is due to hand over, the hand-over (it never
   * resolves: the run continues as new), to await; else undefined, at once. `turn` is where the next run goes on.
   * Synchronous until it hands over: an `await` on every step would move the order of the commands that recorded
   * histories pin (workflows/inbox.ts `run`).
   */
  atBoundary(turn: Omit<TurnCarry, 'updateId'>): Promise<never> | undefined;
}

/** The agent's workflow, by its signature (importing it would make a cycle of the modules). */
type AgentWorkflow = (input: AgentInput, carry?: AgentCarry) => Promise<AgentState>;

/**
 * Continues the agent as new with `carry`. The next run starts on the current release's workers: under Worker
 * Deployment Versioning a run is pinned to the version it began on, and `AUTO_UPGRADE` lets the next one begin on the
 * deployment's current version (then it is pinned there); on unversioned workers the option does nothing.
 */
export function continueAgent(input: AgentInput, carry: AgentCarry): Promise<never> {
  return makeContinueAsNewFunc<AgentWorkflow>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(input, carry);
}

export class HandOver {
  private readonly input: AgentInput;
  private readonly conversation: Conversation;
  private readonly inbox: Inbox;
  private readonly background: BackgroundCompaction;

  constructor(input: AgentInput, conversation: Conversation, inbox: Inbox, background: BackgroundCompaction) {
    this.input = input;
    this.conversation = conversation;
    this.inbox = inbox;
    this.background = background;
  }

  /** Why a release asks for a new run, once it has: a `renew` Signal for this run (see {@link renew}). */
  private renewal: string | undefined;

  /**
   * A `renew` Signal: this run hands over at its next safe point if it began before `since` (a run that began later,
   * or a `since` that is not a time, ignores it).
   */
  renew(input: RenewInput | undefined): void {
    const since = Date.parse(String(input?.since));
    if (Number.isNaN(since) || workflowInfo().runStartTime.getTime() >= since) return;
    this.renewal = `renewed for a release (a run of before ${new Date(since).toISOString()})`;
  }

  /** Why this run should hand over to a new one now (continue-as-new), if it should. */
  reason(): string | undefined {
    const info = workflowInfo();
    const run = {
      suggested: info.continueAsNewSuggested,
      historyLength: info.historyLength,
      historySize: info.historySize,
      updates: this.inbox.updatesThisRun,
      runAgeMs: Date.now() - info.runStartTime.getTime(),
      renew: info.targetWorkerDeploymentVersionChanged
        ? 'a new version of the worker deployment is current'
        : this.renewal,
    };
    // Asked only when the 2 MiB budget would hand over and the older one would not: a run recorded before the patch
    // has no marker there and goes on to its older budget, as it did.
    const reason = continueAsNewReason(run);
    if (reason !== undefined || continueAsNewReason(run, HISTORY_BUDGET) === undefined) return reason;
    return patched(HISTORY_BUDGET_PATCH) ? continueAsNewReason(run, HISTORY_BUDGET) : undefined;
  }

  /**
   * The hand-over of the turn that `pending` opened (a `send`; undefined for a turn a steer opened, whose Update was
   * answered at its first step). Not while inputs wait for the boundary (they join this run's next step first), while
   * a compaction runs in the background (a later boundary hands over, once it is committed) or while the agent
   * closes. So nothing this run does is awaited between the decision and the continue-as-new: no Update can come to
   * this run in between (one that comes with the same activation is answered `handedOver` too).
   */
  inTurn(pending: Pending | undefined): TurnHandOver {
    return {
      atBoundary: (turn) => {
        if (this.inbox.boundaryQueued || this.inbox.closing || this.background.busy) return undefined;
        const reason = this.reason();
        if (reason === undefined || !patched(TURN_HANDS_OVER_PATCH)) return undefined;
        const updateId = pending?.updateId;
        return this.now(reason, { ...turn, ...(updateId !== undefined ? { updateId } : {}) }, pending);
      },
    };
  }

  /**
   * Continues as new inside the turn (no compaction in the background: see {@link inTurn}): every waiting Update (the
   * turn's own, `own`, first) is answered `handedOver` (again for any that comes meanwhile), then the next run takes
   * the turn and the queued inputs. A close that comes meanwhile goes too.
   */
  private async now(reason: string, turn: TurnCarry, own: Pending | undefined): Promise<never> {
    const { inbox, conversation } = this;
    const handedOver = { handedOver: { reason, turn: turn.turn, step: turn.step } };
    for (;;) {
      inbox.handOver(handedOver, own);
      await condition(() => allHandlersFinished() || inbox.unanswered || inbox.closing);
      if (!inbox.unanswered) break;
    }
    conversation.handedOver(`${reason}, in turn ${turn.turn} before step ${turn.step}`);
    const inFlight = { turn, queued: inbox.queuedInputs(), ...(inbox.closing ? { closing: true as const } : {}) };
    return continueAgent(this.input, { ...conversation.carry(inbox.carried()), inFlight });
  }
}
