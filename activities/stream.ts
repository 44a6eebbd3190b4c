/**
 * Publishing to an agent's live stream from activities (contract/stream.ts, storage/stream-log.ts): the model call's
 * output as it arrives, batched ({@link ModelCallStream}), tool calls and results ({@link AgentStream.toolCall},
 * {@link AgentStream.toolResult}, for `runTool`), compaction steps, and what the workflow publishes through the
 * `publishStream` activity.
 *
 * The stream never fails the agent's work: a write that fails is logged and retried with the next batch, and the
 * model call, the tool and the compaction go on (docs/streaming.md). A store that cannot hold a stream (no
 * conditional put) publishes nothing.
 *
 * @example
 *   const stream = createAgentStream(store);
 *   await stream.toolCall(agent, call);
 *   await stream.toolResult(agent, call, result);
 */
import { Context, log } from '@temporalio/activity';
import { MESSAGE_PREVIEW_CHARS, TOOL_RESULT_PREVIEW_CHARS } from '../contract/stream.ts';
import type { CompactionPhase, ModelCallRef, StreamAnnouncement, StreamItemBody } from '../contract/stream.ts';
import type { NewMessage } from '../contract/activities.ts';
import type { AgentLife } from '../contract/keys.ts';
import { textOf } from '../engine/messages.ts';
import type { ToolCall } from '../engine/messages.ts';
import { isStreamStore, StreamLog } from '../storage/stream-log.ts';
import type { ReplyDelta } from './model-stream.ts';

/** Logs a warning through the activity's logger (the worker's), or the console outside an activity. */
function warn(message: string): void {
  try {
    log.warn(message);
  } catch {
    console.warn(message);
  }
}

/** The first `max` characters of `text` (whole code points). */
function preview(text: string, max: number): string {
  return Array.from(text).slice(0, max).join('');
}

/**
 * The stream items of a model call's new messages that open a turn: each user message that is not a steer (a steer
 * is announced by the workflow, with where it landed), its text cut at {@link MESSAGE_PREVIEW_CHARS}.
 */
export function userMessageItems(messages: readonly NewMessage[], turn?: number): StreamAnnouncement[] {
  return messages.flatMap(({ messageId, message, steer }) => {
    if (message.role !== 'user' || steer) return [];
    const text = textOf(message.content);
    return [
      {
        kind: 'user-message' as const,
        id: `user-message:${messageId}`,
        messageId,
        ...(turn !== undefined ? { turn } : {}),
        text: preview(text, MESSAGE_PREVIEW_CHARS),
        chars: text.length,
      },
    ];
  });
}

/** While text flows, one segment at most this often per model call (the first delta is written at once). */
export const STREAM_BATCH_MS = 50;

type Body = StreamItemBody & { id?: string };

/**
 * Merges consecutive pieces of the same kind into one item: text into text, a tool call's argument pieces into one
 * delta (the pure part of batching).
 */
export function coalesce(bodies: readonly Body[]): Body[] {
  const out: Body[] = [];
  for (const body of bodies) {
    const last = out.at(-1);
    if (last?.kind === 'text' && body.kind === 'text' && last.call === body.call && last.attempt === body.attempt) {
      out[out.length - 1] = { ...last, text: last.text + body.text };
    } else if (
      last?.kind === 'tool-call-delta' &&
      body.kind === 'tool-call-delta' &&
      last.call === body.call &&
      last.attempt === body.attempt &&
      last.index === body.index &&
      body.callId === undefined &&
      body.name === undefined
    ) {
      out[out.length - 1] = { ...last, arguments: last.arguments + body.arguments };
    } else {
      out.push(body);
    }
  }
  return out;
}

/**
 * One model call attempt's output: items queued as they arrive and written in batches, one write at a time, at most
 * every {@link STREAM_BATCH_MS} (the first at once: the first token is not held back). `model-start` alone waits up to
 * {@link STREAM_BATCH_MS} for what follows it, so that a call answered within that time costs one write, not two.
 */
export class ModelCallStream {
  private queued: Body[] = [];
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastWrite = 0;
  private readonly ref: ModelCallRef;
  private readonly publish: (bodies: Body[]) => Promise<unknown>;
  private readonly batchMs: number;

  constructor(publish: (bodies: Body[]) => Promise<unknown>, ref: ModelCallRef, batchMs = STREAM_BATCH_MS) {
    this.publish = publish;
    this.ref = { call: ref.call, attempt: ref.attempt };
    this.batchMs = batchMs;
  }

