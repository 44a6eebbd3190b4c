/**
 * What the model call adds to the view it loaded, in the request only (never stored): the pinned block right after
 * the leading system messages (contract/pins.ts), and the budget note as the request's last message
 * (engine/budget-note.ts). Pure, unit-tested.
 */
import { PINNED_BLOCK_HEADING } from '../contract/pins.ts';
import type { PinnedRef } from '../contract/pins.ts';
import { textOf } from '../engine/messages.ts';
import type { ChatMessage } from '../engine/messages.ts';

/** A pinned message's body as the block quotes it: its text, and the tool calls it made. */
function pinnedText(message: ChatMessage): string {
  const text = textOf(message.content);
  const calls = (message.tool_calls ?? []).map(
    (call) => `[tool call ${call.function.name}(${call.function.arguments})]`,
  );
  return [text, ...calls].filter((part) => part !== '').join('\n');
}

/** The pinned block: one system message, each pin under its label, verbatim. */
export function pinnedBlock(pins: readonly PinnedRef[], bodies: readonly ChatMessage[]): ChatMessage {
  const parts = pins.map((pin, i) => `[${pin.label}]\n${pinnedText(bodies[i]!)}`);
  return { role: 'system', content: `${PINNED_BLOCK_HEADING}\n\n${parts.join('\n\n')}` };
}

/** Puts the pinned block into `messages` after its leading system messages (the stable prefix). */
export function insertPinnedBlock(
  messages: ChatMessage[],
  pins: readonly PinnedRef[],
  bodies: readonly ChatMessage[],
): void {
  if (pins.length === 0) return;
  let at = 0;
  while (at < messages.length && messages[at]!.role === 'system') at++;
  messages.splice(at, 0, pinnedBlock(pins, bodies));
}

/** The budget note as the request's last message. */
export function budgetNoteMessage(note: string): ChatMessage {
  return { role: 'user', content: note };
}
