/**
 * Turning traces on (OTEL_EXPORTER_OTLP_ENDPOINT) puts the OpenTelemetry workflow interceptors into the workflow
 * bundle of a fleet whose agents already run: every history a release recorded (without them) must replay with
 * them in, or a worker restarted with traces on would fail the running agents' workflow tasks. The turn-timing
 * interceptor (workflows/turn-timing.ts) is in every bundle, so history-replay.test.ts covers it alone.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleWorkflows } from '../../worker/worker.ts';
import { listHistoryFixtures, replayHistoryFixtures } from '../support/history-fixtures.ts';

/** Bundling the workflows and replaying every history: well over the unit tier's 5 s. */
const REPLAY_TIMEOUT_MS = 180_000;

Runtime.install({ logger: new DefaultLogger('WARN') });

const fixtures = listHistoryFixtures();
let results: Map<string, Error | undefined>;
let bundleCode: string;

beforeAll(async () => {
  const bundle = await bundleWorkflows({ tracing: true });
  bundleCode = bundle.code;
  // The workflow's spans go to a sink, as on a traced worker (a replay sends nothing through it).
  const exporter = { export: { fn: () => {} } };
  results = await replayHistoryFixtures(bundle, fixtures, undefined, { sinks: { exporter } });
}, REPLAY_TIMEOUT_MS);

describe('recorded histories replay with the tracing interceptors in the bundle', () => {
  it('the bundle has the OpenTelemetry workflow interceptors and the turn timing', () => {
    expect(bundleCode).toContain('OpenTelemetryInboundInterceptor');
    expect(bundleCode).toContain('longrun_turn_latency_ms');
  });

  it.each(fixtures.map((fixture) => fixture.file))('%s', (file) => {
    expect(results.has(file), `${file} was not replayed`).toBe(true);
    const error = results.get(file);
    if (error) expect.fail(`${file} does not replay with traces on: ${error.name}: ${error.message}`);
  });
});
