/**
 * The scale benchmark's worker process: a team's worker as the README shows it (`runAgentWorker`, settings from the
 * environment) with one tool, `lookup`, whose result is 1–10 KB of text drawn from its arguments. The driver sets
 * LONGRUN_METRICS_ADDRESS, so the worker serves its Prometheus metrics (docs/metrics.md) for the driver to scrape.
 */
import { appendFileSync } from 'node:fs';
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

// Where the worker's memory goes (the driver samples only its RSS): a JSON line every 15 s when the driver asks.
const memoryLog = process.env.LONGRUN_SCALE_MEMORY_LOG;
if (memoryLog) {
  setInterval(() => {
    const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
    appendFileSync(
      memoryLog,
      `${JSON.stringify({ at: Date.now(), rss, heapTotal, heapUsed, external, arrayBuffers })}\n`,
    );
  }, 15_000).unref();
}

await runAgentWorker({ tools: [lookup] });
