/**
 * An agent life's full-text search index in S3, built as its bodies are stored (by the activities that store them),
 * read by the `context_search` tool, `searchAgent` and `longrun search`. The pure parts: storage/search-rank.ts.
 *
 * Layout, under the life's prefix (contract/keys.ts):
 *
 *   search/0/<messageId>.json   a small segment: one stored message and, for a tool result cut as it arrived, its
 *                               whole original; written by the activity that stored them (a retry overwrites it)
 *   search/0/<c|l><seq>.json    a compaction's summary or task ledger, the same way
 *   search/1/m<block>.json      a sealed segment: every message of sequence numbers block×256+1 … (block+1)×256 and
 *                               their originals, made by the model call that stores a later message (all of those
 *                               are stored by then: a step's tool results are before its next model call)
 *
 * Once a block is sealed its small segments are deleted; a reader that sees both (a listing made in between) uses the
 * sealed one. Segments are JSON, gzip-compressed and base64-encoded (the store holds text), and encrypted like every
 * body when encryption is on. A search lists the life's segments (one LIST), reads the ones this process has not
 * cached (a cache of parsed segments bounded by {@link SEARCH_CACHE_BYTES}) and ranks across them.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { lifePrefix, messageIdOf, messageKey, originalResultKey } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { rankAcrossSegments, readSegment, searchableText, segmentOf, snippetOf } from './search-rank.ts';
import type { LoadedSegment, SearchDoc, SearchDocMeta, SearchHit } from './search-rank.ts';

/** What the index needs of the store: get and put, a listing, and (to drop merged segments) a delete. */
export interface SearchStore {
  put(key: string, body: string, contentType?: string): Promise<void>;
  get(key: string): Promise<string | undefined>;
  list?(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<string[]>;
  delete?(key: string): Promise<void>;
}

/** Messages per sealed segment. */
export const SEARCH_BLOCK = 256;
/** Parsed segments kept in memory per process, counted by their stored (compressed) size; parsed they take more. */
export const SEARCH_CACHE_BYTES = 16 * 1024 * 1024;
/** Blocks one model call seals at most (an agent older than search has many: later calls seal the rest). */
const SEAL_AT_ONCE = 2;
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

export function sealedSegmentKey(agent: AgentLife, block: number): string {
  return `${searchPrefix(agent)}1/m${String(block).padStart(6, '0')}.json`;
}

/** The block of a message sequence number. */
export function blockOf(seq: number): number {
  return Math.floor((seq - 1) / SEARCH_BLOCK);
}

/**
 * Which of a listing's segment keys a search reads: every sealed one, and the small ones whose message is in no
 * sealed block (summaries and ledgers are never sealed).
 */
export function liveSegments(prefix: string, keys: readonly string[]): string[] {
  const sealed = new Set<number>();
  for (const key of keys) {
    const match = /^1\/m(\d{6})\.json$/.exec(key.slice(prefix.length));
    if (match) sealed.add(Number(match[1]));
  }
  return keys.filter((key) => {
    const name = key.slice(prefix.length);
    if (name.startsWith('1/')) return true;
    const match = /^0\/m(\d+)\.json$/.exec(name);
    if (match) return !sealed.has(blockOf(Number(match[1])));
    return /^0\/[cl]\d+\.json$/.test(name);
  });
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

export class SearchIndex {
  private readonly store: SearchStore;
  private readonly cacheBytes: number;
  /** Parsed segments by key, least recently used first. */
  private readonly cache = new Map<string, LoadedSegment>();
  private cached = 0;
  /** Per life: the blocks known to be sealed. */
  private readonly sealed = new Map<string, Set<number>>();

  constructor(store: SearchStore, options: { cacheBytes?: number } = {}) {
    this.store = store;
    this.cacheBytes = options.cacheBytes ?? SEARCH_CACHE_BYTES;
  }

  /** Writes the small segment `name` over `docs` (idempotent: a retry writes the same key). */
  async add(agent: AgentLife, name: string, docs: readonly SearchDoc[]): Promise<void> {
    if (docs.length === 0) return;
    await this.store.put(smallSegmentKey(agent, name), encodeSegment(JSON.stringify(segmentOf(docs))), 'text/plain');
  }

  /**
   * Seals every block of messages before `seq` (all of them are stored when the message `seq` is: call it from the
   * model call that stores it), at most {@link SEAL_AT_ONCE} at a time, and drops their small segments.
   */
  async sealBefore(agent: AgentLife, seq: number): Promise<number[]> {
    const last = blockOf(seq) - 1;
    if (last < 0 || !this.store.list) return [];
    const life = lifePrefix(agent);
    let sealed = this.sealed.get(life);
    if (!sealed) {
      sealed = new Set();
      const prefix = `${searchPrefix(agent)}1/`;
      for (const key of await this.listAll(prefix)) {
        const match = /m(\d{6})\.json$/.exec(key);
        if (match) sealed.add(Number(match[1]));
      }
      this.sealed.set(life, sealed);
    }
    const todo: number[] = [];
    for (let block = 0; block <= last && todo.length < SEAL_AT_ONCE; block++) if (!sealed.has(block)) todo.push(block);
    for (const block of todo) {
      await this.seal(agent, block);
      sealed.add(block);
    }
    return todo;
  }

  /** Makes block `block`'s sealed segment from its small ones (a message without one: from its stored body). */
  private async seal(agent: AgentLife, block: number): Promise<void> {
    const seqs = Array.from({ length: SEARCH_BLOCK }, (_, i) => block * SEARCH_BLOCK + i + 1);
    const perSeq = await inBatches(seqs, async (seq): Promise<SearchDoc[]> => {
      const id = messageIdOf(seq);
      const small = await this.store.get(smallSegmentKey(agent, id));
      const metas: SearchDocMeta[] = small
        ? (JSON.parse(decodeSegment(small)) as { docs: SearchDocMeta[] }).docs
        : [
            { key: messageKey(agent, id), id, role: '', seq, kind: 'message' },
            { key: originalResultKey(agent, id), id, role: '', seq, kind: 'original' },
          ];
      const docs = await Promise.all(
        metas.map(async (meta) => {
          const body = await this.store.get(meta.key);
          if (body === undefined) return undefined;
          const message = JSON.parse(body) as ChatMessage;
          return docOf({ ...meta, role: meta.role || message.role }, message);
        }),
      );
      return docs.filter((doc) => doc !== undefined);
    });
    const docs = perSeq.flat();
    await this.store.put(sealedSegmentKey(agent, block), encodeSegment(JSON.stringify(segmentOf(docs))), 'text/plain');
    if (this.store.delete) {
      await inBatches(seqs, (seq) => this.store.delete!(smallSegmentKey(agent, messageIdOf(seq))));
    }
  }

  private async listAll(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    for (;;) {
      const page = await this.store.list!(prefix, {
        ...(keys.length ? { startAfter: keys.at(-1)! } : {}),
        limit: 1000,
      });
      keys.push(...page);
      if (page.length < 1000) return keys;
    }
  }

  /** A segment, from the cache or the store (undefined: it was deleted since the listing). */
  private async segment(key: string): Promise<LoadedSegment | undefined> {
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const body = await this.store.get(key);
    if (body === undefined) return undefined;
    const segment = readSegment(decodeSegment(body), body.length);
    this.cache.set(key, segment);
    this.cached += segment.bytes;
    for (const [oldest, loaded] of this.cache) {
      if (this.cached <= this.cacheBytes) break;
      this.cache.delete(oldest);
      this.cached -= loaded.bytes;
    }
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

/** How a search's matches read as the tool's result: one per line pair, with the reference to reload each. */
export function renderMatches(query: string, matches: readonly SearchMatch[]): string {
  if (matches.length === 0) return `no stored content matches ${JSON.stringify(query)}`;
  const lines = matches.map((match, i) => {
    const where = [
      match.kind === 'message' ? match.role : match.kind === 'original' ? `${match.role}, whole original` : match.kind,
      match.turn !== undefined ? `turn ${match.turn}` : undefined,
      match.step !== undefined ? `step ${match.step}` : undefined,
    ].filter((part) => part !== undefined);
    return (
      `${i + 1}. ${match.id} (${where.join(', ')}) score ${match.score.toFixed(2)}: context_reload("${match.key}")\n` +
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
