/**
 * A summarize request as the inputs of its summaries, and their outcomes as one: the span read from the stored plan
 * when the request names only the plan (`compaction-refs`), one input a part when the plan asks for summaries in their
 * places, and the parts' outcomes added up into the step's one outcome. Pure.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { SummarizeInput, SummarizeRequest, SummaryOutcome } from '../../contract/compaction-activities.ts';
import { summarySpecsOf } from '../../engine/planner/index.ts';
import { summarizeInputOf } from './plan.ts';
import type { StoredPlan } from './stored-objects.ts';

/**
 * The summarize step's input, its span from the stored plan (`stored`, read from `request.planKey`) when the request
 * names only the plan (`compaction-refs`).
 */
export function resolvedInput(request: SummarizeRequest, stored: StoredPlan | undefined): SummarizeInput {
  if (request.spanKeys) return request as SummarizeInput;
  if (!request.planKey || !stored) {
    throw ApplicationFailure.nonRetryable('summarizeSpan: neither spanKeys nor planKey given');
  }
  const spec = stored.plan.summary;
  if (!spec) throw ApplicationFailure.nonRetryable(`the plan at ${request.planKey} summarizes nothing`);
  const { agentId, life, seq } = request;
  const fromPlan = summarizeInputOf(
    { agentId, ...(life !== undefined ? { life } : {}), seq, ...(stored.ledger ? { ledger: stored.ledger } : {}) },
    spec,
    stored.context,
    request.counting,
  );
  return {
    ...fromPlan,
    planKey: request.planKey,
    maxTokens: request.maxTokens,
    ...(request.writer ? { writer: request.writer } : {}),
    ...(request.instructions ? { instructions: request.instructions } : {}),
    ...(request.goalKey ? { goalKey: request.goalKey } : {}),
    ...(request.conversation ? { conversation: request.conversation } : {}),
  };
}

/**
 * The inputs of each summary the stored plan asks for in their places (its parts); else `input` as it is. Only a
 * plan by reference has parts (`compaction-refs`).
 */
export function partsOf(input: SummarizeInput, stored: StoredPlan | undefined): SummarizeInput[] {
  if (!stored || !input.form) return [input];
  const spec = stored.plan.summary!;
  if (!spec.parts) return [input];
  const { agentId, life, seq } = input;
  return summarySpecsOf(spec).map((one, part) => ({
    ...input,
    ...summarizeInputOf(
      { agentId, ...(life !== undefined ? { life } : {}), seq, ...(stored.ledger ? { ledger: stored.ledger } : {}) },
      one,
      stored.context,
      input.counting,
    ),
    part,
  }));
}

/** The summaries of a plan's parts as one outcome: the first's record, the others', and what they add up to. */
export function combinedOutcome(outcomes: readonly SummaryOutcome[], started: number): SummaryOutcome {
  const [first] = outcomes;
  const last = outcomes.at(-1)!;
  const sum = (of: (o: SummaryOutcome) => number) => outcomes.reduce((total, o) => total + of(o), 0);
  const costs = outcomes.map((o) => o.llm.cost);
  return {
    ...first!,
    parts: outcomes.slice(1).map((o) => o.record),
    chunks: sum((o) => o.chunks ?? 1),
    facts: {
      found: sum((o) => o.facts.found),
      missing: sum((o) => o.facts.missing),
      reprompted: outcomes.some((o) => o.facts.reprompted),
      pinned: outcomes.flatMap((o) => o.facts.pinned),
    },
    ledger: last.ledger,
    ledgerRecord: last.ledgerRecord,
    llm: {
      model: first!.llm.model,
      promptTokens: sum((o) => o.llm.promptTokens),
      ...(outcomes.some((o) => o.llm.cachedTokens !== undefined)
        ? { cachedTokens: sum((o) => o.llm.cachedTokens ?? 0) }
        : {}),
      completionTokens: sum((o) => o.llm.completionTokens),
      durationMs: Date.now() - started,
      cost: costs.some((c) => c === null) ? null : costs.reduce<number>((total, c) => total + (c ?? 0), 0),
      // Conversation mode when every part was asked so; the first reason a part was not.
      ...(first!.llm.request
        ? { request: outcomes.every((o) => o.llm.request === 'conversation') ? 'conversation' : 'transcript' }
        : {}),
      ...(outcomes.find((o) => o.llm.transcriptBecause)
        ? { transcriptBecause: outcomes.find((o) => o.llm.transcriptBecause)!.llm.transcriptBecause! }
        : {}),
    },
  };
}
