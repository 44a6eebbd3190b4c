/**
 * An agent life's full-text search index in S3, built as its bodies are stored (by the activities that store them),
 * read by the `context_search` tool, `searchAgent` and `longrun search`. The pure parts: storage/search-rank.ts (the
 * ranking and the segments) and storage/search-tiers.ts (which segments exist, which a search reads, which merge).
 *
 * Layout, under the life's prefix (contract/keys.ts):
 *
 *   search/0/<messageId>.json   a small segment: one stored message and, for a tool result cut as it arrived, its
 *                               whole original; written by the activity that stored them (a retry overwrites it)
 *   search/0/<c|l><seq>.json    a compaction's summary or task ledger, the same way
 *   search/1/m<block>.json      a sealed segment: every message of sequence numbers block×256+1 … (block+1)×256 and
 *                               their originals, made by the model call that stores a later message (all of those
 *                               are stored by then: a step's tool results are before its next model call)
 *   search/1/c<block>.json      the summaries and ledgers of compactions block×64+1 … (block+1)×64, sealed by the
 *                               activity that stores a compaction 64 to 128 later (none of those is edited by then)
 *   search/<L>/<m|c><first>.json  a merged segment: the 16 segments of level L-1 from `first` (L ≥ 2), made when the
 *                               16 are all there, by the same activities, from their indexes (no body read again)
 *
 * Once a block is sealed its small segments are deleted, and once 16 segments are merged they are; a reader that sees
 * both (a listing made in between) uses the sealed or merged one. So a search reads a bounded number of segments
 * however long the life (search-tiers.ts). Segments are JSON, gzip-compressed and base64-encoded (the store holds
 * text), and encrypted like every body when encryption is on. A search lists the life's segments (one LIST), reads
 * the ones this process has not cached (a cache of parsed segments bounded by {@link SEARCH_CACHE_BYTES}, which also
 * keeps the segments this process wrote: the worker that indexes an agent runs its searches) and ranks across them.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  compactionKey,
  ledgerIdOf,
  lifePrefix,
  messageIdOf,
  messageKey,
  originalResultKey,
  summaryIdOf,
} from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { ChatMessage } from '../engine/messages.ts';
import {
  builtSegment,
  loadedSegment,
  mergeSegmentData,
  parseSegment,
  rankAcrossSegments,
  readSegment,
  searchableText,
  snippetOf,
} from './search-rank.ts';
import type { LoadedSegment, SearchDoc, SearchDocMeta, SearchHit, SegmentData } from './search-rank.ts';
import type MiniSearch from 'minisearch';
import { BoundedCache } from './bounded-cache.ts';
import {
  blockOf,
  COMPACTION_BLOCK,
  compactionBlockOf,
  compactionSeqOf,
  liveSegments,
  mergesDue,
  parseSealed,
  SEARCH_BLOCK,
  tierKey,
  uncovered,
} from './search-tiers.ts';
import type { Merge, SealedRef, Series } from './search-tiers.ts';

export { blockOf, liveSegments, SEARCH_BLOCK };

/** What the index needs of the store: get and put, a listing, and (to drop merged segments) a delete. */
export interface SearchStore {
  put(key: string, body: string, contentType?: string): Promise<void>;
  get(key: string): Promise<string | undefined>;
  list?(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<string[]>;
  delete?(key: string): Promise<void>;
}

/** Parsed segments kept in memory per process: the heap they take, estimated ({@link parsedBytes}). */
export const SEARCH_CACHE_BYTES = 64 * 1024 * 1024;
/**
 * Heap bytes a parsed segment takes per character of its JSON: 6.9 measured on a segment of 256 messages of 100–400
 * words (the MiniSearch index's maps and radix tree), whose stored body (gzip, base64) is 5.7 times smaller than its
 * JSON. The cache counted stored bytes before: its 16 MB then held about 600 MB of heap.
 */
const HEAP_PER_JSON_CHAR = 7;

/** The heap a segment of `json` takes once parsed, estimated: what the cache counts. */
export function parsedBytes(json: string): number {
  return json.length * HEAP_PER_JSON_CHAR;
}
/** Blocks one call seals at most (an agent older than search has many: later calls seal the rest). */
const SEAL_AT_ONCE = 2;
/** Lives whose sealed segments a process keeps in mind (least recently used dropped; listed again when needed). */
const LAYOUTS_KEPT = 1_000;
/** Compaction blocks left unsealed behind the newest compaction: a summary may be edited (review) until then. */
const COMPACTION_MARGIN_BLOCKS = 1;
/** Bodies read at once. */
const READS_AT_ONCE = 32;

/** The limits of a search. */
export const SEARCH_LIMITS = { query: { maxChars: 1_000 }, limit: { min: 1, max: 50, default: 5 } } as const;

/** One hit as a search answers it: the ranked match and a snippet of its text. */
export interface SearchMatch extends SearchHit {
  snippet: string;
}

/** Thrown for a search the caller got wrong (empty query, limit out of range): names the field and the limit. */
export class SearchInputError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field} ${message}`);
    this.name = 'SearchInputError';
    this.field = field;
  }
}

/** Checks a search's input; returns the limit to use. */
export function validateSearch(query: unknown, limit: unknown): number {
  if (typeof query !== 'string' || query.trim() === '') {
    throw new SearchInputError('query', 'must be a non-empty string');
  }
  if (query.length > SEARCH_LIMITS.query.maxChars) {
    throw new SearchInputError(
      'query',
      `must be at most ${SEARCH_LIMITS.query.maxChars} characters (got ${query.length})`,
    );
  }
  if (limit === undefined) return SEARCH_LIMITS.limit.default;
  const { min, max } = SEARCH_LIMITS.limit;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < min || limit > max) {
    throw new SearchInputError(
      'limit',
      `must be an integer from ${min} to ${max} (got ${typeof limit === 'number' ? limit : JSON.stringify(limit)})`,
    );
  }
  return limit;
}

export function searchPrefix(agent: AgentLife): string {
  return `${lifePrefix(agent)}search/`;
}

/** The small segment named `name` (a message, summary or ledger id). */
export function smallSegmentKey(agent: AgentLife, name: string): string {
  return `${searchPrefix(agent)}0/${name}.json`;
}

/** The sealed segment of message block `block` (level 1). */
export function sealedSegmentKey(agent: AgentLife, block: number): string {
  return tierKey(searchPrefix(agent), 1, 'm', block);
}

export function encodeSegment(json: string): string {
  return gzipSync(json).toString('base64');
}

export function decodeSegment(body: string): string {
  return gunzipSync(Buffer.from(body, 'base64')).toString('utf8');
}

/** The docs of one stored chat message (its text made searchable). */
export function docOf(meta: SearchDocMeta, message: ChatMessage): SearchDoc {
  return { ...meta, text: searchableText(message) };
}

/** Runs `work` over `items`, {@link READS_AT_ONCE} at a time. */
async function inBatches<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += READS_AT_ONCE) {
    out.push(...(await Promise.all(items.slice(i, i + READS_AT_ONCE).map(work))));
  }
  return out;
}

/**
 * The first `most` level-1 blocks 0 … `last` that none of `live` (a series' uncovered sealed segments) covers, in
 * order: a walk over the segments, not over the blocks, so it costs the same however long the life.
 */
export function unsealed(live: readonly SealedRef[], last: number, most: number): number[] {
  const out: number[] = [];
  let block = 0;
  for (const ref of [...live].sort((a, b) => a.first - b.first)) {
    for (; block < ref.first && block <= last && out.length < most; block++) out.push(block);
    block = Math.max(block, ref.first + ref.span);
  }
  for (; block <= last && out.length < most; block++) out.push(block);
  return out;
}

export class SearchIndex {
  private readonly store: SearchStore;
  /** Parsed segments by key, bounded by the heap they take (estimated). */
  private readonly cache: BoundedCache<LoadedSegment>;
  /** Per life: its sealed segments by key, as this process last listed or wrote them (least recently used first). */
  private readonly layouts = new Map<string, Map<string, SealedRef>>();

  constructor(store: SearchStore, options: { cacheBytes?: number } = {}) {
    this.store = store;
    this.cache = new BoundedCache(options.cacheBytes ?? SEARCH_CACHE_BYTES, (segment) => segment.bytes);
  }

  /** Writes the small segment `name` over `docs` (idempotent: a retry writes the same key). */
  async add(agent: AgentLife, name: string, docs: readonly SearchDoc[]): Promise<void> {
    if (docs.length === 0) return;
    await this.write(smallSegmentKey(agent, name), builtSegment(docs));
  }

  /**
   * Stores a segment and keeps it parsed in this process's cache (write-through): the worker that indexes an agent's
   * bodies is the one its searches run on, so a search reads from the store only what other processes wrote.
   */
  private async write(key: string, segment: { data: SegmentData; index?: MiniSearch }): Promise<void> {
    const json = JSON.stringify(segment.data);
    const body = encodeSegment(json);
    await this.store.put(key, body, 'text/plain');
    const index = segment.index;
    this.cache.set(
      key,
      index
        ? { docs: segment.data.docs, index, bytes: parsedBytes(json) }
        : loadedSegment(segment.data, parsedBytes(json)),
    );
  }

  /**
   * Seals every block of messages before `seq` (all of them are stored when the message `seq` is: call it from the
   * model call that stores it), at most {@link SEAL_AT_ONCE} at a time, drops their small segments, and makes the
   * merge due if there is one. Returns the blocks it sealed.
   */
  async sealBefore(agent: AgentLife, seq: number): Promise<number[]> {
    return this.sealSeries(agent, 'm', blockOf(seq) - 1);
  }

  /**
   * Seals the blocks of compaction bodies well before compaction `seq` (call it as compaction `seq` stores its
   * summary or ledger), as {@link sealBefore} does for messages.
   */
  async sealCompactionsBefore(agent: AgentLife, seq: number): Promise<number[]> {
    return this.sealSeries(agent, 'c', compactionBlockOf(seq) - 1 - COMPACTION_MARGIN_BLOCKS);
  }

  private async sealSeries(agent: AgentLife, series: Series, last: number): Promise<number[]> {
    if (last < 0 || !this.store.list) return [];
    const layout = await this.layout(agent);
    const todo = unsealed(uncovered([...layout.values()].filter((r) => r.series === series)), last, SEAL_AT_ONCE);
    for (const block of todo) {
      const key = await this.seal(agent, series, block);
      layout.set(key, parseSealed(searchPrefix(agent), key)!);
    }
    const [merge] = mergesDue([...layout.values()].filter((r) => r.series === series));
    if (merge) await this.merge(agent, layout, merge);
    return todo;
  }

  /** The life's sealed segments, listed once per process (the listing is bounded: segments merge). */
  private async layout(agent: AgentLife): Promise<Map<string, SealedRef>> {
    const life = lifePrefix(agent);
    let layout = this.layouts.get(life);
    if (layout) {
      this.layouts.delete(life);
    } else {
      const prefix = searchPrefix(agent);
      layout = new Map();
      for (const key of await this.listAll(prefix)) {
        const ref = parseSealed(prefix, key);
        if (ref) layout.set(key, ref);
      }
      for (const [oldest] of this.layouts) {
        if (this.layouts.size < LAYOUTS_KEPT) break;
        this.layouts.delete(oldest);
      }
    }
    this.layouts.set(life, layout);
    return layout;
  }

  /** The docs' metas of a small segment (undefined: none under that key now). */
  private async smallMetas(key: string): Promise<SearchDocMeta[] | undefined> {
    const small = await this.store.get(key);
    return small === undefined ? undefined : (JSON.parse(decodeSegment(small)) as { docs: SearchDocMeta[] }).docs;
  }

  /**
   * The small segments of level-1 block `block` of `series`, and what each sequence number of it indexes: its small
   * segments' docs, or, without one, what it would: a message and its original, or a compaction's summary (its
   * reviewer's edit first) and ledger. A compaction's small segments are listed (a plan with several summaries has
   * one each: c000002, c000002-2, …), from the block's first.
   */
  private async blockContents(
    agent: AgentLife,
    series: Series,
    seqs: readonly number[],
  ): Promise<{ smallKeys: string[]; metas: SearchDocMeta[][] }> {
    if (series === 'm') {
      const smallKeys = seqs.map((seq) => smallSegmentKey(agent, messageIdOf(seq)));
      const metas = await inBatches(seqs, async (seq) => {
        const id = messageIdOf(seq);
        return (
          (await this.smallMetas(smallSegmentKey(agent, id))) ?? [
            { key: messageKey(agent, id), id, role: '', seq, kind: 'message' as const },
            { key: originalResultKey(agent, id), id, role: '', seq, kind: 'original' as const },
          ]
        );
      });
      return { smallKeys, metas };
    }
    const [first, last] = [seqs[0]!, seqs.at(-1)!];
    const prefix = searchPrefix(agent);
    // Listed after the keys of the compaction before the block's first (c000064-2.json sorts before c000064.json).
    const listed = await Promise.all(
      [summaryIdOf, ledgerIdOf].map((idOf) =>
        this.listAll(`${prefix}0/${idOf(first)[0]}`, first > 1 ? smallSegmentKey(agent, idOf(first - 1)) : undefined),
      ),
    );
    const smallKeys: string[] = [];
    const bySeq = new Map<number, string[]>();
    for (const key of listed.flat()) {
      const seq = compactionSeqOf(key.slice(`${prefix}0/`.length, -'.json'.length));
      if (seq === undefined || seq < first || seq > last) continue;
      smallKeys.push(key);
      bySeq.set(seq, [...(bySeq.get(seq) ?? []), key]);
    }
    const metas = await inBatches(seqs, async (seq): Promise<SearchDocMeta[]> => {
      const keys = bySeq.get(seq);
      if (keys) return (await Promise.all(keys.map((key) => this.smallMetas(key)))).flatMap((m) => m ?? []);
      const edited = compactionKey(agent, seq, 'summary-edited.json');
      const summary = (await this.store.get(edited)) !== undefined ? edited : compactionKey(agent, seq, 'summary.json');
      return [
        { key: summary, id: summaryIdOf(seq), role: '', seq, kind: 'summary' },
        { key: compactionKey(agent, seq, 'ledger.json'), id: ledgerIdOf(seq), role: '', seq, kind: 'ledger' },
      ];
    });
    return { smallKeys, metas };
  }

  /** Makes level-1 block `block` of `series` from its small segments (or bodies); returns its key. */
  private async seal(agent: AgentLife, series: Series, block: number): Promise<string> {
    const size = series === 'm' ? SEARCH_BLOCK : COMPACTION_BLOCK;
    const seqs = Array.from({ length: size }, (_, i) => block * size + i + 1);
    const { smallKeys, metas } = await this.blockContents(agent, series, seqs);
    const perSeq = await inBatches(metas, async (list): Promise<SearchDoc[]> => {
      const docs = await Promise.all(
        list.map(async (meta) => {
          const body = await this.store.get(meta.key);
          if (body === undefined) return undefined;
          const message = JSON.parse(body) as ChatMessage;
          return docOf({ ...meta, role: meta.role || message.role }, message);
        }),
      );
      return docs.filter((doc) => doc !== undefined);
    });
    const key = tierKey(searchPrefix(agent), 1, series, block);
    await this.write(key, builtSegment(perSeq.flat()));
    if (this.store.delete) await inBatches(smallKeys, (small) => this.store.delete!(small));
    return key;
  }

  /** Merges 16 segments of one level into one of the next, from their indexes; then drops them. */
  private async merge(agent: AgentLife, layout: Map<string, SealedRef>, merge: Merge): Promise<void> {
    const bodies = await inBatches(merge.members, (ref) => this.store.get(ref.key));
    // A member gone (merged by another process meanwhile): list again next time.
    if (bodies.some((body) => body === undefined)) {
      this.layouts.delete(lifePrefix(agent));
      return;
    }
    const merged = mergeSegmentData(bodies.map((body) => parseSegment(decodeSegment(body!))));
    const key = tierKey(searchPrefix(agent), merge.into.level, merge.into.series, merge.into.first);
    await this.write(key, { data: merged });
    layout.set(key, parseSealed(searchPrefix(agent), key)!);
    for (const member of merge.members) layout.delete(member.key);
    if (this.store.delete) await inBatches(merge.members, (ref) => this.store.delete!(ref.key));
  }

  /** Every key under `prefix` (after `startAfter`, when given). */
  private async listAll(prefix: string, startAfter?: string): Promise<string[]> {
    const keys: string[] = [];
    for (;;) {
      const after = keys.at(-1) ?? startAfter;
      const page = await this.store.list!(prefix, { ...(after ? { startAfter: after } : {}), limit: 1000 });
      keys.push(...page);
      if (page.length < 1000) return keys;
    }
  }

  /** A segment, from the cache or the store (undefined: it was deleted since the listing). */
  private async segment(key: string): Promise<LoadedSegment | undefined> {
    const hit = this.cache.get(key);
    if (hit) return hit;
    const body = await this.store.get(key);
    if (body === undefined) return undefined;
    const json = decodeSegment(body);
    const segment = readSegment(json, parsedBytes(json));
    this.cache.set(key, segment);
    return segment;
  }

  /** The life's segments a search reads, loaded. */
  private async segments(agent: AgentLife): Promise<LoadedSegment[]> {
    if (!this.store.list) throw new Error('the store cannot list keys: search needs a listing');
    const prefix = searchPrefix(agent);
    for (let attempt = 1; ; attempt++) {
      const keys = liveSegments(prefix, await this.listAll(prefix));
      const loaded = await inBatches(keys, (key) => this.segment(key));
      // A block sealed between the listing and the reads: its small segments are gone; list again.
      if (loaded.every((segment) => segment !== undefined) || attempt === 3) {
        return loaded.filter((segment) => segment !== undefined);
      }
    }
  }

  /**
   * The first `limit` matches of `query` among everything this agent's life stored, best first, each with a snippet.
   * Only keys under the life's own prefix are read.
   */
  async search(agent: AgentLife, query: string, options: { limit?: number } = {}): Promise<SearchMatch[]> {
    const limit = validateSearch(query, options.limit);
    const hits = rankAcrossSegments(await this.segments(agent), query, limit);
    const own = lifePrefix(agent);
    return Promise.all(
      hits
        .filter((hit) => hit.key.startsWith(own) && !hit.key.includes('..'))
        .map(async (hit) => {
          const body = await this.store.get(hit.key);
          const text = body === undefined ? '' : searchableText(JSON.parse(body) as ChatMessage);
          return { ...hit, snippet: snippetOf(text, hit.terms) };
        }),
    );
  }
}

/** How the model reloads a match: the call of the `context_reload` tool. */
export const toolReloadCall = (key: string): string => `context_reload(${JSON.stringify(key)})`;

/**
 * How a search's matches read: one per line pair, with what reloads each (`reload`: the tool's call for the model,
 * the CLI's command for a person).
 */
export function renderMatches(
  query: string,
  matches: readonly SearchMatch[],
  reload: (key: string) => string = toolReloadCall,
): string {
  if (matches.length === 0) return `no stored content matches ${JSON.stringify(query)}`;
  const lines = matches.map((match, i) => {
    const where = [
      match.kind === 'message' ? match.role : match.kind === 'original' ? `${match.role}, whole original` : match.kind,
      match.turn !== undefined ? `turn ${match.turn}` : undefined,
      match.step !== undefined ? `step ${match.step}` : undefined,
    ].filter((part) => part !== undefined);
    return (
      `${i + 1}. ${match.id} (${where.join(', ')}) score ${match.score.toFixed(2)}: ${reload(match.key)}\n` +
      `   ${match.snippet}`
    );
  });
  return `${matches.length} match(es) for ${JSON.stringify(query)}, best first:\n${lines.join('\n')}`;
}

const indexes = new WeakMap<object, SearchIndex>();

/** The one index (and its cache of segments) of a store in this process. */
export function searchIndexOf(store: SearchStore): SearchIndex {
  let index = indexes.get(store);
  if (!index) {
    index = new SearchIndex(store);
    indexes.set(store, index);
  }
  return index;
}
