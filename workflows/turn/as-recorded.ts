/**
 * A step's tool calls as runs recorded before reachable turns made them (workflows/turn/control.ts
 * `REACHABLE_TURNS_PATCH`): each a `runTool` activity in the workflow's root scope, all in parallel, with no
 * approval, no stand-in and no cancellation. Kept only so that those histories replay with the same commands; new
 * runs answer their calls in tool-calls.ts.
 */
import { runTool, TOOL_OPTIONS } from '../activities.ts';
import type { ModelReply } from '../../contract/activities.ts';
import type { ContextRecord } from '../../contract/records.ts';
import type { Conversation } from '../conversation.ts';
import { callIn, toolLimits } from './tool-calls.ts';

/** Runs `reply`'s tool calls; resolves to their results in the calls' order. */
export function runToolsAsRecorded(conversation: Conversation, reply: ModelReply): Promise<ContextRecord[]> {
  return Promise.all(
    reply.toolCalls.map((call) => {
      const resultId = conversation.newMessageId();
      return runTool.executeWithOptions(
        { ...TOOL_OPTIONS, summary: `tool ${call.function.name} (${call.id}) → ${resultId}` },
        [
          {
            ...conversation.life,
            call,
            ...callIn(call, reply.record.id),
            resultId,
            counting: conversation.counting,
            ...toolLimits(conversation, call),
          },
        ],
      );
    }),
  ) as Promise<ContextRecord[]>;
}
