/**
 * Storing what a turn adds on its own (when the model call that was to store it failed), and the results that stand
 * in for a call that did not run (denied, interrupted), each said in the live stream.
 */
import { STORE_OPTIONS, storeMessage } from '../activities.ts';
import type { NewMessage } from '../../contract/activities.ts';
import type { CallOfReply } from '../../engine/messages.ts';
import { TOOL_RESULT_PREVIEW_CHARS } from '../../contract/stream.ts';
import type { StreamAnnouncement } from '../../contract/stream.ts';
import type { ContextRecord } from '../../contract/records.ts';
import { INTERRUPTED_CALL_TAG } from '../../contract/results.ts';
import type { Conversation } from '../conversation.ts';

/** Marks the records of steers (user messages inside a turn: not the start of a turn). */
export function steered(records: ContextRecord[], steerIds: ReadonlySet<string>): ContextRecord[] {
  if (steerIds.size === 0) return records;
  return records.map((record) => (steerIds.has(record.id) ? { ...record, steer: true as const } : record));
}

/** Answers `call` with `content` (a denial, an interrupt), and says so in the live stream. */
export function standIn(
  conversation: Conversation,
  call: CallOfReply,
  resultId: string,
  content: string,
  step: number,
) {
  const items = standInItems(call, content, step, conversation.progress.turn?.turn);
  return storeStandIn(conversation, call, resultId, content, items);
}

/** The result of a call the turn's interrupt left unanswered. */
export function interruptedResult(call: CallOfReply, step: number | undefined): string {
  return (
    `${INTERRUPTED_CALL_TAG} This call of ${call.function.name} was interrupted${step !== undefined ? ` at step ${step}` : ''} ` +
    'before it returned: a person interrupted the turn. It may have had effects; what it returns later is kept ' +
    'apart, not here.'
  );
}

/** Answers `call` with `content` instead of the tool's result (a denial, an interrupt), stored under its result id. */
export async function storeStandIn(
  conversation: Conversation,
  call: CallOfReply,
  resultId: string,
  content: string,
  announce: StreamAnnouncement[],
): Promise<ContextRecord> {
  const [record] = await storeNew(
    conversation,
    [{ messageId: resultId, message: { role: 'tool', tool_call_id: call.id, content } }],
    announce,
  );
  return record!;
}

/** What the live stream says of a call's result. */
export function resultItem(call: CallOfReply, content: string): StreamAnnouncement {
  return {
    kind: 'tool-result',
    id: `tool-result:${call.id}`,
    callId: call.id,
    name: call.function.name,
    preview: content.slice(0, TOOL_RESULT_PREVIEW_CHARS),
    chars: content.length,
  };
}

/** What the live stream says of a call answered without running: denied, or interrupted. */
export function standInItems(call: CallOfReply, content: string, step: number | undefined, turn: number | undefined) {
  const items: StreamAnnouncement[] = [];
  if (content.startsWith('[denied]')) {
    items.push({
      kind: 'approval-answered',
      id: `approval-answered:${call.id}`,
      callId: call.id,
      approved: false,
      reason: content,
    });
  } else {
    items.push({
      kind: 'interrupted',
      id: `interrupted:${call.id}`,
      ...(turn !== undefined ? { turn } : {}),
      ...(step !== undefined ? { step } : {}),
      reason: `tool call ${call.id} (${call.function.name}) interrupted`,
    });
  }
  items.push(resultItem(call, content));
  return items;
}

/** Stores and counts messages on their own (when the model call that was to store them failed). */
export function storeNew(conversation: Conversation, messages: NewMessage[], announce?: StreamAnnouncement[]) {
  return Promise.all(
    messages.map(({ messageId, message }, i) =>
      storeMessage.executeWithOptions(
        { ...STORE_OPTIONS, summary: `store ${message.role} ${messageId} (${(message.content ?? '').length} chars)` },
        [
          {
            ...conversation.life,
            messageId,
            message,
            counting: conversation.counting,
            ...(i === 0 && announce?.length ? { announce } : {}),
          },
        ],
      ),
    ),
  );
}
