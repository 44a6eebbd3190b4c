/**
 * The telemetry variables: LONGRUN_METRICS_ADDRESS (config/settings.ts) and OpenTelemetry's OTLP variables
 * (config/tracing.ts), each bad value refused with an error naming the variable, and the runtime's Prometheus
 * options made from the metric list (worker/telemetry.ts).
 */
import { describe, expect, it } from 'vitest';
import { loadSettings, SettingsError } from '../../../config/settings.ts';
import { tracingConfig } from '../../../config/tracing.ts';
import { METRIC_LIST } from '../../../contract/metrics.ts';
import { metricsTelemetry } from '../../../worker/telemetry.ts';

function refusal(read: () => unknown): SettingsError {
  try {
    read();
  } catch (error) {
    if (error instanceof SettingsError) return error;
    throw error;
  }
  throw new Error('no error');
}

describe('LONGRUN_METRICS_ADDRESS', () => {
  it('is off by default and when empty', () => {
    expect(loadSettings({}).metricsAddress).toBeUndefined();
    expect(loadSettings({ LONGRUN_METRICS_ADDRESS: '' }).metricsAddress).toBeUndefined();
  });

  it.each(['127.0.0.1:9464', '0.0.0.0:9464', '[::1]:9464', '[::]:1', '10.0.0.7:65535'])('takes %s', (address) => {
    expect(loadSettings({ LONGRUN_METRICS_ADDRESS: address }).metricsAddress).toBe(address);
  });

  it.each([
    ['localhost:9464', 'must be an IP address and a port'],
    ['9464', 'must be an IP address and a port'],
    ['127.0.0.1', 'must be an IP address and a port'],
    ['::1:9464', 'must be an IP address and a port'],
    ['http://127.0.0.1:9464', 'must be an IP address and a port'],
    ['127.0.0.1:0', 'the port must be from 1 to 65535'],
    ['127.0.0.1:70000', 'the port must be from 1 to 65535'],
    ['300.0.0.1:9464', 'must be an IP address and a port'],
    [' 127.0.0.1:9464', 'must not start or end with spaces'],
  ])('refuses %j, naming the variable', (address, problem) => {
    const error = refusal(() => loadSettings({ LONGRUN_METRICS_ADDRESS: address }));
    expect(error.variable).toBe('LONGRUN_METRICS_ADDRESS');
    expect(error.message).toContain(`LONGRUN_METRICS_ADDRESS: ${problem}`);
  });

  it("gives the runtime a Prometheus endpoint there, with every longrun histogram's buckets", () => {
    expect(metricsTelemetry({})).toBeUndefined();
    const telemetry = metricsTelemetry({ metricsAddress: '127.0.0.1:9464' });
    const prometheus = (telemetry?.metrics as { prometheus: { bindAddress: string; histogramBucketOverrides: object } })
      .prometheus;
    expect(prometheus.bindAddress).toBe('127.0.0.1:9464');
    const histograms = METRIC_LIST.filter((metric) => metric.kind === 'histogram');
    expect(histograms.length).toBeGreaterThan(0);
    expect(prometheus.histogramBucketOverrides).toEqual(
      Object.fromEntries(histograms.map((metric) => [metric.name, [...metric.buckets!]])),
    );
  });
});

describe('OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('are off without an endpoint, or when the SDK or the traces exporter is turned off', () => {
    expect(tracingConfig({})).toBeUndefined();
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBeUndefined();
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(tracingConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(tracingConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  it('go to <endpoint>/v1/traces, or to the traces endpoint as it is', () => {
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({
      url: 'http://collector:4318/v1/traces',
    });
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com/otlp/' })).toEqual({
      url: 'https://otel.example.com/otlp/v1/traces',
    });
    expect(
      tracingConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tempo:4318/custom',
      }),
    ).toEqual({ url: 'http://tempo:4318/custom' });
    expect(
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
    ).toEqual({ url: 'http://c:4318/v1/traces' });
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT', 'must be an http(s) URL'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://c:4317' }, 'OTEL_EXPORTER_OTLP_ENDPOINT', 'must be an http(s) URL'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'nope' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'must be an http(s) URL'],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'longrun exports traces as OTLP http/json',
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' },
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
      'longrun exports traces as OTLP http/json',
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'zipkin' },
      'OTEL_TRACES_EXPORTER',
      'longrun exports traces by otlp only',
    ],
  ])('%j is refused, naming %s', (env, variable, problem) => {
    const error = refusal(() => tracingConfig(env));
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(`${variable}: ${problem}`);
  });
});
