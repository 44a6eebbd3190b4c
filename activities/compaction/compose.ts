/**
 * Composing a judged summary into the context's messages: the summary message (its title, the summary, where the
 * loop stands, the facts it lost pinned verbatim, the list of what left the context; within its budget) and the task
 * ledger's message, each stored (summary.json, then ledger.json) and counted, and the outcome the apply step takes.
 */
import { summaryMessage, truncateToTokens } from '../../engine/apply.ts';
import type { Fact } from '../../engine/facts.ts';
import { preservedFactsBlock } from '../../engine/facts.ts';
import { renderLedger } from '../../engine/ledger.ts';
import type { TaskLedger } from '../../engine/ledger.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { partLabel, textOf } from '../../engine/messages.ts';
import { loopPositionBlock, removedLine, summaryTitle } from '../../engine/summary.ts';
import { clipLine } from '../../engine/text.ts';
import { countMessage } from '../../engine/tokens.ts';
import type { TokenCounter } from '../../engine/tokens.ts';
import { compactionKey, ledgerIdOf, messageKey, summaryIdOf } from '../../contract/keys.ts';
import type { MessageRecord } from '../../contract/records.ts';
import type { SummarizeInput, SummaryOutcome } from '../../contract/compaction-activities.ts';
import { factsReport, pinsOf } from './judge.ts';
import type { Judged } from './judge.ts';
import type { CompactionObjects } from './stored-objects.ts';

/** What a summary is composed for: the activity's input, the span's messages (not its previous summaries), the host. */
export interface SummaryFrame {
  input: SummarizeInput;
  rest: readonly ChatMessage[];
  counter: TokenCounter;
  /** The user message the summary is prepended to, if any. */
  host: ChatMessage | undefined;
}

/** How a summary was written: what the event says of it. */
export type SummaryHow = Pick<SummaryOutcome, 'parsedAs' | 'responseFormat' | 'llm'> & {
  reprompted: boolean;
  chunks?: number;
};

/** The last tool call of a span and a preview of its results: where a summarized loop stopped. */
function loopEnd(span: readonly ChatMessage[]): { lastAction?: string; lastResult?: string } {
  const at = span.findLastIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
  if (at === -1) return {};
  const calls = span[at]!.tool_calls!;
  const results = span.slice(at + 1).filter((m) => m.role === 'tool');
  return {
    lastAction: calls.map((c) => `${c.function.name}(${clipLine(c.function.arguments, 160)})`).join('; '),
    ...(results.length
      ? { lastResult: clipLine(results.map((m) => textOf(m.content, partLabel)).join(' | '), 240) }
      : {}),
  };
}

/**
 * The summary message's text: its title (what it covers), the summary, where the loop stands (a summary reaching into
 * the turn in progress), the facts it lost pinned verbatim, and the list of what left the context. Within its
 * budget: the pinned facts least worth keeping go first, then the summary's text is cut, never the frame.
 */
export function compose(
  { input, rest, counter, host }: SummaryFrame,
  judged: Judged,
  missing: readonly Fact[],
): { text: string; pinned: Fact[] } {
  const body = judged.rendered.replace(
    /^\[Summary of earlier conversation[^\n]*\]/,
    summaryTitle(input.coverage, input.form),
  );
  const steps = input.coverage?.currentTurn?.steps;
  const frame = [
    ...(steps ? [loopPositionBlock({ steps, ...loopEnd(rest), nextStep: judged.ledger.nextAction })] : []),
  ];
  const removed = input.leavingIds?.length ? removedLine(input.leavingIds, messageKey(input, '<id>')) : '';
  const textWith = (summaryText: string, pins: readonly Fact[]) =>
    [summaryText, ...frame, ...(pins.length ? [preservedFactsBlock(pins)] : []), ...(removed ? [removed] : [])]
      .filter(Boolean)
      .join('\n\n');
  const fits = (text: string) =>
    countMessage(counter, summaryMessageOf(input, text, host), input.counting.margin) <= input.maxTokens;
  let pins = pinsOf(missing);
  while (pins.length > 0 && !fits(textWith(body, pins))) pins = pins.slice(0, -1);
  if (fits(textWith(body, pins))) return { text: textWith(body, pins), pinned: pins };
  // Still over: cut the summary's own text, by counting, to what the frame leaves.
  const frameTokens = countMessage(counter, summaryMessageOf(input, textWith('', pins), host), input.counting.margin);
  const cut = truncateToTokens(
    { role: 'user', content: '' },
    body,
    Math.max(64, input.maxTokens - frameTokens),
    1,
    '[… the rest of this summary was cut to fit its budget …]',
    '',
    { counter, margin: input.counting.margin },
  );
  return { text: textWith(cut, pins), pinned: pins };
}

/**
 * The message a summary is stored as: an assistant message where its span was, for a summary of one span in its place
 * (`input.form`); else the summary message, or the user message it is prepended to.
 */
export function summaryMessageOf(
  input: Pick<SummarizeInput, 'form'>,
  rendered: string,
  host?: ChatMessage,
): ChatMessage {
  return input.form ? { role: 'assistant', content: rendered } : summaryMessage(rendered, host);
}

/** Composing and storing over the agent's stored objects. */
export function createComposing({ load, save }: Pick<CompactionObjects, 'load' | 'save'>) {
  /** Stores the summary message (or the user message it was prepended to) and counts it. */
  async function storeSummary(input: SummarizeInput, rendered: string): Promise<MessageRecord> {
    const host = input.prependToKey ? await load<ChatMessage>(input.prependToKey) : undefined;
    // The plan's further summaries in their places: their own keys and ids.
    const n = input.part ?? 0;
    const record = await save(
      compactionKey(input, input.seq, n > 0 ? `summary-${n + 1}.json` : 'summary.json'),
      summaryMessageOf(input, rendered, host),
      input.counting,
      { id: n > 0 ? `${summaryIdOf(input.seq)}-${n + 1}` : summaryIdOf(input.seq), kind: 'summary' },
    );
    const turn = input.coverage?.currentTurn;
    return turn ? { ...record, covers: { turnId: turn.turnId, steps: turn.steps } } : record;
  }

  /** Stores the task ledger's message and counts it. */
  function storeLedger(input: SummarizeInput, ledger: TaskLedger): Promise<MessageRecord> {
    return save(
      compactionKey(input, input.seq, 'ledger.json'),
      { role: 'user', content: renderLedger(ledger) },
      input.counting,
      { id: ledgerIdOf(input.seq), kind: 'ledger' },
    );
  }

  /** Pins what the judged summary still misses, stores summary and ledger, and says what happened. */
  return async function storeComposed(frame: SummaryFrame, judged: Judged, how: SummaryHow): Promise<SummaryOutcome> {
    const { input } = frame;
    const { text, pinned } = compose(frame, judged, judged.check.missing);
    return {
      record: await storeSummary(input, text),
      ledger: judged.ledger,
      ledgerRecord: await storeLedger(input, judged.ledger),
      parsedAs: how.parsedAs,
      responseFormat: how.responseFormat,
      ...(how.chunks !== undefined ? { chunks: how.chunks } : {}),
      facts: factsReport(judged.check, how.reprompted, pinned),
      llm: how.llm,
    };
  };
}
