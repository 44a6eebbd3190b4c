/**
 * The summary message and the task ledger as the summarize step will write them, counted at plan time from the
 * span's bodies: the plan's estimate of the context after a compaction then matches what the apply step leaves, and a
 * compaction that would grow the context is known before it is made. The extractive summary is written here exactly
 * as the summarize step writes it; a summary model's body is left to the planner's estimate, its frame counted.
 */
import { extractiveSummary, toolCallLines } from '../../engine/extractive.ts';
import { nextActionOf, renderLedger, updateLedger } from '../../engine/ledger.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import type { SummaryForm, WrittenSizes } from '../../engine/planner/index.ts';
import { renderSummary, SUMMARY_FIELDS } from '../../engine/summary.ts';
import type { StructuredSummary } from '../../engine/summary.ts';
import { countMessage } from '../../engine/tokens.ts';
import type { SummarizeInput } from '../../contract/compaction-activities.ts';
import { compose, summaryMessageOf } from './compose.ts';
import type { Judged, judgeOf } from './judge.ts';
import type { CompactionObjects } from './stored-objects.ts';
import { createSpanReading } from './span-reading.ts';

/**
 * Tokens a summary model's ledger update is planned at beyond what the plan can count (its decisions, work done and
 * pending, and the next action): about three short items. The apply step's own check catches a ledger that grew more.
 */
export const MODEL_LEDGER_TOKENS = 48;

/**
 * The extractive summary of a span, judged: within the summary's budget (about 3 characters a token, less the
 * frame), the facts that fit listed. Deterministic, so the plan counts it as the summarize step will write it.
 */
export function extractiveJudged(
  rest: readonly ChatMessage[],
  previousText: string,
  maxTokens: number,
  judge: ReturnType<typeof judgeOf>,
  form?: SummaryForm,
): Judged {
  const budget = Math.max(1_000, (maxTokens - 300) * 3);
  // A summary in its place (a run of tool calls, a round) lists the calls and the heads of their results first.
  const calls = form ? toolCallLines(rest, Math.floor(budget / 2)) : [];
  const listed = calls.length ? `Tool calls and their results:\n${calls.join('\n')}` : '';
  const extracted = extractiveSummary(rest, previousText || undefined, budget - listed.length);
  // In its place the span is history: what the agent does next is said after it, not by it.
  const summary = form
    ? { ...extracted, current_state: [listed, extracted.current_state].filter(Boolean).join('\n'), next_steps: '' }
    : extracted;
  return judge(renderSummary(summary), { nextAction: nextActionOf(summary.next_steps) });
}

/** Counting what a summarize step with `input` will write (see the file's comment). */
export function createWrittenSizing(objects: Pick<CompactionObjects, 'load' | 'spanOf'>) {
  const readSpan = createSpanReading(objects);
  return async function writtenSizes(input: SummarizeInput): Promise<WrittenSizes> {
    const { frame, previousText, judge, goal, userMessages, facts } = await readSpan(input);
    const { counter, host } = frame;
    const { margin } = input.counting;
    const tokensOf = (text: string) =>
      countMessage(counter, summaryMessageOf(input, text, host), margin) -
      (host ? countMessage(counter, host, margin) : 0);
    const ledgerTokens = (content: string) => countMessage(counter, { role: 'user', content }, margin);
    // The frame: the title, a heading per field (a placeholder under each), where the loop stands, the removed line.
    const placeholders = Object.fromEntries(SUMMARY_FIELDS.map((f) => [f, '…'])) as unknown as StructuredSummary;
    const frameOnly = judge(renderSummary(placeholders), {});
    const frameTokens = tokensOf(compose(frame, frameOnly, []).text);
    if (input.writer === 'extractive') {
      const judged = extractiveJudged(frame.rest, previousText, input.maxTokens, judge, input.form);
      return {
        summaryTokens: tokensOf(compose(frame, judged, judged.check.missing).text),
        frameTokens,
        ledgerTokens: ledgerTokens(renderLedger(judged.ledger)),
      };
    }
    // A summary model: the ledger as the plan can know it (goal, constraints, key facts), and its update's share.
    const ledger = updateLedger(input.ledger, { ...(goal !== undefined ? { goal } : {}), userMessages, facts });
    return { frameTokens, ledgerTokens: ledgerTokens(renderLedger(ledger)) + MODEL_LEDGER_TOKENS };
  };
}
