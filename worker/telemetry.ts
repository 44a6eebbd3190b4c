/**
 * The worker's telemetry (docs/metrics.md): the Temporal runtime with its Prometheus endpoint when
 * LONGRUN_METRICS_ADDRESS names one (the SDK's metrics and longrun's, contract/metrics.ts, from one meter), and the
 * tracing interceptors when OTEL_EXPORTER_OTLP_ENDPOINT turned traces on (config/tracing.ts): activities' spans, the
 * workflow's spans (from the interceptor module in the workflow bundle, exported through a sink).
 */
import { createRequire } from 'node:module';
import type * as TemporalOtel from '@temporalio/interceptors-opentelemetry';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { ActivityInterceptorsFactory, InjectedSinks, Logger, TelemetryOptions } from '@temporalio/worker';
import { METRIC_LIST } from '../contract/metrics.ts';
import { modulePath, SettingsError } from '../config/settings.ts';
import type { Settings } from '../config/settings.ts';
import type { Tracing } from '../config/tracing.ts';

/** Times each `send` Update (longrun_turn_latency_ms): in every workflow bundle. */
export const TURN_TIMING_MODULE = modulePath(import.meta.url, '../workflows/turn-timing');

/** Loads a package when it is needed: the tracing interceptors only when traces are on. */
const load = createRequire(import.meta.url);

/** The OpenTelemetry workflow interceptors (spans of the workflow, its Updates and the activities it schedules). */
const TRACING_WORKFLOW_MODULE = load.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** The workflow interceptor modules a bundle needs: turn timing always, the tracing ones when traces are on. */
export function workflowInterceptorModules(tracing: boolean): string[] {
  return [TURN_TIMING_MODULE, ...(tracing ? [TRACING_WORKFLOW_MODULE] : [])];
}

/**
 * The runtime's telemetry for these settings: the Prometheus endpoint at `settings.metricsAddress` (SDK defaults:
 * `temporal_` before the SDK's own metrics, durations in ms, counters without `_total`), with longrun's histograms'
 * buckets. Undefined without an address. Pass it to your own `Runtime.install` if you install the runtime yourself.
 */
export function metricsTelemetry(settings: Pick<Settings, 'metricsAddress'>): TelemetryOptions | undefined {
  if (!settings.metricsAddress) return undefined;
  const histogramBucketOverrides = Object.fromEntries(
    METRIC_LIST.flatMap((metric) => (metric.buckets ? [[metric.name, [...metric.buckets]]] : [])),
  );
  return { metrics: { prometheus: { bindAddress: settings.metricsAddress, histogramBucketOverrides } } };
}

/**
 * Installs the Temporal runtime for this process (once per process: call it before any worker or connection), its
 * logger at WARN unless `logger` says otherwise, serving metrics when the settings name an address. A runtime
 * installed already, or an address it cannot listen on, is a {@link SettingsError} naming LONGRUN_METRICS_ADDRESS.
 * `shutdownSignals`: the signals on which the runtime stops every worker itself (the SDK's default when absent; the
 * main job passes none, as it stops its worker after its own stop steps: worker/stopping.ts).
 */
export function installRuntime(
  settings: Pick<Settings, 'metricsAddress'>,
  logger: Logger = new DefaultLogger('WARN'),
  shutdownSignals?: NodeJS.Signals[],
): Runtime {
  const telemetryOptions = metricsTelemetry(settings);
  try {
    return Runtime.install({
      logger,
      ...(telemetryOptions ? { telemetryOptions } : {}),
      ...(shutdownSignals ? { shutdownSignals } : {}),
    });
  } catch (error) {
    if (!settings.metricsAddress) throw error;
    const why = error instanceof Error ? error.message : String(error);
    throw new SettingsError(
      'LONGRUN_METRICS_ADDRESS',
      /already been (installed|instantiated)/.test(why)
        ? `the Temporal runtime of this process was installed before longrun could serve metrics (${why}); ` +
            'install it with `metricsTelemetry(settings)` from longrun/worker yourself, or unset the variable'
        : `cannot serve metrics on ${settings.metricsAddress} (${why})`,
    );
  }
}

/** The worker's side of tracing: the activities' span interceptors and the workflow spans' exporter sink. */
export function workerTracing(tracing: Tracing): {
  activity: ActivityInterceptorsFactory;
  sinks: InjectedSinks<OpenTelemetrySinks>;
} {
  const { makeWorkflowExporter, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor } =
    load('@temporalio/interceptors-opentelemetry') as typeof TemporalOtel;
  return {
    activity: (context) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(context),
      outbound: new OpenTelemetryActivityOutboundInterceptor(context),
    }),
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}
