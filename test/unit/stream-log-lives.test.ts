/**
 * A stream log process's memory of the logs it appends to (storage/stream-log.ts): bounded however many agent lives
 * it wrote to, and a log it no longer keeps in mind goes on at its end (found again from the hint), nothing skipped.
 */
import { describe, expect, it } from 'vitest';
import { StreamLog } from '../../storage/stream-log.ts';
import type { StreamStore } from '../../storage/stream-log.ts';

function memoryStreamStore(): StreamStore {
  const objects = new Map<string, string>();
  return {
    put: (key, body) => Promise.resolve(void objects.set(key, body)),
    get: (key) => Promise.resolve(objects.get(key)),
    putIfAbsent(key, body) {
      if (objects.has(key)) return Promise.resolve(false);
      objects.set(key, body);
      return Promise.resolve(true);
    },
    list: (prefix, options = {}) =>
      Promise.resolve(
        [...objects.keys()]
          .filter((key) => key.startsWith(prefix) && (!options.startAfter || key > options.startAfter))
          .sort()
          .slice(0, options.limit ?? 1000),
      ),
  };
}

describe('a stream log over many lives', () => {
  it('keeps at most a thousand idle logs in mind, and a dropped one goes on at its end', async () => {
    const log = new StreamLog(memoryStreamStore());
    const first = { agentId: 'a0', life: 'life' };
    await log.append(first, [{ kind: 'turn-end', turn: 1 }]);
    for (let i = 1; i <= 1_200; i++)
      await log.append({ agentId: `a${i}`, life: 'life' }, [{ kind: 'turn-end', turn: 1 }]);
    expect((log as unknown as { logs: Map<string, unknown> }).logs.size).toBeLessThanOrEqual(1_000);
    const [again] = await log.append(first, [{ kind: 'turn-end', turn: 2 }]);
    expect(again!.offset).toBe(1);
  });
});
