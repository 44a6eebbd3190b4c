/**
 * An agent life's stream log in S3 (contract/stream.ts has the layout): appending with conditional puts, safe with
 * several writers at once, and reading from any offset, following the log as it grows.
 *
 * Appending: a writer knows (or finds) where the log ends, and creates the segment there with `If-None-Match: *`.
 * When another writer got there first (412), it reads that segment, moves past it and tries again. Within one
 * process, appends to the same log are queued, so they do not race each other. Offsets are never written twice and
 * never skipped: segments are contiguous by construction.
 *
 * Reading: from the segment that holds the offset asked for (found with one GET, or one LIST of the keys just before
 * it), then the next segment's key, polled until it exists.
 *
 * @example
 *   const log = new StreamLog(store);
 *   await log.append(agent, [{ kind: 'turn-end', turn: 3 }]);
 *   for await (const item of readStream(store, agent, { from: 0, signal })) console.log(item.offset, item.kind);
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  headKey,
  parseSegment,
  segmentEnd,
  segmentKey,
  segmentsOf,
  segmentStartOf,
  SEGMENT_MAX_ITEMS,
  startAtOrBefore,
  streamPrefix,
} from '../contract/stream.ts';
import type { StreamItem, StreamItemBody, StreamSegment } from '../contract/stream.ts';
import type { AgentLife } from '../contract/keys.ts';
import { lifePrefix } from '../contract/keys.ts';

/** What the stream needs of the store: a conditional put and a listing besides get and put. */
export interface StreamStore {
  put(key: string, body: string, contentType?: string): Promise<void>;
  get(key: string): Promise<string | undefined>;
  /** Creates the object only if the key is free; false when it was taken. */
  putIfAbsent(key: string, body: string, contentType?: string): Promise<boolean>;
  list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<string[]>;
}

/** Whether `store` can hold a stream. */
export function isStreamStore(store: unknown): store is StreamStore {
  const s = store as Partial<StreamStore> & { streams?: boolean };
  if (s?.streams === false) return false;
  return typeof s?.putIfAbsent === 'function' && typeof s?.list === 'function';
}

/** How often a reader polls for the next segment while the log does not grow (the default). */
export const STREAM_POLL_MS = 50;
/** A writer rewrites the end hint after this many segments of its own (or {@link HEAD_EVERY_MS}). */
const HEAD_EVERY_SEGMENTS = 16;
const HEAD_EVERY_MS = 1_000;
/** Logs a process keeps in mind when idle (one per agent life it wrote to lately). */
const LOGS_KEPT = 1_000;

async function readSegment(store: StreamStore, agent: AgentLife, start: number): Promise<StreamSegment | undefined> {
  const key = segmentKey(agent, start);
  const body = await store.get(key);
  return body === undefined ? undefined : parseSegment(body, start, key);
}

/**
 * Where the log ends now: from the hint (a lower bound), following segments until a key is free. An empty log
 * ends at 0.
 */
export async function streamEnd(store: StreamStore, agent: AgentLife): Promise<number> {
  const hint = await store.get(headKey(agent));
  let end = hint === undefined ? 0 : Number((JSON.parse(hint) as { next?: unknown }).next ?? 0);
  if (!Number.isSafeInteger(end) || end < 0) end = 0;
  for (;;) {
    const segment = await readSegment(store, agent, end);
    if (!segment) return end;
    end = segmentEnd(segment);
  }
}

/**
 * Where a reader from `offset` starts: the start of the segment that holds it, or the end of the log when `offset` is
 * at or past it. One GET when `offset` starts a segment; otherwise one LIST of the keys just before it.
 */
export async function locate(store: StreamStore, agent: AgentLife, offset: number): Promise<number> {
  if (await readSegment(store, agent, offset)) return offset;
  const prefix = streamPrefix(agent);
  const from = offset - SEGMENT_MAX_ITEMS;
  const keys = await store.list(prefix, {
    ...(from >= 0 ? { startAfter: segmentKey(agent, from) } : {}),
    limit: SEGMENT_MAX_ITEMS + 1,
  });
  const starts = keys.flatMap((key) => {
    const start = segmentStartOf(key);
    return start === undefined ? [] : [start];
  });
  const start = startAtOrBefore(starts, offset);
  if (start !== undefined) {
    const segment = await readSegment(store, agent, start);
    if (segment && segmentEnd(segment) > offset) return start;
  }
  return Math.min(offset, await streamEnd(store, agent));
}

/** Appends to the logs of one store, one queue per agent life in this process. */
export class StreamLog {
  private readonly store: StreamStore;
  /**
   * Per log: where this process believes it ends, and the appends queued on it (`pending` of them), least recently
   * used first. At most {@link LOGS_KEPT} idle logs are kept: one dropped finds its end again from the hint.
   */
  private readonly logs = new Map<
    string,
    { end?: number; queue: Promise<unknown>; pending: number; sinceHead: number; headAt: number }
  >();

  constructor(store: StreamStore) {
    this.store = store;
  }

