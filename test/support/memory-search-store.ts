/** An in-memory store with what the search index needs of one (get, put, a sorted listing, delete), for unit tests. */
import type { SearchStore } from '../../storage/search-index.ts';

export function memoryStore(): SearchStore & { objects: Map<string, string>; deletes: number; lists: number } {
  const objects = new Map<string, string>();
  return {
    objects,
    deletes: 0,
    lists: 0,
    put: (key, body) => Promise.resolve(void objects.set(key, body)),
    get: (key) => Promise.resolve(objects.get(key)),
    list(prefix, options = {}) {
      this.lists++;
      return Promise.resolve(
        [...objects.keys()]
          .filter((key) => key.startsWith(prefix) && (!options.startAfter || key > options.startAfter))
          .sort()
          .slice(0, options.limit ?? 1000),
      );
    },
    delete(key) {
      this.deletes++;
      objects.delete(key);
      return Promise.resolve();
    },
  };
}
