/**
 * The search index written as bodies are stored (storage/search-index.ts has its layout): the activities that store
 * a message, a tool result (and its whole original), a summary or a task ledger add it to the index before they
 * complete; the model call seals the blocks of messages it is past, and a compaction's those of compactions well
 * before it (each merging 16 sealed segments into one when they are there).
 *
 * Indexing never fails the agent's work: a storage outage is waited out for a while, then (like any other failure
 * of the index) logged, and the body stays unindexed until its block is sealed, which reads a message without a small
 * segment from its stored body.
 */
import { log } from '@temporalio/activity';
import { messageKey, originalResultKey, seqOf } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { ChatMessage, MessageKind } from '../engine/messages.ts';
import { docOf, searchIndexOf } from '../storage/search-index.ts';
import { compactionSeqOf } from '../storage/search-tiers.ts';
import type { SearchStore } from '../storage/search-index.ts';
import type { SearchDoc } from '../storage/search-rank.ts';
import { untilStored } from './stored.ts';

/** How long an index write waits out a storage outage before it is logged and left. */
const INDEX_RETRY_MS = 20_000;

/** Logs through the activity's logger, or the console outside an activity. */
function warn(message: string): void {
  try {
    log.warn(message);
  } catch {
    console.warn(message);
  }
}

/** A message to index: its id, its body, and the turn and step of the model call that stored it (when one did). */
export interface IndexedMessage {
  messageId: string;
  message: ChatMessage;
  turn?: number;
  step?: number;
  /** The whole original of a tool result cut as it arrived (stored under originals/). */
  original?: ChatMessage;
}

export function createSearchWrites(store: SearchStore) {
  const index = searchIndexOf(store);

  async function quietly(what: string, write: () => Promise<unknown>): Promise<void> {
    try {
      await untilStored(write, INDEX_RETRY_MS);
    } catch (error) {
      warn(
        `search index: ${what} failed (${String((error as Error).message ?? error)}); it is sealed from its body later`,
      );
    }
  }

  return {
    /** Adds stored messages to the index, a small segment each (a retry writes the same keys). */
    messages(agent: AgentLife, messages: readonly IndexedMessage[]): Promise<void> {
      return quietly('adding messages', () =>
        Promise.all(
          messages.map(({ messageId, message, turn, step, original }) => {
            const seq = seqOf(messageId);
            const at = { ...(turn !== undefined ? { turn } : {}), ...(step !== undefined ? { step } : {}) };
            const meta = { id: messageId, role: message.role, seq, ...at };
            const docs: SearchDoc[] = [docOf({ ...meta, key: messageKey(agent, messageId), kind: 'message' }, message)];
            if (original) {
              docs.push(docOf({ ...meta, key: originalResultKey(agent, messageId), kind: 'original' }, original));
            }
            return index.add(agent, messageId, docs);
          }),
        ),
      );
    },

    /** Adds a compaction's stored summary or task ledger (`id` c000002 or l000002). */
    compactionBody(agent: AgentLife, id: string, kind: MessageKind, key: string, message: ChatMessage): Promise<void> {
      const seq = compactionSeqOf(id);
      if ((kind !== 'summary' && kind !== 'ledger') || seq === undefined) return Promise.resolve();
      // A reviewer's edit of a summary (summary-edited.json, the same id) takes the summary's place in the index.
      // Then the blocks of compactions well before it are sealed (and merged when 16 are there).
      return quietly(`adding ${id}`, async () => {
        await index.add(agent, id, [docOf({ key, id, role: message.role, seq, kind }, message)]);
        await index.sealCompactionsBefore(agent, seq);
      });
    },

    /** Seals the blocks of messages before `messageId` (call it from the model call that stores that message). */
    sealBefore(agent: AgentLife, messageId: string): Promise<void> {
      return quietly('sealing a block', () => index.sealBefore(agent, seqOf(messageId)));
    },
  };
}

export type SearchWrites = ReturnType<typeof createSearchWrites>;
