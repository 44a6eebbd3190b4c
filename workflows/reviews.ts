/**
 * Draft review: a compaction prepared (compaction-pipeline.ts) and kept as a draft instead of stored, until it is
 * approved (stored and committed, its summary maybe edited), discarded, or, for the draft of an automatic compaction
 * (policy `review.automatic`), timed out (`review.onTimeout`). `compact --review` asks for a draft; under the policy,
 * an automatic compaction makes one and waits for its decision. A draft is applied only after the compaction in the
 * background is settled: a compaction prepared after a draft replaces it.
 */
import { ActivityFailure, condition, patched } from '@temporalio/workflow';
import { publishStream, reviseSummary, STEP_OPTIONS, STORE_OPTIONS, storeDraft } from './activities.ts';
import type { Trigger } from '../engine/trigger.ts';
import { SUMMARY_PREVIEW_CHARS } from '../contract/results.ts';
import type { ApproveInput, CompactInput, DiscardInput } from '../contract/inputs.ts';
import type { CompactResult, DiscardResult, Draft } from '../contract/results.ts';
import type { Prepared } from '../contract/state.ts';
import type { BackgroundCompaction } from './background-compaction.ts';
import { commit, ended, prepare, skippedResult, store } from './compaction-pipeline.ts';
import type { Conversation } from './conversation.ts';
import { DraftRefused, failureMessage } from './inbox.ts';
import type { Decision, Inbox } from './inbox.ts';
import { showDetails, showProgress } from './visibility.ts';

/**
 * Since this patch a discarded draft (by a person, or at its review timeout) is said in the live stream, by a
 * `publishStream` activity (no other activity sees a discard); runs of before scheduled nothing there. Release 0.1.0
 * (docs/changing-workflows.md).
 */
export const DISCARD_IN_STREAM_PATCH = 'discard-in-stream';

/**
 * Says in the live stream that draft `info` was discarded: an activity the workflow does not wait for (a discard
 * answers at once), best effort like every stream write.
 */
function streamDiscarded(conversation: Conversation, info: Omit<Draft, 'summary'>): void {
  if (!patched(DISCARD_IN_STREAM_PATCH)) return;
  const { id, seq, tokensBefore, tokensAfter } = info;
  const item = { kind: 'compaction-outcome' as const, id: `${id}-discarded`, seq, outcome: 'discarded' as const };
  void publishStream
    .executeWithOptions({ ...STORE_OPTIONS, summary: `stream: ${id} discarded` }, [
      { ...conversation.life, items: [{ ...item, draft: id, tokensBefore, tokensAfter }] },
    ])
    .catch(() => undefined);
}

/** The agent's drafts: made, kept, waited for, approved, discarded, timed out. */
export class Reviews {
  private readonly conversation: Conversation;
  /** Where the `approve` or `discard` a draft of an automatic compaction waits for is queued. */
  private readonly inbox: Inbox;
  /** Settled before a draft is applied. */
  private readonly background: BackgroundCompaction;

  constructor(conversation: Conversation, inbox: Inbox, background: BackgroundCompaction) {
    this.conversation = conversation;
    this.inbox = inbox;
    this.background = background;
  }

  /** Automatic compactions wait for review (policy `review.automatic`). */
  get automatic(): boolean {
    return this.conversation.state.policy?.review?.automatic === true;
  }

  /** The draft of an automatic compaction waiting for review, if one does. */
  get awaiting(): NonNullable<Conversation['state']['draft']> | undefined {
    const draft = this.conversation.state.draft;
    return draft?.info.waits ? draft : undefined;
  }

  /** Milliseconds (workflow time) until the waiting draft times out, if one waits (0 once it has). */
  leftMs(): number | undefined {
    const waits = this.awaiting?.info.waits;
    return waits ? Math.max(0, Date.parse(waits.until) - Date.now()) : undefined;
  }

  /**
   * Plans and summarizes as a forced compaction does, but keeps the result as a draft for review (stored in S3 with
   * its summary text) instead of applying it; the result carries the draft.
   */
  async review(request: CompactInput): Promise<CompactResult> {
    await this.background.settle();
    try {
      return await this.draft('forced', this.conversation.tailSeq, request);
    } finally {
      ended(this.conversation); // the draft is made (or not): nothing runs any more
    }
  }

  /**
   * An automatic compaction that waits for review (policy `review.automatic`; the background one settled by the
   * caller): first the draft that waits already (made in the background, or earlier) is settled; then, if compaction
   * is still due, a new draft is made and waited for: approved (applied), discarded (automatic compaction pauses), or
   * timed out (`onTimeout`).
   */
  async compactAutomatic(tailFromSeq: number, request: CompactInput): Promise<CompactResult> {
    const conversation = this.conversation;
    let result: CompactResult | undefined;
    while (this.awaiting) result = (await this.settleWaiting(true)) ?? result;
    if (result && conversation.compactionDue() === undefined) return result;
    try {
      result = await this.draft('auto', tailFromSeq, request);
    } finally {
      ended(conversation);
    }
    while (this.awaiting) result = (await this.settleWaiting(true)) ?? result;
    return result;
  }

