/**
 * Searching what an agent stored (the `context_search` tool's search, from the client): ranked full-text matches
 * among everything its life stored (messages, tool results and their whole originals, summaries and task ledgers),
 * each with its id, role, turn and step when known, a snippet and the key `reload` / `context_reload` reads. It reads
 * the agent's search index in S3 directly, so it works on a closed agent too; it never reads outside the agent's
 * own prefix.
 *
 * @example
 *   const store = new S3BlobStore(s3TargetFromEnv(loadSettings()));
 *   for (const match of await searchAgent(client, 'trip', 'ECONNREFUSED', { store, limit: 3 })) {
 *     console.log(match.id, match.role, match.snippet, match.key);
 *   }
 */
import type { Client } from '@temporalio/client';
import { agentLife } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import { InvalidInputError } from '../contract/inputs.ts';
import { SearchIndex, SearchInputError, SEARCH_LIMITS, validateSearch } from '../storage/search-index.ts';
import type { SearchMatch, SearchStore } from '../storage/search-index.ts';
import { agentState } from './agents.ts';

export { SEARCH_LIMITS };
export type { SearchMatch, SearchStore };

export interface SearchAgentOptions {
  /** Where the agent's bodies are stored (an S3BlobStore: it lists keys). */
  store: SearchStore;
  /** How many matches, best first (default 5, at most 50). */
  limit?: number;
  /** The agent's life to search (default: the life the agent is in, from its state). */
  life?: AgentLife;
}

/**
 * The best matches of `query` among what agent `agentId` stored. An empty query or a limit out of range is an
 * InvalidInputError naming the field and the limit, before anything is read.
 */
export async function searchAgent(
  client: Client,
  agentId: string,
  query: string,
  options: SearchAgentOptions,
): Promise<SearchMatch[]> {
  let limit: number;
  try {
    limit = validateSearch(query, options.limit);
  } catch (error) {
    if (error instanceof SearchInputError) throw new InvalidInputError(error.message);
    throw error;
  }
  const life = options.life ?? agentLife(await agentState(client, agentId));
  return new SearchIndex(options.store).search(life, query, { limit });
}
