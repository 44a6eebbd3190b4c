/**
 * The scale benchmark's worker process: a team's worker as the README shows it (`runAgentWorker`, settings from the
 * environment) with one tool, `lookup`, whose result is 1–10 KB of text drawn from its arguments. The driver sets
 * LONGRUN_METRICS_ADDRESS, so the worker serves its Prometheus metrics (docs/metrics.md) for the driver to scrape.
 */
import { appendFileSync, createWriteStream } from 'node:fs';
import { createRequire } from 'node:module';
import { pipeline } from 'node:stream/promises';
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { defineTool } from '../../activities/tools.ts';
import { runAgentWorker } from '../../worker/run.ts';
import { LOOKUP_TOOL } from './model.ts';
import { filler } from './workload.ts';

const lookup = defineTool({
  name: LOOKUP_TOOL,
  description: 'Looks a subject up',
  parameters: {
    type: 'object',
    properties: { agent: { type: 'string' }, n: { type: 'number' }, bytes: { type: 'number' } },
    required: ['agent', 'n', 'bytes'],
  },
  run: (args) => Promise.resolve(filler(`lookup/${String(args.agent)}/${Number(args.n)}`, Number(args.bytes))),
});

// LONGRUN_SCALE_V8_FLAGS="--heap-growing-percent=20": V8 flags for the worker's isolates (set before the SDK makes its
// workflow threads, so they have them too), to try what trades the worker's CPU for memory.
if (process.env.LONGRUN_SCALE_V8_FLAGS) setFlagsFromString(process.env.LONGRUN_SCALE_V8_FLAGS);

// Where the worker's memory goes (the driver samples only its RSS): a JSON line every 15 s when the driver asks, with
// the main thread's figures and the V8 heap of each workflow thread (where the cached workflows live). The SDK makes
// its workflow threads with `new worker_threads.Worker`, read at call time, so a subclass put there first sees them.
const memoryLog = process.env.LONGRUN_SCALE_MEMORY_LOG;
if (memoryLog) {
  const threads = watchWorkflowThreads();
  setInterval(() => {
    void (async () => {
      const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
      const workflowThreads = await Promise.all(
        threads.map(async (thread) => {
          const heap = await thread.getHeapStatistics().catch(() => undefined);
          return heap
            ? {
                heapTotal: heap.total_heap_size,
                heapUsed: heap.used_heap_size,
                external: heap.external_memory,
                malloced: heap.malloced_memory,
                contexts: heap.number_of_native_contexts,
                detachedContexts: heap.number_of_detached_contexts,
              }
            : undefined;
        }),
      );
      appendFileSync(
        memoryLog,
        `${JSON.stringify({ at: Date.now(), rss, heapTotal, heapUsed, external, arrayBuffers, workflowThreads })}\n`,
      );
    })();
  }, 15_000).unref();
  // LONGRUN_SCALE_HEAP_SNAPSHOTS=120,480: a V8 heap snapshot of the main thread and of each workflow thread at those
  // seconds after the start, beside the log, for Chrome DevTools' Memory tab (the thread stops while it writes; a
  // signal would not do: the SDK shuts the worker down on SIGUSR2).
  const snapshotBase = memoryLog.replace(/\.jsonl$/, '');
  for (const seconds of (process.env.LONGRUN_SCALE_HEAP_SNAPSHOTS ?? '').split(',').filter(Boolean).map(Number)) {
    setTimeout(() => {
      const main = `${snapshotBase}-main-${seconds}s.heapsnapshot`;
      console.error(`[scale worker] heap snapshot of the main thread: ${writeHeapSnapshot(main)}`);
      for (const [i, thread] of threads.entries()) {
        const file = `${snapshotBase}-thread${i}-${seconds}s.heapsnapshot`;
        void thread
          .getHeapSnapshot()
          .then((snapshot) => pipeline(snapshot, createWriteStream(file)))
          .then(() => console.error(`[scale worker] heap snapshot of workflow thread ${i}: ${file}`));
      }
    }, seconds * 1_000).unref();
  }
}

function watchWorkflowThreads(): Worker[] {
  const threads: Worker[] = [];
  const module = createRequire(import.meta.url)('node:worker_threads') as { Worker: typeof Worker };
  module.Worker = class extends Worker {
    constructor(...args: ConstructorParameters<typeof Worker>) {
      super(...args);
      threads.push(this);
    }
  };
  return threads;
}

await runAgentWorker({ tools: [lookup] });