  private async draft(trigger: Trigger, tailFromSeq: number, request: CompactInput): Promise<CompactResult> {
    const conversation = this.conversation;
    const prepared = await prepare(conversation, trigger, tailFromSeq, request);
    if ('skipped' in prepared) {
      conversation.skipped(prepared.gate);
      return skippedResult(prepared);
    }
    return this.keep(prepared, trigger !== 'forced');
  }

  /** Keeps a prepared compaction as a draft (in the state and in S3); `waits`: for review, up to the policy's timeout. */
  async keep(prepared: Prepared, waits: boolean): Promise<CompactResult> {
    const conversation = this.conversation;
    const { state } = conversation;
    const { plan, summary, made } = prepared;
    const info: Omit<Draft, 'summary'> = {
      id: `draft-${(state.drafts ?? 0) + 1}`,
      seq: prepared.seq,
      createdAt: new Date(Date.now()).toISOString(),
      reason: plan.reason,
      steps: plan.steps,
      planKey: plan.planKey!,
      tokensBefore: plan.tokensBefore,
      tokensAfter: plan.tokensAfter,
      ...(summary
        ? { summaryKey: summary.record.key, summaryTokens: summary.record.tokens, facts: summary.facts }
        : {}),
      madeFor: { compactions: made.compactions, messages: made.messages },
    };
    const text = await storeDraft.executeWithOptions(
      { ...STEP_OPTIONS, summary: `store ${info.id} for review (compaction ${info.seq})` },
      [{ ...conversation.life, seq: info.seq, draft: info }],
    );
    // The state keeps what applies it, not the summarizer's span (the plan in S3 has it).
    const { summary: _span, ...kept } = plan;
    const draftPrepared: Prepared = { ...prepared, plan: kept };
    if (!waits) {
      conversation.drafted(info, draftPrepared);
      const draft: Draft = { ...info, ...(text !== undefined ? { summary: text } : {}) };
      return { compacted: false, reason: `${info.id} awaits review: approve or discard it`, draft };
    }
    const review = state.policy!.review!;
    const waiting: Omit<Draft, 'summary'> = {
      ...info,
      ...(text !== undefined ? { summaryPreview: text.slice(0, SUMMARY_PREVIEW_CHARS) } : {}),
      waits: {
        until: new Date(Date.now() + review.timeoutSeconds * 1000).toISOString(),
        timeoutSeconds: review.timeoutSeconds,
        onTimeout: review.onTimeout,
      },
    };
    conversation.drafted(waiting, draftPrepared);
    const draft: Draft = { ...waiting, ...(text !== undefined ? { summary: text } : {}) };
    const then = review.onTimeout === 'apply' ? 'applied' : 'discarded';
    const reason = `${info.id} awaits review until ${waiting.waits!.until} (then ${then}): approve or discard it`;
    return { compacted: false, reason, draft };
  }

  /**
   * Settles the draft of an automatic compaction that waits for review, when it can be now: an `approve` or
   * `discard` queued for it (taken out of its turn and answered), its timeout reached (or the agent closing: then
   * as at the timeout), or its context changed (stale: dropped). With `block`, waits for one of these first.
   * Called at step boundaries, by the idle loop, and by an automatic compaction that waits.
   */
  async settleWaiting(block: boolean): Promise<CompactResult | undefined> {
    const conversation = this.conversation;
    const waiting = this.awaiting;
    if (!waiting) return undefined;
    const { info } = waiting;
    const stale = conversation.staleFor(waiting.prepared.made);
    if (stale) {
      conversation.draftEnded(`${info.id} refused as stale`);
      showProgress(conversation.state, conversation.progress);
      return { compacted: false, reason: `${info.id} not applied: it is stale, ${stale}` };
    }
    const inbox = this.inbox;
    let timedOut = this.leftMs() === 0;
    if (block && !timedOut && !inbox.decisionQueued && !inbox.closing) {
      const left = this.leftMs()!;
      const then = info.waits!.onTimeout === 'apply' ? 'applied' : 'discarded';
      timedOut = !(await condition(() => inbox.decisionQueued || inbox.closing, left, {
        summary: `review of ${info.id} (compaction ${info.seq}): ${then} after ${Math.round(left / 1000)} s undecided`,
      }));
    }
    const decision = inbox.takeDecision();
    if (decision) return this.decide(decision);
    if (timedOut || inbox.closing) return this.timedOut(info);
    return undefined;
  }

  /**
   * Answers an `approve` or `discard` of the waiting draft (its Update waits for it) through the inbox, as the agent's
   * loop would; a failed approve leaves the draft waiting (another approve, a discard or the timeout). Not `async`,
   * and a discard's answer comes as a resolved promise: a wrapper would add ticks to this path (see Inbox.run).
   */
  private decide(pending: Decision): Promise<CompactResult | undefined> {
    const failed = (why: string) => this.conversation.compactionFailed(why);
    if (pending.kind === 'approve') return this.inbox.run(pending, () => this.approve(pending.input), failed);
    const discarded = this.inbox.runNow(pending, () => this.discard(pending.input), failed);
    return Promise.resolve(
      discarded && {
        compacted: false,
        reason: `${discarded.discarded} discarded: automatic compaction paused until ${discarded.pausedUntil} tokens`,
      },
    );
  }

