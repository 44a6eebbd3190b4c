/**
 * What the activities measure (contract/metrics.ts): each model call (latency, errors by class, tokens, and a span
 * `chat <model>` when traces are on) and each compaction applied. Metrics go to the activity's metric meter, which
 * the worker exports with the SDK's own (a no-op when LONGRUN_METRICS_ADDRESS is unset); the span goes to the global
 * tracer provider (a no-op unless OTEL_EXPORTER_OTLP_ENDPOINT started one: config/tracing.ts), as a child of the
 * activity's span.
 */
import { Context } from '@temporalio/activity';
import type { MetricMeter } from '@temporalio/common';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Span } from '@opentelemetry/api';
import type { CompactionEvent } from '../contract/results.ts';
import { METRICS } from '../contract/metrics.ts';
import type { MetricDefinition, ModelCallPurpose } from '../contract/metrics.ts';
import { costOf } from '../engine/pricing.ts';
import type { ModelPrice } from '../engine/pricing.ts';
import { modelErrorClass } from './model-errors.ts';
import { readUsage } from './usage.ts';

const tracer = trace.getTracer('longrun');

function meter(): MetricMeter {
  return Context.current().metricMeter;
}

function counter(meter: MetricMeter, metric: MetricDefinition) {
  return meter.createCounter(metric.name, metric.unit, metric.description);
}

function histogram(meter: MetricMeter, metric: MetricDefinition) {
  return meter.createHistogram(metric.name, 'int', metric.unit, metric.description);
}

/** What a model call reports of itself once it has answered. */
export interface ModelCallReport {
  /** Tokens of the request (of them, those cached) and of the reply, as the provider counts them (activities/usage.ts). */
  usage?: unknown;
  /** The model that answered, as the provider names it. */
  model?: string | undefined;
}

/**
 * Runs one model call (`call`: the request and the reading of its reply, so a reply that cannot be kept counts as a
 * failed call) and measures it: latency by purpose and result, the error's class, the tokens its reply reports
 * (`report`) and their cost at `price` (none without one), inside a span named as OpenTelemetry's GenAI conventions name a chat call.
 */
export async function observeModelCall<T>(
  purpose: ModelCallPurpose,
  model: string,
  call: () => Promise<T>,
  report: (result: T) => ModelCallReport,
  price?: ModelPrice,
): Promise<T> {
  const metrics = meter();
  const started = performance.now();
  return tracer.startActiveSpan(
    `chat ${model}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model, 'longrun.purpose': purpose },
    },
    async (span: Span) => {
      const latency = histogram(metrics, METRICS.modelCallLatency);
      try {
        const result = await call();
        latency.record(Math.round(performance.now() - started), { purpose, result: 'ok' });
        const { usage: reported, model: servedBy } = report(result);
        const usage = readUsage(reported);
        const tokens = counter(metrics, METRICS.modelTokens);
        if (usage?.promptTokens) tokens.add(usage.promptTokens, { purpose, kind: 'prompt' });
        if (usage?.cachedTokens) tokens.add(usage.cachedTokens, { purpose, kind: 'cached' });
        if (usage?.completionTokens) tokens.add(usage.completionTokens, { purpose, kind: 'completion' });
        const cost = usage ? costOf(usage, price) : null;
        if (cost) counter(metrics, METRICS.modelCost).add(Math.round(cost * 1e6), { purpose });
        if (servedBy) span.setAttribute('gen_ai.response.model', servedBy);
        if (usage) {
          span.setAttribute('gen_ai.usage.input_tokens', usage.promptTokens);
          span.setAttribute('gen_ai.usage.output_tokens', usage.completionTokens);
        }
        return result;
      } catch (error) {
        const errorClass = modelErrorClass(error);
        latency.record(Math.round(performance.now() - started), { purpose, result: 'error' });
        counter(metrics, METRICS.modelCallErrors).add(1, { purpose, class: errorClass });
        span.setAttribute('error.type', errorClass);
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** Records a compaction the apply step stored: its trigger, steps, tokens, the bytes it offloaded, facts pinned. */
export function recordCompaction(event: CompactionEvent, offloadedBytes: number): void {
  const metrics = meter();
  const labels = { trigger: event.trigger };
  counter(metrics, METRICS.compactions).add(1, labels);
  const steps = counter(metrics, METRICS.compactionSteps);
  for (const strategy of event.strategies) steps.add(1, { ...labels, strategy });
  histogram(metrics, METRICS.compactionTokensBefore).record(event.tokensBefore, labels);
  histogram(metrics, METRICS.compactionTokensAfter).record(event.tokensAfter, labels);
  counter(metrics, METRICS.compactionTokensSaved).add(Math.max(0, event.tokensBefore - event.tokensAfter), labels);
  counter(metrics, METRICS.compactionOffloadedBytes).add(offloadedBytes, labels);
  counter(metrics, METRICS.compactionRemovedMessages).add(event.removedCount, labels);
  counter(metrics, METRICS.compactionFactsPinned).add(event.facts?.pinned.length ?? 0, labels);
  histogram(metrics, METRICS.compactionDuration).record(Math.max(0, event.durationMs), labels);
}
