/**
 * The pure parts of an agent's full-text search (storage/search-index.ts does the storing): what a stored body's
 * searchable text is, how one segment's index is made and read (MiniSearch: BM25 over the words of each body), how
 * the hits of many segments are ranked together, and the snippet shown for a hit.
 *
 * Ranking across segments: each segment is a MiniSearch index of its own bodies, so its BM25 weighs a word by how rare
 * it is in that segment. Merged as they are, a small segment (the newest bodies) would rank its matches lower than a
 * large one for the same words. So each word's score in a segment is weighed by the word's rarity over all segments
 * together against its rarity in that segment (global document frequency, as distributed search engines do before
 * they merge shards' hits): a body scores as it would in one index of every body, but for the field-length norm
 * (each segment's own average length).
 *
 * @example
 *   const segment = segmentOf([{ key, id: 'm000007', role: 'tool', seq: 7, kind: 'message', text: 'ECONNREFUSED' }]);
 *   const hits = rankAcrossSegments([readSegment(JSON.stringify(segment))], 'connection refused', 5);
 */
import MiniSearch from 'minisearch';
import type { Options } from 'minisearch';
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { safeSlice } from '../engine/text.ts';

/** What a stored body is, for search. */
export type SearchDocKind = 'message' | 'original' | 'summary' | 'ledger';

/** One stored body's metadata, as a segment keeps it (its text is indexed, not kept). */
export interface SearchDocMeta {
  /** The storage key: what `context_reload` reads. */
  key: string;
  /** The message id (m000007), or the summary's (c000002) or ledger's (l000002). */
  id: string;
  role: string;
  /** The message's sequence number in the agent's life (the compaction's, for a summary or ledger). */
  seq: number;
  kind: SearchDocKind;
  /** The turn and step of the model call that stored it, when it was stored with one. */
  turn?: number;
  step?: number;
}

export interface SearchDoc extends SearchDocMeta {
  text: string;
}

/** A segment as stored: its bodies' metadata, and the MiniSearch index over their texts (ids: positions in `docs`). */
export interface SegmentData {
  v: 1;
  docs: SearchDocMeta[];
  index: unknown;
}

/** A segment read back: searchable. */
export interface LoadedSegment {
  docs: SearchDocMeta[];
  index: MiniSearch;
  /** The heap it takes, estimated (the cache's measure: search-index.ts `parsedBytes`). */
  bytes: number;
}

/** One ranked match. */
export interface SearchHit extends SearchDocMeta {
  score: number;
  /** The words of the query it matched. */
  terms: string[];
}

/** Words longer than this are not indexed (hashes, base64, minified code: nobody searches them by their words). */
export const MAX_TERM_CHARS = 48;

/**
 * English words too common to tell bodies apart (Lucene's English stop set): neither indexed nor searched. They
 * would match nearly every body, slow every search and weigh next to nothing in BM25.
 */
export const STOP_WORDS = new Set(
  (
    'a an and are as at be but by for if in into is it no not of on or such that the their then there these they ' +
    'this to was will with'
  ).split(' '),
);

/** The query's words and the index's, made alike: lowercased; stop words and too long ones dropped. */
function processTerm(term: string): string | null {
  if (term.length > MAX_TERM_CHARS) return null;
  const lower = term.toLowerCase();
  return STOP_WORDS.has(lower) ? null : lower;
}

const OPTIONS: Options = { fields: ['text'], idField: 'n', processTerm };

/** The words a query searches for, as the index holds them. */
export function queryTerms(query: string): string[] {
  const tokenize = MiniSearch.getDefault('tokenize') as (text: string) => string[];
  const terms = tokenize(query).flatMap((word) => {
    const term = processTerm(word);
    return term ? [term] : [];
  });
  return [...new Set(terms)];
}

/** The searchable text of a stored chat message: its text parts and its tool calls (name and arguments). */
export function searchableText(message: ChatMessage): string {
  const calls = (message.tool_calls ?? []).map((call) => `${call.function.name} ${call.function.arguments}`);
  return [textOf(message.content), ...calls].filter((text) => text !== '').join('\n');
}

/** A segment over `docs`. */
export function segmentOf(docs: readonly SearchDoc[]): SegmentData {
  return builtSegment(docs).data;
}

/** A segment over `docs`, and its index as built (searchable without parsing what is stored). */
export function builtSegment(docs: readonly SearchDoc[]): { data: SegmentData; index: MiniSearch } {
  const index = new MiniSearch<{ n: number; text: string }>(OPTIONS);
  index.addAll(docs.map((doc, n) => ({ n, text: doc.text })));
  return { data: { v: 1, docs: docs.map(({ text: _text, ...meta }) => meta), index: index.toJSON() }, index };
}

/** A stored segment's JSON, parsed and checked. */
export function parseSegment(json: string): SegmentData {
  const data = JSON.parse(json) as SegmentData;
  if (data.v !== 1 || !Array.isArray(data.docs)) throw new Error('not a search segment (v 1)');
  return data;
}

