/** Chat messages as the OpenAI Chat Completions API takes them, the shape stored in S3 and sent to the model. */

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: ChatRole;
  content: string | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

const PREVIEW_CHARS = 120;

/** A one-line preview of a message body for state queries and the UI. */
export function previewOf(content: string | null): string {
  const text = (content ?? '').replace(/\s+/g, ' ').trim();
  return text.length <= PREVIEW_CHARS ? text : `${text.slice(0, PREVIEW_CHARS - 1)}…`;
}
