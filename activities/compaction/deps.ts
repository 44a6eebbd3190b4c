/**
 * What every compaction role's factory takes: the dependencies the worker wires (the store, the summary model, the
 * search index, the tools) and the stored-object helpers over their store (stored-objects.ts), made once.
 */
import type OpenAI from 'openai';
import type { BlobStore } from '../../storage/s3.ts';
import { lifeOfKey } from '../../contract/keys.ts';
import type { SearchWrites } from '../search-writes.ts';
import type { ToolRegistry } from '../tools.ts';
import { compactionObjects } from './stored-objects.ts';
import type { CompactionObjects } from './stored-objects.ts';

export interface CompactionDeps {
  store: BlobStore;
  openai: OpenAI;
  /** The model that writes summaries; without one, the extractive summarizer quotes the span instead. */
  summaryModel?: string;
  /** The summary model's window (default: the registry's, or 128,000 for a model it does not know). */
  summaryWindow?: number;
  /** A break of the coverage invariant fails the compaction for good (tests) instead of being recorded. */
  strictInvariants?: boolean;
  /** The search index: a stored summary or task ledger is added to it (activities/search-writes.ts). */
  search?: SearchWrites;
  /** The worker's tools: a summary in conversation mode sends the schemas the agent's model sees. Absent: none. */
  tools?: ToolRegistry;
}

/** What each role's factory takes: the dependencies and the stored-object helpers over their store. */
export type CompactionShared = CompactionDeps & CompactionObjects;

/** The dependencies with the stored-object helpers over their store, made once for every role. */
export function sharedOf(deps: CompactionDeps): CompactionShared {
  const objects = compactionObjects(deps.store);
  const { search } = deps;
  if (!search) return { ...deps, ...objects };
  return {
    ...deps,
    ...objects,
    // A summary or task ledger, once stored, is added to the agent's search index.
    save: async (key, message, counting, stored) => {
      const record = await objects.save(key, message, counting, stored);
      const agent = lifeOfKey(key);
      if (agent && stored.kind) await search.compactionBody(agent, stored.id, stored.kind, key, message);
      return record;
    },
  };
}
