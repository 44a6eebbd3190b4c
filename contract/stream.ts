/**
 * An agent's live stream (docs/streaming.md): what it does as it happens, as an append-only log of items in S3, each
 * with an offset that only grows for that agent's life. Writers are activities (the model call, the tools, the
 * compaction steps); what only the workflow knows (a steer landed, an interrupt, an approval) goes with an activity it
 * runs anyway ({@link StreamAnnouncement}); readers are the client library
 * (`streamAgent`), `longrun watch` and the SSE endpoint.
 *
 * The log is a run of segments under the agent's life:
 *
 *   agents/<agentId>/<life>/stream/<start>.json     a segment: the items from offset <start> on, in order
 *   agents/<agentId>/<life>/stream/head.json        a hint of where the log ends (a lower bound, rewritten now and then)
 *
 * `<start>` is zero-padded to {@link OFFSET_DIGITS} digits, so keys sort by offset. A segment holds at most
 * {@link SEGMENT_MAX_ITEMS} items, and the next segment starts where it ends: every offset is in exactly one segment.
 * A segment is created with a conditional put (`If-None-Match: *`), so two writers never write the same offsets;
 * the loser reads the winner's segment and appends after it.
 *
 * @example
 *   const body: StreamItemBody = { kind: 'text', call: 'm000012', attempt: 1, text: 'Hello' };
 */
import { lifePrefix } from './keys.ts';
import type { AgentLife } from './keys.ts';

/** Digits of a segment's start offset in its key. */
export const OFFSET_DIGITS = 12;
/** The most items in one segment (a reader resuming mid-segment looks this far back). */
export const SEGMENT_MAX_ITEMS = 256;

/** A model call as the stream names it: the id its reply is stored under (unique in the agent's life). */
export type ModelCallRef = { call: string; attempt: number };

/** What happened, without its place in the log. */
export type StreamItemBody =
  /** A model call attempt began (every attempt, the first included). */
  | ({ kind: 'model-start'; model: string } & ModelCallRef)
  /** Model output text, as the provider wrote it (deltas, batched: a few tokens per item while text flows). */
  | ({ kind: 'text'; text: string } & ModelCallRef)
  /**
   * Tool call arguments as the provider wrote them: `index` of the reply's calls; the tool call's id (`callId`) and
   * `name` on its first piece. (`callId`, not `id`: an item's `id` is its dedupe key in the log.)
   */
  | ({ kind: 'tool-call-delta'; index: number; callId?: string; name?: string; arguments: string } & ModelCallRef)
  /** The model call's reply is complete (it is stored next). */
  | ({
      kind: 'model-end';
      toolCalls: number;
      /** The provider's usage; `cachedTokens` when it reports a prompt cache's share (contract/activities.ts). */
      usage?: { promptTokens: number; completionTokens: number; cachedTokens?: number };
      servedBy?: string;
    } & ModelCallRef)
  /**
   * The output of every attempt of `call` before `attempt` is superseded: a retry (a worker killed mid-stream, a
   * 5xx, a cut stream) calls the model again, and only the newest attempt's output stands. Published by the new
   * attempt before its own output; a reader drops (or strikes out) earlier attempts' items, including any that
   * arrive later.
   */
  | ({ kind: 'superseded' } & ModelCallRef)
  /** A tool call the model asked for, with its arguments (as the tool runs it). */
  | { kind: 'tool-call'; callId: string; name: string; arguments: string }
  /** A tool's result: its first {@link TOOL_RESULT_PREVIEW_CHARS} characters, and its length. */
  | { kind: 'tool-result'; callId: string; name: string; preview: string; chars: number }
  /** A compaction step began or ended. */
  | { kind: 'compaction'; seq: number; phase: CompactionPhase; state: 'began' | 'ended' | 'failed'; detail?: string }
  /**
   * What became of compaction `seq` ({@link CompactionOutcome}), with the context's tokens before and after it:
   * published by the activity that decides it (storeDraft, applyCompaction, revertContext), a discard by the workflow.
   */
  | {
      kind: 'compaction-outcome';
      seq: number;
      outcome: CompactionOutcome;
      /** The draft it concerns (`drafted`, `discarded`, and `applied` for an approved draft's). */
      draft?: string;
      /** A revert's: the event whose context before it came back. */
      toEvent?: number;
      tokensBefore?: number;
      tokensAfter?: number;
    }
  /**
   * The user's message that opens turn `turn`, as stored (callModel, with the turn's first step): its first
   * {@link MESSAGE_PREVIEW_CHARS} characters, and its length.
   */
  | { kind: 'user-message'; messageId: string; turn?: number; text: string; chars: number }
  /** A steer landed in the turn in progress (announced with the step's model call, or the store of its messages). */
  | { kind: 'steer'; text: string; turn: number; step: number }
  /** The turn, a model call or a tool was interrupted. */
  | { kind: 'interrupted'; turn?: number; step?: number; call?: string; attempt?: number; reason: string }
  /** A tool call waits for approval. */
  | { kind: 'approval-asked'; callId: string; name: string; arguments: string }
  /** A tool call's approval was answered (or timed out). */
  | { kind: 'approval-answered'; callId: string; approved: boolean; reason?: string }
  /** A turn ended: its number, how many steps, and the reply's first characters. */
  | { kind: 'turn-end'; turn: number; steps?: number; reply?: string; stopped?: string };

