/**
 * A workflow interceptor module (registered by the worker, worker/worker.ts `WORKFLOW_INTERCEPTOR_MODULES`): times
 * each `send` Update from its handler starting (the Update accepted) to its answer, and records it on the
 * workflow's metric meter as `longrun_turn_latency_ms` (contract/metrics.ts), by outcome. The meter records nothing
 * while the workflow replays, and the times are workflow time, so a turn that started before the worker's cache
 * evicted the workflow is still timed from its start. It issues no command and adds no yield: the Update's answer
 * is the handler's own promise, observed, never wrapped, so a history recorded without this module replays the same.
 *
 * A message sent as a Signal has no answer to time and is not counted here.
 */
import { metricMeter } from '@temporalio/workflow';
import type { MetricHistogram } from '@temporalio/common';
import type {
  Next,
  UpdateInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptorsFactory,
} from '@temporalio/workflow';
import { sendUpdate } from '../contract/agent.ts';
import { METRICS } from '../contract/metrics.ts';

class TurnTiming implements WorkflowInboundCallsInterceptor {
  private histogram: MetricHistogram | undefined;

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>): Promise<unknown> {
    if (input.name !== sendUpdate.name) return next(input);
    const started = Date.now();
    const answer = next(input);
    const { name, unit, description } = METRICS.turnLatency;
    this.histogram ??= metricMeter.createHistogram(name, 'int', unit, description);
    const histogram = this.histogram;
    const record = (outcome: 'ok' | 'failed') => histogram.record(Math.max(0, Date.now() - started), { outcome });
    answer.then(
      () => record('ok'),
      () => record('failed'),
    );
    return answer;
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ inbound: [new TurnTiming()] });
