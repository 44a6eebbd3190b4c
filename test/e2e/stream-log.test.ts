/**
 * The live stream's log on the pinned MinIO (storage/stream-log.ts): the conditional put it is built on, several
 * writers at once (as parallel tool calls and a model call are, on several workers), reading from any offset, and a
 * retry that does not append an item twice.
 */
import { describe, expect, inject, it } from 'vitest';
import { S3BlobStore } from '../../storage/s3.ts';
import { CachedBlobStore } from '../../storage/cache.ts';
import { readStream, StreamLog } from '../../storage/stream-log.ts';
import type { StreamItem } from '../../contract/stream.ts';
import { SEGMENT_MAX_ITEMS } from '../../contract/stream.ts';
import { newAgentId } from '../support/harness.ts';
import { createAgentStream } from '../../activities/stream.ts';

async function all(iterable: AsyncIterable<StreamItem>): Promise<StreamItem[]> {
  const items: StreamItem[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

describe('the stream log on MinIO', () => {
  it('a conditional put (If-None-Match: *) creates a key once: the second put of it is refused', async () => {
    const store = new S3BlobStore(inject('stack').s3);
    const key = `stream-log/${newAgentId('put')}/000000000000.json`;
    expect(await store.putIfAbsent(key, 'first')).toBe(true);
    expect(await store.putIfAbsent(key, 'second')).toBe(false);
    expect(await store.get(key)).toBe('first');
  });

  it('several writers at once: every offset once, in order, nothing lost', async () => {
    const store = new S3BlobStore(inject('stack').s3);
    const agent = { agentId: newAgentId('writers'), life: 'life-1' };
    // Three writers (three workers: each its own log and its own idea of the end), twenty appends each.
    const writers = [0, 1, 2].map(() => new StreamLog(new CachedBlobStore(store)));
    await Promise.all(
      writers.map(async (log, w) => {
        for (let i = 0; i < 20; i++) {
          await log.append(agent, [
            { kind: 'text', call: `w${w}`, attempt: 1, text: `${i}a` },
            { kind: 'text', call: `w${w}`, attempt: 1, text: `${i}b` },
          ]);
        }
      }),
    );
    const items = await all(readStream(store, agent, { follow: false }));
    expect(items.map((item) => item.offset)).toEqual(Array.from({ length: 120 }, (_, i) => i));
    for (const w of [0, 1, 2]) {
      const texts = items.flatMap((item) => (item.kind === 'text' && item.call === `w${w}` ? [item.text] : []));
      expect(texts).toEqual(Array.from({ length: 20 }, (_, i) => [`${i}a`, `${i}b`]).flat());
    }
  });

  it('reads from any offset (a segment start, mid-segment, the end) with no gap and no duplicate', async () => {
    const store = new S3BlobStore(inject('stack').s3);
    const agent = { agentId: newAgentId('offsets') };
    const log = new StreamLog(store);
    // Segments of 3, 1, SEGMENT_MAX_ITEMS + 5 (cut in two), 2 items.
    for (const size of [3, 1, SEGMENT_MAX_ITEMS + 5, 2]) {
      await log.append(
        agent,
        Array.from({ length: size }, (_, i) => ({ kind: 'turn-end' as const, turn: size * 1000 + i })),
      );
    }
    const total = 3 + 1 + SEGMENT_MAX_ITEMS + 5 + 2;
    for (const from of [0, 1, 3, 4, 100, SEGMENT_MAX_ITEMS + 4, SEGMENT_MAX_ITEMS + 5, total - 1, total]) {
      const items = await all(readStream(store, agent, { from, follow: false }));
      expect(items.map((item) => item.offset)).toEqual(Array.from({ length: total - from }, (_, i) => from + i));
    }
  });

  it('an append with `once` skips the items whose ids are already in the log (a retried activity)', async () => {
    const store = new S3BlobStore(inject('stack').s3);
    const agent = { agentId: newAgentId('once'), life: 'l' };
    await new StreamLog(store).append(agent, [{ kind: 'turn-end', turn: 1, id: 'turn-1-end' }]);
    // A retry on another worker: its own log, the same items.
    await new StreamLog(store).append(
      agent,
      [
        { kind: 'turn-end', turn: 1, id: 'turn-1-end' },
        { kind: 'turn-end', turn: 2, id: 'turn-2-end' },
      ],
      { once: true },
    );
    const items = await all(readStream(store, agent, { follow: false }));
    expect(items.map((item) => [item.offset, item.id])).toEqual([
      [0, 'turn-1-end'],
      [1, 'turn-2-end'],
    ]);
  });

  it('runTool’s helpers: a tool call and its result (a preview), once though a retry publishes them again', async () => {
    const store = new S3BlobStore(inject('stack').s3);
    const agent = { agentId: newAgentId('tools'), life: 'l' };
    const call = {
      id: 'call-1',
      type: 'function' as const,
      function: { name: 'forecast', arguments: '{"city":"Oslo"}' },
    };
    const result = `Oslo ${'rain '.repeat(200)}`;
    for (const worker of [createAgentStream(store), createAgentStream(store)]) {
      await worker.toolCall(agent, call);
      await worker.toolResult(agent, call, result);
    }
    const items = await all(readStream(store, agent, { follow: false }));
    expect(items).toMatchObject([
      { offset: 0, kind: 'tool-call', callId: 'call-1', name: 'forecast', arguments: '{"city":"Oslo"}' },
      { offset: 1, kind: 'tool-result', callId: 'call-1', name: 'forecast', chars: result.length },
    ]);
    expect(items).toHaveLength(2);
    expect((items[1] as { preview: string }).preview).toBe(result.slice(0, 500));
  });

  it('a reader following the log gets items appended after it began, and stops when aborted', async () => {
    const store = new S3BlobStore(inject('stack').s3);
    const agent = { agentId: newAgentId('follow') };
    const log = new StreamLog(store);
    const controller = new AbortController();
    const got: number[] = [];
    const reading = (async () => {
      for await (const item of readStream(store, agent, { from: 0, signal: controller.signal, pollMs: 20 })) {
        got.push(item.offset);
        if (got.length === 5) controller.abort();
      }
    })();
    for (let i = 0; i < 5; i++) {
      await log.append(agent, [{ kind: 'turn-end', turn: i }]);
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    await reading;
    expect(got).toEqual([0, 1, 2, 3, 4]);
  });
});
