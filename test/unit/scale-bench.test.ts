/** The scale benchmark's pure parts: the workload, the scripted model, the classification, the metrics and results. */
import { describe, expect, it } from 'vitest';
import { mergeResults } from '../../bench/scale/files.ts';
import { MetricsDiff } from '../../bench/scale/metrics.ts';
import { LOOKUP_TOOL, scaleReply, scaleResponder } from '../../bench/scale/model.ts';
import { ticks, scaleSvg } from '../../bench/scale/plot.ts';
import { kindOf, parseStat } from '../../bench/scale/procs.ts';
import {
  classifyAgents,
  histogramBuckets,
  latencySummary,
  metricSum,
  parsePrometheus,
  peakRate,
  quantileBucket,
  scaleTable,
} from '../../bench/scale/results.ts';
import type { AgentTally, Sample, ScaleResult } from '../../bench/scale/results.ts';
import {
  agentName,
  filler,
  MESSAGE_BYTES,
  poissonSchedule,
  readTag,
  startOffsets,
  userMessage,
} from '../../bench/scale/workload.ts';
import { percentile } from '../../bench/stats.ts';
import type { ChatMessage } from '../../engine/messages.ts';

describe('the workload', () => {
  it('a Poisson schedule: first message at the start, exponential gaps of the given mean, the same per seed', () => {
    const due = poissonSchedule(16, 'a0001', 5_000, 50_000_000, 60_000);
    expect(due[0]).toBe(5_000);
    expect(due.every((t, i) => i === 0 || t >= due[i - 1]!)).toBe(true);
    expect(due.at(-1)!).toBeLessThan(50_000_000);
    const gaps = due.slice(1).map((t, i) => t - due[i]!);
    const meanGap = gaps.reduce((a, b) => a + b, 0) / gaps.length;
    expect(meanGap).toBeGreaterThan(57_000); // ~830 gaps: the mean within about 3 standard errors
    expect(meanGap).toBeLessThan(63_000);
    // Exponential: about 1 − 1/e of the gaps are shorter than the mean.
    const shorter = gaps.filter((g) => g < 60_000).length / gaps.length;
    expect(shorter).toBeGreaterThan(0.58);
    expect(shorter).toBeLessThan(0.68);
    expect(poissonSchedule(16, 'a0001', 5_000, 50_000_000, 60_000)).toEqual(due);
    expect(poissonSchedule(17, 'a0001', 5_000, 50_000_000, 60_000)).not.toEqual(due);
    expect(poissonSchedule(16, 'a0001', 5_000, 5_000, 60_000)).toEqual([]);
    expect(() => poissonSchedule(16, 'a0001', 0, 1_000, 0)).toThrow(/meanGapMs must be positive/);
  });

  it('agents start evenly over the ramp, or all in the first second', () => {
    expect(startOffsets(4, 60_000)).toEqual([0, 15_000, 30_000, 45_000]);
    const burst = startOffsets(1_000, 0);
    expect(Math.max(...burst)).toBeLessThan(1_000);
    expect(agentName(0)).toBe('a0001');
    expect(agentName(999)).toBe('a1000');
  });

  it('messages are 1–10 KB, tagged with the agent and number, and the same for the same seed', () => {
    const sizes = Array.from({ length: 200 }, (_, n) => userMessage(16, 'a0042', n + 1));
    for (const [n, text] of sizes.entries()) {
      expect(text.length).toBeGreaterThanOrEqual(MESSAGE_BYTES.min);
      expect(text.length).toBeLessThanOrEqual(MESSAGE_BYTES.max);
      expect(readTag(text)).toEqual({ agent: 'a0042', n: n + 1 });
    }
    expect(Math.max(...sizes.map((t) => t.length)) - Math.min(...sizes.map((t) => t.length))).toBeGreaterThan(7_000);
    expect(userMessage(16, 'a0042', 3)).toBe(sizes[2]);
    expect(filler('k', 5_000)).toHaveLength(5_000);
    expect(filler('k', 5_000)).toBe(filler('k', 5_000));
    expect(filler('k', 5_000)).not.toBe(filler('j', 5_000));
    expect(filler('k', 2_000)).toMatch(/^[A-Z][a-z]+ [a-z]+/);
  });
});

