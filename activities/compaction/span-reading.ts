/**
 * A summary's span read from its stored bodies, as both the summarize step (summarize.ts) and the plan's counting of
 * what it will write (written-sizes.ts) read it: the frame the summary is composed in, the previous summaries' text,
 * and the judge of its must-keep facts and task ledger.
 */
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { loadTokenCounter } from '../../engine/tokens.ts';
import type { SummarizeInput } from '../../contract/compaction-activities.ts';
import type { SummaryFrame } from './compose.ts';
import { judgeOf } from './judge.ts';
import type { CompactionObjects } from './stored-objects.ts';

/** A summary's span as the summarize step reads it: the frame it is composed in, the previous summaries, the judge. */
export function createSpanReading({ load, spanOf }: Pick<CompactionObjects, 'load' | 'spanOf'>) {
  return async function readSpan(input: SummarizeInput) {
    const { previous, rest, facts } = await spanOf(input.spanKeys, input.keptKeys);
    const previousText = previous.map((m) => textOf(m.content)).join('\n\n');
    // The ledger after this summary: the goal and the user's constraints verbatim, the rest from the summary.
    const goal = input.goalKey ? textOf((await load<ChatMessage>(input.goalKey)).content) : undefined;
    const userMessages = rest.filter((m) => m.role === 'user').map((m) => textOf(m.content));
    const judge = judgeOf({ ledger: input.ledger, goal, userMessages, facts });
    const host = input.prependToKey ? await load<ChatMessage>(input.prependToKey) : undefined;
    const counter = await loadTokenCounter(input.counting.encoding);
    const frame: SummaryFrame = { input, rest, counter, host };
    return { frame, previousText, judge, goal, userMessages, facts };
  };
}
