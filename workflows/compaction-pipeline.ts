/**
 * The compaction pipeline inside the agent workflow: activities, **prepare** (plan → summarize) and **store** (apply:
 * the replacements, the removed segment, the manifest, the event), whose result the conversation **commits** at once.
 * The decisions themselves are made by the engine inside activities, so their results are recorded in history; the
 * gate before every model call is the conversation's `compactionDue`. Who runs it, and when: compaction.ts (blocking
 * and in the background), reviews.ts (a draft kept for review instead of stored).
 */
import { ActivityFailure, patched } from '@temporalio/workflow';
import {
  applyCompaction,
  planCompaction,
  recordEventSpent,
  reportViolation,
  STEP_OPTIONS,
  SUMMARIZE_OPTIONS,
  summarizeSpan,
} from './activities.ts';
import type {
  ApplyOutcome,
  NoGainOutcome,
  PlanCompactionInput,
  SummarizeRequest,
} from '../contract/compaction-activities.ts';
import type { AgentLife } from '../contract/keys.ts';
import { cooldownAfter, isAutomatic } from '../engine/trigger.ts';
import type { Trigger } from '../engine/trigger.ts';
import { applyDelta } from '../contract/context-delta.ts';
import { cannotPay, contextRefOf, nothingToMask } from './compaction-refs.ts';
import type { Skipped } from './compaction-refs.ts';
import { recordKey } from '../contract/records.ts';
import { pinnedBlockOf, pinnedIdsOf, pinnedRefsOf, requestFixedTokensOf } from '../contract/pins.ts';
import { summaryOfEvent } from '../contract/results.ts';
import type { CompactInput } from '../contract/inputs.ts';
import type { CompactResult } from '../contract/results.ts';
import type { Prepared } from '../contract/state.ts';
import type { CompactionStep } from '../contract/progress.ts';
import type { Conversation } from './conversation.ts';
import { showCompaction, showProgress } from './visibility.ts';
import { wholeSummary } from '../contract/lean-calls.ts';

/**
 * Since this patch the compaction activities take references and return deltas (docs/compaction.md, History): the
 * plan reads the context's records from storage ({@link contextRefOf}), the ledger goes by its key, the summarizer
 * reads its span from the stored plan, apply takes the summary's key and returns what changed; and a masking pass
 * that the workflow can tell finds nothing is not planned ({@link nothingToMask}). Histories of before sent the
 * whole context to the plan and took it back from apply, and planned every masking pass. Release 0.2.0
 * (docs/changing-workflows.md).
 */
export const COMPACTION_REFS_PATCH = 'compaction-refs';
/** Since: a masking pass that would not pay for the prompt cache it invalidates is not planned (compaction-refs.ts). */
export const MASK_PASS_PRICED_PATCH = 'mask-pass-priced';
/**
 * Since: a masking pass priced before the session's pace is known (no model call counted since the last compaction)
 * is priced over the calls its context shows were made, as the plan prices it (engine/compaction-value.ts `paceOf`),
 * not over 1 call. Histories of before priced 1 call there.
 */
export const PACE_FROM_CONTEXT_PATCH = 'pace-from-context';
/**
 * Since: an automatic plan (the trigger, the soft threshold, a masking pass, a cut) that no compaction could make pay
 * for the prompt cache it invalidates is not planned (compaction-refs.ts `cannotPay`, engine/planner/price-bound.ts):
 * the plan it would have been skipped anyway. Histories of before planned it. Asked only of priced policies.
 */
export const PLAN_PAYS_FIRST_PATCH = 'plan-pays-first';

/**
 * Since this patch a committed compaction's `spent` (what its summary call cost and the prompt cache it
 * invalidated: priced as it is committed, after apply stored the event) is added to the stored event by the
 * `recordEventSpent` local activity, so `keys.event` (`longrun events`, `compactionHistory`) carries it as the
 * state does. Histories of before record no marker after the commit.
 */
export const EVENT_SPENT_PATCH = 'event-spent';

export type { Skipped } from './compaction-refs.ts';

/** The skip a compaction that, as written, would not shrink the context comes to (nothing was committed). */
export function skippedOf(outcome: NoGainOutcome): Skipped {
  return { skipped: outcome.reason, gate: outcome.gate, noGain: { ...outcome.noGain, estimated: false } };
}

