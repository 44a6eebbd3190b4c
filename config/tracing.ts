/**
 * Traces: OpenTelemetry, exported by OTLP over HTTP (JSON bodies) when OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and off otherwise. The variables are OpenTelemetry's own, read as its
 * SDKs read them: the endpoint (`<endpoint>/v1/traces`, or the traces endpoint as it is), OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER; OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none turn it off. The OpenTelemetry SDK reads all but the endpoint from the process
 * environment itself.
 *
 * One tracer provider per process, registered globally (the Temporal interceptors and the model-call span find it
 * there): the client's interceptor (config/temporal.ts), the worker's (worker/telemetry.ts) and the workflow's spans
 * (exported through a sink) all go through it. Spans are batched; {@link flushTracing} sends what is pending (a
 * command calls it before it exits).
 */
import { createRequire } from 'node:module';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as Resources from '@opentelemetry/resources';
import type { Resource } from '@opentelemetry/resources';
import type * as TraceNode from '@opentelemetry/sdk-trace-node';
import type { NodeTracerProvider, SpanProcessor } from '@opentelemetry/sdk-trace-node';
import type * as TemporalOtel from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { SettingsError } from './settings.ts';
import type { Env } from './settings.ts';

/** The service name spans carry unless OTEL_SERVICE_NAME names another. */
export const DEFAULT_SERVICE_NAME = 'longrun';

/** The one protocol longrun exports in (OTEL_EXPORTER_OTLP_PROTOCOL may say so, or be unset). */
const PROTOCOL = 'http/json';

/** Where traces go, when they are on. */
export interface TracingConfig {
  /** The OTLP/HTTP traces URL (`…/v1/traces`). */
  url: string;
}

/** The process's tracing: what the worker hands the workflow's span exporter, and a way to flush. */
export interface Tracing {
  url: string;
  provider: NodeTracerProvider;
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** The client's interceptor: each start, Update, Signal and Query a span whose context the workflow continues. */
  clientInterceptors(): WorkflowClientInterceptor[];
}

/**
 * The OpenTelemetry SDK and the Temporal interceptors are loaded only when traces are on: they take longer to load
 * than the rest of a client, and every `longrun` command would pay for them.
 */
const load = createRequire(import.meta.url);

function readUrl(env: Env, name: string): string | undefined {
  const raw = (env[name] ?? '').trim();
  if (raw === '') return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol)) {
    throw new SettingsError(
      name,
      `must be an http(s) URL of an OTLP/HTTP receiver, e.g. http://localhost:4318 (got ${JSON.stringify(raw)})`,
    );
  }
  return raw;
}

/**
 * Whether traces are on, and where they go; undefined when off. A bad value is a {@link SettingsError} naming the
 * variable: an endpoint that is not an http(s) URL, a protocol other than http/json (a gRPC collector port would
 * take nothing longrun sends).
 */
export function tracingConfig(env: Env = process.env): TracingConfig | undefined {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return undefined;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  if (exporters === 'none') return undefined;
  const tracesUrl = readUrl(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseUrl = readUrl(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (tracesUrl === undefined && baseUrl === undefined) return undefined;
  if (exporters !== '' && exporters !== 'otlp') {
    throw new SettingsError(
      'OTEL_TRACES_EXPORTER',
      `longrun exports traces by otlp only (or none); got ${JSON.stringify(env.OTEL_TRACES_EXPORTER)}`,
    );
  }
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const protocol = (env[name] ?? '').trim();
    if (protocol !== '' && protocol !== PROTOCOL) {
      throw new SettingsError(
        name,
        `longrun exports traces as OTLP ${PROTOCOL} (port 4318 of a collector); got ${JSON.stringify(protocol)}. ` +
          `Unset it or set ${PROTOCOL}`,
      );
    }
    if (protocol !== '') break; // the signal's own setting wins over the general one
  }
  // As OpenTelemetry's SDKs do: the traces endpoint as it is, the general one with the signal's path appended.
  return { url: tracesUrl ?? `${baseUrl!.replace(/\/+$/, '')}/v1/traces` };
}

let running: Tracing | undefined;
let flushOnExit = false;

/**
 * Starts tracing for this process when the environment turns it on (once; later calls return the same), and
 * registers its tracer provider globally. Undefined when traces are off.
 */
export function startTracing(env: Env = process.env): Tracing | undefined {
  if (running) return running;
  const config = tracingConfig(env);
  if (!config) return undefined;
  const { Resource, envDetectorSync } = load('@opentelemetry/resources') as typeof Resources;
  const { OTLPTraceExporter } = load('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
  const { BatchSpanProcessor, NodeTracerProvider } = load('@opentelemetry/sdk-trace-node') as typeof TraceNode;
  const { OpenTelemetryWorkflowClientInterceptor } = load(
    '@temporalio/interceptors-opentelemetry',
  ) as typeof TemporalOtel;
  const resource = new Resource({
    ...Resource.default().attributes,
    'service.name': DEFAULT_SERVICE_NAME,
    ...envDetectorSync.detect().attributes, // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
  });
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter({ url: config.url }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  running = {
    url: config.url,
    provider,
    spanProcessor,
    resource,
    clientInterceptors: () => [new OpenTelemetryWorkflowClientInterceptor()],
  };
  if (!flushOnExit) {
    flushOnExit = true;
    // A script that ends on its own (no process.exit) sends what is pending first.
    process.once('beforeExit', () => void flushTracing());
  }
  return running;
}

/** The process's tracing, if started. */
export function activeTracing(): Tracing | undefined {
  return running;
}

/** Sends the spans still pending (none when traces are off); an export that fails is dropped, never thrown. */
export async function flushTracing(): Promise<void> {
  await running?.provider.forceFlush().catch(() => {});
}