  /**
   * Appends `bodies` in order (in segments of at most {@link SEGMENT_MAX_ITEMS}); resolves to their items as stored.
   * With `once`, items whose `id` is already in the log's last `SEGMENT_MAX_ITEMS` offsets are not appended again
   * (a retried activity).
   */
  append(
    agent: AgentLife,
    bodies: readonly (StreamItemBody & { id?: string })[],
    options: { once?: boolean } = {},
  ): Promise<StreamItem[]> {
    const name = lifePrefix(agent);
    const entry = this.logs.get(name) ?? { queue: Promise.resolve(), pending: 0, sinceHead: 0, headAt: Date.now() };
    this.logs.delete(name);
    this.logs.set(name, entry);
    for (const [oldest, log] of this.logs) {
      if (this.logs.size <= LOGS_KEPT) break;
      if (log.pending === 0) this.logs.delete(oldest);
    }
    entry.pending++;
    const run = entry.queue.then(() => this.write(agent, entry, bodies, options.once === true));
    entry.queue = run.catch(() => {}).finally(() => entry.pending--);
    return run;
  }

  private async write(
    agent: AgentLife,
    log: { end?: number; sinceHead: number; headAt: number },
    bodies: readonly (StreamItemBody & { id?: string })[],
    once: boolean,
  ): Promise<StreamItem[]> {
    if (bodies.length === 0) return [];
    let end = log.end ?? (await streamEnd(this.store, agent));
    let todo = bodies;
    if (once) {
      const seen = await this.recentIds(agent, end);
      todo = bodies.filter((body) => body.id === undefined || !seen.has(body.id));
      if (todo.length === 0) return [];
    }
    const written: StreamItem[] = [];
    const at = new Date().toISOString();
    for (let rest = todo; rest.length > 0;) {
      const [segment] = segmentsOf(end, rest.slice(0, SEGMENT_MAX_ITEMS), at);
      const created = await this.store.putIfAbsent(segmentKey(agent, end), JSON.stringify(segment));
      if (created) {
        written.push(...segment!.items);
        rest = rest.slice(segment!.items.length);
        end = segmentEnd(segment!);
        log.sinceHead++;
        continue;
      }
      // Another writer created the segment here first: go past it.
      const theirs = await readSegment(this.store, agent, end);
      if (theirs) end = segmentEnd(theirs);
      else await sleep(10); // a put of that key was in flight (409) and did not land: try the key again
    }
    log.end = end;
    if (log.sinceHead >= HEAD_EVERY_SEGMENTS || Date.now() - log.headAt >= HEAD_EVERY_MS) {
      log.sinceHead = 0;
      log.headAt = Date.now();
      await this.store.put(headKey(agent), JSON.stringify({ next: end }));
    }
    return written;
  }

  /** The ids of the items in the log's last {@link SEGMENT_MAX_ITEMS} offsets before `end`. */
  private async recentIds(agent: AgentLife, end: number): Promise<Set<string>> {
    const ids = new Set<string>();
    const from = end - SEGMENT_MAX_ITEMS;
    const keys = await this.store.list(streamPrefix(agent), {
      ...(from >= 0 ? { startAfter: segmentKey(agent, from) } : {}),
      limit: SEGMENT_MAX_ITEMS + 1,
    });
    const starts = keys.flatMap((key) => {
      const start = segmentStartOf(key);
      return start === undefined ? [] : [start];
    });
    const segments = await Promise.all(starts.map((start) => readSegment(this.store, agent, start)));
    for (const segment of segments) for (const item of segment?.items ?? []) if (item.id) ids.add(item.id);
    return ids;
  }
}

/** Options of {@link readStream}. */
export interface ReadStreamOptions {
  /** The first offset to read (default 0); past the end, items from there on as they come. */
  from?: number;
  /** Stops the reading (the iterator returns). */
  signal?: AbortSignal;
  /** How often to look for the next segment while the log does not grow (default {@link STREAM_POLL_MS}). */
  pollMs?: number;
  /** Return at the log's end instead of following it. */
  follow?: boolean;
}

/**
 * The log's items from `from` on, in offset order, each once; follows the log as it grows (polling) until `signal`
 * aborts, or to its end with `follow: false`.
 */
export async function* readStream(
  store: StreamStore,
  agent: AgentLife,
  options: ReadStreamOptions = {},
): AsyncGenerator<StreamItem> {
  const from = options.from ?? 0;
  if (!Number.isSafeInteger(from) || from < 0) throw new Error(`from must be an offset >= 0, got ${String(from)}`);
  const pollMs = options.pollMs ?? STREAM_POLL_MS;
  let next = await locate(store, agent, from);
  while (!options.signal?.aborted) {
    const segment = await readSegment(store, agent, next);
    if (!segment) {
      if (options.follow === false) return;
      try {
        await sleep(pollMs, undefined, options.signal ? { signal: options.signal } : {});
      } catch {
        return; // aborted
      }
      continue;
    }
    for (const item of segment.items) if (item.offset >= from) yield item;
    next = segmentEnd(segment);
  }
}
