/**
 * What the model call adds to the view it loaded, in the request only (never stored): the pinned block right after
 * the leading system messages (contract/pins.ts), and the budget note at the request's end (engine/budget-note.ts):
 * last, or before the person's words when the request ends with them. Pure, unit-tested.
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

/**
 * Puts the budget note into `messages`: last, after the step's tool results, or, when the request ends with the
 * person's words (a turn's opening message, a steer), just before them, so that they stay the last message and a
 * model (or a server) that answers the last message answers the person, not the note. The note is a user message:
 * Chat Completions servers differ on system messages after the first, and none refuses a user one.
 */
export function insertBudgetNote(messages: ChatMessage[], note: string): void {
  let at = messages.length;
  while (at > 0 && messages[at - 1]!.role === 'user') at--;
  messages.splice(at, 0, { role: 'user', content: note });
}
