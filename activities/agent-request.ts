/**
 * The agent's request as its model call builds it from the loaded view: the messages in order, the pinned block right
 * after the leading system messages (contract/pins.ts). Shared by the model call (activities/model-request.ts) and a
 * summary in conversation mode (activities/compaction/conversation.ts), whose request must begin exactly as the
 * agent's own so the provider serves that prefix from its prompt cache.
 */
import type { PinnedRef } from '../contract/pins.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { insertPinnedBlock } from './request-extras.ts';

/** Puts the pinned block of `pinned` (their bodies read with `load`) into `messages`, as the model call sends it. */
export async function withPinnedBlock(
  messages: ChatMessage[],
  pinned: readonly PinnedRef[] | undefined,
  load: (key: string) => Promise<ChatMessage>,
): Promise<ChatMessage[]> {
  if (!pinned?.length) return messages;
  insertPinnedBlock(messages, pinned, await Promise.all(pinned.map((pin) => load(pin.key))));
  return messages;
}
