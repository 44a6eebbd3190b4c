/**
 * Compression inside the agent workflow: the O(1) gate check before every model call, and the pipeline of
 * activities (plan → summarize → apply) whose result is swapped into the workflow state at once. The decisions
 * themselves are made by the engine inside activities, so their results are recorded in history.
 */
import { ActivityFailure, proxyActivities, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type * as activities from '../activities/index.ts';
import { isUserTurn } from '../engine/messages.ts';
import { cooldownAfter, gateFiresWith } from '../engine/trigger.ts';
import type { GateCheck, Trigger } from '../engine/trigger.ts';
import { agentLife, EVENTS_KEPT, NO_COMPACTIONS, recordKey, summaryOfEvent } from '../contract/agent.ts';
import type { CompactInput, CompactResult, CompactionEventSummary, WorkflowState } from '../contract/agent.ts';
import { SEARCH_ATTRIBUTES } from '../contract/search-attributes.ts';

type Activities = ReturnType<typeof activities.createActivities>;

/** Planning and applying: storage and CPU only, retried until they succeed (or fail for good on a bug). */
const STEP_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
};
/** The summary call: heartbeating, retried with backoff a few times; then the plan's fallback runs instead. */
const SUMMARIZE_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '2 seconds', maximumInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: 4 },
};

const { planCompaction, applyCompaction } = proxyActivities<Activities>(STEP_OPTIONS);
const { summarizeSpan } = proxyActivities<Activities>(SUMMARIZE_OPTIONS);

/** The gate and the counters it compares: what the model call checks again once the turn's message is counted. */
export function gateCheckOf(state: WorkflowState): GateCheck | undefined {
  if (!state.gate) return undefined;
  return {
    gate: state.gate,
    stats: { tokens: state.contextTokens, messages: state.messages.length, turns: state.contextTurns ?? 0 },
    consecutive: state.cooldown?.consecutive ?? 0,
  };
}

/**
 * Whether compaction is due now (engine/trigger.ts `compactionDue`, the one decision): a comparison of a few numbers
 * the last activity returned, and a look at the newest tool results.
 */
export function compactionDue(state: WorkflowState): string | undefined {
  const check = gateCheckOf(state);
  return check ? gateFiresWith(check, [], state.messages)?.reason : undefined;
}

/** Counts the turns of a context: the user's own messages (not a summary, not the ledger). */
function turnsIn(state: WorkflowState): number {
  return state.messages.filter(isUserTurn).length;
}

/**
 * Runs one compression and swaps its result into `state`. A summarizer that fails after its retries makes the
 * plan be made again with the summarizer marked failed, so the plan's fallback runs: compaction never dead-ends.
 */
export async function compact(
  state: WorkflowState,
  trigger: Trigger,
  nextMessageSeq: number,
  request: CompactInput = {},
  attempt = 1,
): Promise<CompactResult> {
  const life = agentLife(state);
  const seq = (state.compressions ?? 0) + 1;
  const startedAt = Date.now();
  const counting = { encoding: state.modelInfo!.encoding, margin: state.modelInfo!.margin };
  const cooldown = state.cooldown ?? { consecutive: 0, lastTokensAfter: 0 };
  let summarizerFailed = false;
  const goal = state.messages.find((m) => m.id === state.goalId);
  const goalKey = goal && recordKey(life, goal);
  for (;;) {
    const plan = await planCompaction.executeWithOptions(
      { ...STEP_OPTIONS, summary: `plan compression ${seq} (${trigger}, ${state.contextTokens} tok)` },
      [
        {
          ...life,
          seq,
          context: state.messages,
          policy: state.policy!,
          window: state.modelInfo!.window,
          fixedTokens: state.fixedTokens ?? 0,
          trigger,
          cooldown,
          ...(state.goalId ? { goalId: state.goalId } : {}),
          ...(summarizerFailed ? { summarizerFailed } : {}),
          ...(request.strategy ? { strategies: [request.strategy] } : {}),
          ...(trigger === 'overflow' ? { attempt } : {}),
          ...(state.callsSinceCompression !== undefined ? { callsSinceCompression: state.callsSinceCompression } : {}),
        },
      ],
    );
    if (plan.action === 'skip') {
      if (plan.gate) state.gate = plan.gate;
      return { compressed: false, reason: plan.reason };
    }
    let summary: Awaited<ReturnType<typeof summarizeSpan>> | undefined;
    if (plan.summary) {
      try {
        summary = await summarizeSpan.executeWithOptions(
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
      } catch (error) {
        if (!(error instanceof ActivityFailure) || summarizerFailed) throw error;
        summarizerFailed = true; // plan again: the fallback replaces the summary
        continue;
      }
    }
    // A forced or overflow compaction resets the cooldown; an automatic one takes its next step, a masking pass
    // below the trigger none (it must find new tokens to run at all).
    const consecutive = cooldownAfter(cooldown, { trigger, maskPass: plan.maskPass, tokensAfter: 0 }).consecutive;
    const applied = await applyCompaction.executeWithOptions(
      { ...STEP_OPTIONS, summary: `apply compression ${seq}: ${plan.steps.map((s) => s.strategy).join(', ')}` },
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
          startedAt,
          window: state.modelInfo!.window,
          consecutive,
        },
      ],
    );
    const event = summaryOfEvent(applied.event); // (a result recorded before summaries listed the removed items)
    swapIn(state, applied.context, event, nextMessageSeq);
    state.cooldown = cooldownAfter(cooldown, { trigger, maskPass: plan.maskPass, tokensAfter: event.tokensAfter });
    state.gate = applied.gate;
    if (summary) state.ledger = summary.ledger;
    return { compressed: true, reason: event.reason, event };
  }
}

/** The new context replaces the old one in a single step of workflow code: no await between these lines. */
function swapIn(
  state: WorkflowState,
  context: WorkflowState['messages'],
  event: CompactionEventSummary,
  nextSeq: number,
): void {
  state.messages = context;
  state.contextTokens = (state.fixedTokens ?? 0) + context.reduce((sum, m) => sum + m.tokens, 0);
  state.contextTurns = turnsIn(state);
  state.base = event.keys.context;
  state.baseLength = context.length;
  state.tailFromSeq = nextSeq;
  state.compressions = event.seq;
  state.callsSinceCompression = 0;
  state.events = [...(state.events ?? []), event].slice(-EVENTS_KEPT);
  const previous = state.stats ?? NO_COMPACTIONS;
  const reduction = event.tokensBefore > 0 ? event.tokensAfter / event.tokensBefore : 1;
  state.stats = {
    count: previous.count + 1,
    averageReduction: (previous.averageReduction * previous.count + reduction) / (previous.count + 1),
    tokensSaved: previous.tokensSaved + Math.max(0, event.tokensBefore - event.tokensAfter),
    ...(event.cost || previous.costSaved !== undefined
      ? { costSaved: (previous.costSaved ?? 0) + (event.cost?.netBenefit ?? 0) }
      : {}),
  };
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.compactions, value: event.seq },
    { key: SEARCH_ATTRIBUTES.lastCompactedAt, value: new Date(Date.now()) },
    { key: SEARCH_ATTRIBUTES.contextTokens, value: state.contextTokens },
  ]);
  setCurrentDetails(
    `compression ${event.seq}: ${event.tokensBefore} → ${event.tokensAfter} tokens (${event.strategies.join(', ')})`,
  );
}