/** A stored segment's JSON, searchable. */
export function readSegment(json: string, bytes = json.length): LoadedSegment {
  return loadedSegment(parseSegment(json), bytes);
}

/** A segment's data, searchable (`bytes`: the heap it takes, estimated). */
export function loadedSegment(data: SegmentData, bytes: number): LoadedSegment {
  return { docs: data.docs, index: MiniSearch.loadJS(data.index as never, OPTIONS), bytes };
}

/** MiniSearch's serialized index (format 2), as far as a merge reads it: one field, `text` (field id 0). */
interface SerializedIndex {
  documentCount: number;
  nextId: number;
  documentIds: Record<string, number>;
  fieldIds: Record<string, number>;
  fieldLength: Record<string, number[]>;
  averageFieldLength: number[];
  storedFields: Record<string, unknown>;
  dirtCount: number;
  index: [string, Record<string, Record<string, number>>][];
  serializationVersion: number;
}

/**
 * One segment over the docs of `parts`, in order, without their texts: the parts' serialized MiniSearch indexes
 * joined (each part's short ids and doc numbers moved past the previous parts', the postings of each term put
 * together, the average length over all docs). What a search ranks in it is what it would rank in a segment built
 * from the texts (test/unit/search-tiers.test.ts). A part in another serialization than MiniSearch's format 2 is an
 * error: the caller keeps the parts as they are.
 */
export function mergeSegmentData(parts: readonly SegmentData[]): SegmentData {
  const docs: SearchDocMeta[] = [];
  const documentIds: Record<string, number> = {};
  const fieldLength: Record<string, number[]> = {};
  const postings = new Map<string, Record<string, number>>();
  let [shortIds, lengthSum, dirt] = [0, 0, 0];
  for (const part of parts) {
    const index = part.index as SerializedIndex;
    if (
      index.serializationVersion !== 2 ||
      Object.keys(index.fieldIds).join() !== 'text' ||
      index.fieldIds.text !== 0
    ) {
      throw new Error(`search segment: cannot merge a MiniSearch index of format ${index.serializationVersion}`);
    }
    const [docBase, idBase] = [docs.length, shortIds];
    for (const [short, n] of Object.entries(index.documentIds)) documentIds[Number(short) + idBase] = n + docBase;
    for (const [short, lengths] of Object.entries(index.fieldLength)) {
      fieldLength[Number(short) + idBase] = lengths;
      lengthSum += lengths[0] ?? 0;
    }
    for (const [term, fields] of index.index) {
      const merged = postings.get(term) ?? {};
      for (const [short, freq] of Object.entries(fields['0'] ?? {})) merged[Number(short) + idBase] = freq;
      postings.set(term, merged);
    }
    docs.push(...part.docs);
    shortIds += index.nextId;
    dirt += index.dirtCount;
  }
  const documentCount = Object.keys(documentIds).length;
  const index: SerializedIndex = {
    documentCount,
    nextId: shortIds,
    documentIds,
    fieldIds: { text: 0 },
    fieldLength,
    averageFieldLength: [documentCount > 0 ? lengthSum / documentCount : 0],
    storedFields: {},
    dirtCount: dirt,
    index: [...postings].map(([term, byShortId]) => [term, { 0: byShortId }]),
    serializationVersion: 2,
  };
  return { v: 1, docs, index };
}

/** BM25's inverse document frequency, as MiniSearch computes it. */
function idf(documents: number, matching: number): number {
  return Math.log(1 + (documents - matching + 0.5) / (matching + 0.5));
}

/**
 * How many of a segment's bodies hold `term`: the length of the word's posting list in MiniSearch's index (its
 * `_index`, a map from word to field to body; read here because MiniSearch has no public call for it, and checked
 * against a search of the word by the unit tests, with the version pinned), or a search of the word without it.
 */
export function documentFrequency(segment: LoadedSegment, term: string): number {
  const internal = segment.index as unknown as {
    _index?: { get?: (term: string) => Map<number, Map<number, number>> | undefined };
    _fieldIds?: Record<string, number>;
  };
  const field = internal._fieldIds?.text;
  if (typeof internal._index?.get !== 'function' || field === undefined) {
    return segment.index.search(term, { prefix: false, fuzzy: false }).length;
  }
  return internal._index.get(term)?.get(field)?.size ?? 0;
}

/**
 * Words held by more than this share of all bodies are left out of a query that has a rarer word (their weight is
 * small next to a rare word's, and each would make every search walk most bodies): Lucene's and Elasticsearch's
 * common-terms cutoff. A query of common words only searches them all.
 */
export const COMMON_WORD_SHARE = 0.2;

/**
 * The first `limit` matches of `query` over `segments`, best first (ties: the newest first), each body once (the
 * same key in two segments: its best). Each segment is searched with MiniSearch (BM25, the words OR-ed), every word's
 * score weighed by the word's rarity over all segments against its rarity in that segment, so that a body scores as
 * it would in one index of every body.
 */