  /** The waiting draft's timeout: applied as made, or discarded (policy `review.onTimeout`). */
  private async timedOut(info: Omit<Draft, 'summary'>): Promise<CompactResult> {
    const conversation = this.conversation;
    const { onTimeout, timeoutSeconds } = info.waits!;
    const after = `after the review timeout (${timeoutSeconds} s)`;
    if (onTimeout === 'discard') {
      conversation.draftEnded(`${info.id} discarded ${after}`);
      streamDiscarded(conversation, info);
      const until = conversation.pausedAfterDiscard(`${info.id} discarded ${after}`);
      showProgress(conversation.state, conversation.progress);
      return { compacted: false, reason: `${info.id} discarded ${after}: automatic compaction paused until ${until}` };
    }
    try {
      return await this.approve({ draft: info.id }, `applied ${after}, not reviewed`);
    } catch (error) {
      if (error instanceof DraftRefused) return { compacted: false, reason: error.message };
      if (!(error instanceof ActivityFailure)) throw error;
      // Not applied: the draft ends (the next trigger makes a new one), and the failure is the agent's last error.
      const why = failureMessage(error);
      conversation.compactionFailed(why);
      if (conversation.state.draft?.info.id === info.id) conversation.draftEnded(`${info.id} not applied: ${why}`);
      showProgress(conversation.state, conversation.progress);
      return { compacted: false, reason: `${info.id} not applied ${after}: ${why}` };
    }
  }

  /**
   * Applies the pending draft (after the compaction in the background, if any, is committed), its summary replaced
   * by `edit.summary` when given (its facts checked and pinned by the reviseSummary activity). A draft made for a
   * context that has changed since is refused ({@link DraftRefused}).
   */
  async approve(edit: ApproveInput, timedOut?: string): Promise<CompactResult> {
    await this.background.settle();
    const conversation = this.conversation;
    const pending = conversation.state.draft;
    if (!pending || pending.info.id !== edit.draft) {
      throw new DraftRefused(`${edit.draft} is not pending (${conversation.state.lastDraft ?? 'no draft is'})`);
    }
    const { info } = pending;
    const stale = conversation.staleFor(pending.prepared.made);
    if (stale) {
      conversation.draftEnded(`${info.id} refused as stale`);
      if (info.waits) showProgress(conversation.state, conversation.progress); // no longer awaiting review
      throw new DraftRefused(`${info.id} is stale, made for a context that has changed: ${stale}`);
    }
    let prepared = pending.prepared;
    if (edit.summary !== undefined) {
      if (!prepared.summary)
        throw new DraftRefused(`summary: ${info.id} summarizes nothing, there is no summary to edit`);
      const summary = await reviseSummary.executeWithOptions(
        { ...STEP_OPTIONS, summary: `check the edited summary of ${info.id} (${edit.summary.length} chars)` },
        [
          {
            ...conversation.life,
            seq: info.seq,
            planKey: info.planKey,
            text: edit.summary,
            summary: prepared.summary,
            counting: conversation.counting,
          },
        ],
      );
      prepared = { ...prepared, summary };
    }
    const how = timedOut ?? `approved${edit.summary !== undefined ? ' with an edited summary' : ''}`;
    // The event of an automatic compaction's draft says how it was decided.
    // Approved by a person (or by the review timeout, as the policy says): applied even if it grows the context.
    const applied = await store(conversation, prepared, info.waits ? `${info.id} ${how}` : undefined, true).catch(
      (error: unknown) => {
        ended(conversation);
        throw error;
      },
    );
    conversation.draftEnded(`${info.id} ${how}`);
    if ('noGain' in applied) {
      ended(conversation); // not reached: an approved draft is applied whatever its size
      return { compacted: false, reason: applied.reason };
    }
    return commit(conversation, prepared, applied);
  }

  /**
   * Drops the pending draft. The draft of an automatic compaction pauses automatic compaction until the context has
   * grown (else the next step would make the same draft again).
   */
  discard(request: DiscardInput): DiscardResult {
    const conversation = this.conversation;
    const pending = conversation.state.draft;
    if (!pending || pending.info.id !== request.draft) {
      throw new DraftRefused(`${request.draft} is not pending (${conversation.state.lastDraft ?? 'no draft is'})`);
    }
    conversation.draftEnded(`${request.draft} discarded`);
    streamDiscarded(conversation, pending.info);
    if (!pending.info.waits) {
      showDetails(conversation.state, conversation.progress);
      return { discarded: request.draft };
    }
    const pausedUntil = conversation.pausedAfterDiscard(`${request.draft} discarded`);
    showProgress(conversation.state, conversation.progress);
    return { discarded: request.draft, pausedUntil };
  }
}
