/**
 * The messages a step adds to the context before its model call, which stores and counts them: on the turn's first
 * step the system prompt (on the agent's first turn, or one `configure` set) and the user's message; then the steers
 * that came since the last step, each answered where it lands (its turn, step and message id) and said in the live
 * stream. Synchronous: the turn's awaits, whose order recorded histories pin, all stay in run.ts.
 */
import type { NewMessage } from '../../contract/activities.ts';
import type { AgentInput, SendInput } from '../../contract/inputs.ts';
import type { StreamAnnouncement } from '../../contract/stream.ts';
import type { Conversation } from '../conversation.ts';
import type { PendingOf } from '../inbox.ts';
import type { TurnReach } from './reach.ts';

export interface StepMessages {
  fresh: NewMessage[];
  /** The ids of the steers among `fresh` (user messages inside a turn: not the start of a turn). */
  steerIds: Set<string>;
  /** What the model call publishes first: the steers. */
  announce: StreamAnnouncement[];
  /** The user's message that opens the turn (its first step only). */
  userMessageId?: string;
}

export function newMessages(
  conversation: Conversation,
  input: AgentInput,
  reach: TurnReach,
  send: SendInput,
  steers: PendingOf<'steer'>[],
  at: { turn: number; step: number },
): StepMessages {
  const { state } = conversation;
  const { turn, step } = at;
  const fresh: NewMessage[] = [];
  let userMessageId: string | undefined;
  if (step === 1) {
    // (`state.systemPrompt` is the start's unless `configure` set one; a set one waits for this turn.)
    const prompt = state.systemPrompt ?? input.systemPrompt;
    if ((state.messages.length === 0 || state.systemPromptPending) && prompt) {
      fresh.push({ messageId: conversation.newMessageId(), message: { role: 'system', content: prompt } });
      if (state.systemPromptPending) conversation.systemPromptSent();
    }
    userMessageId = conversation.newMessageId();
    fresh.push({ messageId: userMessageId, message: { role: 'user', content: send.text } });
    conversation.startGoal(send.text);
    if (reach.opener) reach.inbox.answer(reach.opener, { turn, step, messageId: userMessageId, opened: true });
  }
  const steerIds = new Set<string>();
  const announce: StreamAnnouncement[] = [];
  for (const steer of steers) {
    const id = conversation.newMessageId();
    steerIds.add(id);
    fresh.push({ messageId: id, message: { role: 'user', content: steer.input.text }, steer: true });
    announce.push({ kind: 'steer', id: `steer-${id}`, text: steer.input.text, turn, step });
    reach.inbox.answer(steer, { turn, step, messageId: id, opened: false });
  }
  return { fresh, steerIds, announce, ...(userMessageId !== undefined ? { userMessageId } : {}) };
}
