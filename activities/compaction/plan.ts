/**
 * The plan step: the engine's split over the context's metadata. The plan is stored (plan.json, with the context it
 * was made for, for the apply step and a revert); the workflow gets a summary of it, and the summary's span as
 * storage keys.
 */
import { planCompaction } from '../../engine/planner/index.ts';
import type { SummarySpec } from '../../engine/planner/index.ts';
import { gateAfterPlanSkip } from '../../engine/gates.ts';
import { holdGrowth } from '../../engine/trigger.ts';
import { agentLife, compactionKey } from '../../contract/keys.ts';
import { keyedRecord } from '../../contract/records.ts';
import type { PlanCompactionInput, PlanOutcome, SummarizeInput } from '../../contract/activities.ts';
import type { MessageRecord } from '../../contract/records.ts';
import type { Counting } from '../../engine/models.ts';
import { withHeartbeat } from '../stored.ts';
import { spanKeysOf } from './shared.ts';
import type { CompactionShared, StoredPlan } from './shared.ts';
import { createWrittenSizing } from './written.ts';

export function createPlanActivities(shared: CompactionShared) {
  const { summaryModel, putJson } = shared;
  const writtenSizes = createWrittenSizing(shared);

  /** The engine's plan over the context's metadata; stored for the apply step, summarized for the workflow. */
  async function plan(input: PlanCompactionInput): Promise<PlanOutcome> {
    const { agentId, life, seq, summarizerFailed, ledger, tailFromSeq, counting, ...rest } = input;
    // A plan scheduled before the rename names the pace by its former name.
    rest.callsSinceCompaction ??= (input as { callsSinceCompression?: number }).callsSinceCompression;
    const agent = agentLife({ agentId, life });
    const context = input.context.map((record) => keyedRecord(agent, record));
    // Without a summary model the extractive summarizer stands in (or the policy's fallback, as the policy says).
    const summarizer = summarizerFailed ? 'failed' : summaryModel ? 'available' : 'none';
    // With the agent's counting, a first pass (without the last word) finds the span; its summary and ledger are
    // counted as they will be written, and the plan is made again over the same input with them.
    const span = counting ? planCompaction({ ...rest, context, summarizer, lastWord: false }).summary : undefined;
    const written = span && counting ? await writtenSizes(summarizeInputOf(input, span, context, counting)) : undefined;
    const plan = planCompaction({ ...rest, context, summarizer, ...(written ? { written } : {}) });
    const outcome: PlanOutcome = {
      action: plan.action,
      reason: plan.reason,
      ...(plan.maskPass ? { maskPass: true as const } : {}),
      steps: plan.steps.map(({ strategy, tokensSaved, note }) => ({
        strategy,
        tokensSaved,
        ...(note ? { note } : {}),
      })),
      tokensBefore: plan.before.tokens,
      tokensAfter: plan.after.tokens,
      targetTokens: plan.target.tokens,
      ...(plan.noGain ? { noGain: plan.noGain } : {}),
    };
    if (plan.action === 'skip') {
      const growth = holdGrowth(input.policy);
      const skipped = { ...plan, tokens: plan.before.tokens };
      const gate = gateAfterPlanSkip(input.policy, input.window, input.cooldown, skipped, growth);
      return { ...outcome, gate };
    }
    const planKey = compactionKey(agent, seq, 'plan.json');
    const stored: StoredPlan = {
      plan,
      context,
      policy: input.policy,
      trigger: input.trigger,
      cooldown: input.cooldown,
      ...(ledger ? { ledger } : {}),
      ...(tailFromSeq !== undefined ? { tailFromSeq } : {}),
    };
    await putJson(planKey, stored);
    const keyOf = new Map(context.map((m) => [m.id, m.key]));
    const spec: SummarySpec | undefined = plan.summary;
    return {
      ...outcome,
      planKey,
      ...(spec
        ? {
            summary: {
              ...spanKeysOf(spec, keyOf),
              ...(spec.placement.mode === 'prepend' ? { prependToKey: keyOf.get(spec.placement.id)! } : {}),
              estimatedTokens: spec.estimatedTokens,
              maxTokens: spec.maxTokens,
              writer: spec.writer,
              coverage: spec.coverage,
              leavingIds: leavingIdsOf(spec, context),
            },
          }
        : {}),
    };
  }

  return {
    // Planning heartbeats too: a worker that dies in the middle is noticed within the heartbeat timeout.
    planCompaction: (input: PlanCompactionInput) => withHeartbeat(() => plan(input)),
  };
}

/** The messages that leave the context with the summary: not a previous summary, not a user message kept verbatim. */
function leavingIdsOf(spec: SummarySpec, context: readonly { id: string; kind?: string }[]): string[] {
  const kept = new Set(spec.keptUserIds);
  const kindById = new Map(context.map((m) => [m.id, m.kind]));
  return spec.spanIds.filter((id) => !kept.has(id) && kindById.get(id) !== 'summary');
}

/** What the summarize step will be given for `spec` (the workflow passes the same from the plan's outcome). */
function summarizeInputOf(
  input: PlanCompactionInput,
  spec: SummarySpec,
  context: readonly MessageRecord[],
  counting: Counting,
): SummarizeInput {
  const keyOf = new Map(context.map((m) => [m.id, m.key]));
  const goalKey = input.goalId !== undefined ? keyOf.get(input.goalId) : undefined;
  return {
    agentId: input.agentId,
    life: input.life,
    seq: input.seq,
    ...spanKeysOf(spec, keyOf),
    ...(spec.placement.mode === 'prepend' ? { prependToKey: keyOf.get(spec.placement.id)! } : {}),
    maxTokens: spec.maxTokens,
    counting,
    writer: spec.writer,
    coverage: spec.coverage,
    leavingIds: leavingIdsOf(spec, context),
    ...(input.ledger ? { ledger: input.ledger } : {}),
    ...(goalKey ? { goalKey } : {}),
  };
}
