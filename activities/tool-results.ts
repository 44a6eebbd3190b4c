/**
 * What `runTool` does to a tool's result before it enters the context: it names the resource the call read (the
 * tool and its arguments, compared canonically: a newer result of the same resource supersedes this one at the next
 * compaction), and cuts a result over its tool's `maxResultTokens` to head and tail around a notice that names the
 * stored whole, before the model first reads it (so no cached prefix is ever rewritten for it).
 *
 * @example
 *   resourceOf({ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"b":1,"a":2}' } })
 *   // the same as for '{"a":2,"b":1}' and '{ "a": 2, "b": 1 }'
 */
import { createHash } from 'node:crypto';
import { DEFAULT_HEAD_SHARE, fillMarker, truncateToTokens } from '../engine/apply.ts';
import type { ChatMessage, ToolCall } from '../engine/messages.ts';
import type { ToolLimits } from '../engine/policy.ts';
import { countMessage } from '../engine/tokens.ts';
import type { TokenCounter } from '../engine/tokens.ts';

/** JSON with every object's keys sorted, at every depth: equal for arguments that differ only in order and spaces. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The resource a call reads: a hash (16 hex digits) of its tool's name and its arguments in canonical JSON; undefined
 * when the arguments are not a JSON object (the call was answered with an error).
 */
export function resourceOf(call: ToolCall): string | undefined {
  let args: unknown;
  try {
    args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
  } catch {
    return undefined;
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return undefined;
  return createHash('sha256')
    .update(`${call.function.name}\n${canonicalJson(args)}`)
    .digest('hex')
    .slice(0, 16);
}

/** The notice between a result's head and tail when it is cut as it arrives. */
export const ENTRY_CUT_NOTICE =
  '[… {omitted} characters cut as this result arrived (over the tool’s limit of {limit} tokens); the whole result is stored: context_reload("{ref}") …]';

/**
 * `message` (a tool result) cut to its tool's `maxResultTokens` when it counts more: head and tail around
 * {@link ENTRY_CUT_NOTICE} naming `originalKey`, the message as cut counting at most the limit, or the notice and
 * `preview` tokens of the result when the tool sets a preview. Undefined when it fits (or the tool sets no limit).
 */
export function cutAtEntry(
  message: ChatMessage & { content: string },
  limits: ToolLimits,
  originalKey: string,
  counter: TokenCounter,
  margin = 1,
): ChatMessage | undefined {
  const limit = limits.maxResultTokens;
  if (limit === undefined || countMessage(counter, message, margin) <= limit) return undefined;
  const notice = ENTRY_CUT_NOTICE.replaceAll('{limit}', String(limit));
  const noticeTokens = countMessage(counter, { ...message, content: fillMarker(notice, originalKey, 0) }, margin);
  const keep = limits.preview !== undefined ? Math.min(limit, noticeTokens + limits.preview) : limit;
  const content = truncateToTokens(message, message.content, keep, DEFAULT_HEAD_SHARE, notice, originalKey, {
    counter,
    margin,
  });
  return { ...message, content };
}
