/**
 * A worker-side cache of stored bodies in front of a {@link BlobStore}. Objects are written once under idempotent
 * keys (a retry writes the same bytes), so a cached body never goes stale. Least recently used entries are evicted
 * once the cached text passes `maxChars`.
 */
import { BoundedCache } from './bounded-cache.ts';
import type { BlobStore } from './s3.ts';
import { isStreamStore } from './stream-log.ts';
import type { StreamStore } from './stream-log.ts';

/** Default budget: 32 M characters (about 64 MB of JS strings). */
export const DEFAULT_CACHE_CHARS = 32 * 1024 * 1024;

export class CachedBlobStore implements BlobStore {
  readonly bucket: string;
  private readonly inner: BlobStore;
  private readonly entries: BoundedCache<string>;
  hits = 0;
  misses = 0;

  constructor(inner: BlobStore, maxChars = DEFAULT_CACHE_CHARS) {
    this.inner = inner;
    this.bucket = inner.bucket;
    this.entries = new BoundedCache(maxChars, (body) => body.length);
  }

  async put(key: string, body: string, contentType?: string): Promise<void> {
    await this.inner.put(key, body, contentType);
    this.entries.set(key, body);
  }

  async get(key: string): Promise<string | undefined> {
    const cached = this.entries.get(key);
    if (cached !== undefined) {
      this.hits++;
      return cached;
    }
    this.misses++;
    const body = await this.inner.get(key);
    if (body !== undefined) this.entries.set(key, body);
    return body;
  }

  /** The inner store's conditional put (the live stream's segments), not cached: a reader polls them fresh. */
  putIfAbsent(key: string, body: string, contentType?: string): Promise<boolean> {
    const inner = this.inner as Partial<StreamStore>;
    if (!inner.putIfAbsent) return Promise.reject(new Error('the store has no conditional put (putIfAbsent)'));
    return inner.putIfAbsent.call(this.inner, key, body, contentType);
  }

  /** The inner store's listing. */
  list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<string[]> {
    const inner = this.inner as Partial<StreamStore>;
    if (!inner.list) return Promise.reject(new Error('the store cannot list keys'));
    return inner.list.call(this.inner, prefix, options);
  }

  /** The inner store's delete (the search index's merged segments), forgotten here too. */
  delete(key: string): Promise<void> {
    const inner = this.inner as { delete?: (key: string) => Promise<void> };
    this.entries.delete(key);
    if (!inner.delete) return Promise.reject(new Error('the store cannot delete keys'));
    return inner.delete.call(this.inner, key);
  }

  /** Whether the inner store can hold a live stream (a conditional put and a listing). */
  get streams(): boolean {
    return isStreamStore(this.inner);
  }

  ensureBucket(): Promise<void> {
    return this.inner.ensureBucket();
  }
}
