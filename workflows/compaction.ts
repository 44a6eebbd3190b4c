/**
 * Compaction inside the agent workflow: a pipeline of activities, **prepare** (plan → summarize) and **store**
 * (apply: the replacements, the removed segment, the manifest, the event), whose result the conversation
 * **commits** at once. The decisions themselves are made by the engine inside activities, so their results are
 * recorded in history; the gate before every model call is the conversation's `compactionDue`.
 *
 * Blocking: the three run before the model call that needs them. In the background (policy `backgroundRatio`, the
 * soft threshold): prepare and store run while the agent keeps working, and the result is committed at the next step
 * boundary, in front of what the agent added meanwhile. One compaction at a time: a blocking one (the hard trigger, a
 * forced one, an overflow) first waits for the one in the background and commits it.
 */
import { ActivityFailure, condition, proxyActivities } from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type * as activities from '../activities/index.ts';
import type { ApplyOutcome } from '../contract/activities.ts';
import { cooldownAfter } from '../engine/trigger.ts';
import type { Gate, Trigger } from '../engine/trigger.ts';
import { recordKey } from '../contract/records.ts';
import { SUMMARY_PREVIEW_CHARS, summaryOfEvent } from '../contract/results.ts';
import type { ApproveInput, CompactInput, DiscardInput } from '../contract/inputs.ts';
import type { CompactResult, DiscardResult, Draft, RevertResult } from '../contract/results.ts';
import type { Prepared } from '../contract/state.ts';
import { FAILURE } from '../contract/failures.ts';
import type { Conversation } from './conversation.ts';
import { failureMessage, inTraceOf } from './inbox.ts';
import type { Inbox, Pending } from './inbox.ts';
import type { CompactionStep } from '../contract/progress.ts';
import { showCompaction, showDetails, showProgress } from './visibility.ts';

type Activities = ReturnType<typeof activities.createActivities>;

/**
 * Planning and applying: storage and CPU only, retried until they succeed (or fail for good on a bug). They
 * heartbeat every 2 s: a worker that dies in the middle is noticed within 10 s, not at the 2-minute timeout.
 */
const STEP_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
};
/** The summary call: heartbeating, retried with backoff a few times; then the plan's fallback runs instead. */
const SUMMARIZE_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '2 seconds', maximumInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: 4 },
};

const { planCompaction, applyCompaction, reportViolation, revertContext, storeDraft, reviseSummary } =
  proxyActivities<Activities>(STEP_OPTIONS);
const { summarizeSpan } = proxyActivities<Activities>(SUMMARIZE_OPTIONS);

/** A draft that cannot be approved or discarded (not pending, stale): the Update fails with this message. */
export class DraftRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DraftRefused';
  }
}

/** A plan that found nothing to do: why, and the gate it moved. */
export interface Skipped {
  skipped: string;
  gate?: Gate;
}

/** A compaction running in the background, and how it ended once it has. */
interface BackgroundJob {
  seq: number;
  outcome?: { prepared: Prepared; applied: ApplyOutcome } | Skipped | { failed: string } | { drafted: CompactResult };
}

/** The agent's compactions: blocking ones, and the one in the background. */
export class Compactions {
  private job: BackgroundJob | undefined;
  private readonly conversation: Conversation;
  /** Where the `approve` or `discard` a draft of an automatic compaction waits for is queued. */
  private readonly inbox: Inbox;

  constructor(conversation: Conversation, inbox: Inbox) {
    this.conversation = conversation;
    this.inbox = inbox;
  }

  /** Automatic compactions wait for review (policy `review.automatic`). */
  private get reviews(): boolean {
    return this.conversation.state.policy?.review?.automatic === true;
  }

  /** The draft of an automatic compaction waiting for review, if one does. */
  private get awaiting(): NonNullable<Conversation['state']['draft']> | undefined {
    const draft = this.conversation.state.draft;
    return draft?.info.waits ? draft : undefined;
  }

  /** Milliseconds (workflow time) until the waiting draft times out, if one waits (0 once it has). */
  reviewLeftMs(): number | undefined {
    const waits = this.awaiting?.info.waits;
    return waits ? Math.max(0, Date.parse(waits.until) - Date.now()) : undefined;
  }

