/**
 * The search index's tiers, pure: which segments a life's index has, which of them a search reads, and which merges
 * are due. With them a search reads a bounded number of segments however long the life: at most
 * {@link SEARCH_BLOCK} small message segments and {@link COMPACTION_BLOCK} small compaction ones, and fewer than
 * {@link TIER_FANOUT} sealed segments per level and series, a level per sixteenfold of the life.
 *
 * Keys under a life's `search/` (storage/search-index.ts has the whole layout):
 *
 *   0/<m|c|l><seq>.json        a small segment: one message (m), or one compaction's summary (c; its further
 *                              summaries c<seq>-2, …) or ledger (l)
 *   <level>/m<first>.json      sealed messages: level 1 is block `first` (messages first×256+1 … (first+1)×256);
 *                              level L ≥ 2 merges 16^(L-1) level-1 blocks, first … first+16^(L-1)-1 (first aligned)
 *   <level>/c<first>.json      sealed compaction bodies, the same way with blocks of 64 compactions (summaries and
 *                              ledgers of compactions first×64+1 … )
 *
 * A segment covered by one of a higher level (a merge whose members are not deleted yet, or a listing made in
 * between) is not read; nor is a small segment whose block is covered.
 */

/** Messages per level-1 sealed block. */
export const SEARCH_BLOCK = 256;
/** Compactions per level-1 sealed block of compaction bodies. */
export const COMPACTION_BLOCK = 64;
/** Segments of one level merged into one of the next. */
export const TIER_FANOUT = 16;

/** The two series of sealed segments: messages (m) and compaction bodies (c: summaries and ledgers). */
export type Series = 'm' | 'c';

/** A sealed segment: its level, series, first level-1 block and how many level-1 blocks it covers. */
export interface SealedRef {
  key: string;
  level: number;
  series: Series;
  first: number;
  span: number;
}

/** Level-1 blocks a segment of `level` covers. */
export const spanOf = (level: number) => TIER_FANOUT ** (level - 1);

/** The level-1 block of message `seq` (1-based). */
export const blockOf = (seq: number) => Math.floor((seq - 1) / SEARCH_BLOCK);
/** The level-1 block of compaction `seq` (1-based). */
export const compactionBlockOf = (seq: number) => Math.floor((seq - 1) / COMPACTION_BLOCK);

/** The key of a sealed segment under a life's search prefix. */
export function tierKey(prefix: string, level: number, series: Series, first: number): string {
  return `${prefix}${level}/${series}${String(first).padStart(6, '0')}.json`;
}

/** The sealed segment a key names (undefined: a small segment, or not the index's). */
export function parseSealed(prefix: string, key: string): SealedRef | undefined {
  const match = /^([1-9]\d*)\/([mc])(\d{6,})\.json$/.exec(key.slice(prefix.length));
  if (!match) return undefined;
  const level = Number(match[1]);
  return { key, level, series: match[2] as Series, first: Number(match[3]), span: spanOf(level) };
}

/** The small segment a key names: its series and its level-1 block (undefined: not a small segment). */
function parseSmall(prefix: string, key: string): { series: Series; block: number } | undefined {
  const match = /^0\/([mcl])(\d+)(?:-\d+)?\.json$/.exec(key.slice(prefix.length));
  if (!match) return undefined;
  const seq = Number(match[2]);
  return match[1] === 'm' ? { series: 'm', block: blockOf(seq) } : { series: 'c', block: compactionBlockOf(seq) };
}

/** Of `refs`, those no other covers (a higher level over the same blocks), by series. */
export function uncovered(refs: readonly SealedRef[]): SealedRef[] {
  const highestFirst = [...refs].sort((a, b) => b.level - a.level || a.first - b.first);
  const kept: SealedRef[] = [];
  for (const ref of highestFirst) {
    const covered = kept.some(
      (k) => k.series === ref.series && k.first <= ref.first && ref.first + ref.span <= k.first + k.span,
    );
    if (!covered) kept.push(ref);
  }
  return kept.sort((a, b) => (a.series === b.series ? a.first - b.first : a.series < b.series ? -1 : 1));
}

/**
 * Which of a listing's keys a search reads: the sealed segments no higher one covers, and the small segments whose
 * block no sealed segment covers.
 */
export function liveSegments(prefix: string, keys: readonly string[]): string[] {
  const refs = keys.flatMap((key) => parseSealed(prefix, key) ?? []);
  const live = uncovered(refs);
  const covers = (series: Series, block: number) =>
    live.some((r) => r.series === series && r.first <= block && block < r.first + r.span);
  const small = keys.filter((key) => {
    const parsed = parseSmall(prefix, key);
    return parsed !== undefined && !covers(parsed.series, parsed.block);
  });
  return [...live.map((r) => r.key), ...small];
}

/** A merge due: `members` (all {@link TIER_FANOUT} segments of one level, aligned) into one of the next level. */
export interface Merge {
  into: { level: number; series: Series; first: number };
  members: SealedRef[];
}

/** The merges due among the live sealed segments: each aligned group of 16 of one level and series, lowest first. */
export function mergesDue(refs: readonly SealedRef[]): Merge[] {
  const groups = new Map<string, SealedRef[]>();
  for (const ref of uncovered(refs)) {
    const next = spanOf(ref.level + 1);
    const first = Math.floor(ref.first / next) * next;
    const id = `${ref.series}/${ref.level}/${first}`;
    const group = groups.get(id) ?? [];
    group.push(ref);
    groups.set(id, group);
  }
  const due: Merge[] = [];
  for (const members of groups.values()) {
    const [head] = members;
    if (!head || members.length < TIER_FANOUT) continue;
    const next = spanOf(head.level + 1);
    due.push({
      into: { level: head.level + 1, series: head.series, first: Math.floor(head.first / next) * next },
      members: [...members].sort((a, b) => a.first - b.first),
    });
  }
  return due.sort((a, b) => a.into.level - b.into.level || a.into.first - b.into.first);
}

/** The compaction a small segment's name is of (c000002, c000002-2, l000002: 2); undefined: not a compaction's. */
export function compactionSeqOf(name: string): number | undefined {
  const match = /^[cl](\d+)(?:-\d+)?$/.exec(name);
  return match ? Number(match[1]) : undefined;
}