  /**
   * The attempt began: `model-start`, after `lead` (items of the call's own to go first, e.g. the message that opens
   * the turn), and on a retry, `superseded` for the earlier attempts' output; written with the first of what follows,
   * or after {@link STREAM_BATCH_MS} when nothing does.
   */
  start(model: string, lead: readonly Body[] = []): void {
    this.queued.push(...lead);
    if (this.ref.attempt > 1) this.queued.push({ kind: 'superseded', ...this.ref });
    this.queued.push({ kind: 'model-start', model, ...this.ref });
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.writeNow();
    }, this.batchMs);
  }

  delta(delta: ReplyDelta): void {
    this.add({ ...delta, ...this.ref });
  }

  /** The reply is complete. */
  end(details: {
    toolCalls: number;
    usage?: { promptTokens: number; completionTokens: number; cachedTokens?: number };
    servedBy?: string;
  }) {
    this.add({ kind: 'model-end', ...details, ...this.ref });
  }

  /** The attempt was interrupted (cancelled) or failed. */
  interrupted(reason: string): void {
    this.add({ kind: 'interrupted', call: this.ref.call, attempt: this.ref.attempt, reason });
  }

  private add(body: Body): void {
    this.queued.push(body);
    this.schedule();
  }

  private schedule(): void {
    if (this.writing || this.queued.length === 0) return;
    const wait = this.lastWrite + this.batchMs - Date.now();
    if (this.timer && wait > 0) return;
    // A write is due now: the one `start` held back goes with it.
    clearTimeout(this.timer);
    this.timer = undefined;
    if (wait <= 0) void this.writeNow();
    else {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.writeNow();
      }, wait);
    }
  }

  private writeNow(): Promise<void> {
    const batch = coalesce(this.queued);
    this.queued = [];
    this.lastWrite = Date.now();
    this.writing = this.publish(batch)
      .then(
        () => undefined,
        (error: unknown) => {
          this.queued = [...batch, ...this.queued]; // kept for the next write: no item is dropped
          warn(`live stream: a write failed, retried with the next batch: ${String(error)}`);
        },
      )
      .finally(() => {
        this.writing = undefined;
        this.schedule();
      });
    return this.writing;
  }

  /** Writes what is queued, waiting for writes in flight; tries a failed write up to `tries` times. */
  async flush(tries = 3): Promise<void> {
    for (let i = 0; i < tries; i++) {
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
      while (this.writing) await this.writing;
      if (this.queued.length === 0) return;
      this.lastWrite = 0;
      await this.writeNow();
      if (this.queued.length === 0) return;
    }
  }
}

/** The stream of every agent whose activities run in this worker, over one store. */
export interface AgentStream {
  /** Whether the store holds streams (a conditional put); otherwise every call is a no-op. */
  readonly enabled: boolean;
  /** Appends items; with `once`, items whose `id` is already in the log's end are skipped (a retry). */
  publish(agent: AgentLife, bodies: Body[], options?: { once?: boolean }): Promise<void>;
  /** A model call attempt's output stream. */
  modelCall(agent: AgentLife, ref: ModelCallRef): ModelCallStream;
  /** A tool call as it is run (once per call id, retries included). */
  toolCall(agent: AgentLife, call: ToolCall): Promise<void>;
  /** A tool's result, a preview (once per call id). */
  toolResult(agent: AgentLife, call: ToolCall, content: string): Promise<void>;
  /** A compaction step began, ended or failed. */
  compaction(agent: AgentLife, seq: number, phase: CompactionPhase, state: 'began' | 'ended' | 'failed'): Promise<void>;
  /** Items the workflow handed to the activity (`announce`), each once (best effort). */
  announce(agent: AgentLife, items: readonly (Body & { id: string })[] | undefined): Promise<void>;
}

/**
 * Whether this is a retry of the activity (attempt 2 or later): only then are items with ids looked for in the log
 * before they are appended (a LIST and a few GETs), so a first attempt costs one PUT.
 */
export function retrying(): boolean {
  try {
    return Context.current().info.attempt > 1;
  } catch {
    return true; // outside an activity: assume the worst
  }
}

/** Publishing over `store`: a stream when it has a conditional put, nothing otherwise. */
export function createAgentStream(store: unknown): AgentStream {
  const enabled = isStreamStore(store);
  const appender = enabled ? new StreamLog(store) : undefined;
  const publish = async (agent: AgentLife, bodies: Body[], options: { once?: boolean } = {}) => {
    if (!appender || bodies.length === 0) return;
    await appender.append(agent, bodies, options);
  };
  /** Best effort: a failed write is logged, never the activity's failure. */
  const quietly = async (agent: AgentLife, bodies: Body[], options?: { once?: boolean }) => {
    try {
      await publish(agent, bodies, options);
    } catch (error) {
      warn(`live stream: could not publish ${bodies.map((b) => b.kind).join(', ')}: ${String(error)}`);
    }
  };
  return {
    enabled,
    publish,
    modelCall: (agent, ref) => new ModelCallStream((bodies) => publish(agent, bodies), ref),
    toolCall: (agent, call) =>
      quietly(
        agent,
        [
          {
            kind: 'tool-call',
            id: `tool-call:${call.id}`,
            callId: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
          },
        ],
        { once: retrying() },
      ),
    toolResult: (agent, call, content) =>
      quietly(
        agent,
        [
          {
            kind: 'tool-result',
            id: `tool-result:${call.id}`,
            callId: call.id,
            name: call.function.name,
            preview: preview(content, TOOL_RESULT_PREVIEW_CHARS),
            chars: content.length,
          },
        ],
        { once: retrying() },
      ),
    compaction: (agent, seq, phase, state) => quietly(agent, [{ kind: 'compaction', seq, phase, state }]),
    announce: (agent, items) => (items?.length ? quietly(agent, [...items], { once: retrying() }) : Promise.resolve()),
  };
}
