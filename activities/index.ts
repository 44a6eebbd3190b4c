/**
 * Activities: the agent's I/O. They take references (agent id, message ids, storage keys), never whole
 * transcripts, so the workflow history grows with each turn's new content only.
 *
 * Built by {@link createActivities} with their dependencies, so the worker, the tests and the demo wire real
 * clients the same way.
 */
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import type { BlobStore } from '../storage/s3.ts';
import { messageKey } from '../storage/keys.ts';
import type { MessageRecord } from '../workflows/contract.ts';
import { previewOf } from '../workflows/message.ts';
import type { ChatMessage } from '../workflows/message.ts';

export interface ActivityDeps {
  store: BlobStore;
  openai: OpenAI;
}

export interface StoreMessageInput {
  agentId: string;
  messageId: string;
  message: ChatMessage;
}

export interface CallModelInput {
  agentId: string;
  model: string;
  /** Storage keys of the messages to send, in order. */
  messageKeys: string[];
  /** Id under which the reply is stored. */
  replyId: string;
}

export interface CallModelResult {
  record: MessageRecord;
  content: string;
  usage?: { promptTokens: number; completionTokens: number };
}

/** Statuses that will not succeed on retry: bad key, no access, unknown model, malformed request. */
const PERMANENT_STATUSES = new Set([400, 401, 403, 404, 409, 422]);

function recordOf(messageId: string, key: string, message: ChatMessage): MessageRecord {
  const content = message.content ?? '';
  return { id: messageId, role: message.role, key, chars: content.length, preview: previewOf(content) };
}

/** Turns an OpenAI API error into a Temporal failure: permanent ones are not retried, 429 honours Retry-After. */
export function modelFailure(error: unknown, model: string): unknown {
  if (!(error instanceof OpenAI.APIError)) return error;
  const status = error.status as number | undefined;
  if (status === undefined) return error;
  const message = `model ${model}: HTTP ${status}: ${error.message}`;
  if (PERMANENT_STATUSES.has(status)) return ApplicationFailure.nonRetryable(message, `ModelHttp${status}`);
  const headers = error.headers as Headers | undefined;
  const retryAfter = Number(headers?.get('retry-after'));
  return ApplicationFailure.create({
    message,
    type: `ModelHttp${status}`,
    ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { nextRetryDelay: retryAfter * 1000 } : {}),
  });
}

export function createActivities({ store, openai }: ActivityDeps) {
  async function loadMessage(key: string): Promise<ChatMessage> {
    const body = await store.get(key);
    if (body === undefined) throw ApplicationFailure.nonRetryable(`stored message ${key} is missing`, 'MissingMessage');
    return JSON.parse(body) as ChatMessage;
  }

  return {
    /** Stores one message under its idempotent key and returns its metadata. */
    async storeMessage({ agentId, messageId, message }: StoreMessageInput): Promise<MessageRecord> {
      const key = messageKey(agentId, messageId);
      await store.put(key, JSON.stringify(message));
      return recordOf(messageId, key, message);
    },

    /** Loads the referenced messages, calls the model (Chat Completions) and stores the reply. */
    async callModel({ agentId, model, messageKeys, replyId }: CallModelInput): Promise<CallModelResult> {
      const messages = await Promise.all(messageKeys.map(loadMessage));
      let completion: OpenAI.Chat.Completions.ChatCompletion;
      try {
        completion = await openai.chat.completions.create({
          model,
          messages: messages as OpenAI.Chat.Completions.ChatCompletionMessageParam[],
        });
      } catch (error) {
        throw modelFailure(error, model);
      }
      const choice = completion.choices[0];
      if (!choice)
        throw ApplicationFailure.create({ message: `model ${model} returned no choices`, type: 'EmptyReply' });
      const reply: ChatMessage = { role: 'assistant', content: choice.message.content ?? '' };
      const key = messageKey(agentId, replyId);
      await store.put(key, JSON.stringify(reply));
      return {
        record: recordOf(replyId, key, reply),
        content: reply.content ?? '',
        ...(completion.usage
          ? {
              usage: {
                promptTokens: completion.usage.prompt_tokens,
                completionTokens: completion.usage.completion_tokens,
              },
            }
          : {}),
      };
    },
  };
}
