/**
 * The search index's tiers (storage/search-tiers.ts, storage/search-index.ts): which segments a listing reads when
 * levels cover each other, which merges are due, the blocks left to seal found by a walk over the segments, a merge
 * of serialized indexes ranking as one index built from the texts, and a long life over an in-memory store whose
 * search reads a bounded number of segments and still finds what its first block held.
 */
import { describe, expect, it } from 'vitest';
import { compactionKey, messageIdOf, messageKey, summaryIdOf } from '../../contract/keys.ts';
import { searchPrefix, SearchIndex, smallSegmentKey, unsealed } from '../../storage/search-index.ts';
import { mergeSegmentData, rankAcrossSegments, readSegment, segmentOf } from '../../storage/search-rank.ts';
import type { SearchDoc } from '../../storage/search-rank.ts';
import {
  COMPACTION_BLOCK,
  liveSegments,
  mergesDue,
  parseSealed,
  SEARCH_BLOCK,
  TIER_FANOUT,
  tierKey,
} from '../../storage/search-tiers.ts';
import { memoryStore } from '../support/memory-search-store.ts';

const agent = { agentId: 'a1', life: 'life-1' };
const prefix = searchPrefix(agent);
const refs = (keys: string[]) => keys.map((key) => parseSealed(prefix, key)!);

describe('tiers of segments', () => {
  it('reads a merged segment instead of the ones it covers, and no small segment of a covered block', () => {
    const l2 = tierKey(prefix, 2, 'm', 16);
    const keys = [
      tierKey(prefix, 1, 'm', 15),
      tierKey(prefix, 1, 'm', 16), // covered by the level-2 segment (a merge whose members are not deleted yet)
      tierKey(prefix, 1, 'm', 31),
      l2,
      tierKey(prefix, 1, 'c', 0),
      smallSegmentKey(agent, messageIdOf(17 * SEARCH_BLOCK + 1)), // block 17: covered
      smallSegmentKey(agent, messageIdOf(32 * SEARCH_BLOCK + 1)), // block 32: not sealed
      smallSegmentKey(agent, 'c000003'), // compaction block 0: sealed
      smallSegmentKey(agent, 'c000065-2'), // compaction block 1, a further summary: not sealed
      smallSegmentKey(agent, 'l000065'),
    ];
    expect(liveSegments(prefix, keys).sort()).toEqual(
      [keys[0], l2, keys[4], keys[6], keys[8], keys[9]].sort() as string[],
    );
  });

  it('merges sixteen aligned segments of one level and series into one of the next, lowest first', () => {
    const sixteen = Array.from({ length: TIER_FANOUT }, (_, i) => tierKey(prefix, 1, 'm', 16 + i));
    expect(mergesDue(refs(sixteen.slice(1)))).toEqual([]);
    const [merge, ...rest] = mergesDue(refs([...sixteen, tierKey(prefix, 1, 'c', 0)]));
    expect(rest).toEqual([]);
    expect(merge!.into).toEqual({ level: 2, series: 'm', first: 16 });
    expect(merge!.members.map((r) => r.key)).toEqual(sixteen);
    const level2 = Array.from({ length: TIER_FANOUT }, (_, i) => tierKey(prefix, 2, 'm', i * 16));
    expect(mergesDue(refs(level2))[0]!.into).toEqual({ level: 3, series: 'm', first: 0 });
  });

  it('finds the blocks left to seal by walking the segments, however many blocks they cover', () => {
    const live = refs([tierKey(prefix, 3, 'm', 0), tierKey(prefix, 1, 'm', 257)]);
    expect(unsealed(live, 300, 2)).toEqual([256, 258]);
    expect(unsealed(live, 255, 2)).toEqual([]);
    expect(unsealed([], 5, 2)).toEqual([0, 1]);
  });
});

describe('a merge of segments', () => {
  it('ranks as one index built from all the texts: the same hits, in the same order, with the same scores', () => {
    const words = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'sigma'];
    const docs: SearchDoc[] = Array.from({ length: 300 }, (_, i) => {
      const id = messageIdOf(i + 1);
      const text = `${words[i % 6]} ${words[(i * 7) % 6]} line ${i} ${i % 13 === 0 ? 'ECONNREFUSED' : 'fine'}`;
      return { key: messageKey(agent, id), id, role: 'tool', seq: i + 1, kind: 'message', text };
    });
    const parts = [docs.slice(0, 17), docs.slice(17, 150), docs.slice(150)].map(segmentOf);
    const merged = readSegment(JSON.stringify(mergeSegmentData(parts)));
    const whole = readSegment(JSON.stringify(segmentOf(docs)));
    for (const query of ['ECONNREFUSED', 'alpha omega', 'line 42', 'sigma ECONNREFUSED fine']) {
      const got = rankAcrossSegments([merged], query, 20);
      const want = rankAcrossSegments([whole], query, 20);
      expect(got.map((h) => h.id)).toEqual(want.map((h) => h.id));
      got.forEach((hit, i) => expect(hit.score).toBeCloseTo(want[i]!.score, 4));
    }
    expect(merged.docs).toEqual(whole.docs);
  });

  it('refuses an index of another serialization (the parts are kept as they are)', () => {
    const part = segmentOf([]);
    expect(() =>
      mergeSegmentData([{ ...part, index: { ...(part.index as object), serializationVersion: 1 } }]),
    ).toThrow(/cannot merge a MiniSearch index of format 1/);
  });
});

