/**
 * Review of a compaction's draft: the draft stored with its summary's text (draft.json) for the reviewer, and a
 * reviewer's edit of the summary stored as a new object (summary-edited.json), judged by the span's must-keep facts
 * as the summarizer's is.
 */
import { ApplicationFailure } from '@temporalio/common';
import { checkFacts, preservedFactsBlock } from '../../engine/facts.ts';
import { renderLedger } from '../../engine/ledger.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { agentLife, compactionKey } from '../../contract/keys.ts';
import type { Draft } from '../../contract/results.ts';
import type { ReviseSummaryInput, StoreDraftInput, SummaryOutcome } from '../../contract/compaction-activities.ts';
import { factsReport, pinsOf } from './judge.ts';
import type { CompactionShared } from './deps.ts';
import { spanKeysOf } from './stored-objects.ts';
import type { StoredPlan } from './stored-objects.ts';

export function createReviewActivities({ load, save, putJson, spanOf }: CompactionShared) {
  return {
    /** Stores a draft for review (draft.json: the draft with its summary's text) and returns that text. */
    async storeDraft(input: StoreDraftInput): Promise<string | undefined> {
      const { draft } = input;
      const text = draft.summaryKey ? textOf((await load<ChatMessage>(draft.summaryKey)).content) : undefined;
      const stored: Draft = { ...draft, ...(text !== undefined ? { summary: text } : {}) };
      await putJson(compactionKey(input, input.seq, 'draft.json'), stored);
      return text;
    },

    /**
     * A reviewer's edit of a draft's summary: stored as a new object (the summarizer's stays), its text the edit,
     * then the must-keep facts of the span the edit (with the ledger) lost, pinned verbatim, as the summarizer pins
     * them. The summarizer's ledger stays. Returns the outcome the apply step takes.
     */
    async reviseSummary(input: ReviseSummaryInput): Promise<SummaryOutcome> {
      const agent = agentLife(input);
      const { plan, context } = await load<StoredPlan>(input.planKey);
      const keyOf = new Map(context.map((m) => [m.id, m.key]));
      const spec = plan.summary;
      if (!spec) throw ApplicationFailure.nonRetryable(`the plan at ${input.planKey} has no summary to edit`);
      const { spanKeys, keptKeys } = spanKeysOf(spec, keyOf);
      const { facts } = await spanOf(spanKeys, keptKeys);
      const check = checkFacts(facts, `${input.text}\n${renderLedger(input.summary.ledger)}`);
      const pins = pinsOf(check.missing);
      const text = [input.text, ...(pins.length ? [preservedFactsBlock(pins)] : [])].join('\n\n');
      const original = await load<ChatMessage>(input.summary.record.key);
      const stored = await save(
        compactionKey(agent, input.seq, 'summary-edited.json'),
        { ...original, content: text },
        input.counting,
        { id: input.summary.record.id, kind: 'summary' },
      );
      const covers = input.summary.record.covers;
      const revised: SummaryOutcome = {
        ...input.summary,
        record: covers ? { ...stored, covers } : stored,
        parsedAs: 'edited',
        facts: factsReport(check, false, pins),
      };
      if (!input.summary.summaryKey) return revised;
      // Stored too, as the summarizer's outcome is (`compaction-refs`): the apply step reads the edit by its key.
      const summaryKey = compactionKey(agent, input.seq, 'summary-edited-outcome.json');
      await putJson(summaryKey, { ...revised, summaryKey });
      return { ...revised, summaryKey };
    },
  };
}