export type StreamItemKind = StreamItemBody['kind'];

/** The compaction steps the stream reports (the activities: planCompaction, summarizeSpan, applyCompaction). */
export type CompactionPhase = 'planning' | 'summarizing' | 'applying';

/**
 * What became of a compaction: kept as a draft for review (`drafted`), `applied`, not applied because it would not
 * shrink the context (`no-gain`), its draft `discarded`; `reverted`: a revert (its own event `seq`) brought back the
 * context before event `toEvent`.
 */
export type CompactionOutcome = 'drafted' | 'applied' | 'no-gain' | 'discarded' | 'reverted';

/** An item as it is stored and read: its offset, when it was written (the writer's clock, ISO), what happened. */
export type StreamItem = StreamItemBody & {
  offset: number;
  at: string;
  /**
   * Set by writers that may run again (an activity's retry): an id unique in the agent's life, so that a retry does
   * not append the item twice (`tool-call:<callId>`, the workflow's own ids in its announcements).
   */
  id?: string;
};

/** A tool result's preview in the stream: this many characters at most. */
export const TOOL_RESULT_PREVIEW_CHARS = 500;

/** A user message's text in the stream: this many characters at most. */
export const MESSAGE_PREVIEW_CHARS = 2_000;

/** One segment as it is stored. */
export interface StreamSegment {
  start: number;
  items: StreamItem[];
}

/**
 * The `publishStream` activity's input: items only the workflow knows (a steer landed, an interrupt, an approval
 * asked or answered, a turn ended, a draft discarded), for the agent's life. Runs recorded before those items went
 * with the step's own activities ({@link StreamAnnouncement}) scheduled it for them; the workflow schedules it now
 * only for a discarded draft, which no activity sees (workflows/reviews.ts). Each item needs an `id` unique in the
 * agent's life (e.g. `turn-12-end`, `steer-<update id>`): a retried activity does not publish it twice. At most
 * {@link PUBLISH_MAX_ITEMS} items per call.
 */
export interface PublishStreamInput extends AgentLife {
  items: (StreamItemBody & { id: string })[];
}

/**
 * An item the workflow hands to an activity it runs anyway (`announce` in the model call, tool call and store
 * inputs), published once by it: what only the workflow knows, at no command of its own.
 */
export type StreamAnnouncement = StreamItemBody & { id: string };

/** The most items one `publishStream` call takes. */
export const PUBLISH_MAX_ITEMS = 64;

/** Where an agent life's stream lives. */
export function streamPrefix(agent: AgentLife): string {
  return `${lifePrefix(agent)}stream/`;
}