describe('a long life over a store', () => {
  it('keeps what a search lists and reads bounded, merging as it goes, and still finds the first block', async () => {
    const store = memoryStore();
    const index = new SearchIndex(store);
    const total = (TIER_FANOUT + 2) * SEARCH_BLOCK;
    for (let seq = 1; seq <= total; seq++) {
      const text = seq === 7 ? 'Traceback: KeyError tenant_id' : `step ${seq} went fine`;
      const id = messageIdOf(seq);
      const message = { role: 'tool', content: text };
      await store.put(messageKey(agent, id), JSON.stringify(message));
      await index.add(agent, id, [{ key: messageKey(agent, id), id, role: 'tool', seq, kind: 'message', text }]);
      await index.sealBefore(agent, seq);
    }
    const keys = [...store.objects.keys()].filter((key) => key.startsWith(prefix)).sort();
    // One level-2 segment (blocks 0–15), block 16 sealed, block 17's messages small until a message after it is stored.
    expect(keys.filter((key) => parseSealed(prefix, key)).map((key) => key.slice(prefix.length))).toEqual([
      '1/m000016.json',
      '2/m000000.json',
    ]);
    expect(keys.filter((key) => !parseSealed(prefix, key))).toHaveLength(SEARCH_BLOCK);
    const [hit] = await new SearchIndex(store).search(agent, 'KeyError tenant_id', { limit: 1 });
    expect(hit).toMatchObject({ id: 'm000007', kind: 'message' });
  });

  it('seals the summaries and ledgers of compactions well behind the newest, a further summary with them', async () => {
    const store = memoryStore();
    const index = new SearchIndex(store);
    const compactions = 3 * COMPACTION_BLOCK;
    for (let seq = 1; seq <= compactions; seq++) {
      const ids = seq === 5 ? [summaryIdOf(seq), `${summaryIdOf(seq)}-2`] : [summaryIdOf(seq)];
      for (const [n, id] of ids.entries()) {
        const key = compactionKey(agent, seq, n === 0 ? 'summary.json' : `summary-${n + 1}.json`);
        const text = n === 1 ? 'the further summary names payments_v2' : `summary ${seq}`;
        await store.put(key, JSON.stringify({ role: 'user', content: text }));
        await index.add(agent, id, [{ key, id, role: 'user', seq, kind: 'summary', text }]);
      }
      await index.sealCompactionsBefore(agent, seq);
    }
    const sealed = [...store.objects.keys()].filter((key) => parseSealed(prefix, key));
    expect(sealed.map((key) => key.slice(prefix.length))).toEqual(['1/c000000.json']);
    expect(store.objects.has(smallSegmentKey(agent, 'c000005-2'))).toBe(false);
    expect(store.objects.has(smallSegmentKey(agent, summaryIdOf(COMPACTION_BLOCK + 1)))).toBe(true);
    const [hit] = await new SearchIndex(store).search(agent, 'payments_v2', { limit: 1 });
    expect(hit).toMatchObject({ id: 'c000005-2', kind: 'summary' });
  });
});

describe('the segments a process wrote', () => {
  it('are searched from its cache: a search right after the writes reads no segment from the store', async () => {
    const store = memoryStore();
    const index = new SearchIndex(store);
    for (let seq = 1; seq <= SEARCH_BLOCK + 40; seq++) {
      const id = messageIdOf(seq);
      const text = seq === 9 ? 'the flaky test is test_payment_retry' : `step ${seq} went fine`;
      await store.put(messageKey(agent, id), JSON.stringify({ role: 'tool', content: text }));
      await index.add(agent, id, [{ key: messageKey(agent, id), id, role: 'tool', seq, kind: 'message', text }]);
      await index.sealBefore(agent, seq);
    }
    const gets: string[] = [];
    const get = store.get.bind(store);
    store.get = (key) => (gets.push(key), get(key));
    const [hit] = await index.search(agent, 'test_payment_retry', { limit: 1 });
    expect(hit).toMatchObject({ id: 'm000009' });
    // Only the hit's body, for its snippet: every segment (the sealed block, 40 small ones) came from the cache.
    expect(gets).toEqual([messageKey(agent, 'm000009')]);
    // Another process (a new worker) reads them from the store.
    gets.length = 0;
    await new SearchIndex(store).search(agent, 'test_payment_retry', { limit: 1 });
    expect(gets.filter((key) => key.startsWith(prefix))).toHaveLength(41);
  });
});
