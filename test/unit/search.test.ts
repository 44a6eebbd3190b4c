/**
 * The pure parts of full-text search (storage/search-rank.ts, storage/search-index.ts): ranking across segments
 * (global document frequencies), a body once across segments, snippets, which segments a listing reads, the input's
 * limits, and the index over an in-memory store: small segments, sealed blocks that replace them, a block sealed
 * from bodies whose small segments are missing, and the bound of the segment cache.
 */
import { describe, expect, it } from 'vitest';
import { messageIdOf, messageKey } from '../../contract/keys.ts';
import {
  blockOf,
  decodeSegment,
  liveSegments,
  SEARCH_BLOCK,
  SearchIndex,
  SearchInputError,
  searchPrefix,
  sealedSegmentKey,
  smallSegmentKey,
  validateSearch,
} from '../../storage/search-index.ts';
import type { SearchStore } from '../../storage/search-index.ts';
import { memoryStore } from '../support/memory-search-store.ts';
import {
  COMMON_WORD_SHARE,
  documentFrequency,
  queryTerms,
  rankAcrossSegments,
  readSegment,
  segmentOf,
  snippetOf,
} from '../../storage/search-rank.ts';
import type { SearchDoc } from '../../storage/search-rank.ts';

const agent = { agentId: 'a1', life: 'life-1' };

function doc(seq: number, text: string, role = 'tool'): SearchDoc {
  const id = messageIdOf(seq);
  return { key: messageKey(agent, id), id, role, seq, kind: 'message', text };
}

const loaded = (docs: SearchDoc[]) => readSegment(JSON.stringify(segmentOf(docs)));

/** A corpus where words have very different rarities, every body as long as the others (the same length norm). */
function corpus(): SearchDoc[] {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'theta', 'kappa'];
  const more = ['red', 'green', 'blue'];
  return Array.from({ length: 120 }, (_, i) =>
    doc(
      i + 1,
      `${words[i % 8]} ${more[i % 3]} report ${i % 5 === 0 ? 'ECONNREFUSED' : 'ok'} ${i % 17 === 0 ? 'pagination' : 'plain'} line ${i}`,
    ),
  );
}

describe('ranking across segments', () => {
  it('ranks the same bodies split into segments of any sizes as one index of them all', () => {
    const docs = corpus();
    const whole = rankAcrossSegments([loaded(docs)], 'ECONNREFUSED pagination gamma', 20);
    // A big old segment, middling ones and a tiny newest one.
    const split = rankAcrossSegments(
      [loaded(docs.slice(0, 80)), loaded(docs.slice(80, 110)), loaded(docs.slice(110, 118)), loaded(docs.slice(118))],
      'ECONNREFUSED pagination gamma',
      20,
    );
    expect(split.map((hit) => hit.id)).toEqual(whole.map((hit) => hit.id));
    for (const [i, hit] of split.entries()) expect(hit.score).toBeCloseTo(whole[i]!.score, 6);
  });

  it('without the correction a tiny segment would rank its match far lower: with it, the same body scores alike', () => {
    const docs = corpus();
    const lonely = doc(500, 'ECONNREFUSED from the database at 10.0.0.7');
    const old = doc(400, 'ECONNREFUSED from the database at 10.0.0.7');
    const [first, second] = rankAcrossSegments([loaded([...docs, old]), loaded([lonely])], 'ECONNREFUSED database', 2);
    expect([first!.id, second!.id].sort()).toEqual([old.id, lonely.id]);
    expect(first!.score / second!.score).toBeLessThan(1.2);
    expect(first!.id).toBe(lonely.id); // a tie by text: the newest first
  });

  it('gives each body once, with its best score, when two segments hold it (a retried write)', () => {
    const one = doc(7, 'Error: ECONNREFUSED 10.0.0.7:5432');
    const hits = rankAcrossSegments([loaded([one, doc(8, 'fine')]), loaded([one])], 'ECONNREFUSED', 5);
    expect(hits.map((hit) => hit.key)).toEqual([one.key]);
    expect(hits[0]).toMatchObject({ id: 'm000007', role: 'tool', seq: 7, terms: ['econnrefused'] });
  });

  it('reads each word’s document frequency from the index as a search of the word counts it', () => {
    const segment = loaded(corpus());
    for (const term of queryTerms(
      corpus()
        .map((d) => d.text)
        .join(' '),
    ).concat(['absent'])) {
      expect(documentFrequency(segment, term), term).toBe(segment.index.search(term, { prefix: false }).length);
    }
  });

  it('leaves words in more than a fifth of the bodies out of a query that has a rarer one', () => {
    const docs = corpus(); // "report" is in every body, "pagination" in 8 of 120
    expect(COMMON_WORD_SHARE).toBe(0.2);
    const segments = [loaded(docs.slice(0, 60)), loaded(docs.slice(60))];
    const rare = rankAcrossSegments(segments, 'pagination', 50);
    const mixed = rankAcrossSegments(segments, 'report pagination', 50);
    expect(mixed).toEqual(rare);
    expect(mixed).toHaveLength(8);
    // Common words alone are searched: every body matches.
    expect(rankAcrossSegments(segments, 'report line', 200)).toHaveLength(120);
  });

  it('searches the words as the index holds them: lowercased, stop words and overlong words dropped', () => {
    expect(queryTerms(`The Connection WAS refused ${'x'.repeat(60)} refused`)).toEqual(['connection', 'refused']);
    expect(rankAcrossSegments([loaded(corpus())], 'the of and', 5)).toEqual([]);
  });
});

