/**
 * Full-text search over one agent's stored bodies (`npm run bench -- --only agent.search`): stores `bodies` chat
 * messages in MinIO as the activities do (each body, then its small segment; every model call seals the blocks it is
 * past), then runs `context_search` as the `runTool` activity runs it (the worker's cached store) and measures:
 * search latency p50 / p99 (targets: p99 ≤ 50 ms), the first search of a new worker (every segment read), and the
 * index's bytes against the bodies' (target ≤ 20%).
 *
 * The bodies are the fidelity corpus's recorded sessions (test/fixtures/sessions) when they are on the machine,
 * repeated to the count; otherwise synthetic sessions of the same shape, a seed each. The queries are three words of a
 * random stored body each (the words a model would search with).
 */
import { contextSearch } from '../activities/tools.ts';
import { createSearchWrites } from '../activities/search-writes.ts';
import { messageIdOf, messageKey } from '../contract/keys.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { CachedBlobStore } from '../storage/cache.ts';
import { S3BlobStore } from '../storage/s3.ts';
import type { S3Target } from '../storage/s3.ts';
import { searchPrefix } from '../storage/search-index.ts';
import { queryTerms, searchableText } from '../storage/search-rank.ts';
import { seededRandom } from './corpus.ts';
import { loadCorpus, missingSessions } from './fidelity/corpus.ts';
import { syntheticSession } from './fidelity/synthetic.ts';
import { onBenchStack } from './stack.ts';
import type { BenchStack } from './stack.ts';
import { percentile } from './stats.ts';

export interface SearchBenchOptions {
  bodies: number;
  searches: number;
}

export const SEARCH_FULL: SearchBenchOptions = { bodies: 10_000, searches: 400 };
export const SEARCH_SHORT: SearchBenchOptions = { bodies: 600, searches: 40 };

/** Bodies written at once (the bench's own pace; an agent writes a step's at once). */
const WRITES_AT_ONCE = 16;

/** The bodies: the recorded sessions when present, else synthetic ones; and which they are. */
function bodiesOf(count: number): { messages: ChatMessage[]; corpus: string } {
  const recorded = missingSessions().length === 0 ? loadCorpus() : [];
  const sessions = recorded.length > 0 ? recorded.map((s) => s.messages) : [];
  for (let seed = 1; sessions.flat().length < count && recorded.length === 0; seed++) {
    sessions.push(syntheticSession(110, seed).messages);
  }
  const pool = sessions.flat();
  return {
    messages: Array.from({ length: count }, (_, i) => pool[i % pool.length]!),
    corpus: recorded.length > 0 ? `the recorded sessions (${pool.length} messages, repeated)` : 'synthetic sessions',
  };
}

/** The search step, on `stack` (`npm run bench`'s) or on one of its own. */
export function benchSearch(
  log: (line: string) => void,
  options: SearchBenchOptions = SEARCH_FULL,
  stack?: BenchStack,
): Promise<Record<string, unknown>> {
  return onBenchStack(log, stack, ({ s3: target }) => searchOn(target, log, options));
}

async function searchOn(target: S3Target, log: (line: string) => void, options: SearchBenchOptions) {
  const s3 = new S3BlobStore(target);
  await s3.ensureBucket();
  const store = new CachedBlobStore(s3); // as the worker has it
  const writes = createSearchWrites(store);
  const agent = { agentId: 'bench-search', life: `life-${Date.now()}` };
  const { messages, corpus } = bodiesOf(options.bodies);
  let bodyBytes = 0;
  const started = performance.now();
  for (let from = 0; from < messages.length; from += WRITES_AT_ONCE) {
    const batch = messages.slice(from, from + WRITES_AT_ONCE).map((message, i) => ({
      messageId: messageIdOf(from + i + 1),
      message,
    }));
    await Promise.all(
      batch.map(async ({ messageId, message }) => {
        const body = JSON.stringify(message);
        bodyBytes += Buffer.byteLength(body);
        await store.put(messageKey(agent, messageId), body);
      }),
    );
    await writes.messages(agent, batch);
    await writes.sealBefore(agent, messageIdOf(from + batch.length + 1));
  }
  const buildSeconds = (performance.now() - started) / 1000;
  const keys = await s3.list(searchPrefix(agent), { limit: 1000 });
  let indexBytes = 0;
  for (const key of keys) indexBytes += Buffer.byteLength((await s3.get(key)) ?? '');

  const random = seededRandom(7);
  const queries = Array.from({ length: options.searches }, () => {
    const words = queryTerms(searchableText(messages[Math.floor(random() * messages.length)]!));
    const at = Math.floor(random() * Math.max(1, words.length - 3));
    return words.slice(at, at + 3).join(' ') || 'error';
  });
  const run = (on: CachedBlobStore, query: string) =>
    contextSearch.run({ query, limit: 5 }, { store: on, agentId: agent.agentId, life: agent.life });
  // A new worker: nothing cached, every segment read and parsed.
  const fresh = new CachedBlobStore(s3);
  const coldStarted = performance.now();
  await run(fresh, queries[0]!);
  const coldMs = performance.now() - coldStarted;
  const latencies: number[] = [];
  for (const query of queries) {
    const at = performance.now();
    await run(store, query);
    latencies.push(performance.now() - at);
  }
  const p50Ms = percentile(latencies, 50)!;
  const p99Ms = percentile(latencies, 99)!;
  const indexRatio = indexBytes / bodyBytes;
  log(
    `${options.bodies.toLocaleString('en-US')} bodies of ${corpus}, stored and indexed in ${buildSeconds.toFixed(0)} s`,
  );
  log(
    `context_search (the activity, warm worker): p50 ${p50Ms.toFixed(1)} ms, p99 ${p99Ms.toFixed(1)} ms over ` +
      `${latencies.length} searches (target p99 ≤ 50 ms); a new worker's first search ${coldMs.toFixed(0)} ms`,
  );
  log(
    `index: ${(indexBytes / 1024).toFixed(0)} KiB in ${keys.length} segments, ${(indexRatio * 100).toFixed(1)}% of ` +
      `the bodies' ${(bodyBytes / 1024).toFixed(0)} KiB (target ≤ 20%)`,
  );
  return {
    bodies: options.bodies,
    corpus,
    bodyBytes,
    indexBytes,
    indexRatio,
    segments: keys.length,
    searchP50Ms: p50Ms,
    searchP99Ms: p99Ms,
    firstSearchNewWorkerMs: coldMs,
    searches: latencies.length,
  };
}