describe('the scripted model', () => {
  const options = { seed: 16, latencyMs: { min: 1_000, max: 5_000 }, toolShare: 0.25 };
  const user = (agent: string, n: number): ChatMessage => ({ role: 'user', content: userMessage(16, agent, n) });

  it('answers a user message after 1–5 s with 1–10 KB, or asks for the lookup tool in about a quarter of turns', () => {
    let tools = 0;
    for (let n = 1; n <= 400; n++) {
      const { reply, agent } = scaleReply(options, [{ role: 'system', content: 'x' }, user('a0007', n)], false);
      expect(agent).toBe('a0007');
      expect(reply.delayMs).toBeGreaterThanOrEqual(1_000);
      expect(reply.delayMs).toBeLessThanOrEqual(5_000);
      if (reply.toolCalls) {
        tools++;
        expect(reply.toolCalls[0]!.function.name).toBe(LOOKUP_TOOL);
        const args = JSON.parse(reply.toolCalls[0]!.function.arguments) as { bytes: number; n: number };
        expect(args.n).toBe(n);
        expect(args.bytes).toBeGreaterThanOrEqual(MESSAGE_BYTES.min);
      } else {
        expect(reply.content!.length).toBeGreaterThanOrEqual(MESSAGE_BYTES.min);
        expect(reply.content!.length).toBeLessThanOrEqual(MESSAGE_BYTES.max);
      }
    }
    expect(tools / 400).toBeGreaterThan(0.18);
    expect(tools / 400).toBeLessThan(0.32);
  });

  it('answers the tool result with text, a summary request with the five fields, and counts each agent’s time', () => {
    const afterTool: ChatMessage[] = [
      user('a0001', 4),
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c', content: 'result' },
    ];
    expect(scaleReply(options, afterTool, false).reply.content).toEqual(expect.any(String));
    const summary = scaleReply(
      options,
      [{ role: 'user', content: `transcript: ${userMessage(16, 'a0002', 9)}` }],
      true,
    );
    expect(summary.agent).toBe('a0002');
    expect(Object.keys(JSON.parse(summary.reply.content!) as object)).toEqual([
      'task_overview',
      'current_state',
      'important_discoveries',
      'next_steps',
      'context_to_preserve',
    ]);
    const { responder, tally } = scaleResponder(options);
    const request = (messages: ChatMessage[], summaryFormat = false) => ({
      path: '/v1/chat/completions',
      headers: {},
      body: { model: 'm', messages, ...(summaryFormat ? { response_format: { type: 'json_schema' } } : {}) },
    });
    const a = responder(request([user('a0003', 1)]), 0) as { delayMs: number };
    const b = responder(request([user('a0003', 2)], true), 1) as { delayMs: number };
    expect(tally.get('a0003')).toEqual({ requests: 2, summaries: 1, modelMs: a.delayMs + b.delayMs });
  });
});

describe('progressing and stuck', () => {
  const tally = (name: string, scheduled: number, completed: number, lastProgressAt: number): AgentTally => ({
    name,
    scheduled,
    completed,
    errors: 0,
    lastProgressAt,
  });

  it('progressing: at least 90% of the scheduled turns; stuck: work left and no progress for the threshold', () => {
    const end = 1_000_000;
    const result = classifyAgents(
      [
        tally('done', 10, 10, end - 500_000), // idle at the end, nothing left: fine
        tally('ninety', 10, 9, end - 1_000), // 90%: progressing, one turn in flight
        tally('slow', 10, 8, end - 5_000), // behind, but moving
        tally('stuck', 10, 9, end - 120_000), // progressing share, yet nothing for two minutes with work left
        tally('never', 5, 0, end - 600_000), // never started
        tally('none', 0, 0, end - 600_000), // nothing scheduled
      ],
      end,
      60_000,
    );
    expect(result.behind).toEqual(['slow', 'never']);
    expect(result.stuck).toEqual(['stuck', 'never']);
    expect(result.progressing).toBe(4);
    expect(result.progressingShare).toBeCloseTo(4 / 6);
    expect(classifyAgents([], end, 60_000).progressingShare).toBe(1);
  });
});