  /** A compaction is running in the background. */
  get running(): boolean {
    return this.job !== undefined && this.job.outcome === undefined;
  }

  /** The background compaction has ended and waits to be committed (the loop wakes for it when idle). */
  get finished(): boolean {
    return this.job?.outcome !== undefined;
  }

  /**
   * Starts a compaction in the background when the soft threshold says so and none is running: it works on the
   * context as it is now, while the agent goes on. Called at step boundaries (the context then holds no
   * unanswered tool call).
   */
  startIfDue(): void {
    if (this.job || this.awaiting) return; // one at a time: a draft waiting for review is the one

    const reason = this.conversation.backgroundDue();
    if (reason === undefined) return;
    const conversation = this.conversation;
    const job: BackgroundJob = { seq: (conversation.state.compactions ?? 0) + 1 };
    this.job = job;
    conversation.backgroundStarted(job.seq, reason, new Date(Date.now()).toISOString());
    void (async () => {
      try {
        const prepared = await prepare(conversation, 'background', conversation.tailSeq);
        if (!('skipped' in prepared) && this.reviews) {
          // Kept as a draft that waits for review while the agent goes on (policy `review.automatic`).
          job.outcome = { drafted: await this.keepDraft(prepared, true) };
          ended(conversation);
          return;
        }
        job.outcome = 'skipped' in prepared ? prepared : { prepared, applied: await store(conversation, prepared) };
        if ('applied' in job.outcome) stepOf(conversation, job.seq, 'background', 'ready');
      } catch (error) {
        if (!(error instanceof ActivityFailure)) throw error;
        job.outcome = { failed: `background compaction ${job.seq} failed: ${error.message}` };
      }
    })();
  }

  /** Commits the background compaction if it has ended (never waits): at a step boundary, or when idle. */
  async commitIfFinished(): Promise<CompactResult | undefined> {
    const outcome = this.job?.outcome;
    if (!outcome) return undefined;
    this.job = undefined;
    const conversation = this.conversation;
    conversation.backgroundEnded();
    if ('failed' in outcome) {
      // The hard trigger still compacts before any call that needs it; nothing changed.
      conversation.compactionFailed(outcome.failed);
      ended(conversation);
      return { compacted: false, reason: outcome.failed };
    }
    if ('skipped' in outcome) {
      conversation.skipped(outcome.gate);
      ended(conversation);
      return { compacted: false, reason: outcome.skipped };
    }
    if ('drafted' in outcome) return outcome.drafted; // it waits for review (settleReview)
    const stale = conversation.staleFor(outcome.prepared.made);
    if (stale) {
      ended(conversation);
      return { compacted: false, reason: `background compaction ${outcome.prepared.seq} not applied: ${stale}` };
    }
    return commit(conversation, outcome.prepared, outcome.applied);
  }

  /** Waits for the background compaction, if one runs, and commits it. */
  async settle(): Promise<CompactResult | undefined> {
    if (!this.job) return undefined;
    const job = this.job;
    await condition(() => job.outcome !== undefined);
    return this.commitIfFinished();
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
    const settled = await this.settle();
    const conversation = this.conversation;
    if (trigger === 'auto' && this.reviews) return this.compactReviewed(tailFromSeq, request);
    if (settled?.compacted && trigger === 'auto' && conversation.compactionDue() === undefined) return settled;
    try {
      const prepared = await prepare(conversation, trigger, tailFromSeq, request, attempt);
      if ('skipped' in prepared) {
        conversation.skipped(prepared.gate);
        ended(conversation);
        return { compacted: false, reason: prepared.skipped };
      }
      return await commit(conversation, prepared, await store(conversation, prepared));
    } catch (error) {
      ended(conversation); // failed: the agent's loop records why
      throw error;
    }
  }

  /**
   * Plans and summarizes as a forced compaction does, but keeps the result as a draft for review (stored in S3 with
   * its summary text) instead of applying it; the result carries the draft.
   */
  async review(request: CompactInput): Promise<CompactResult> {
    await this.settle();
    try {
      return await this.draft('forced', this.conversation.tailSeq, request);
    } finally {
      ended(this.conversation); // the draft is made (or not): nothing runs any more
    }
  }

