/**
 * A least-recently-used cache bounded by a measure of what it holds (characters, stored bytes): the worker's cache of
 * bodies (cache.ts) and the search index's cache of parsed segments (search-index.ts). A value larger than the whole
 * budget is not kept, and takes the place of nothing.
 */
export class BoundedCache<V> {
  /** By key, least recently used first (Map order is the recency order). */
  private readonly entries = new Map<string, V>();
  private used = 0;
  private readonly budget: number;
  private readonly sizeOf: (value: V) => number;

  constructor(budget: number, sizeOf: (value: V) => number) {
    this.budget = budget;
    this.sizeOf = sizeOf;
  }

  /** The value under `key`, which becomes the most recently used (undefined: not kept). */
  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  /** Keeps `value` under `key` in place of what was there; the least recently used go past the budget. */
  set(key: string, value: V): void {
    this.delete(key);
    const size = this.sizeOf(value);
    if (size > this.budget) return;
    this.entries.set(key, value);
    this.used += size;
    for (const [oldest, kept] of this.entries) {
      if (this.used <= this.budget) break;
      this.entries.delete(oldest);
      this.used -= this.sizeOf(kept);
    }
  }

  /** Forgets `key`. */
  delete(key: string): void {
    const value = this.entries.get(key);
    if (value === undefined) return;
    this.entries.delete(key);
    this.used -= this.sizeOf(value);
  }
}
