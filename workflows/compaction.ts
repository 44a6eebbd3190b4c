/**
 * Compaction inside the agent workflow: the pipeline of activities (plan → summarize → apply) whose result the
 * conversation swaps in at once. The decisions themselves are made by the engine inside activities, so their
 * results are recorded in history; the gate before every model call is the conversation's `compactionDue`.
 */
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type * as activities from '../activities/index.ts';
import { cooldownAfter } from '../engine/trigger.ts';
import type { Trigger } from '../engine/trigger.ts';
import { recordKey, summaryOfEvent } from '../contract/agent.ts';
import type { CompactInput, CompactResult } from '../contract/agent.ts';
import type { Conversation } from './conversation.ts';
import { showCompaction } from './visibility.ts';

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

const { planCompaction, applyCompaction } = proxyActivities<Activities>(STEP_OPTIONS);
const { summarizeSpan } = proxyActivities<Activities>(SUMMARIZE_OPTIONS);

/**
 * Runs one compaction and swaps its result into `state`. A summarizer that fails after its retries makes the
 * plan be made again with the summarizer marked failed, so the plan's fallback runs: compaction never dead-ends.
 */
export async function compact(
  conversation: Conversation,
  trigger: Trigger,
  tailFromSeq: number,
  request: CompactInput = {},
  attempt = 1,
): Promise<CompactResult> {
  const { state, life, counting } = conversation;
  const seq = (state.compactions ?? 0) + 1;
  const startedAt = Date.now();
  const cooldown = state.cooldown ?? { consecutive: 0, lastTokensAfter: 0 };
  let summarizerFailed = false;
  const goal = state.messages.find((m) => m.id === state.goalId);
  const goalKey = goal && recordKey(life, goal);
  for (;;) {
    const plan = await planCompaction.executeWithOptions(
      { ...STEP_OPTIONS, summary: `plan compaction ${seq} (${trigger}, ${state.contextTokens} tok)` },
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
          ...(state.callsSinceCompaction !== undefined ? { callsSinceCompaction: state.callsSinceCompaction } : {}),
        },
      ],
    );
    if (plan.action === 'skip') {
      conversation.skipped(plan.gate);
      return { compacted: false, reason: plan.reason };
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
          startedAt,
          window: state.modelInfo!.window,
          consecutive,
        },
      ],
    );
    const event = summaryOfEvent(applied.event); // (a result recorded before summaries listed the removed items)
    conversation.compacted({
      context: applied.context,
      event,
      tailFromSeq,
      cooldown,
      trigger,
      maskPass: plan.maskPass,
      gate: applied.gate,
      ledger: summary?.ledger,
    });
    showCompaction(state, event);
    return { compacted: true, reason: event.reason, event };
  }
}
