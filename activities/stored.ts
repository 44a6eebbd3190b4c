/**
 * What every activity does with stored messages: read an object back (a missing one is a non-retryable failure),
 * store a chat message and count it once into the record the workflow keeps, and heartbeat while a model call is
 * out. One place for the agent's activities and the compaction activities alike.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../contract/failures.ts';
import type { ChatMessage, MessageKind } from '../engine/messages.ts';
import { callCharsOf, previewOf, textOf } from '../engine/messages.ts';
import type { Counting } from '../engine/models.ts';
import { countMessage, loadTokenCounter } from '../engine/tokens.ts';
import type { BlobStore } from '../storage/s3.ts';
import type { MessageRecord } from '../contract/records.ts';

/**
 * How often a long activity heartbeats (the workflow sets a heartbeat timeout of many times this). The worker sends
 * at most one a second to the server (worker/worker.ts `HEARTBEAT_THROTTLE`), and a cancellation (an interrupt)
 * reaches the activity with the server's answer to one.
 */
export const HEARTBEAT_EVERY_MS = 500;

/**
 * Runs `work`, heartbeating every {@link HEARTBEAT_EVERY_MS} meanwhile, so that a dead worker is noticed early (within
 * the activity's heartbeat timeout, not its start-to-close timeout). `details` is what each heartbeat carries (a
 * heartbeat replaces the last one's details): what a retry of this activity finds in `heartbeatDetails`.
 */
export async function withHeartbeat<T>(work: () => Promise<T>, details: () => unknown = () => undefined): Promise<T> {
  const heartbeat = setInterval(() => Context.current().heartbeat(details()), HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(heartbeat);
  }
}

/**
 * Heartbeats now with `details` (progress the client can read from the pending activity): the SDK sends the first
 * at once and throttles the rest to 80% of the heartbeat timeout, always sending the newest details.
 */
export function heartbeatNow(details: unknown): void {
  Context.current().heartbeat(details);
}

/** How long an activity keeps retrying a storage write itself before it fails (and Temporal retries it). */
export const STORAGE_RETRY_MS = 3 * 60_000;

/**
 * Whether a storage error may pass: the endpoint unreachable or reset, a timeout, a 5xx, throttling. A refusal
 * (403, a missing bucket) is not retried.
 */
export function isTransientStorageError(error: unknown): boolean {
  const e = error as { $metadata?: { httpStatusCode?: number }; code?: string; name?: string; cause?: unknown };
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined) return status >= 500 || status === 429 || status === 408;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return true;
  const code = e?.code ?? (e?.cause as { code?: string } | undefined)?.code;
  return code !== undefined && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EAI_AGAIN|ENOTFOUND|UND_ERR_)/.test(code);
}

/**
 * Runs a storage operation, retrying it while the storage is unreachable (1 s, 2 s, 4 s … at most 10 s apart, for up
 * to {@link STORAGE_RETRY_MS}), so that an outage does not fail the activity: a tool that already ran is not run
 * again because its result could not be stored yet. Call it inside {@link withHeartbeat}.
 */
export async function untilStored<T>(operation: () => Promise<T>, retryMs = STORAGE_RETRY_MS): Promise<T> {
  const until = Date.now() + retryMs;
  for (let delay = 1_000; ; delay = Math.min(delay * 2, 10_000)) {
    try {
      return await operation();
    } catch (error) {
      if (!isTransientStorageError(error) || Date.now() + delay > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** The workflow's record of a stored message: its metadata, derived from the body, and a preview. */
export function recordOf(
  message: ChatMessage,
  stored: { id: string; key: string; tokens: number; kind?: MessageKind; ref?: string },
): MessageRecord {
  return {
    id: stored.id,
    role: message.role,
    key: stored.key,
    // A message of parts: the characters of its text parts (its images are in `tokens`, by their estimate).
    chars: textOf(message.content).length,
    tokens: stored.tokens,
    preview: previewOf(message.content, undefined, message.tool_calls),
    ...(message.tool_calls?.length ? { callChars: callCharsOf(message.tool_calls) } : {}),
    ...(stored.kind && stored.kind !== 'normal' ? { kind: stored.kind } : {}),
    ...(stored.ref ? { ref: stored.ref } : {}),
    ...(message.tool_calls?.length ? { toolCallIds: message.tool_calls.map((call) => call.id) } : {}),
    ...(message.tool_call_id ? { toolCallId: message.tool_call_id } : {}),
  };
}

/** Reading and writing the agent's stored objects. */
export function storedObjects(store: BlobStore) {
  async function loadText(key: string): Promise<string> {
    const body = await store.get(key);
    if (body === undefined)
      throw ApplicationFailure.nonRetryable(`stored object ${key} is missing`, FAILURE.missingObject);
    return body;
  }

  async function write(key: string, message: ChatMessage): Promise<void> {
    await store.put(key, JSON.stringify(message), 'application/json');
  }

  async function measure(
    key: string,
    message: ChatMessage,
    counting: Counting,
    stored: { id: string; kind?: MessageKind; ref?: string },
  ): Promise<MessageRecord> {
    const counter = await loadTokenCounter(counting.encoding);
    return recordOf(message, { ...stored, key, tokens: countMessage(counter, message, counting.margin) });
  }

  return {
    loadText,

    load: async <T>(key: string): Promise<T> => JSON.parse(await loadText(key)) as T,

    /** The record of `message` as it would be stored under `key`: counted, once, in the agent's encoding. */
    measure,

    /** Writes `message` under `key` (idempotent: a retry overwrites it). */
    write,

    /**
     * Stores `message` under `key` (idempotent: a retry overwrites it) and counts it, once, in the agent's
     * encoding: the count is kept in the workflow from then on.
     */
    save: async (
      key: string,
      message: ChatMessage,
      counting: Counting,
      stored: { id: string; kind?: MessageKind; ref?: string },
    ): Promise<MessageRecord> => {
      await write(key, message);
      return measure(key, message, counting, stored);
    },
  };
}

/**
 * The activity's cancellation as an interrupt: aborted when the workflow cancels the activity (an `interrupt`), not
 * when the worker shuts down (the SDK cancels running activities then too, with the reason `WORKER_SHUTDOWN`: a
 * stopping worker waits for its model calls and tools to finish, as it did, and a second Ctrl-C abandons them).
 */
export function interruptSignal(context: Context): AbortSignal {
  const source = context.cancellationSignal;
  const controller = new AbortController();
  const forward = () => {
    const reason: unknown = source.reason;
    if (!(reason instanceof Error && reason.message === 'WORKER_SHUTDOWN')) controller.abort(reason);
  };
  if (source.aborted) forward();
  else source.addEventListener('abort', forward, { once: true });
  return controller.signal;
}
