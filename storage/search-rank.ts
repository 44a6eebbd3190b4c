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
  /** Its stored size (the cache's measure). */
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
  const index = new MiniSearch<{ n: number; text: string }>(OPTIONS);
  index.addAll(docs.map((doc, n) => ({ n, text: doc.text })));
  return { v: 1, docs: docs.map(({ text: _text, ...meta }) => meta), index: index.toJSON() };
}

/** A stored segment's JSON, searchable. */
export function readSegment(json: string, bytes = json.length): LoadedSegment {
  const data = JSON.parse(json) as SegmentData;
  if (data.v !== 1 || !Array.isArray(data.docs)) throw new Error('not a search segment (v 1)');
  return { docs: data.docs, index: MiniSearch.loadJSON(JSON.stringify(data.index), OPTIONS), bytes };
}

/** BM25's inverse document frequency, as MiniSearch computes it. */
function idf(documents: number, matching: number): number {
  return Math.log(1 + (documents - matching + 0.5) / (matching + 0.5));
}

/**
 * The first `limit` matches of `query` over `segments`, best first (ties: the newest first), each body once (the
 * same key in two segments: its best). Each word is searched alone in every segment (MiniSearch's BM25: its hits
 * are the word's document frequency there), then a body's score is the sum over its words of each word's score
 * weighed by its rarity over all segments against its rarity in its own segment, which is what one OR query over
 * one index of every body would sum.
 */
export function rankAcrossSegments(segments: readonly LoadedSegment[], query: string, limit: number): SearchHit[] {
  const terms = queryTerms(query);
  if (terms.length === 0 || segments.length === 0) return [];
  const perSegment = segments.map((segment) =>
    terms.map((term) => segment.index.search(term, { prefix: false, fuzzy: false })),
  );
  const total = segments.reduce((sum, segment) => sum + segment.index.documentCount, 0);
  const frequency = terms.map((_, t) => perSegment.reduce((sum, results) => sum + results[t]!.length, 0));
  const best = new Map<string, SearchHit>();
  segments.forEach((segment, s) => {
    const scored = new Map<number, { score: number; terms: string[] }>();
    terms.forEach((term, t) => {
      const results = perSegment[s]![t]!;
      if (results.length === 0) return;
      const weight = idf(total, frequency[t]!) / idf(segment.index.documentCount, results.length);
      for (const result of results) {
        const id = result.id as number;
        const entry = scored.get(id) ?? { score: 0, terms: [] };
        entry.score += weight * result.score;
        entry.terms.push(term);
        scored.set(id, entry);
      }
    });
    for (const [id, { score, terms: matched }] of scored) {
      const meta = segment.docs[id];
      if (!meta) continue;
      const seen = best.get(meta.key);
      // Rounded: the same sum made in another order (another split into segments) ties exactly.
      const rounded = Number(score.toPrecision(10));
      if (!seen || rounded > seen.score) best.set(meta.key, { ...meta, score: rounded, terms: matched });
    }
  });
  return [...best.values()]
    .sort((a, b) => b.score - a.score || b.seq - a.seq || (a.key < b.key ? -1 : 1))
    .slice(0, limit);
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
