/**
 * Judging a summary by the must-keep facts of what leaves the context: the task ledger it leads to and the facts it
 * (with the ledger) keeps; one re-prompt naming the facts it lost; which lost facts are pinned verbatim; and the fact
 * check the event reports.
 */
import { checkFacts, prioritizeFacts } from '../../engine/facts.ts';
import type { Fact } from '../../engine/facts.ts';
import { renderLedger, updateLedger } from '../../engine/ledger.ts';
import type { LedgerUpdate, TaskLedger } from '../../engine/ledger.ts';
import type { FactCheck } from '../../contract/compaction-activities.ts';
import type { Conversation } from './ask.ts';

/** Facts named in the re-prompt and pinned, at most (the most valuable kinds first). */
const MAX_PINNED_FACTS = 40;

/** What a summary's text and its ledger keep of the must-keep facts. */
export type FactsKept = ReturnType<typeof checkFacts>;

/** A summary judged: its text, the ledger after it, and the facts the two keep. */
export interface Judged {
  rendered: string;
  ledger: TaskLedger;
  check: FactsKept;
}

/** The facts to pin of those a summary lost: the most valuable kinds first, at most {@link MAX_PINNED_FACTS}. */
export function pinsOf(missing: readonly Fact[]): Fact[] {
  return prioritizeFacts(missing, MAX_PINNED_FACTS);
}

/** The fact check an event reports. */
export function factsReport(check: FactsKept, reprompted: boolean, pinned: readonly Fact[]): FactCheck {
  return {
    found: check.found.length,
    missing: check.missing.length,
    reprompted,
    pinned: pinned.map((f) => f.text),
  };
}

/** The one re-prompt: the facts the summary lost, to be kept verbatim. */
function missingFactsPrompt(missing: readonly Fact[]): string {
  return [
    'Your summary lost these facts from the removed messages. Rewrite the whole summary, same sections, keeping',
    'each of them verbatim:',
    ...missing.map((f) => `- ${f.text}`),
  ].join('\n');
}

/**
 * The judge of a span's summaries: the ledger after one (the goal and the user's constraints verbatim, the rest from
 * the summary, over the ledger so far) and the `facts` it keeps with that ledger.
 */
export function judgeOf(span: {
  ledger: TaskLedger | undefined;
  goal: string | undefined;
  userMessages: readonly string[];
  facts: readonly Fact[];
}) {
  const { goal, userMessages, facts } = span;
  return (rendered: string, update: LedgerUpdate): Judged => {
    const ledger = updateLedger(span.ledger, {
      ...(goal !== undefined ? { goal } : {}),
      userMessages,
      update,
      facts,
    });
    return { rendered, ledger, check: checkFacts(facts, `${rendered}\n${renderLedger(ledger)}`) };
  };
}

/**
 * The model's summary, judged: the first `reply` to `messages` if it kept every fact; otherwise the model is asked
 * once more, naming what it lost, and the answer that lost no more stands (the first, if asking again fails).
 */
export async function judgedReply<T extends Judged>(
  messages: Conversation,
  reply: string,
  read: (reply: string) => T,
  ask: (conversation: Conversation) => Promise<string>,
): Promise<T & { reprompted: boolean }> {
  const first = read(reply);
  if (first.check.missing.length === 0) return { ...first, reprompted: false };
  try {
    const second = read(
      await ask([
        ...messages,
        { role: 'assistant', content: reply },
        { role: 'user', content: missingFactsPrompt(pinsOf(first.check.missing)) },
      ]),
    );
    if (second.check.missing.length <= first.check.missing.length) return { ...second, reprompted: true };
  } catch {
    // The first summary stands; what it lost is pinned.
  }
  return { ...first, reprompted: true };
}