const PROMETHEUS = `# HELP temporal_sticky_cache_hit hits
# TYPE temporal_sticky_cache_hit counter
temporal_sticky_cache_hit{namespace="default",task_queue="q"} 90
temporal_sticky_cache_miss{namespace="default",task_queue="q"} 10
temporal_worker_task_slots_used{worker_type="WorkflowWorker"} 3
temporal_worker_task_slots_used{worker_type="ActivityWorker"} 40
temporal_workflow_task_schedule_to_start_latency_bucket{task_queue="q",le="10"} 50
temporal_workflow_task_schedule_to_start_latency_bucket{task_queue="q",le="100"} 90
temporal_workflow_task_schedule_to_start_latency_bucket{task_queue="q",le="+Inf"} 100
temporal_workflow_task_schedule_to_start_latency_sum{task_queue="q"} 3000
temporal_workflow_task_schedule_to_start_latency_count{task_queue="q"} 100
odd_label{text="a \\"quoted\\" value"} 1
`;

describe('Prometheus metrics', () => {
  it('parses counters, labels with escaped quotes and histograms; quantiles interpolate within a bucket', () => {
    const metrics = parsePrometheus(PROMETHEUS);
    expect(metricSum(metrics, 'temporal_sticky_cache_hit')).toBe(90);
    expect(metricSum(metrics, 'absent', 'temporal_sticky_cache_miss')).toBe(10);
    expect(metricSum(metrics, 'absent')).toBeUndefined();
    expect(metrics.get('odd_label')![0]!.labels.text).toBe('a "quoted" value');
    const buckets = histogramBuckets(metrics, 'temporal_workflow_task_schedule_to_start_latency')!;
    expect(quantileBucket(buckets, 0.5)).toBe(10);
    expect(quantileBucket(buckets, 0.7)).toBe(100);
    expect(quantileBucket(buckets, 0.99)).toBe(Infinity); // past the last finite bound
    expect(quantileBucket(new Map([[10, 0]]), 0.5)).toBeUndefined();
  });

  it('counts what happened between scrapes, and a restarted worker from zero again', () => {
    const diff = new MetricsDiff();
    const first = diff.step(new Map([['w1', PROMETHEUS]]));
    expect(first.counters.hit).toBe(90);
    expect(first.workflowSlotsUsed).toBe(3);
    expect(first.activitySlotsUsed).toBe(40);
    const later = PROMETHEUS.replace('} 90', '} 150').replace('} 10\n', '} 12\n');
    const second = diff.step(
      new Map([
        ['w1', later],
        ['w2', undefined],
      ]),
    );
    expect(second.counters).toMatchObject({ hit: 60, miss: 2, wftS2sCount: 0 });
    const restarted = PROMETHEUS.replace('} 90', '} 5').replace('} 10\n', '} 1\n');
    expect(diff.step(new Map([['w1', restarted]])).counters).toMatchObject({ hit: 5, miss: 1 });
    expect(diff.total.counters).toMatchObject({ hit: 155, miss: 13 });
    expect(diff.measured).toBe(true);
    expect(new MetricsDiff().step(new Map([['w1', 'nothing 1']])).counters.hit).toBe(0);
  });
});

