/**
 * The agent's compactions inside its workflow, run through the pipeline of activities (compaction-pipeline.ts).
 *
 * Blocking: prepare, store and commit run before the model call that needs them. In the background (policy
 * `backgroundRatio`, the soft threshold; background-compaction.ts): prepare and store run while the agent keeps
 * working, and the result is committed at the next step boundary, in front of what the agent added meanwhile. One
 * compaction at a time: a blocking one (the hard trigger, a forced one, an overflow) first waits for the one in the
 * background and commits it. Drafts kept for review instead of applied: reviews.ts.
 */
import { ActivityFailure } from '@temporalio/workflow';
import { revertContext, STEP_OPTIONS } from './activities.ts';
import type { Trigger } from '../engine/trigger.ts';
import type { CompactInput } from '../contract/inputs.ts';
import type { CompactResult, RevertResult } from '../contract/results.ts';
import { BackgroundCompaction } from './background-compaction.ts';
import type { ApplyOutcome } from '../contract/compaction-activities.ts';
import type { Prepared } from '../contract/state.ts';
import { commit, ended, prepare, skippedOf, skippedResult, stepOf, store, violated } from './compaction-pipeline.ts';
import type { Conversation } from './conversation.ts';
import type { Inbox } from './inbox.ts';
import { Reviews } from './reviews.ts';
import { requestFixedTokensOf } from '../contract/pins.ts';
import { showCompaction } from './visibility.ts';

/** The agent's compactions: blocking ones, and the one in the background. */
export class Compactions {
  /** The compaction in the background, if one runs or waits to be committed. */
  readonly background: BackgroundCompaction;
  /** Drafts for review, and automatic compactions that wait for one (policy `review.automatic`). */
  readonly reviews: Reviews;
  private readonly conversation: Conversation;

  constructor(conversation: Conversation, inbox: Inbox) {
    this.conversation = conversation;
    this.background = new BackgroundCompaction(conversation);
    this.reviews = new Reviews(conversation, inbox, this.background);
  }

  /**
   * Starts a compaction in the background when the soft threshold says so and none is running: it works on the
   * context as it is now, while the agent goes on. Called at step boundaries (the context then holds no
   * unanswered tool call).
   */
  startIfDue(): void {
    if (this.background.busy || this.reviews.awaiting) return; // one at a time: a draft waiting for review is the one

    const reason = this.conversation.backgroundDue();
    if (reason === undefined) return;
    const conversation = this.conversation;
    const job = this.background.begin(reason);
    void (async () => {
      try {
        const prepared = await prepare(conversation, 'background', conversation.tailSeq);
        if (!('skipped' in prepared) && this.reviews.automatic) {
          // Kept as a draft that waits for review while the agent goes on (policy `review.automatic`).
          job.outcome = { drafted: await this.reviews.keep(prepared, true) };
          ended(conversation);
          return;
        }
        const applied = 'skipped' in prepared ? undefined : await store(conversation, prepared);
        job.outcome =
          'skipped' in prepared
            ? prepared
            : 'noGain' in applied!
              ? skippedOf(applied)
              : { prepared, applied: applied! };
        if ('applied' in job.outcome) stepOf(conversation, job.seq, 'background', 'ready');
      } catch (error) {
        if (!(error instanceof ActivityFailure)) throw error;
        job.outcome = { failed: `background compaction ${job.seq} failed: ${error.message}` };
      }
    })();
  }

  /**
   * Runs one compaction now and commits it, after the one in the background (if any): `auto` then compacts only
   * if the trigger still fires.
   */
  async compact(
    trigger: Trigger,
    tailFromSeq: number,
    request: CompactInput = {},
    attempt = 1,
  ): Promise<CompactResult> {
    const settled = await this.background.settle();
    const conversation = this.conversation;
    if (trigger === 'auto' && this.reviews.automatic) return this.reviews.compactAutomatic(tailFromSeq, request);
    if (settled?.compacted && trigger === 'auto' && conversation.compactionDue() === undefined) return settled;
    try {
      const prepared = await prepare(conversation, trigger, tailFromSeq, request, attempt);
      const applied = 'skipped' in prepared ? undefined : await store(conversation, prepared);
      const skipped = 'skipped' in prepared ? prepared : 'noGain' in applied! ? skippedOf(applied) : undefined;
      if (skipped) {
        conversation.skipped(skipped.gate);
        ended(conversation);
        return skippedResult(skipped);
      }
      return await commit(conversation, prepared as Prepared, applied as ApplyOutcome);
    } catch (error) {
      ended(conversation); // failed: the agent's loop records why
      throw error;
    }
  }

  /**
   * Restores the context as it was before event `toEvent` (after the compaction in the background, if any, is
   * committed), with every message stored since after it: an event of its own (docs/compaction.md, Revert).
   */
  async revert(toEvent: number): Promise<RevertResult> {
    await this.background.settle();
    const conversation = this.conversation;
    const { state } = conversation;
    const seq = (state.compactions ?? 0) + 1;
    const startedAt = Date.now();
    const outcome = await revertContext.executeWithOptions(
      { ...STEP_OPTIONS, summary: `revert ${seq}: the context before event ${toEvent}` },
      [
        {
          ...conversation.life,
          seq,
          toEvent,
          context: [...state.messages],
          ...(state.ledger ? { ledger: state.ledger } : {}),
          tailFromSeq: conversation.tailSeq,
          lastSeq: conversation.tailSeq - 1,
          counting: conversation.counting,
          fixedTokens: requestFixedTokensOf(state),
          policy: state.policy!,
          window: conversation.window,
          at: new Date(Date.now()).toISOString(),
          startedAt,
        },
      ],
    );
    conversation.reverted({ ...outcome, ledger: outcome.ledger });
    showCompaction(state, outcome.event, conversation.progress);
    const problems = conversation.coverage();
    if (problems.length > 0) await violated(conversation, `reverting to before event ${toEvent}`, problems);
    return { reverted: true, reason: outcome.event.reason, event: outcome.event };
  }

  /** Checks the coverage invariant on the context as it is sent now; a break is reported (docs/compaction.md). */
  async checkBeforeCall(replyId: string): Promise<void> {
    const problems = this.conversation.coverage();
    if (problems.length > 0) await violated(this.conversation, `before the model call for ${replyId}`, problems);
  }
}