describe('snippets', () => {
  it('shows the text around the first match, whitespace folded, cut with ellipses', () => {
    const text = `${'lorem ipsum '.repeat(40)}\n\n  Error:   ECONNREFUSED 10.0.0.7:5432 ${'dolor sit '.repeat(40)}`;
    const snippet = snippetOf(text, ['econnrefused'], 80);
    expect(snippet.startsWith('…')).toBe(true);
    expect(snippet.endsWith('…')).toBe(true);
    expect(snippet).toContain('Error: ECONNREFUSED 10.0.0.7:5432');
    expect(snippet.length).toBeLessThanOrEqual(82);
  });

  it('shows the place that holds the most of the words, not merely the first of them', () => {
    const text = `const value7 = compute(7); ${'filler '.repeat(30)}ERROR src/module_7.ts:17: TypeError: value7 is undefined`;
    expect(snippetOf(text, ['value7', 'undefined'], 60)).toContain('TypeError: value7 is undefined');
  });

  it('matches words, not parts of words, and shows the beginning when no word matches', () => {
    expect(snippetOf(`${'cartography '.repeat(20)}cart end`, ['cart'], 30)).toMatch(/ cart end$/);
    expect(snippetOf('short text', ['absent'])).toBe('short text');
  });
});

describe('segments and limits', () => {
  it('reads the sealed blocks and the small segments no sealed block covers, and the summaries and ledgers no sealed block of compactions covers', () => {
    const prefix = searchPrefix(agent);
    const keys = [
      sealedSegmentKey(agent, 0),
      smallSegmentKey(agent, messageIdOf(3)), // in block 0: sealed
      smallSegmentKey(agent, messageIdOf(SEARCH_BLOCK + 1)),
      smallSegmentKey(agent, 'c000002'),
      smallSegmentKey(agent, 'l000002'),
      `${prefix}0/other.json`,
    ];
    expect(liveSegments(prefix, keys)).toEqual([keys[0], keys[2], keys[3], keys[4]]);
    expect([blockOf(1), blockOf(SEARCH_BLOCK), blockOf(SEARCH_BLOCK + 1)]).toEqual([0, 0, 1]);
  });

  it('refuses an empty query and a limit out of range, naming the field and the limit', () => {
    expect(() => validateSearch('  ', undefined)).toThrow(new SearchInputError('query', 'must be a non-empty string'));
    expect(() => validateSearch('x'.repeat(1001), 5)).toThrow(/^query must be at most 1000 characters \(got 1001\)$/);
    expect(() => validateSearch('x', 0)).toThrow(/^limit must be an integer from 1 to 50 \(got 0\)$/);
    expect(() => validateSearch('x', 51)).toThrow(/^limit must be an integer from 1 to 50 \(got 51\)$/);
    expect(() => validateSearch('x', 2.5)).toThrow(/^limit must be an integer from 1 to 50 \(got 2.5\)$/);
    expect(validateSearch('x', undefined)).toBe(5);
  });
});

