/**
 * Chat messages as the OpenAI Chat Completions API takes them: the shape stored in S3 and sent to the model.
 * The engine works on these plus {@link MessageMeta}, plain JSON that can cross activity boundaries.
 */

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

/**
 * What a message is in the working context: the original, or what a compression step left in its place.
 * `summary` replaces a span of turns; `truncated` keeps head and tail; `masked` is a one-line stub;
 * `offloaded` is a preview; each of the last three names the stored original in `ref`. `ledger` is the task ledger.
 */
export type MessageKind = 'normal' | 'summary' | 'truncated' | 'masked' | 'offloaded' | 'ledger';

/**
 * Metadata the engine plans over; the body lives in storage under `key`. Plain JSON: it crosses activity
 * boundaries and sits in workflow state, so optional fields are left out when they have their default.
 */
export interface MessageMeta {
  id: string;
  role: ChatRole;
  /** Tokens of this message in the agent's encoding, chat overhead and safety margin included. */
  tokens: number;
  /** Characters of the body's content. */
  chars: number;
  /** Storage key of the body in the context (the original, or what replaced it). */
  key: string;
  /** Default `normal`. */
  kind?: MessageKind;
  /** For a replacement: storage key of the original body, which stays reloadable. */
  ref?: string;
  /** Assistant messages that call tools: the call ids, each to be answered by a tool message. */
  toolCallIds?: string[];
  /** Tool messages: the call they answer. */
  toolCallId?: string;
  /** Milliseconds since the epoch, when known. */
  createdAt?: number;
}

/** The kind of a message, `normal` when unset. */
export function kindOf(message: Pick<MessageMeta, 'kind'>): MessageKind {
  return message.kind ?? 'normal';
}

/** Whether a message is one of the user's own, the start of a turn to count (not a summary, not the ledger). */
export function isUserTurn(message: Pick<MessageMeta, 'role' | 'kind'>): boolean {
  return message.role === 'user' && kindOf(message) === 'normal';
}

/** Storage key of the original body of a message, whatever replaced it. */
export function originalKeyOf(message: Pick<MessageMeta, 'key' | 'ref'>): string {
  return message.ref ?? message.key;
}

const PREVIEW_CHARS = 120;

/** A one-line preview of a message body for state queries and the UI. */
export function previewOf(content: string | null, chars = PREVIEW_CHARS): string {
  const text = (content ?? '').replace(/\s+/g, ' ').trim();
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}…`;
}
