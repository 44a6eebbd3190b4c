/**
 * The scale benchmark's worker process: a team's worker as the README shows it (`runAgentWorker`, settings from the
 * environment) with one tool, `lookup`, whose result is 1–10 KB of text drawn from its arguments. With
 * SCALE_METRICS_ADDRESS (host:port) the Temporal runtime serves its Prometheus metrics there (sticky cache hits and
 * misses, workflow task schedule-to-start latency), which the driver scrapes.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { defineTool } from '../../activities/tools.ts';
import { runAgentWorker } from '../../worker/run.ts';
import { LOOKUP_TOOL } from './model.ts';
import { filler } from './workload.ts';

const metrics = process.env.SCALE_METRICS_ADDRESS;
Runtime.install({
  logger: new DefaultLogger('WARN'),
  ...(metrics ? { telemetryOptions: { metrics: { prometheus: { bindAddress: metrics } } } } : {}),
});

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

await runAgentWorker({ tools: [lookup] });