/** What a forced compaction that was skipped returns: why, and when it would not shrink the context, by how much. */
export function skippedResult(skipped: Skipped): CompactResult {
  return { compacted: false, reason: skipped.skipped, ...(skipped.noGain ? { noGain: skipped.noGain } : {}) };
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
  const refs = patched(COMPACTION_REFS_PATCH);
  // The context as it is now (the agent may add to it while this runs): by reference since `compaction-refs`.
  let context: Pick<PlanCompactionInput, 'context' | 'contextRef'> = refs
    ? { contextRef: contextRefOf(state) }
    : { context: [...state.messages] };
  if (refs && trigger === 'auto') {
    const priced = patched(MASK_PASS_PRICED_PATCH);
    // Asked only where it can decide differently: a priced pass with no call counted since the last compaction.
    const contextPace = !priced || (state.callsSinceCompaction ?? 0) > 0 || patched(PACE_FROM_CONTEXT_PATCH);
    const nothing = nothingToMask(conversation, priced, contextPace);
    if (nothing) {
      conversation.planAvoided(nothing.gate);
      return nothing;
    }
  }
  if (refs && isAutomatic(trigger) && state.policy?.cost && patched(PLAN_PAYS_FIRST_PATCH)) {
    const unpaid = cannotPay(conversation, trigger === 'background' ? 'background' : 'auto');
    if (unpaid) {
      conversation.planAvoided(unpaid.gate);
      return unpaid;
    }
  }
  let summarizerFailed = false;
  const goal = state.messages.find((m) => m.id === state.goalId);
  const goalKey = goal && recordKey(life, goal);
  for (;;) {
    stepOf(conversation, seq, trigger, 'planning');
    // The ledger the plan stores (by its key, or inline): a summary's ledger comes back as a change of it.
    const ledgerBase = state.ledger;
    const plan = await planCompaction.executeWithOptions(
      { ...STEP_OPTIONS, summary: `plan compaction ${seq} (${trigger}, ${state.contextTokens} tok)` },
      [
        {
          ...life,
          seq,
          ...context,
          policy: state.policy!,
          window: state.modelInfo!.window,
          fixedTokens: requestFixedTokensOf(state),
          counting,
          trigger,
          cooldown,
          ...(state.goalId ? { goalId: state.goalId } : {}),
          ...pinnedIdsInput(life, state),
          ...(summarizerFailed ? { summarizerFailed } : {}),
          ...(request.strategy ? { strategies: [request.strategy] } : {}),
          // A draft for review is made whatever its size: the person who approves it sees its tokens.
          ...(request.evenIfLarger || request.review ? { evenIfLarger: true } : {}),
          ...(trigger === 'overflow' ? { attempt } : {}),
          ...(state.callsSinceCompaction !== undefined ? { callsSinceCompaction: state.callsSinceCompaction } : {}),
          // Stored with the plan, for a revert to before this compaction: by its key once a summary stored it.
          ...(refs && state.ledgerKey ? { ledgerKey: state.ledgerKey } : state.ledger ? { ledger: state.ledger } : {}),
          tailFromSeq,
        },
      ],
    );
    if (plan.recordsDiffer && context.contextRef) {
      // The records it derived from the stored bodies are not the ones held here: plan again with them sent.
      context = { contextRef: { ...context.contextRef, tail: state.messages.slice(context.contextRef.baseLength) } };
      continue;
    }
    conversation.planned(plan.action === 'skip');
    if (plan.action === 'skip') {
      return {
        skipped: plan.reason,
        ...(plan.gate ? { gate: plan.gate } : {}),
        ...(plan.noGain ? { noGain: { ...plan.noGain, estimated: true } } : {}),
      };
    }
    // This plan's objects share the pending draft's seq: the draft cannot be applied any more.
    if (state.draft) conversation.draftEnded(`${state.draft.info.id} replaced by a compaction prepared after it`);
    const byRef = refs ? { refs: true as const } : {};
    if (!plan.summary) return { seq, trigger, request, startedAt, cooldown, plan, made, tailFromSeq, ...byRef };
    const span = plan.summary.spanKeys?.length ?? plan.summary.spanLength ?? 0;
    stepOf(conversation, seq, trigger, 'summarizing', span);
    // The bound the summary is held to (the timeline shows it: the plan's estimate is in the plan).
    const maxTokens = plan.summary.maxTokens ?? state.policy!.summary.maxTokens;
    // A plan of before `compaction-refs` names the span; since, the summarizer reads it from the stored plan.
    const spanOf: Omit<SummarizeRequest, keyof AgentLife | 'seq' | 'maxTokens' | 'counting'> = plan.summary.spanKeys
      ? {
          spanKeys: plan.summary.spanKeys,
          keptKeys: plan.summary.keptKeys ?? [],
          ...(plan.summary.prependToKey ? { prependToKey: plan.summary.prependToKey } : {}),
          ...(plan.summary.coverage ? { coverage: plan.summary.coverage } : {}),
          ...(plan.summary.leavingIds ? { leavingIds: plan.summary.leavingIds } : {}),
          ...(state.ledger ? { ledger: state.ledger } : {}),
        }
      : { planKey: plan.planKey! };
    try {
      const payload = await summarizeSpan.executeWithOptions(
        { ...SUMMARIZE_OPTIONS, summary: `summarize ${span} msgs → ≤${maxTokens} tok` },
        [
          {
            ...life,
            seq,
            ...spanOf,
            ...(request.instructions ? { instructions: request.instructions } : {}),
            maxTokens,
            counting,
            ...(plan.summary.writer ? { writer: plan.summary.writer } : {}),
            ...(goalKey ? { goalKey } : {}),
            ...agentRequestInput(conversation),
          },
        ],
      );
      const summary = wholeSummary(payload, ledgerBase); // (its ledger whole again: contract/lean-calls.ts)
      return { seq, trigger, request, startedAt, cooldown, plan, summary, made, tailFromSeq, ...byRef };
    } catch (error) {
      if (!(error instanceof ActivityFailure) || summarizerFailed) throw error;
      summarizerFailed = true; // plan again: the fallback replaces the summary
    }
  }
}

