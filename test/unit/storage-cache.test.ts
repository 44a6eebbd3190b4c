import { describe, expect, it } from 'vitest';
import { CachedBlobStore } from '../../storage/cache.ts';
import type { BlobStore } from '../../storage/s3.ts';

/** An in-memory store that counts reads (the cache is pure logic over the BlobStore interface). */
function memoryStore(): BlobStore & { reads: number } {
  const objects = new Map<string, string>();
  return {
    bucket: 'b',
    reads: 0,
    put(key, body) {
      objects.set(key, body);
      return Promise.resolve();
    },
    get(key) {
      this.reads++;
      return Promise.resolve(objects.get(key));
    },
    ensureBucket: () => Promise.resolve(),
  };
}

describe('CachedBlobStore', () => {
  it('serves repeated reads from memory and writes through', async () => {
    const inner = memoryStore();
    const cache = new CachedBlobStore(inner, 100);
    await cache.put('a', 'alpha');
    expect(await cache.get('a')).toBe('alpha');
    expect(await cache.get('a')).toBe('alpha');
    expect(inner.reads).toBe(0);
    expect(await inner.get('a')).toBe('alpha');
  });

  it('evicts the least recently used bodies past its budget', async () => {
    const inner = memoryStore();
    const cache = new CachedBlobStore(inner, 10);
    await cache.put('a', 'aaaa');
    await cache.put('b', 'bbbb');
    await cache.get('a'); // a is now the most recent
    await cache.put('c', 'cccc'); // 12 chars > 10: evicts b
    inner.reads = 0;
    await cache.get('a');
    await cache.get('c');
    expect(inner.reads).toBe(0);
    expect(await cache.get('b')).toBe('bbbb');
    expect(inner.reads).toBe(1);
  });

  it('does not cache a missing key or a body larger than the budget', async () => {
    const inner = memoryStore();
    const cache = new CachedBlobStore(inner, 3);
    expect(await cache.get('nope')).toBeUndefined();
    await cache.put('big', 'xxxxxx');
    inner.reads = 0;
    expect(await cache.get('big')).toBe('xxxxxx');
    expect(inner.reads).toBe(1);
  });
});
