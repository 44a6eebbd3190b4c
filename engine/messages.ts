/**
 * Chat messages as the OpenAI Chat Completions API takes them: the shape stored in S3 and sent to the model.
 * The engine works on these plus {@link MessageMeta}, plain JSON that can cross activity boundaries.
 */

import { clipLine } from './text.ts';

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * A tool call as the model-call activity returns it to the workflow: its arguments left out (`arguments` absent)
 * unless the workflow answers the call itself; they stay in the stored reply, where `runTool` reads them.
 */
export interface CallOfReply {
  id: string;
  type: 'function';
  function: { name: string; arguments?: string };
}

/** A text part of an array content. */
export interface TextPart {
  type: 'text';
  text: string;
}

/** An image part: a URL or a `data:` URL; `detail` is `low`, `high` or `auto` (the default). */
export interface ImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: string };
}

/** Any other part a provider takes (`input_audio`, `file`, `refusal`, …): kept as it is, never read as text. */
export interface OtherPart {
  type: string;
  [field: string]: unknown;
}

/** One part of an array content, as Chat Completions takes it. */
export type ContentPart = TextPart | ImagePart | OtherPart;

/** What a message may carry: text, an array of parts (text, images, …), or nothing (an assistant's tool calls). */
export type MessageContent = string | ContentPart[] | null;

export function isTextPart(part: ContentPart): part is TextPart {
  return part.type === 'text' && typeof (part as Partial<TextPart>).text === 'string';
}

export function isImagePart(part: ContentPart): part is ImagePart {
  const image = (part as Partial<ImagePart>).image_url;
  return part.type === 'image_url' && typeof image === 'object' && image !== null && typeof image.url === 'string';
}

/**
 * The text of a message's content: the string itself, or the text parts joined by newlines. Other parts are left
 * out, or rendered by `other` when given (e.g. {@link partLabel} for a preview). Never "[object Object]".
 */
export function textOf(content: MessageContent | undefined, other?: (part: ContentPart) => string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    if (isTextPart(part)) texts.push(part.text);
    else if (other) texts.push(other(part));
  }
  return texts.join('\n');
}

/** How a part that is not text shows in a preview or a transcript: `[image]`, `[input_audio]`, … */
export function partLabel(part: ContentPart): string {
  return part.type === 'image_url' ? '[image]' : `[${String(part.type)}]`;
}

export interface ChatMessage {
  role: ChatRole;
  content: MessageContent;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/**
 * What a message is in the working context: the original, or what a compaction step left in its place.
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
  /**
   * A summary that reaches into a turn: the message that opened the turn, and the steps of it the summary covers
   * (1 to `steps`), so that the next summary of the same turn counts on from there.
   */
  covers?: { turnId: string; steps: number };
  /**
   * A tool result that is a page of stored content the model asked to reload (`context_reload`): never cut as it
   * arrives, or its marker would point the model back to a cut of itself.
   */
  reload?: true;
  /** A user message that steered a turn in progress (`steer`): inside the turn, not the start of one. */
  steer?: true;
  /**
   * A user message a summary was prepended to (policy `summary.placement: 'first-kept-user'`): it keeps the user's
   * words and stays a turn of the conversation, counted and compactable like one. Absent on such messages made
   * before: a summary, not counted.
   */
  userTurn?: true;
  /** Tool messages: the name of the tool that answered (absent in records stored before it was kept). */
  tool?: string;
  /**
   * Tool messages: what the call read or did, as a hash of the tool's name and its arguments in canonical JSON
   * (`resourceOf`, activities): a newer result with the same `resource` supersedes this one. Absent when the
   * arguments were not a JSON object, and in records stored before.
   */
  resource?: string;
  /** Tool messages: the tool's results are never masked or superseded (`neverMask`, its definition or the policy). */
  neverMask?: true;
  /** Tool messages: tokens of the result a cut or a mask keeps (`preview`, its definition or the policy). */
  resultPreview?: number;
}

/** The kind of a message, `normal` when unset. */
export function kindOf(message: Pick<MessageMeta, 'kind'>): MessageKind {
  return message.kind ?? 'normal';
}

/**
 * Whether a message is one of the user's own, the start of a turn to count (not a summary, not the ledger): a user
 * message a summary was prepended to is (`userTurn`).
 */
export function isUserTurn(message: Pick<MessageMeta, 'role' | 'kind' | 'steer' | 'userTurn'>): boolean {
  if (message.userTurn === true) return true;
  return message.role === 'user' && kindOf(message) === 'normal' && message.steer !== true;
}

/** Storage key of the original body of a message, whatever replaced it. */
export function originalKeyOf(message: Pick<MessageMeta, 'key' | 'ref'>): string {
  return message.ref ?? message.key;
}

const PREVIEW_CHARS = 120;

/**
 * A one-line preview of a message body for state queries and the UI (an image shows as `[image]`). A message whose
 * content has no text but calls tools (an assistant's step) shows its calls: `→ read_file {"path":"a.ts"}`.
 */
export function previewOf(
  content: MessageContent | undefined,
  chars = PREVIEW_CHARS,
  toolCalls: readonly ToolCall[] = [],
): string {
  const text = textOf(content, partLabel);
  if (text.trim() === '' && toolCalls.length > 0) {
    return clipLine(toolCalls.map((call) => `→ ${call.function.name} ${call.function.arguments}`).join(' '), chars);
  }
  return clipLine(text, chars);
}

/** Characters of a message's tool calls, their names and arguments (what `chars`, the content's, leaves out). */
export function callCharsOf(toolCalls: readonly ToolCall[] = []): number {
  return toolCalls.reduce((sum, call) => sum + call.function.name.length + call.function.arguments.length, 0);
}
