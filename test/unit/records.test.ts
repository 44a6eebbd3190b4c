import { describe, expect, it } from 'vitest';
import { messageKey } from '../../contract/keys.ts';
import { keyedRecord, recordKey, unkeyedRecord } from '../../contract/records.ts';
import { publicState } from '../../contract/state.ts';
import type { MessageRecord } from '../../contract/records.ts';
import type { WorkflowState } from '../../contract/state.ts';

/** One life of agent `trip`. */
const trip = { agentId: 'trip', life: '0194-life' };

const own: MessageRecord = {
  id: 'm000007',
  role: 'user',
  key: messageKey(trip, 'm000007'),
  chars: 5,
  tokens: 9,
  preview: 'hello',
};
const summary: MessageRecord = {
  id: 's000001',
  role: 'user',
  key: 'agents/trip/0194-life/compactions/000001/summary.json',
  chars: 300,
  tokens: 80,
  preview: 'Summary…',
  kind: 'summary',
};

describe('records as the workflow holds them', () => {
  it('leave out the message’s own key, and only that', () => {
    expect(unkeyedRecord(trip, own)).not.toHaveProperty('key');
    expect(unkeyedRecord(trip, summary)).toEqual(summary);
    // Another agent's key, or another life's of the same agent id, is not this message's own: kept as it is.
    for (const other of [
      { agentId: 'other', life: trip.life },
      { agentId: 'trip', life: 'another-life' },
      { agentId: 'trip' },
    ]) {
      const foreign = { ...own, key: messageKey(other, 'm000007') };
      expect(unkeyedRecord(trip, foreign)).toEqual(foreign);
    }
  });

  it('get their key back, so what the queries return is unchanged', () => {
    for (const record of [own, summary]) {
      expect(keyedRecord(trip, unkeyedRecord(trip, record))).toEqual(record);
      expect(recordKey(trip, unkeyedRecord(trip, record))).toBe(record.key);
    }
  });

  it('are about a third smaller for a short message', () => {
    const before = JSON.stringify(own).length;
    const after = JSON.stringify(unkeyedRecord(trip, own)).length;
    expect(after / before).toBeLessThan(0.7);
  });

  it('the public state carries every key', () => {
    const state = { ...trip, messages: [unkeyedRecord(trip, own), summary] } as WorkflowState;
    expect(publicState(state).messages).toEqual([own, summary]);
    expect(publicState(state).storagePrefix).toBe('agents/trip/0194-life/');
  });
});