describe('the processes', () => {
  it('reads /proc/<pid>/stat, a command with spaces and parentheses included, and tells the kinds apart', () => {
    const stat = parseStat('4242 (temporal (dev) x) S 17 4242 4242 0 -1 4194560 1 0 0 0 250 50 0 0 20 0 9 0 1 2 3');
    expect(stat).toEqual({ pid: 4242, ppid: 17, comm: 'temporal (dev) x', cpuMs: 3_000 });
    expect(kindOf(stat, new Set(), 1)).toBe('temporal');
    expect(kindOf({ ...stat, comm: 'minio' }, new Set(), 1)).toBe('minio');
    expect(kindOf({ ...stat, comm: 'postgres' }, new Set(), 1)).toBe('postgres');
    expect(kindOf({ ...stat, comm: 'node' }, new Set([4242]), 1)).toBe('worker');
    expect(kindOf({ ...stat, comm: 'node' }, new Set(), 4242)).toBe('driver');
    expect(kindOf({ ...stat, comm: 'node' }, new Set(), 1)).toBe('other');
  });
});

const sample = (t: number, turnsDone: number): Sample => ({
  t,
  agentsStarted: 10,
  turnsDone,
  turnsPerSec: 0,
  inFlight: 1,
  workerRssMb: [500],
  cpuPct: { machine: 100, worker: 30, temporal: 40, minio: 5, postgres: 0, driver: 10 },
  overheadP50Ms: 100,
  overheadP99Ms: 900,
  errors: 0,
  rpcs: 0,
});

function result(label: string): ScaleResult {
  return {
    label,
    at: '2026-11-23T00:00:00.000Z',
    commit: 'abc1234',
    machine: { cpus: 2, node: 'v24' },
    options: {},
    stack: 'dev',
    registered: 10,
    agents: 10,
    workers: 1,
    peakRssMb: 550,
    peakRssMbPerWorker: [550],
    progressingShare: 1,
    progressing: 10,
    steerP99Ms: null,
    failed: 0,
    failedRuns: [],
    stuck: 0,
    stuckAgents: [],
    behindAgents: [],
    turnsPerSec: 0.9,
    peakTurnsPerSec: 1.1,
    turns: { scheduled: 126, completed: 126, errors: 0, withTool: 30 },
    latencyMs: {
      turn: latencySummary([4_000, 5_000]),
      model: latencySummary([3_800]),
      overhead: latencySummary([200]),
    },
    cpuPct: sample(0, 0).cpuPct,
    cacheHitRate: 0.998,
    scheduleToStartMs: { mean: 40, p50UpTo: 100, p99UpTo: 1_000, activityMean: 1 },
    clientRpcs: { UpdateWorkflowExecution: 126 },
    historyPerRun: { runs: 21, bytesP50: 250_000, bytesMax: 350_000, eventsP50: 141 },
    compactions: { total: 33, agents: 10, summaries: 66 },
    continuedAsNew: { runs: 21, agents: 10 },
    errors: { client: {}, serverLog: 0, serverTimeouts: 0, serverLogSample: [] },
    notes: [],
    series: [sample(0, 0), sample(5, 5), sample(10, 20), sample(40, 50)],
  };
}

