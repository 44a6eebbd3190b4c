/**
 * The replayed model: answers from a recorded session (OpenAI chat messages as JSONL) instead of a provider.
 * A request with k user messages, of which the last is followed by j assistant messages, gets the (j+1)-th
 * assistant message recorded after the k-th user message. So a retried request gets the same answer, and a
 * recording that runs out fails loudly.
 */
import type { ChatMessage } from '../engine/messages.ts';
import type { Responder, ScriptedReply } from './chat-server.ts';

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/** Thrown for a recording that is not OpenAI chat messages as JSONL; names the line. */
export class SessionFormatError extends Error {
  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.name = 'SessionFormatError';
  }
}

/** Parses JSONL chat messages; blank lines are skipped. */
export function parseSessionJsonl(text: string): ChatMessage[] {
  const messages: ChatMessage[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new SessionFormatError(index + 1, `not JSON (${(error as Error).message})`);
    }
    const message = value as Partial<ChatMessage>;
    if (typeof message !== 'object' || message === null || !ROLES.has(message.role as string)) {
      throw new SessionFormatError(index + 1, 'role must be one of system, user, assistant, tool');
    }
    if (message.content !== null && message.content !== undefined && typeof message.content !== 'string') {
      throw new SessionFormatError(index + 1, 'content must be a string or null');
    }
    messages.push({ ...message, content: message.content ?? null } as ChatMessage);
  });
  return messages;
}

/** The assistant replies recorded after each user message, by turn (0-based). */
function repliesByTurn(session: ChatMessage[]): ChatMessage[][] {
  const turns: ChatMessage[][] = [];
  for (const message of session) {
    if (message.role === 'user') turns.push([]);
    else if (message.role === 'assistant' && turns.length > 0) turns[turns.length - 1]!.push(message);
  }
  return turns;
}

export function replayResponder(session: ChatMessage[]): Responder {
  const turns = repliesByTurn(session);
  return (request): ScriptedReply => {
    const messages = request.body.messages;
    const userCount = messages.filter((message) => message.role === 'user').length;
    const lastUser = messages.findLastIndex((message) => message.role === 'user');
    const answered = messages.slice(lastUser + 1).filter((message) => message.role === 'assistant').length;
    const reply = turns[userCount - 1]?.[answered];
    if (!reply) {
      return {
        status: 500,
        error: `replay exhausted: the recording has no reply ${answered + 1} after user message ${userCount}`,
      };
    }
    return { content: reply.content, ...(reply.tool_calls ? { toolCalls: reply.tool_calls } : {}) };
  };
}
