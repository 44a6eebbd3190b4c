/**
 * The summarize step (`summarizeSpan`): its input read from the stored plan when the request names only the plan, one
 * summary written a part (summary-parts.ts; each by summary-writer.ts: the summary model, in chunks when the span does
 * not fit its window, judged by its must-keep facts, or the extractive summarizer), their outcomes made one, and, by
 * reference (`compaction-refs`), that outcome and the task ledger stored for the apply step and the next plan.
 */
import { agentLife, compactionKey } from '../../contract/keys.ts';
import type { SummarizeRequest, SummaryOutcome, SummaryPayload } from '../../contract/compaction-activities.ts';
import { leanSummary } from '../../contract/lean-calls.ts';
import type { CompactionShared } from './deps.ts';
import type { StoredPlan } from './stored-objects.ts';
import { combinedOutcome, partsOf, resolvedInput } from './summary-parts.ts';
import { createSummaryWriting } from './summary-writer.ts';

/** The activity summarizeSpan. */
export function createSummarizeActivities(shared: CompactionShared) {
  const { load, putJson } = shared;
  const summarize = createSummaryWriting(shared);

  return {
    /**
     * Summarizes the span with the summary model: structured output (JSON schema) first; a provider that rejects
     * it gets the plain prompt, whose reply is parsed by headings. Stores the summary message and counts it.
     */
    async summarizeSpan(request: SummarizeRequest): Promise<SummaryPayload> {
      const started = Date.now();
      // The stored plan, read once: the span, the parts and the conversation-mode request all come from it.
      const plan = request.planKey ? await load<StoredPlan>(request.planKey) : undefined;
      const input = resolvedInput(request, plan);
      // Summaries in their places (a plan's parts): each written on its own, then one outcome.
      const outcomes: SummaryOutcome[] = [];
      for (const one of partsOf(input, plan)) outcomes.push(await summarize(one, Date.now(), plan?.context));
      const outcome = outcomes.length === 1 ? outcomes[0]! : combinedOutcome(outcomes, started);
      if (!request.planKey || request.spanKeys) return outcome;
      // By reference (`compaction-refs`): the outcome is stored for the apply step, the ledger for the next plan.
      const agent = agentLife(input);
      const summaryKey = compactionKey(agent, input.seq, 'summary-outcome.json');
      const ledgerKey = compactionKey(agent, input.seq, 'task-ledger.json');
      await putJson(ledgerKey, outcome.ledger);
      const stored = { ...outcome, summaryKey, ledgerKey };
      await putJson(summaryKey, stored);
      // The ledger as a change of the one its plan was made with, which the workflow holds (contract/lean-calls.ts).
      return leanSummary(stored, input.ledger);
    },
  };
}