/**
 * Applies a prepared compaction's plan in storage: its replacements, removed segment, manifest and event; or, when
 * the compaction as written would not shrink the context, nothing ({@link NoGainOutcome}), unless `evenIfLarger` (a
 * forced compaction's request says so, or a person approved the draft).
 */
export async function store(
  conversation: Conversation,
  prepared: Prepared,
  review?: string,
  approved = false,
): Promise<ApplyOutcome | NoGainOutcome> {
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
        // The summary by its key when the summarizer stored it (`compaction-refs`); else inline, as it was.
        ...(summary?.summaryKey ? { summaryKey: summary.summaryKey } : summary ? { summary } : {}),
        ...(prepared.refs ? { delta: true as const } : {}),
        at: new Date(Date.now()).toISOString(),
        ...(request.instructions ? { instructions: request.instructions } : {}),
        counting,
        fixedTokens: requestFixedTokensOf(state),
        startedAt: prepared.startedAt,
        window: state.modelInfo!.window,
        consecutive,
        ...(review ? { review } : {}),
        ...(request.evenIfLarger || approved ? { evenIfLarger: true } : {}),
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
  // The whole new context (applies of before `compaction-refs`), or what changed in the context it was made for.
  const context = applied.context ?? applyDelta(state.messages.slice(0, prepared.made.messages), applied.delta!);
  conversation.compacted({
    made: prepared.made,
    context,
    ...(applied.baseRecords ? { baseRecords: applied.baseRecords } : {}),
    ...(prepared.summary?.ledgerKey ? { ledgerKey: prepared.summary.ledgerKey } : {}),
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
  // The stored event gets what the commit priced (`spent`), which apply could not know.
  if (patched(EVENT_SPENT_PATCH) && event.spent) {
    await recordEventSpent({ ...conversation.life, seq: event.seq, spent: event.spent });
  }
  const problems = [...(applied.violations ?? []), ...conversation.coverage()];
  if (problems.length > 0) await violated(conversation, `committing compaction ${event.seq}`, problems);
  return { compacted: true, reason: event.reason, event };
}

/** The compaction in progress is at `step` (the progress query, the current details, the status: progress.ts). */
export function stepOf(
  conversation: Conversation,
  seq: number,
  trigger: Trigger,
  step: CompactionStep,
  span?: number,
): void {
  conversation.progress.compactionAt(seq, trigger, step, new Date(Date.now()).toISOString(), span);
  showProgress(conversation.state, conversation.progress);
}

/** The compaction in progress ended without being committed (skipped, found stale, failed). */
export function ended(conversation: Conversation): void {
  conversation.progress.compactionEnded();
  showProgress(conversation.state, conversation.progress);
}

/** A break of the coverage invariant: reported (it fails for good in strict mode) and recorded in the state. */
export async function violated(conversation: Conversation, where: string, problems: string[]): Promise<void> {
  conversation.violated(`${where}: ${problems.join('; ')}`);
  await reportViolation.executeWithOptions({ ...STEP_OPTIONS, summary: `coverage invariant broken ${where}` }, [
    { ...conversation.life, where, problems },
  ]);
}

/**
 * What a summary in conversation mode (policy `summary.request`) repeats of the agent's own model call: its model,
 * tool selection, pinned block and window, as the turn's model call sends them (turn.ts). Nothing for a policy that
 * asks a transcript, or one stored before the field (an activity input only: the history's commands are the same).
 */
function agentRequestInput(conversation: Conversation): Pick<SummarizeRequest, 'conversation'> {
  const { state, life } = conversation;
  if (state.policy?.summary.request !== 'conversation') return {};
  const block = pinnedBlockOf(life, state.pins, state.messages);
  return {
    conversation: {
      model: state.model,
      ...(conversation.tools ? { tools: conversation.tools } : {}),
      ...(block.length ? { pinned: pinnedRefsOf(block) } : {}),
      window: conversation.window,
    },
  };
}

/** The pinned messages of the context for the plan (nothing added without pins: plans of before stay as they were). */
function pinnedIdsInput(life: AgentLife, state: Conversation['state']): { pinnedIds?: string[] } {
  const ids = pinnedIdsOf(life, state.pins, state.messages);
  return ids.length > 0 ? { pinnedIds: ids } : {};
}