export function rankAcrossSegments(segments: readonly LoadedSegment[], query: string, limit: number): SearchHit[] {
  const all = queryTerms(query);
  if (all.length === 0 || segments.length === 0) return [];
  const local = segments.map((segment) => all.map((term) => documentFrequency(segment, term)));
  const total = segments.reduce((sum, segment) => sum + segment.index.documentCount, 0);
  const global = all.map((_, t) => local.reduce((sum, frequencies) => sum + frequencies[t]!, 0));
  const rare = all.filter((_, t) => global[t]! > 0 && global[t]! <= COMMON_WORD_SHARE * total);
  const terms = rare.length > 0 ? rare : all;
  const weights = segments.map((segment, s) => {
    const weight = new Map<string, number>();
    all.forEach((term, t) => {
      const df = local[s]![t]!;
      if (df > 0) weight.set(term, idf(total, global[t]!) / idf(segment.index.documentCount, df));
    });
    return weight;
  });
  // Only the best candidates are kept as they come (at most 4 × limit before a cut to 2 × limit), ordered at the end.
  const top: { score: number; segment: number; id: number; mask: number }[] = [];
  let threshold = -Infinity;
  const order = (a: (typeof top)[number], b: (typeof top)[number]) =>
    b.score - a.score ||
    segments[b.segment]!.docs[b.id]!.seq - segments[a.segment]!.docs[a.id]!.seq ||
    (segments[a.segment]!.docs[a.id]!.key < segments[b.segment]!.docs[b.id]!.key ? -1 : 1);
  segments.forEach((segment, s) => {
    const weight = weights[s]!;
    if (!terms.some((term) => weight.has(term))) return;
    const results = segment.index.search(terms.join(' '), {
      prefix: false,
      fuzzy: false,
      combineWith: 'OR',
      boostDocument: (_id, term) => weight.get(term) ?? 0,
    });
    for (const result of results) {
      // Rounded: the same sum made in another order (another split into segments) ties exactly.
      const score = Math.round(result.score * 1e6) / 1e6;
      const id = result.id as number;
      if (score <= 0 || score < threshold || segment.docs[id] === undefined) continue;
      let mask = 0;
      for (const term of result.terms) mask |= 1 << (terms.indexOf(term) % 32);
      top.push({ score, segment: s, id, mask });
      if (top.length >= 4 * limit) {
        top.sort(order);
        top.length = 2 * limit;
        threshold = top.at(-1)!.score;
      }
    }
  });
  top.sort(order);
  const hits: SearchHit[] = [];
  const seen = new Set<string>();
  for (const { score, segment, id, mask } of top) {
    const meta = segments[segment]!.docs[id]!;
    if (seen.has(meta.key)) continue; // the same body in two segments (a retried write): its best
    seen.add(meta.key);
    hits.push({ ...meta, score, terms: terms.filter((_, t) => mask & (1 << (t % 32))) });
    if (hits.length === limit) break;
  }
  return hits;
}

/** Characters of a snippet around its first match. */
export const SNIPPET_CHARS = 200;

/** Where in `lower` each of `terms` occurs as a word (at most the first 200 of each). */
function occurrences(lower: string, terms: readonly string[]): { at: number; term: string }[] {
  const found: { at: number; term: string }[] = [];
  for (const term of terms) {
    const escaped = term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const pattern = new RegExp(`(?<![\\p{L}\\p{N}])${escaped}(?![\\p{L}\\p{N}])`, 'gu');
    let count = 0;
    for (let match = pattern.exec(lower); match && count < 200; match = pattern.exec(lower), count++) {
      found.push({ at: match.index, term });
    }
  }
  return found.sort((a, b) => a.at - b.at);
}

/**
 * A line of `text` (whitespace folded, an ellipsis where it was cut) around the place that holds the most of `terms`
 * within `width` characters, gathered closest, centred; the text's beginning when none of them is found as a word.
 */
export function snippetOf(text: string, terms: readonly string[], width = SNIPPET_CHARS): string {
  const folded = text.replace(/\s+/g, ' ').trim();
  const found = occurrences(folded.toLowerCase(), terms);
  // The window that holds the most distinct words, and among those the one that gathers them in the shortest span.
  let best: { at: number; count: number; span: number } | undefined;
  for (const [i, first] of found.entries()) {
    const seen = new Set<string>();
    let span = 0;
    for (let j = i; j < found.length && found[j]!.at < first.at + width; j++) {
      if (seen.has(found[j]!.term)) continue;
      seen.add(found[j]!.term);
      span = found[j]!.at + found[j]!.term.length - first.at;
    }
    if (!best || seen.size > best.count || (seen.size === best.count && span < best.span)) {
      best = { at: first.at, count: seen.size, span };
    }
  }
  const start = best ? Math.max(0, best.at - Math.max(0, Math.floor((width - best.span) / 2))) : 0;
  const end = Math.min(folded.length, start + width);
  return `${start > 0 ? '…' : ''}${safeSlice(folded, start, end)}${end < folded.length ? '…' : ''}`;
}
