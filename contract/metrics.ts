/**
 * longrun's own metrics, the one list of them: name, kind, unit, labels, what each means. The worker exports them
 * beside the Temporal SDK's own through the runtime's meter, on the Prometheus endpoint LONGRUN_METRICS_ADDRESS
 * names (worker/telemetry.ts). Activities record the model calls and compactions (activities/telemetry.ts), the
 * workflow's interceptor the turns (workflows/turn-timing.ts). docs/metrics.md describes each one and the Grafana
 * dashboard (deploy/grafana/) queries them; unit tests hold both to this list.
 *
 * Labels stay low-cardinality: no agent id, message or model name. Besides the labels listed, the SDK adds
 * `namespace` and `taskQueue` to every one, and `activityType` (recorded in an activity) or `workflowType` (in the
 * workflow).
 */
import type { PlanStepName } from '../engine/planner/index.ts';
import { STRATEGIES } from '../engine/policy.ts';
import type { Trigger } from '../engine/trigger.ts';

export type MetricKind = 'counter' | 'histogram';

export interface MetricDefinition {
  name: string;
  kind: MetricKind;
  /** `ms`, `tokens`, `bytes`, `microusd` (millionths of a US dollar), or `1` (a count). */
  unit: 'ms' | 'tokens' | 'bytes' | 'microusd' | '1';
  /** The labels longrun sets (each value from the list in {@link LABEL_VALUES}). */
  labels: readonly LabelName[];
  description: string;
  /** A histogram's bucket boundaries (upper bounds; +Inf is added). */
  buckets?: readonly number[];
}

/** Every value a label takes: the dashboards and docs can rely on these lists. */
export const LABEL_VALUES = {
  /** How a turn's `send` Update ended. */
  outcome: ['ok', 'failed'],
  /** Why the model was called: the agent's turn (`callModel`) or a compaction's summary (`summarizeSpan`). */
  purpose: ['turn', 'summary'],
  /** How a model call ended. */
  result: ['ok', 'error'],
  /** A failed model call's class (activities/model-errors.ts `modelErrorClass`). */
  class: [
    'rate_limit',
    'server',
    'timeout',
    'connection',
    'malformed',
    'context_overflow',
    'auth',
    'bad_request',
    'empty_reply',
    'bad_reply',
    'cancelled',
    'other',
  ],
  /**
   * Tokens of a request (`prompt`), of them those the provider served from its prompt cache (`cached`), or of the
   * reply (`completion`), as the provider reports them.
   */
  kind: ['prompt', 'cached', 'completion'],
  /** What started a compaction (engine/trigger.ts `Trigger`). */
  trigger: ['auto', 'background', 'forced', 'overflow'],
  /** A step of a compaction: the strategies (engine/policy.ts `STRATEGIES`), the planner's last-resort cuts, the loop guard's. */
  strategy: [...STRATEGIES, 'fit-window', 'truncate-oversized', 'offload-largest'],
} as const;

// The lists above name every trigger and plan step there is, and nothing else (a new one fails to compile here).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameTriggers: Same<(typeof LABEL_VALUES.trigger)[number], Trigger> = true;
const sameSteps: Same<(typeof LABEL_VALUES.strategy)[number], PlanStepName> = true;
void [sameTriggers, sameSteps];

export type LabelName = keyof typeof LABEL_VALUES;
export type ModelErrorClass = (typeof LABEL_VALUES.class)[number];
export type ModelCallPurpose = (typeof LABEL_VALUES.purpose)[number];

const LATENCY_MS = [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000];
const TOKENS = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000, 1_000_000, 2_000_000];

