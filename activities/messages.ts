/**
 * The conversation's messages as the activities store them: each under its idempotent key and counted into the record
 * the workflow holds ({@link createMessageStore}); and the activities that store or read one for the workflow
 * ({@link createMessageActivities}): a message, a pin, a turn's stored reply read back.
 */
import { agentLife, messageKey, pinKey } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import { unkeyedRecord } from '../contract/records.ts';
import type { ContextRecord } from '../contract/records.ts';
import type { ReadReplyInput, StoreMessageInput, StorePinInput, StoredPin } from '../contract/activities.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import type { Counting } from '../engine/models.ts';
import type { BlobStore } from '../storage/s3.ts';
import type { SearchWrites } from './search-writes.ts';
import { storedObjects, untilStored } from './stored.ts';
import type { AgentStream } from './stream.ts';

/** The stored objects, and a message of the conversation counted (`measure`) or stored and counted (`save`). */
export function createMessageStore(store: BlobStore) {
  const objects = storedObjects(store);
  /** The record of a message of the conversation, counted once; it leaves out its own key, as the workflow holds it. */
  const measure = async (agent: AgentLife, messageId: string, message: ChatMessage, counting: Counting) =>
    unkeyedRecord(agent, await objects.measure(messageKey(agent, messageId), message, counting, { id: messageId }));
  /** Stores a message of the conversation under its idempotent key and returns its record. */
  const save = async (agent: AgentLife, messageId: string, message: ChatMessage, counting: Counting) => {
    await objects.write(messageKey(agent, messageId), message);
    return measure(agent, messageId, message, counting);
  };
  return { objects, measure, save };
}

export type MessageStore = ReturnType<typeof createMessageStore>;

/** What the message activities take: the message store, the search index and the live stream. */
export type MessageActivityDeps = Pick<MessageStore, 'objects' | 'save'> & {
  search: SearchWrites;
  stream: AgentStream;
};

/** The activities storePin, storeMessage and readReply. */
export function createMessageActivities({ objects, save, search, stream }: MessageActivityDeps) {
  return {
    /** Stores a pin's text under the pin's own key (idempotent) and counts it as a message of the request. */
    async storePin(input: StorePinInput): Promise<StoredPin> {
      const key = pinKey(agentLife(input), input.pinId);
      const record = await untilStored(() =>
        objects.save(key, { role: 'user', content: input.text }, input.counting, { id: input.pinId }),
      );
      return { key, tokens: record.tokens, preview: record.preview };
    },

    /** Stores one message under its idempotent key and returns its metadata. */
    async storeMessage(input: StoreMessageInput): Promise<ContextRecord> {
      const record = await save(agentLife(input), input.messageId, input.message, input.counting);
      await search.messages(agentLife(input), [{ messageId: input.messageId, message: input.message }]);
      await stream.announce(agentLife(input), input.announce);
      return record;
    },

    /**
     * The text of a turn's stored reply (as the turn answered it), for a `send` delivered again to a later run: its
     * result is kept without the reply (workflows/applied-updates.ts).
     */
    async readReply(input: ReadReplyInput): Promise<string> {
      const message = await untilStored(() => objects.load<ChatMessage>(messageKey(agentLife(input), input.replyId)));
      return textOf(message.content);
    },
  };
}