describe('the results', () => {
  it('percentiles by nearest rank; summaries; the best 30-s rate of the series', () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(percentile([5, 1, 4, 2, 3], 99)).toBe(5);
    expect(percentile([5, 1, 4, 2, 3], 0)).toBe(1);
    expect(percentile([], 50)).toBeUndefined();
    expect(latencySummary([])).toBeNull();
    expect(latencySummary([1, 2, 3, 100])).toEqual({ p50: 2, p99: 100, max: 100 });
    // 0 → 40 s: 50 turns in 40 s; 5 → 40 s: 45 in 35 s; 10 → 40 s: 30 in 30 s.
    expect(peakRate(result('r').series, 30)).toBeCloseTo(45 / 35); // the best of the three
  });

  it('the results file keeps the latest run at the top level with the fields issue 16 names, and every run', () => {
    const first = mergeResults({ runs: {} }, result('dev-a'));
    const second = mergeResults(JSON.parse(JSON.stringify(first)) as typeof first, result('dev-b'));
    for (const key of ['agents', 'peakRssMb', 'progressingShare', 'failed', 'stuck', 'turnsPerSec'] as const) {
      expect(second[key]).toEqual(result('dev-b')[key]);
    }
    expect(second.label).toBe('dev-b');
    expect(Object.keys(second.runs)).toEqual(['dev-a', 'dev-b']);
    expect(mergeResults(second, { ...result('dev-a'), agents: 7 }).runs['dev-a']!.agents).toBe(7);
  });

  it('the table names every figure; the plot draws each run', () => {
    const table = scaleTable({
      ...result('r'),
      restart: {
        atS: 300,
        stopMs: 2_000,
        downMs: 9_000,
        recoveryMs: latencySummary([5_000, 40_000]),
        agents: 10,
        recoveredWithin30s: 9,
      },
    });
    for (const figure of [
      /agents registered \/ active \(workers, stack\) +10 \/ 10 \(1 worker, dev\)/,
      /active agents progressing .* 10 of 10 \(100\.0%\)/,
      /steer until answered p50 \/ p99 \/ max +—/,
      /turns\/s .* 0\.9 \(1\.1\)/,
      /minus the model p50 \/ p99 +200 \/ 200 ms/,
      /worker peak RSS +550 MB/,
      /cache hit rate +99\.8%/,
      /schedule-to-start mean \(p50, p99 at most\) +40 ms \(≤ 100 ms, ≤ 1 s\); activities 1 ms/,
      /history per run .* 244\.1 \/ 341\.8 KB \(141 events, 21 runs\)/,
      /agents compacted \/ continued as new +10 \/ 10 of 10/,
      /worker restart: .* 9\.0 s \(stopping 2\.0 s\) .* max 40\.0 s; 9 of 10 within 30 s/,
    ]) {
      expect(table).toMatch(figure);
    }
    expect(table).not.toMatch(/idle agents registered/);
    const population = scaleTable({
      ...result('p'),
      registered: 10_000,
      agents: 1_000,
      steerP99Ms: 4_900,
      steers: {
        perMinute: 20,
        due: 200,
        sent: 198,
        skipped: 2,
        answered: 197,
        landed: 40,
        opened: 157,
        errors: 0,
        abandoned: 1,
        latencyMs: { p50: 2_100, p99: 4_900, max: 5_300 },
      },
      registration: {
        agents: 9_000,
        registered: 8_999,
        failed: 1,
        concurrency: 40,
        exhaustedRetries: 0,
        ms: 900_000,
        perSec: 10,
        peakRssMb: 1_400,
        rssAtEndMb: 1_200,
        clientRpcs: {},
        errorSample: [],
      },
    });
    for (const figure of [
      /agents registered \/ active .* 10000 \/ 1000 /,
      /idle agents registered .* 8999 of 9000 \(1\) in 15\.0 min, 10\.0\/s; 1200 MB \(1400 MB\)/,
      /steer until answered .* 2100 \/ 4900 \/ 5300 ms \(198 sent, 20\/min: 40 landed in the turn, 157 opened one/,
      /worker peak RSS \(timed run\) +550 MB/,
    ]) {
      expect(population).toMatch(figure);
    }
    const none = { perMinute: 0, due: 0, sent: 0, skipped: 0, answered: 0, landed: 0, opened: 0, errors: 0 };
    expect(scaleTable({ ...result('q'), steers: { ...none, abandoned: 0, latencyMs: null } })).toMatch(
      /steer until answered .* none sent/,
    );
    const svg = scaleSvg([result('run-one'), result('run-two')]);
    expect(svg).toContain('run-one');
    expect(svg).toContain('run-two');
    expect(svg.match(/<path /g)!.length).toBe(2 * 4); // RSS, p50, p99, turns/s per run
    expect(ticks(1_000)).toEqual([0, 200, 400, 600, 800, 1_000]);
    expect(ticks(0)).toEqual([0]);
  });
});
