/**
 * The model boundary: a provider's reply message as longrun keeps it. The reply is stored and sent back to the model
 * on every later call, so what cannot be sent back is refused here, before it is stored: content that is not text,
 * parts or null, tool_calls that are not a list, a call without a string id or name, an id given twice (its two
 * results would break the tool pairs of every later request). The refusal is a {@link FAILURE.badReply} failure
 * naming the field and what is expected, not retried: the turn fails, nothing of the reply enters the context, and
 * the next message goes on.
 *
 * One leniency, where the intent is plain: the API sends a call's arguments as JSON text, and a provider that sends
 * the JSON value itself (an object) has its arguments read as that value's JSON text; missing arguments are none.
 * Unknown tools and arguments that are not a JSON object are not the boundary's to refuse: the call is answered
 * with an error result the model can read (activities/tool-call.ts `runToolCall`).
 */
import { ApplicationFailure } from '@temporalio/common';
import { quoted } from '../contract/inputs.ts';
import { FAILURE } from '../contract/failures.ts';
import type { CallOfReply, ContentPart, MessageContent, ToolCall } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { contextBudget, contextPin } from './tools.ts';
import { DELEGATE_TOOL } from '../contract/delegation.ts';

/** A reply as it is kept: its content, its text (the turn's reply), its function calls. */
export interface ModelReplyMessage {
  content: MessageContent;
  text: string;
  toolCalls: ToolCall[];
}

/**
 * The tools whose calls the workflow answers itself (workflows/context-tools.ts, workflows/delegation.ts): it reads
 * their arguments. (A team's `delegateTo` tools get theirs from `runTool`, which reads the stored reply.)
 */
export const ANSWERED_BY_WORKFLOW: ReadonlySet<string> = new Set([contextPin.name, contextBudget.name, DELEGATE_TOOL]);

/**
 * The reply as the workflow needs it, for its history: a call's arguments only where the workflow answers the call
 * itself, and the text only when the reply may end the turn (no tool calls, or `tool_choice: 'none'`). Both stay in
 * the stored reply: `runTool` reads a call's arguments there.
 */
export function leanReply<R extends { content: string; toolCalls: CallOfReply[] }>(
  reply: R,
  toolChoice: 'auto' | 'none' | undefined,
): R {
  if (reply.toolCalls.length === 0) return reply;
  const toolCalls = reply.toolCalls.map(({ id, type, function: { name, arguments: args } }): CallOfReply =>
    ANSWERED_BY_WORKFLOW.has(name)
      ? { id, type, function: { name, arguments: args } }
      : { id, type, function: { name } },
  );
  return { ...reply, ...(toolChoice === 'none' ? {} : { content: '' }), toolCalls };
}

/** A value's kind as an error names it: a number, an object, a list, null, undefined… */
export function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function badReply(model: string, problem: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `model ${model} replied with ${problem}; the reply is not kept`,
    FAILURE.badReply,
  );
}

/** Reads a reply's message (`choices[0].message`), or throws {@link FAILURE.badReply}. */
export function readModelReply(message: unknown, model: string): ModelReplyMessage {
  const { content, tool_calls: calls } = (message ?? {}) as { content?: unknown; tool_calls?: unknown };
  const parts = Array.isArray(content) && content.every((part) => typeof (part as ContentPart)?.type === 'string');
  if (content !== undefined && content !== null && typeof content !== 'string' && !parts) {
    throw badReply(model, `content that is ${kindOf(content)} (text, a list of typed parts or null is expected)`);
  }
  if (calls !== undefined && calls !== null && !Array.isArray(calls)) {
    throw badReply(model, `tool_calls that is ${kindOf(calls)} (a list of calls is expected)`);
  }
  const toolCalls: ToolCall[] = [];
  for (const [i, call] of ((calls ?? []) as unknown[]).entries()) {
    const { id, type, function: fn } = (call ?? {}) as { id?: unknown; type?: unknown; function?: unknown };
    if (type !== 'function') continue; // calls of other kinds (custom tools) are not longrun's to run
    if (typeof id !== 'string' || id === '') {
      throw badReply(model, `tool_calls[${i}].id that is ${kindOf(id)} (a non-empty string is expected)`);
    }
    if (toolCalls.some((earlier) => earlier.id === id)) {
      throw badReply(model, `tool call id ${quoted(id)} given twice (each call needs an id of its own)`);
    }
    const { name, arguments: args } = (fn ?? {}) as { name?: unknown; arguments?: unknown };
    if (typeof name !== 'string' || name === '') {
      throw badReply(model, `tool_calls[${i}].function.name that is ${kindOf(name)} (a tool's name is expected)`);
    }
    const text = typeof args === 'string' ? args : args === undefined || args === null ? '' : JSON.stringify(args);
    toolCalls.push({ id, type: 'function', function: { name, arguments: text } });
  }
  const kept = (content ?? null) as MessageContent;
  return { content: kept, text: textOf(kept), toolCalls };
}