describe('the index over a store', () => {
  async function storeMessages(store: ReturnType<typeof memoryStore>, index: SearchIndex, count: number) {
    for (let seq = 1; seq <= count; seq++) {
      const text = seq === 42 ? 'Traceback: KeyError: tenant_id in billing.py line 88' : `step ${seq} went fine`;
      const message = { role: seq % 2 ? 'assistant' : 'tool', content: text };
      const id = messageIdOf(seq);
      await store.put(messageKey(agent, id), JSON.stringify(message));
      await index.add(agent, id, [{ ...doc(seq, text, message.role), turn: 1, step: seq }]);
    }
  }

  it('seals a block once every message of it is stored, drops its small segments, and still finds what it held', async () => {
    const store = memoryStore();
    const index = new SearchIndex(store);
    await storeMessages(store, index, SEARCH_BLOCK + 3);
    expect(await index.sealBefore(agent, SEARCH_BLOCK)).toEqual([]); // the block's last message: not past it yet
    expect(await index.sealBefore(agent, SEARCH_BLOCK + 3)).toEqual([0]);
    expect(await index.sealBefore(agent, SEARCH_BLOCK + 3)).toEqual([]);
    const keys = [...store.objects.keys()].filter((key) => key.startsWith(searchPrefix(agent))).sort();
    expect(keys).toEqual([
      smallSegmentKey(agent, messageIdOf(SEARCH_BLOCK + 1)),
      smallSegmentKey(agent, messageIdOf(SEARCH_BLOCK + 2)),
      smallSegmentKey(agent, messageIdOf(SEARCH_BLOCK + 3)),
      sealedSegmentKey(agent, 0),
    ]);
    const sealed = JSON.parse(decodeSegment(store.objects.get(sealedSegmentKey(agent, 0))!)) as { docs: unknown[] };
    expect(sealed.docs).toHaveLength(SEARCH_BLOCK);
    const [hit] = await index.search(agent, 'KeyError tenant_id', { limit: 1 });
    expect(hit).toMatchObject({ id: 'm000042', role: 'tool', turn: 1, step: 42, key: messageKey(agent, 'm000042') });
    expect(hit!.snippet).toContain('KeyError: tenant_id in billing.py');
  });

  it('seals a message whose small segment was never written from its stored body', async () => {
    const store = memoryStore();
    const index = new SearchIndex(store);
    await storeMessages(store, index, SEARCH_BLOCK + 1);
    store.objects.delete(smallSegmentKey(agent, 'm000042'));
    expect(await index.search(agent, 'tenant_id')).toEqual([]);
    await index.sealBefore(agent, SEARCH_BLOCK + 1);
    const [hit] = await new SearchIndex(store).search(agent, 'tenant_id');
    expect(hit).toMatchObject({ id: 'm000042', role: 'tool', kind: 'message' });
    expect(hit!.step).toBeUndefined(); // what only the small segment knew
  });

  it('keeps at most its byte budget of parsed segments in memory, and reads the rest again', async () => {
    const store = memoryStore();
    const writer = new SearchIndex(store);
    await storeMessages(store, writer, 20);
    let reads = 0;
    const counting: SearchStore = { ...store, get: (key) => (reads++, store.get(key)) };
    const index = new SearchIndex(counting, { cacheBytes: 1 });
    await index.search(agent, 'fine');
    const first = reads;
    await index.search(agent, 'fine');
    expect(reads - first).toBeGreaterThanOrEqual(20); // nothing kept: every segment read again
    const roomy = new SearchIndex(counting);
    await roomy.search(agent, 'fine');
    const before = reads;
    await roomy.search(agent, 'fine');
    expect(reads - before).toBe(5); // only the five matches' bodies, for their snippets
  });

  it('reads only keys under the agent life’s prefix', async () => {
    const store = memoryStore();
    const index = new SearchIndex(store);
    await storeMessages(store, index, 3);
    const other = { agentId: 'a1', life: 'life-2' };
    await index.add(other, 'm000001', [{ ...doc(1, 'secret of another life'), key: messageKey(other, 'm000001') }]);
    expect(await index.search(agent, 'secret')).toEqual([]);
    expect((await index.search(other, 'secret')).map((hit) => hit.key)).toEqual([messageKey(other, 'm000001')]);
  });
});