export const METRICS = {
  turnLatency: {
    name: 'longrun_turn_latency_ms',
    kind: 'histogram',
    unit: 'ms',
    labels: ['outcome'],
    description:
      'Time from a send Update being accepted to its answer (the turn, and any compaction before its model calls, ' +
      'plus the time it waited behind earlier messages), in workflow time; its _count is the turns answered.',
    buckets: LATENCY_MS,
  },
  modelCallLatency: {
    name: 'longrun_model_call_latency_ms',
    kind: 'histogram',
    unit: 'ms',
    labels: ['purpose', 'result'],
    description:
      'One request to the model, from sending it to its reply read (or its failure); its _count is the model calls.',
    buckets: LATENCY_MS,
  },
  modelCallErrors: {
    name: 'longrun_model_call_errors',
    kind: 'counter',
    unit: '1',
    labels: ['purpose', 'class'],
    description: 'Model calls that failed, by class (a retry that fails again counts again).',
  },
  modelTokens: {
    name: 'longrun_model_tokens',
    kind: 'counter',
    unit: 'tokens',
    labels: ['purpose', 'kind'],
    description:
      'Tokens of the requests (and of them those served from the prompt cache) and replies, as the provider reports ' +
      'them (usage).',
  },
  modelCost: {
    name: 'longrun_model_cost_microusd',
    kind: 'counter',
    unit: 'microusd',
    labels: ['purpose'],
    description:
      "What the model calls cost, in millionths of a US dollar: the reported usage at the agent's price (turns) or " +
      "the summary model's list price (summaries), cached input at the cached price. Calls without a known price " +
      'add nothing.',
  },
  compactions: {
    name: 'longrun_compactions',
    kind: 'counter',
    unit: '1',
    labels: ['trigger'],
    description: 'Compactions applied (stored by applyCompaction), by what started them.',
  },
  compactionSteps: {
    name: 'longrun_compaction_steps',
    kind: 'counter',
    unit: '1',
    labels: ['trigger', 'strategy'],
    description: 'The strategies compactions ran: one per step (a compaction that masked and summarized counts two).',
  },
  compactionTokensBefore: {
    name: 'longrun_compaction_tokens_before',
    kind: 'histogram',
    unit: 'tokens',
    labels: ['trigger'],
    description: 'The context a compaction started from, in tokens (the counting the agent uses).',
    buckets: TOKENS,
  },
  compactionTokensAfter: {
    name: 'longrun_compaction_tokens_after',
    kind: 'histogram',
    unit: 'tokens',
    labels: ['trigger'],
    description: 'The context a compaction left, in tokens, the request overhead (tool schemas) included.',
    buckets: TOKENS,
  },
  compactionTokensSaved: {
    name: 'longrun_compaction_tokens_saved',
    kind: 'counter',
    unit: 'tokens',
    labels: ['trigger'],
    description: 'Tokens before minus tokens after, summed over compactions (a compaction that grew counts 0).',
  },
  compactionOffloadedBytes: {
    name: 'longrun_compaction_offloaded_bytes',
    kind: 'counter',
    unit: 'bytes',
    labels: ['trigger'],
    description: 'Bytes of the removed segments written to S3: the original messages that left the context.',
  },
  compactionRemovedMessages: {
    name: 'longrun_compaction_removed_messages',
    kind: 'counter',
    unit: '1',
    labels: ['trigger'],
    description: 'Messages that left the context (each reloadable from its removed segment).',
  },
  compactionFactsPinned: {
    name: 'longrun_compaction_facts_pinned',
    kind: 'counter',
    unit: '1',
    labels: ['trigger'],
    description: 'Must-keep facts a summary lost even after its re-prompt, pinned verbatim into the summary message.',
  },
  compactionDuration: {
    name: 'longrun_compaction_duration_ms',
    kind: 'histogram',
    unit: 'ms',
    labels: ['trigger'],
    description: 'A compaction from its plan to its apply step (the summary call included), in workflow time.',
    buckets: LATENCY_MS,
  },
} as const satisfies Record<string, MetricDefinition>;

/** Every longrun metric, in the order the docs list them. */
export const METRIC_LIST: readonly MetricDefinition[] = Object.values(METRICS);

/** One of the Temporal SDK's own metrics (served beside longrun's), as docs/metrics.md and the dashboard use it. */
export interface SdkMetric {
  name: string;
  kind: MetricKind | 'gauge';
  /** Its labels besides `namespace`, `task_queue` and `service_name`, which the SDK puts on all. */
  labels: readonly string[];
  /** The series appears only once this has happened (the runtime exports a metric from its first value). */
  onlyAfter?: string;
}

/**
 * The SDK metrics (SDK 1.24 names, its default `temporal_` prefix, durations in ms) the Grafana dashboard queries and
 * docs/metrics.md explains (what each means is there); the SDK serves more (Temporal's SDK metrics reference).
 */
export const SDK_METRICS: readonly SdkMetric[] = [
  {
    name: 'temporal_workflow_task_schedule_to_start_latency',
    kind: 'histogram',
    labels: [],
  },
  {
    name: 'temporal_workflow_task_execution_latency',
    kind: 'histogram',
    labels: ['workflow_type'],
  },
  {
    name: 'temporal_workflow_task_replay_latency',
    kind: 'histogram',
    labels: ['workflow_type'],
  },
  {
    name: 'temporal_activity_schedule_to_start_latency',
    kind: 'histogram',
    labels: ['activity_type'],
  },
  {
    name: 'temporal_activity_execution_latency',
    kind: 'histogram',
    labels: ['activity_type'],
  },
  {
    name: 'temporal_activity_execution_failed',
    kind: 'counter',
    labels: ['activity_type'],
    onlyAfter: 'an activity attempt failed',
  },
  {
    name: 'temporal_sticky_cache_hit',
    kind: 'counter',
    labels: ['workflow_type'],
  },
  {
    name: 'temporal_sticky_cache_miss',
    kind: 'counter',
    labels: ['workflow_type'],
    onlyAfter: 'a workflow was not in the cache',
  },
  {
    name: 'temporal_sticky_cache_size',
    kind: 'gauge',
    labels: [],
  },
  {
    name: 'temporal_worker_task_slots_used',
    kind: 'gauge',
    labels: ['worker_type'],
  },
  {
    name: 'temporal_worker_task_slots_available',
    kind: 'gauge',
    labels: ['worker_type'],
  },
  {
    name: 'temporal_workflow_completed',
    kind: 'counter',
    labels: ['workflow_type'],
    onlyAfter: 'a workflow run completed',
  },
  {
    name: 'temporal_workflow_continue_as_new',
    kind: 'counter',
    labels: ['workflow_type'],
    onlyAfter: 'a workflow run continued as new',
  },
  {
    name: 'temporal_workflow_failed',
    kind: 'counter',
    labels: ['workflow_type'],
    onlyAfter: 'a workflow run failed',
  },
  {
    name: 'temporal_request_failure',
    kind: 'counter',
    labels: ['operation'],
    onlyAfter: 'a request to the server failed',
  },
];