  /**
   * An automatic compaction that waits for review (policy `review.automatic`): first the draft that waits already
   * (made in the background, or earlier) is settled; then, if compaction is still due, a new draft is made and
   * waited for: approved (applied), discarded (automatic compaction pauses), or timed out (`onTimeout`).
   */
  private async compactReviewed(tailFromSeq: number, request: CompactInput): Promise<CompactResult> {
    const conversation = this.conversation;
    let result: CompactResult | undefined;
    while (this.awaiting) result = (await this.settleReview(true)) ?? result;
    if (result && conversation.compactionDue() === undefined) return result;
    try {
      result = await this.draft('auto', tailFromSeq, request);
    } finally {
      ended(conversation);
    }
    while (this.awaiting) result = (await this.settleReview(true)) ?? result;
    return result;
  }

  private async draft(trigger: Trigger, tailFromSeq: number, request: CompactInput): Promise<CompactResult> {
    const conversation = this.conversation;
    const prepared = await prepare(conversation, trigger, tailFromSeq, request);
    if ('skipped' in prepared) {
      conversation.skipped(prepared.gate);
      return { compacted: false, reason: prepared.skipped };
    }
    return this.keepDraft(prepared, trigger !== 'forced');
  }

  /** Keeps a prepared compaction as a draft (in the state and in S3); `waits`: for review, up to the policy's timeout. */
  private async keepDraft(prepared: Prepared, waits: boolean): Promise<CompactResult> {
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
  async settleReview(block: boolean): Promise<CompactResult | undefined> {
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
    let timedOut = this.reviewLeftMs() === 0;
    if (block && !timedOut && !inbox.decisionQueued && !inbox.closing) {
      const left = this.reviewLeftMs()!;
      timedOut = !(await condition(() => inbox.decisionQueued || inbox.closing, left));
    }
    const decision = inbox.takeDecision();
    if (decision) return this.decide(decision);
    if (timedOut || inbox.closing) return this.timedOut(info);
    return undefined;
  }

  /** Answers an `approve` or `discard` of the waiting draft (its Update waits for it), as the agent's loop would. */
  private async decide(pending: Pending & { kind: 'approve' | 'discard' }): Promise<CompactResult | undefined> {
    try {
      if (pending.kind === 'approve') {
        const approve = pending.input;
        return (pending.result = await inTraceOf(pending, () => this.approve(approve)));
      }
      const discarded = (pending.result = this.discard(pending.input));
      return {
        compacted: false,
        reason: `${discarded.discarded} discarded: automatic compaction paused until ${discarded.pausedUntil} tokens`,
      };
    } catch (error) {
      if (error instanceof DraftRefused) {
        pending.failure = error.message;
        pending.failureType = FAILURE.invalidInput;
        return undefined;
      }
      if (!(error instanceof ActivityFailure)) throw error;
      pending.failure = failureMessage(error); // the draft waits on: another approve, a discard or the timeout
      pending.cause = error;
      this.conversation.compactionFailed(pending.failure);
      return undefined;
    } finally {
      this.inbox.done(pending);
    }
  }

  /** The waiting draft's timeout: applied as made, or discarded (policy `review.onTimeout`). */
  private async timedOut(info: Omit<Draft, 'summary'>): Promise<CompactResult> {
    const conversation = this.conversation;
    const { onTimeout, timeoutSeconds } = info.waits!;
    const after = `after the review timeout (${timeoutSeconds} s)`;
    if (onTimeout === 'discard') {
      conversation.draftEnded(`${info.id} discarded ${after}`);
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
   * Applies the pending draft, its summary replaced by `edit.summary` when given (its facts checked and pinned by
   * the reviseSummary activity). A draft made for a context that has changed since is refused ({@link DraftRefused}).
   */
  async approve(edit: ApproveInput, timedOut?: string): Promise<CompactResult> {
    await this.settle();
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
    const applied = await store(conversation, prepared, info.waits ? `${info.id} ${how}` : undefined).catch(
      (error: unknown) => {
        ended(conversation);
        throw error;
      },
    );
    conversation.draftEnded(`${info.id} ${how}`);
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
    if (!pending.info.waits) {
      showDetails(conversation.state, conversation.progress);
      return { discarded: request.draft };
    }
    const pausedUntil = conversation.pausedAfterDiscard(`${request.draft} discarded`);
    showProgress(conversation.state, conversation.progress);
    return { discarded: request.draft, pausedUntil };
  }

  /**
   * Restores the context as it was before event `toEvent` (after the compaction in the background, if any, is
   * committed), with every message stored since after it: an event of its own (docs/compaction.md, Revert).
   */
  async revert(toEvent: number): Promise<RevertResult> {
    await this.settle();
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
          fixedTokens: state.fixedTokens ?? 0,
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

/**
 * Plans a compaction of the context as it is now and, when the plan summarizes, has the span summarized. A
 * summarizer that fails after its retries makes the plan be made again with the summarizer marked failed, so the
 * plan's fallback runs: compaction never dead-ends.
 */
export async function prepare(
  conversation: Conversation,
  trigger: Trigger,
  tailFromSeq: number,
  request: CompactInput = {},
  attempt = 1,
): Promise<Prepared | Skipped> {
  const { state, life, counting } = conversation;
  const seq = (state.compactions ?? 0) + 1;
  const startedAt = Date.now();
  const cooldown = state.cooldown ?? { consecutive: 0, lastTokensAfter: 0 };
  const made = conversation.snapshot();
  const context = [...state.messages]; // as it is now: the agent may add to it while this runs
  let summarizerFailed = false;
  const goal = state.messages.find((m) => m.id === state.goalId);
  const goalKey = goal && recordKey(life, goal);
  for (;;) {
    stepOf(conversation, seq, trigger, 'planning');
    const plan = await planCompaction.executeWithOptions(
      { ...STEP_OPTIONS, summary: `plan compaction ${seq} (${trigger}, ${state.contextTokens} tok)` },
      [
        {
          ...life,
          seq,
          context,
          policy: state.policy!,
          window: state.modelInfo!.window,
          fixedTokens: state.fixedTokens ?? 0,
          trigger,
          cooldown,
          ...(state.goalId ? { goalId: state.goalId } : {}),
          ...(summarizerFailed ? { summarizerFailed } : {}),
          ...(request.strategy ? { strategies: [request.strategy] } : {}),
          ...(trigger === 'overflow' ? { attempt } : {}),
          ...(state.callsSinceCompaction !== undefined ? { callsSinceCompaction: state.callsSinceCompaction } : {}),
          // Stored with the plan, for a revert to before this compaction.
          ...(state.ledger ? { ledger: state.ledger } : {}),
          tailFromSeq,
        },
      ],
    );
    if (plan.action === 'skip') return { skipped: plan.reason, ...(plan.gate ? { gate: plan.gate } : {}) };
    // This plan's objects share the pending draft's seq: the draft cannot be applied any more.
    if (state.draft) conversation.draftEnded(`${state.draft.info.id} replaced by a compaction prepared after it`);
    if (!plan.summary) return { seq, trigger, request, startedAt, cooldown, plan, made, tailFromSeq };
    stepOf(conversation, seq, trigger, 'summarizing', plan.summary.spanKeys.length);
    try {
      const summary = await summarizeSpan.executeWithOptions(
        {
          ...SUMMARIZE_OPTIONS,
          summary: `summarize ${plan.summary.spanKeys.length} msgs → ≤${plan.summary.estimatedTokens} tok`,
        },
        [
          {
            ...life,
            seq,
            spanKeys: plan.summary.spanKeys,
            keptKeys: plan.summary.keptKeys,
            ...(plan.summary.prependToKey ? { prependToKey: plan.summary.prependToKey } : {}),
            ...(request.instructions ? { instructions: request.instructions } : {}),
            maxTokens: plan.summary.maxTokens ?? state.policy!.summary.maxTokens,
            counting,
            ...(plan.summary.writer ? { writer: plan.summary.writer } : {}),
            ...(plan.summary.coverage ? { coverage: plan.summary.coverage } : {}),
            ...(plan.summary.leavingIds ? { leavingIds: plan.summary.leavingIds } : {}),
            ...(state.ledger ? { ledger: state.ledger } : {}),
            ...(goalKey ? { goalKey } : {}),
          },
        ],
      );
      return { seq, trigger, request, startedAt, cooldown, plan, summary, made, tailFromSeq };
    } catch (error) {
      if (!(error instanceof ActivityFailure) || summarizerFailed) throw error;
      summarizerFailed = true; // plan again: the fallback replaces the summary
    }
  }
}

/** Applies a prepared compaction's plan in storage: its replacements, removed segment, manifest and event. */
export async function store(conversation: Conversation, prepared: Prepared, review?: string): Promise<ApplyOutcome> {
  const { state, life, counting } = conversation;
  const { seq, plan, summary, request, trigger, cooldown } = prepared;
  // A forced or overflow compaction resets the cooldown; an automatic one takes its next step, a masking pass
  // below the trigger none (it must find new tokens to run at all).
  const consecutive = cooldownAfter(cooldown, { trigger, maskPass: plan.maskPass, tokensAfter: 0 }).consecutive;
  stepOf(conversation, seq, trigger, 'applying');
  return applyCompaction.executeWithOptions(
    { ...STEP_OPTIONS, summary: `apply compaction ${seq}: ${plan.steps.map((s) => s.strategy).join(', ')}` },
    [
      {
        ...life,
        seq,
        planKey: plan.planKey!,
        ...(summary ? { summary } : {}),
        at: new Date(Date.now()).toISOString(),
        ...(request.instructions ? { instructions: request.instructions } : {}),
        counting,
        fixedTokens: state.fixedTokens ?? 0,
        startedAt: prepared.startedAt,
        window: state.modelInfo!.window,
        consecutive,
        ...(review ? { review } : {}),
      },
    ],
  );
}

/**
 * Swaps a stored compaction into the conversation, in front of what was added since it was prepared, and checks
 * the coverage invariant on the result.
 */
export async function commit(
  conversation: Conversation,
  prepared: Prepared,
  applied: ApplyOutcome,
): Promise<CompactResult> {
  const { state } = conversation;
  const event = summaryOfEvent(applied.event); // (a result recorded before summaries listed the removed items)
  conversation.compacted({
    made: prepared.made,
    context: applied.context,
    event,
    tailFromSeq: prepared.tailFromSeq,
    cooldown: prepared.cooldown,
    trigger: prepared.trigger,
    maskPass: prepared.plan.maskPass,
    gate: applied.gate,
    ledger: prepared.summary?.ledger,
  });
  conversation.progress.compactionEnded();
  showCompaction(state, event, conversation.progress);
  const problems = [...(applied.violations ?? []), ...conversation.coverage()];
  if (problems.length > 0) await violated(conversation, `committing compaction ${event.seq}`, problems);
  return { compacted: true, reason: event.reason, event };
}

/** The compaction in progress is at `step` (the progress query, the current details, the status: progress.ts). */
function stepOf(conversation: Conversation, seq: number, trigger: Trigger, step: CompactionStep, span?: number): void {
  conversation.progress.compactionAt(seq, trigger, step, new Date(Date.now()).toISOString(), span);
  showProgress(conversation.state, conversation.progress);
}

/** The compaction in progress ended without being committed (skipped, found stale, failed). */
function ended(conversation: Conversation): void {
  conversation.progress.compactionEnded();
  showProgress(conversation.state, conversation.progress);
}

/** A break of the coverage invariant: reported (it fails for good in strict mode) and recorded in the state. */
async function violated(conversation: Conversation, where: string, problems: string[]): Promise<void> {
  conversation.violated(`${where}: ${problems.join('; ')}`);
  await reportViolation.executeWithOptions({ ...STEP_OPTIONS, summary: `coverage invariant broken ${where}` }, [
    { ...conversation.life, where, problems },
  ]);
}
