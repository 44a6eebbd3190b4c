/**
 * The plan step: the engine's split over the context's metadata (read by reference: context-reading.ts). The plan is
 * stored (plan.json, with the context it was made for, for the apply step and a revert); the workflow gets a summary
 * of it, and the summary's span as storage keys.
 */
import { planCompaction, summarySpecsOf } from '../../engine/planner/index.ts';
import type { SummarySpec } from '../../engine/planner/index.ts';
import { gateAfterSkippedPlan } from '../../engine/gates.ts';
import type { TaskLedger } from '../../engine/ledger.ts';
import { agentLife, compactionKey } from '../../contract/keys.ts';
import { keyedRecord } from '../../contract/records.ts';
import type { PlanCompactionInput, PlanOutcome, SummarizeInput } from '../../contract/compaction-activities.ts';
import type { MessageRecord } from '../../contract/records.ts';
import type { Counting } from '../../engine/models.ts';
import { withHeartbeat } from '../stored.ts';
import { createContextReading } from './context-reading.ts';
import type { CompactionShared } from './deps.ts';
import { spanKeysOf } from './stored-objects.ts';
import type { StoredPlan } from './stored-objects.ts';
import { createWrittenSizing } from './written-sizes.ts';

/** The activity planCompaction. */
export function createPlanActivities(shared: CompactionShared) {
  const { summaryModel, putJson, load } = shared;
  const writtenSizes = createWrittenSizing(shared);
  const readContext = createContextReading(shared);

  /** The engine's plan over the context's metadata; stored for the apply step, summarized for the workflow. */
  async function plan(input: PlanCompactionInput): Promise<PlanOutcome> {
    const { agentId, life, seq, summarizerFailed, tailFromSeq, counting, contextRef, ledgerKey, ...rest } = input;
    delete rest.context;
    // A plan scheduled before the rename names the pace by its former name.
    rest.callsSinceCompaction ??= (input as { callsSinceCompression?: number }).callsSinceCompression;
    const agent = agentLife({ agentId, life });
    const records = contextRef ? await readContext(agent, contextRef, counting) : input.context!;
    if (records === undefined) return recordsDiffer();
    const context = records.map((record) => keyedRecord(agent, record));
    // The ledger by its key (`compaction-refs`), stored inline with the plan for the summarizer and a revert.
    const ledger = ledgerKey !== undefined ? await load<TaskLedger>(ledgerKey) : input.ledger;
    delete rest.ledger;
    // Without a summary model the extractive summarizer stands in (or the policy's fallback, as the policy says).
    const summarizer = summarizerFailed ? 'failed' : summaryModel ? 'available' : 'none';
    // With the agent's counting, a first pass (without the last word) finds the span; its summary and ledger are
    // counted as they will be written, and the plan is made again over the same input with them.
    const span = counting ? planCompaction({ ...rest, context, summarizer, lastWord: false }).summary : undefined;
    // Summaries in their places are each counted, and add up.
    const writtenOf = async (spec: SummarySpec, using: Counting) => {
      const sizes = await Promise.all(
        summarySpecsOf(spec).map((one) =>
          writtenSizes(summarizeInputOf({ ...input, ...(ledger ? { ledger } : {}) }, one, context, using)),
        ),
      );
      return sizes.reduce((sum, one) => ({
        ...(sum.summaryTokens !== undefined && one.summaryTokens !== undefined
          ? { summaryTokens: sum.summaryTokens + one.summaryTokens }
          : {}),
        frameTokens: sum.frameTokens + one.frameTokens,
        ledgerTokens: sum.ledgerTokens,
      }));
    };
    const written = span && counting ? await writtenOf(span, counting) : undefined;
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
      const skipped = { ...plan, tokens: plan.before.tokens, messages: plan.before.messages };
      const gate = gateAfterSkippedPlan(
        input.policy,
        input.window,
        input.cooldown,
        skipped,
        input.trigger,
        input.callsSinceCompaction,
      );
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
    if (contextRef && spec) {
      // By reference: the summarizer reads its span from the stored plan; the workflow needs only the bounds.
      return {
        ...outcome,
        planKey,
        summary: {
          spanLength: spec.spanIds.length,
          estimatedTokens: spec.estimatedTokens,
          maxTokens: spec.maxTokens,
          writer: spec.writer,
        },
      };
    }
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

/** Nothing planned: the workflow sends the records of the messages since the last compaction and plans again. */
function recordsDiffer(): PlanOutcome {
  return {
    action: 'skip',
    reason: 'records differ',
    recordsDiffer: true,
    steps: [],
    tokensBefore: 0,
    tokensAfter: 0,
    targetTokens: 0,
  };
}

/** The messages that leave the context with the summary: not a previous summary, not a user message kept verbatim. */
export function leavingIdsOf(spec: SummarySpec, context: readonly { id: string; kind?: string }[]): string[] {
  const kept = new Set(spec.keptUserIds);
  const kindById = new Map(context.map((m) => [m.id, m.kind]));
  return spec.spanIds.filter((id) => !kept.has(id) && kindById.get(id) !== 'summary');
}

/** What the summarize step will be given for `spec` (the workflow passes the same from the plan's outcome). */
export function summarizeInputOf(
  input: Pick<PlanCompactionInput, 'agentId' | 'life' | 'seq' | 'goalId' | 'ledger'>,
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
    ...(spec.form ? { form: spec.form } : {}),
    leavingIds: leavingIdsOf(spec, context),
    ...(input.ledger ? { ledger: input.ledger } : {}),
    ...(goalKey ? { goalKey } : {}),
  };
}
