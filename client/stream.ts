/**
 * Reading an agent's live stream (docs/streaming.md): its items in offset order, each once, from any offset, following
 * the log in S3 as the agent works (polled every {@link STREAM_POLL_MS} ms). A reader that stops (a disconnect, a
 * crash) resumes from the offset after the last one it saw, with no gap and no duplicate; so does one whose agent's
 * worker was killed or whose workflow continued as new (the log is the agent life's, not the run's).
 *
 * @example
 *   const controller = new AbortController();
 *   for await (const item of streamAgent(client, store, 'trip', { from: 0, signal: controller.signal })) {
 *     if (item.kind === 'text' && !item.superseded) process.stdout.write(item.text);
 *   }
 */
import type { Client } from '@temporalio/client';
import { agentLife } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import { SupersededCalls } from '../contract/stream.ts';
import type { StreamItem } from '../contract/stream.ts';
import { readStream, streamEnd, STREAM_POLL_MS } from '../storage/stream-log.ts';
import type { StreamStore } from '../storage/stream-log.ts';
import { agentState } from './agents.ts';

export { STREAM_POLL_MS };
export type { StreamStore };

/** An item as a reader gets it: `superseded` when it is the output of a model call attempt that was retried. */
export type StreamedItem = StreamItem & { superseded?: true };

export interface StreamAgentOptions {
  /** The first offset to read: a number (default 0), or `end` for what comes from now on. */
  from?: number | 'end';
  /** Stops the reading: the iterator returns. */
  signal?: AbortSignal;
  /** Between two looks for the next segment while the log does not grow (default {@link STREAM_POLL_MS}). */
  pollMs?: number;
  /** Return at the log's end instead of following it (default: follow). */
  follow?: boolean;
  /** The agent's life to read (default: the life the agent is in, from its state). */
  life?: AgentLife;
}

/** Where `from` starts reading in `agent`'s log. */
export async function streamOffset(store: StreamStore, agent: AgentLife, from: number | 'end' = 0): Promise<number> {
  if (from === 'end') return streamEnd(store, agent);
  if (!Number.isSafeInteger(from) || from < 0) {
    throw new RangeError(`from must be an offset (a whole number >= 0) or 'end', got ${String(from)}`);
  }
  return from;
}

/**
 * The agent's stream from `from` on. The earlier attempts of a retried model call are marked `superseded` (from the
 * new attempt's `superseded` item on, and any of their items that arrive later); items before that item were shown
 * as they came, and a reader that shows text strikes them out or drops them when it sees it.
 */
export async function* streamAgent(
  client: Client,
  store: StreamStore,
  agentId: string,
  options: StreamAgentOptions = {},
): AsyncGenerator<StreamedItem> {
  const agent = options.life ?? agentLife(await agentState(client, agentId));
  yield* streamLife(store, agent, options);
}

/** One life's stream (no Temporal client needed: the life is known), as {@link streamAgent} reads it. */
export async function* streamLife(
  store: StreamStore,
  agent: AgentLife,
  options: Omit<StreamAgentOptions, 'life'> = {},
): AsyncGenerator<StreamedItem> {
  const from = await streamOffset(store, agent, options.from);
  const calls = new SupersededCalls();
  for await (const item of readStream(store, agent, {
    from,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
    ...(options.follow !== undefined ? { follow: options.follow } : {}),
  })) {
    yield calls.see(item) ? { ...item, superseded: true } : item;
  }
}
