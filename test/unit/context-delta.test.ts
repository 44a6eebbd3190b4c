/**
 * What a compaction changed, as its apply step returns it since `compaction-refs` (contract/context-delta.ts): the
 * old context and the delta give the new context, record for record; and the digest the workflow checks the plan's
 * derived records with.
 */
import { describe, expect, it } from 'vitest';
import { applyDelta, deltaOf, DeltaMismatchError, recordsDigest } from '../../contract/context-delta.ts';
import type { ContextRecord } from '../../contract/records.ts';
import { messageIdOf } from '../../contract/keys.ts';

const record = (seq: number, extra: Partial<ContextRecord> = {}): ContextRecord => ({
  id: messageIdOf(seq),
  role: seq % 2 ? 'user' : 'assistant',
  tokens: 10 + seq,
  chars: 40,
  preview: `message ${seq}`,
  ...extra,
});
const context = (n: number) => Array.from({ length: n }, (_, i) => record(i + 1));
const summary = (seq: number): ContextRecord => ({
  id: `s${seq}`,
  role: 'user',
  tokens: 300,
  chars: 1200,
  preview: 'summary',
  kind: 'summary',
  key: `compactions/${seq}/summary.json`,
});

describe('a context delta', () => {
  it('gives the new context of a summary: the summary and ledger, then the kept tail as one range', () => {
    const old = context(2_000);
    const ledger = { ...summary(1), id: 'l1', kind: 'ledger' as const, key: 'compactions/1/ledger.json' };
    const next = [old[0]!, summary(1), ledger, ...old.slice(1_990)];
    const delta = deltaOf(old, next);
    expect(delta).toEqual({
      from: 2_000,
      pieces: [{ keep: [0, 1] }, { record: summary(1) }, { record: ledger }, { keep: [1_990, 2_000] }],
    });
    expect(applyDelta(old, delta)).toEqual(next);
    // Its size does not grow with the context: four pieces for 2,000 records as for 20.
    const small = context(20);
    const smallDelta = deltaOf(small, [small[0]!, summary(1), ledger, ...small.slice(10)]);
    expect(JSON.stringify(delta).length).toBeLessThan(JSON.stringify(smallDelta).length + 16);
  });

  it('gives the new context of a masking pass: replacements where they were, the rest kept in ranges', () => {
    const old = context(12);
    const masked = (i: number) => ({ ...old[i]!, kind: 'masked' as const, key: `replaced/${old[i]!.id}`, tokens: 5 });
    const next = old.map((r, i) => (i === 3 || i === 7 ? masked(i) : r));
    const delta = deltaOf(old, next);
    expect(delta.pieces).toEqual([
      { keep: [0, 3] },
      { record: masked(3) },
      { keep: [4, 7] },
      { record: masked(7) },
      { keep: [8, 12] },
    ]);
    expect(applyDelta(old, delta)).toEqual(next);
  });

  it('keeps every user message of a chat as one piece: its size does not grow with how many stay', () => {
    const old = context(2_000);
    const next = [summary(1), ...old.filter((r, i) => i >= 1_600 && (r.role === 'user' || i >= 1_990))];
    const delta = deltaOf(old, next);
    expect(delta.pieces).toEqual([
      { record: summary(1) },
      { keep: [1_600, 1_989], every: 2 },
      { keep: [1_990, 2_000] },
    ]);
    expect(applyDelta(old, delta)).toEqual(next);
  });

  it('keeps the very records the workflow holds, and records made new by `toRecord`', () => {
    const old = context(3);
    const next = [old[0]!, { ...old[1]!, key: 'k' }, old[2]!];
    const delta = deltaOf(old, next, ({ key: _, ...rest }) => rest);
    const applied = applyDelta(old, delta);
    expect(applied[0]).toBe(old[0]);
    expect(applied[1]).toEqual(old[1]); // made new, its key left out by toRecord
    expect(applied[2]).toBe(old[2]);
  });

  it('matches the old context + delta to the new context for any kept subsequence and any new records', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let trial = 0; trial < 200; trial++) {
      const old = context(1 + Math.floor(random() * 60));
      const next: ContextRecord[] = [];
      for (const r of old) {
        if (random() < 0.2) next.push(summary(next.length + 1000 * trial));
        if (random() < 0.7) next.push(r);
      }
      expect(applyDelta(old, deltaOf(old, next))).toEqual(next);
    }
  });

  it('refuses a delta made for another context, naming both lengths', () => {
    const delta = deltaOf(context(5), context(3));
    expect(() => applyDelta(context(4), delta)).toThrow(
      new DeltaMismatchError('the delta is for a context of 5 records, not 4'),
    );
    expect(() => applyDelta(context(5), { from: 5, pieces: [{ keep: [2, 9] }] })).toThrow(
      new DeltaMismatchError('the delta keeps [2, 9) of a context of 5 records'),
    );
    expect(() => applyDelta(context(5), { from: 5, pieces: [{ keep: [0, 5], every: 0 }] })).toThrow(
      new DeltaMismatchError('the delta keeps [0, 5) every 0 of a context of 5 records'),
    );
  });
});

describe('the digest of records', () => {
  it('is the same whatever order the fields were set in, and differs with any field', () => {
    const a = record(1, { steer: true });
    const reordered = Object.fromEntries(Object.entries(a).reverse()) as unknown as ContextRecord;
    expect(recordsDigest([a, record(2)])).toBe(recordsDigest([reordered, record(2)]));
    expect(recordsDigest([a])).not.toBe(recordsDigest([{ ...a, tokens: a.tokens + 1 }]));
    expect(recordsDigest([a])).not.toBe(recordsDigest([record(1)])); // the steer flag counts
    expect(recordsDigest([record(1), record(2)])).not.toBe(recordsDigest([record(2), record(1)]));
    expect(recordsDigest([])).toBe('0:811c9dc5');
  });
});