/** The key of the segment that starts at `start`. */
export function segmentKey(agent: AgentLife, start: number): string {
  if (!Number.isSafeInteger(start) || start < 0) throw new Error(`segment start must be an offset >= 0, got ${start}`);
  return `${streamPrefix(agent)}${String(start).padStart(OFFSET_DIGITS, '0')}.json`;
}

/** The key of the hint of where the log ends. */
export function headKey(agent: AgentLife): string {
  return `${streamPrefix(agent)}head.json`;
}

/** The start offset of a segment key (undefined for any other key under the prefix, e.g. head.json). */
export function segmentStartOf(key: string): number | undefined {
  const match = /\/(\d+)\.json$/.exec(key);
  return match && match[1]!.length === OFFSET_DIGITS ? Number(match[1]) : undefined;
}

/** Where the segment after `segment` starts. */
export function segmentEnd(segment: StreamSegment): number {
  return segment.start + segment.items.length;
}

/**
 * Of segment starts (in any order), the one whose segment may hold `offset`: the greatest start <= offset. Undefined
 * when none is.
 */
export function startAtOrBefore(starts: readonly number[], offset: number): number | undefined {
  let best: number | undefined;
  for (const start of starts) if (start <= offset && (best === undefined || start > best)) best = start;
  return best;
}

/**
 * `bodies` as segments from `start` on: offsets given in order, at most {@link SEGMENT_MAX_ITEMS} per segment.
 */
export function segmentsOf(start: number, bodies: readonly (StreamItemBody & { id?: string })[], at: string) {
  const segments: StreamSegment[] = [];
  for (let i = 0; i < bodies.length; i += SEGMENT_MAX_ITEMS) {
    const first = start + i;
    const items = bodies
      .slice(i, i + SEGMENT_MAX_ITEMS)
      .map((body, j): StreamItem => ({ ...body, offset: first + j, at }));
    segments.push({ start: first, items });
  }
  return segments;
}

/** Reads a stored segment, checking that its offsets are the ones its key says. */
export function parseSegment(body: string, start: number, key: string): StreamSegment {
  const segment = JSON.parse(body) as StreamSegment;
  const ok =
    segment &&
    segment.start === start &&
    Array.isArray(segment.items) &&
    segment.items.length > 0 &&
    segment.items.every((item, i) => item.offset === start + i);
  if (!ok) throw new Error(`stream segment ${key} is not a segment of offsets from ${start} on`);
  return segment;
}

/**
 * What a reader shows of the stream: it keeps, per model call, the newest attempt it has seen superseded, and
 * tells whether an item of a model call is superseded (an earlier attempt's, even one that arrives late).
 */
export class SupersededCalls {
  private readonly newest = new Map<string, number>();

  /** Takes `item` in; true when it is an earlier attempt's output (superseded), to drop or strike out. */
  see(item: StreamItemBody): boolean {
    if (!('call' in item) || item.call === undefined || !('attempt' in item) || item.attempt === undefined) {
      return false;
    }
    if (item.kind === 'superseded' || item.kind === 'model-start') {
      const known = this.newest.get(item.call) ?? 0;
      if (item.attempt > known) this.newest.set(item.call, item.attempt);
      return item.kind === 'model-start' && item.attempt < known;
    }
    return item.attempt < (this.newest.get(item.call) ?? 0);
  }
}

/**
 * The text a reader shows for model call `call` after `items`: the newest attempt's text only (a `superseded` item
 * retracts what earlier attempts wrote, whether it came before or after it).
 */
export function currentText(items: readonly StreamItemBody[], call: string): string {
  let attempt = 0;
  for (const item of items) {
    if ('call' in item && item.call === call && 'attempt' in item && item.attempt !== undefined) {
      if (item.kind === 'superseded' || item.kind === 'model-start') attempt = Math.max(attempt, item.attempt);
    }
  }
  return items
    .flatMap((item) => (item.kind === 'text' && item.call === call && item.attempt === attempt ? [item.text] : []))
    .join('');
}
