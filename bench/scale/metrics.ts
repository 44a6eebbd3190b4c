/**
 * What the scale benchmark reads of the workers' Prometheus metrics (the Temporal runtime's: sticky cache hits and
 * misses, workflow task and activity schedule-to-start latency, task slots in use), scrape by scrape. Counters are
 * turned into what happened between two scrapes; a worker that restarted counts from zero again.
 */
import { bucketsBetween, histogramBuckets, metricSum, parsePrometheus } from './results.ts';
import type { Metrics } from './results.ts';

/** The counters kept, by the runtime's metric name (the `temporal_` prefix is the Prometheus exporter's). */
const COUNTERS = {
  hit: 'temporal_sticky_cache_hit',
  miss: 'temporal_sticky_cache_miss',
  wftS2sSum: 'temporal_workflow_task_schedule_to_start_latency_sum',
  wftS2sCount: 'temporal_workflow_task_schedule_to_start_latency_count',
  actS2sSum: 'temporal_activity_schedule_to_start_latency_sum',
  actS2sCount: 'temporal_activity_schedule_to_start_latency_count',
} as const;
type Counter = keyof typeof COUNTERS;
const WFT_S2S = 'temporal_workflow_task_schedule_to_start_latency';

export interface MetricsStep {
  counters: Record<Counter, number>;
  /** Workflow task schedule-to-start buckets (ms) observed in the step. */
  wftS2s: Map<number, number>;
  /** Task slots in use at the scrape, summed over the workers. */
  workflowSlotsUsed: number;
  activitySlotsUsed: number;
}

const zero = (): Record<Counter, number> => ({
  hit: 0,
  miss: 0,
  wftS2sSum: 0,
  wftS2sCount: 0,
  actS2sSum: 0,
  actS2sCount: 0,
});

/** Slots in use of one worker type (WorkflowWorker, ActivityWorker). */
function slotsUsed(metrics: Metrics, workerType: string): number {
  return (metrics.get('temporal_worker_task_slots_used') ?? [])
    .filter((s) => s.labels.worker_type === workerType)
    .reduce((sum, s) => sum + s.value, 0);
}

/** Keeps each source's last scrape and the totals over the run. Pure: the driver fetches, this diffs. */
export class MetricsDiff {
  private readonly last = new Map<string, { counters: Record<Counter, number>; wftS2s?: Map<number, number> }>();
  readonly total = { counters: zero(), wftS2s: new Map<number, number>() };
  measured = false;

  /** One scrape of every source (by name; `undefined` when it did not answer): what happened since the last. */
  step(scrapes: ReadonlyMap<string, string | undefined>): MetricsStep {
    const step: MetricsStep = { counters: zero(), wftS2s: new Map(), workflowSlotsUsed: 0, activitySlotsUsed: 0 };
    for (const [source, text] of scrapes) {
      if (text === undefined) continue;
      const metrics = parsePrometheus(text);
      const counters = zero();
      for (const key of Object.keys(COUNTERS) as Counter[]) counters[key] = metricSum(metrics, COUNTERS[key]) ?? 0;
      const wftS2s = histogramBuckets(metrics, WFT_S2S);
      if (!metrics.has('temporal_worker_task_slots_used') && counters.hit === 0 && !wftS2s) continue;
      this.measured = true;
      step.workflowSlotsUsed += slotsUsed(metrics, 'WorkflowWorker');
      step.activitySlotsUsed += slotsUsed(metrics, 'ActivityWorker');
      const before = this.last.get(source);
      // A counter that went down: the worker restarted and counts from zero again.
      const restarted = before && (Object.keys(COUNTERS) as Counter[]).some((k) => counters[k] < before.counters[k]);
      const base = restarted ? undefined : before;
      for (const key of Object.keys(COUNTERS) as Counter[]) {
        step.counters[key] += counters[key] - (base?.counters[key] ?? 0);
      }
      if (wftS2s) {
        for (const [le, count] of bucketsBetween(wftS2s, base?.wftS2s)) {
          step.wftS2s.set(le, (step.wftS2s.get(le) ?? 0) + count);
        }
      }
      this.last.set(source, { counters, ...(wftS2s ? { wftS2s } : {}) });
    }
    for (const key of Object.keys(COUNTERS) as Counter[]) this.total.counters[key] += step.counters[key];
    for (const [le, count] of step.wftS2s) this.total.wftS2s.set(le, (this.total.wftS2s.get(le) ?? 0) + count);
    return step;
  }

  /**
   * A scrape taken as the starting point: what the workers counted before it (their start, a registration phase) is
   * in no step and no total. `measured` stays as the scrape found it.
   */
  baseline(scrapes: ReadonlyMap<string, string | undefined>): void {
    this.step(scrapes);
    this.total.counters = zero();
    this.total.wftS2s = new Map();
  }
}

/** Hits / (hits + misses), undefined with neither. */
export const hitRate = (c: Record<Counter, number>) => (c.hit + c.miss > 0 ? c.hit / (c.hit + c.miss) : undefined);
/** Mean of a sum / count pair, undefined with no observation. */
export const mean = (sum: number, count: number) => (count > 0 ? sum / count : undefined);

/** Scrapes each worker's metrics endpoint (127.0.0.1:port/metrics); a worker that does not answer maps to undefined. */
export async function scrapeAll(ports: readonly number[]): Promise<Map<string, string | undefined>> {
  const texts = await Promise.all(
    ports.map((port) =>
      fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2_000) })
        .then((r) => r.text())
        .catch(() => undefined),
    ),
  );
  return new Map(ports.map((port, i) => [String(port), texts[i]]));
}
