/**
 * The scale benchmark's arithmetic, pure: which agents kept up with their schedule and which are stuck, the
 * Prometheus text the worker serves (counters, histograms and their quantiles), the result's shape and the table.
 */
import { percentile } from '../stats.ts';

/** An agent is progressing when it completed at least this share of its scheduled turns. */
export const PROGRESSING_SHARE = 0.9;

/** What the driver kept of one agent. */
export interface AgentTally {
  name: string;
  /** Messages due before the end of the sending window (and the one sent at a worker restart). */
  scheduled: number;
  /** Turns answered. */
  completed: number;
  /** Turns whose Update ended in an error. */
  errors: number;
  /** When it last completed a turn, or started when it has not (ms since the epoch). */
  lastProgressAt: number;
}

export interface Classification {
  progressing: number;
  progressingShare: number;
  /** Agents with scheduled turns left undone and no progress for `stuckAfterMs` at the end. */
  stuck: string[];
  /** Agents under {@link PROGRESSING_SHARE} of their scheduled turns. */
  behind: string[];
}

/**
 * Progressing: completed ≥ 90% of scheduled. Stuck: work left (completed < scheduled) and nothing completed for
 * `stuckAfterMs` before `endMs`. An agent can be behind without being stuck (slow) or, near the end, the reverse.
 */
export function classifyAgents(agents: readonly AgentTally[], endMs: number, stuckAfterMs: number): Classification {
  const behind = agents.filter((a) => a.completed < PROGRESSING_SHARE * a.scheduled).map((a) => a.name);
  const stuck = agents
    .filter((a) => a.completed < a.scheduled && endMs - a.lastProgressAt >= stuckAfterMs)
    .map((a) => a.name);
  const progressing = agents.length - behind.length;
  return { progressing, progressingShare: agents.length ? progressing / agents.length : 1, stuck, behind };
}

/** A sample's series: each metric name's label sets and values. */
export type Metrics = Map<string, { labels: Record<string, string>; value: number }[]>;

/** Prometheus' text exposition format (comments skipped; label values may hold escaped quotes). */
export function parsePrometheus(text: string): Metrics {
  const metrics: Metrics = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]!] = pair[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    const value = match[3] === '+Inf' ? Infinity : Number(match[3]);
    metrics.set(match[1]!, [...(metrics.get(match[1]!) ?? []), { labels, value }]);
  }
  return metrics;
}

/** The metric under any of `names` (with or without the _total suffix a counter may carry), summed over labels. */
export function metricSum(metrics: Metrics, ...names: string[]): number | undefined {
  for (const name of names) {
    const series = metrics.get(name) ?? metrics.get(`${name}_total`);
    if (series) return series.reduce((sum, s) => sum + s.value, 0);
  }
  return undefined;
}

/** A histogram's cumulative buckets (upper bound → count), summed over its label sets. */
export function histogramBuckets(metrics: Metrics, name: string): Map<number, number> | undefined {
  const series = metrics.get(`${name}_bucket`);
  if (!series) return undefined;
  const buckets = new Map<number, number>();
  for (const { labels, value } of series) {
    const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + value);
  }
  return buckets;
}

/** `later` minus `earlier`, bucket by bucket: the observations between two scrapes. */
export function bucketsBetween(later: Map<number, number>, earlier: Map<number, number> | undefined) {
  return new Map([...later].map(([le, count]) => [le, count - (earlier?.get(le) ?? 0)]));
}

/**
 * The bucket the quantile `q` (0–1) of cumulative buckets falls in, by its upper bound (Infinity past the last finite
 * one); undefined with no observation. The runtime's buckets are coarse (…, 1 s, 5 s, 10 s, 100 s): a value
 * interpolated inside one would be made up, so the bound is what is reported ("p99 ≤ 10 s").
 */
export function quantileBucket(buckets: Map<number, number>, q: number): number | undefined {
  const sorted = [...buckets].sort(([a], [b]) => a - b);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total <= 0) return undefined;
  return sorted.find(([, count]) => count >= q * total)![0];
}

/** One sample of the time series (every few seconds while the benchmark runs). */
export interface Sample {
  /** Seconds since the run started. */
  t: number;
  agentsStarted: number;
  turnsDone: number;
  /** Turns completed per second since the sample before. */
  turnsPerSec: number;
  /** Turns in flight (Update sent, reply not yet received). */
  inFlight: number;
  /** Resident memory of each worker process, MB. */
  workerRssMb: number[];
  /** CPU since the sample before, % of one core, by process kind. */
  cpuPct: { machine: number; worker: number; temporal: number; minio: number; postgres: number; driver: number };
  /** Latency of the turns completed since the sample before, minus the model's time (p50 / p99), ms. */
  overheadP50Ms?: number;
  overheadP99Ms?: number;
  /** Errors so far (Update errors and failed starts). */
  errors: number;
  /** Sticky cache hit rate since the sample before (worker metrics). */
  cacheHitRate?: number;
  /** Workflow task schedule-to-start mean since the sample before (worker metrics), ms. */
  scheduleToStartMs?: number;
  /** Activity schedule-to-start mean since the sample before (worker metrics), ms. */
  activityScheduleToStartMs?: number;
  /** Task slots in use at the sample, summed over the workers (worker metrics). */
  slotsUsed?: { workflow: number; activity: number };
  /** The client's gRPC calls so far. */
  rpcs: number;
}

export interface LatencySummary {
  p50: number;
  p99: number;
  max: number;
}

export function latencySummary(values: readonly number[]): LatencySummary | null {
  if (values.length === 0) return null;
  return { p50: percentile(values, 50)!, p99: percentile(values, 99)!, max: Math.max(...values) };
}

/** `--registered`: the idle agents' registration before the timed run (bench/scale/registration.ts). */
export interface RegistrationSummary {
  /** Idle agents asked for: registered − agents. */
  agents: number;
  /** Started and answered their one message. */
  registered: number;
  failed: number;
  /** Registered at a time: `--register-concurrency`, at most the workflow cache's size. */
  concurrency: number;
  /** Retries after RESOURCE_EXHAUSTED (beyond the client's own). */
  exhaustedRetries: number;
  ms: number;
  /** Agents registered per second. */
  perSec: number;
  /** The workers' larger peak RSS (VmHWM) at the end of the registration, and their larger RSS then, MB. */
  peakRssMb: number;
  rssAtEndMb: number;
  /** The client's gRPC calls during the registration, by method (not in the run's `clientRpcs`). */
  clientRpcs: Record<string, number>;
  /** The first few failures. */
  errorSample: string[];
}

/** `--steers-per-minute`: steers sent to active agents mid-turn, and the time until each one's Update answered. */
export interface SteerSummary {
  perMinute: number;
  /** Steers due in the sending window. */
  due: number;
  sent: number;
  /** Due when no active agent was in a turn: not sent. */
  skipped: number;
  /** Answered: landed in the turn (at its next step boundary) or opened a turn of its own (after its last step). */
  answered: number;
  landed: number;
  opened: number;
  errors: number;
  /** Still out when the run ended. */
  abandoned: number;
  /** From sending the Update to its answer, ms. */
  latencyMs: LatencySummary | null;
}

/** What `npm run bench:scale` writes for one run (bench/scale-results.json keeps every run under its label). */
export interface ScaleResult {
  label: string;
  at: string;
  commit: string;
  machine: { cpus: number; node: string };
  options: Record<string, unknown>;
  stack: string;
  /** Agents on the worker: the active ones and the idle ones (`--registered`; older runs: absent, all active). */
  registered: number;
  /** The active agents: sent a message every `--interval` s on average. */
  agents: number;
  workers: number;
  /**
   * The larger peak resident memory of the worker processes (VmHWM), MB. With idle agents registered first, the peak
   * of the timed run: VmHWM is set back to the RSS of the moment when the registration ends, and counts once it
   * rises above it; until then the largest RSS sampled (every 5 s) is the run's peak.
   */
  peakRssMb: number;
  peakRssMbPerWorker: number[];
  /**
   * The largest RSS sampled (every 5 s) from the end of the ramp to the end of sending, each worker's, MB: the worker's
   * memory with every active agent started (older runs: absent).
   */
  steadyRssMbPerWorker?: number[];
  /** Of the active agents (idle ones have nothing scheduled). */
  progressingShare: number;
  progressing: number;
  /** p99 of the steers' time until their Update answered, ms; null with no steer answered (older runs: absent). */
  steerP99Ms: number | null;
  steers?: SteerSummary;
  registration?: RegistrationSummary;
  /** Workflow runs Failed, Terminated or TimedOut. */
  failed: number;
  failedRuns: { workflowId: string; status: string }[];
  stuck: number;
  stuckAgents: string[];
  behindAgents: string[];
  /** Turns completed per second between the end of the ramp and the end of the sending window. */
  turnsPerSec: number;
  /** The highest rate over a 30-s stretch of the series. */
  peakTurnsPerSec: number;
  turns: { scheduled: number; completed: number; errors: number; withTool: number };
  /** Turn latency as the client saw it, its part waiting on the model, and the difference (ms). */
  latencyMs: { turn: LatencySummary | null; model: LatencySummary | null; overhead: LatencySummary | null };
  /** Average CPU over the sending window, % of one core (200% is the whole machine). */
  cpuPct: Sample['cpuPct'];
  /** Sticky cache hits / (hits + misses) over the run (worker metrics); null when not measured. */
  cacheHitRate: number | null;
  /**
   * Workflow task schedule-to-start latency (worker metrics): its mean, and the upper bounds of the buckets its p50
   * and p99 fall in (null: past the last finite bound); the activities' mean. Ms; null when not measured.
   */
  scheduleToStartMs: { mean: number; p50UpTo: number | null; p99UpTo: number | null; activityMean: number } | null;
  /** The client's gRPC calls by method (the client library's looks at agents while their turns are out included). */
  clientRpcs: Record<string, number>;
  /** History of the runs that continued as new, bytes (and events). */
  historyPerRun: { runs: number; bytesP50: number; bytesMax: number; eventsP50: number } | null;
  compactions: { total: number; agents: number; summaries: number };
  continuedAsNew: { runs: number; agents: number };
  errors: {
    client: Record<string, number>;
    serverLog: number;
    serverTimeouts: number;
    serverLogSample: string[];
    /** Worker processes that exited while nobody stopped them: how, and the end of their output (older runs: none). */
    workerCrashes?: string[];
  };
  restart?: {
    atS: number;
    /** From the stop signal until the new worker polled. */
    downMs: number;
    /** Of it, until the old worker exited (it finishes its tasks in flight first). */
    stopMs?: number;
    /** Per agent: from the restart to its first turn completed after it. */
    recoveryMs: LatencySummary | null;
    agents: number;
    recoveredWithin30s: number;
  };
  /** `--surge`: every agent sent a message at once, the worker running throughout (the restart's floor). */
  surge?: {
    atS: number;
    /** Per agent: from the surge to its first turn completed after it. */
    recoveryMs: LatencySummary | null;
    agents: number;
    recoveredWithin30s: number;
  };
  /** What did not go as planned (turns abandoned at the end, a read that failed). */
  notes: string[];
  series: Sample[];
}

/** Each worker's largest RSS sampled from `fromS` to `untilS` (seconds of the run), MB; 0 with no sample there. */
export function steadyRss(series: readonly Sample[], fromS: number, untilS: number): number[] {
  const inside = series.filter((s) => s.t >= fromS && s.t <= untilS);
  const workers = Math.max(0, ...series.map((s) => s.workerRssMb.length));
  return Array.from({ length: workers }, (_, i) => Math.max(0, ...inside.map((s) => s.workerRssMb[i] ?? 0)));
}

/** The rate over the best `windowS`-second stretch of the series. */
export function peakRate(series: readonly Sample[], windowS: number): number {
  let best = 0;
  for (let i = 0; i < series.length; i++) {
    for (let j = i + 1; j < series.length; j++) {
      const span = series[j]!.t - series[i]!.t;
      if (span < windowS) continue;
      best = Math.max(best, (series[j]!.turnsDone - series[i]!.turnsDone) / span);
      break;
    }
  }
  return best;
}

const fixed = (value: number | undefined | null, digits = 0) =>
  value === undefined || value === null ? '—' : value.toFixed(digits);

const upTo = (ms: number | null) =>
  ms === null ? 'over the last bucket' : `≤ ${ms >= 1_000 ? `${ms / 1_000} s` : `${ms} ms`}`;

/** How long the agents took to answer again after a restart or a surge: "p50 …, max …; N of M within 30 s". */
function recoveryText(r: { recoveryMs: LatencySummary | null; agents: number; recoveredWithin30s: number }): string {
  const times = r.recoveryMs
    ? `p50 ${fixed(r.recoveryMs.p50 / 1000, 1)} s, max ${fixed(r.recoveryMs.max / 1000, 1)} s`
    : '—';
  return `${times}; ${r.recoveredWithin30s} of ${r.agents} within 30 s`;
}

/** The registration's row: how many, how fast, what failed, the worker's memory at its end. */
function registrationRow(g: RegistrationSummary): [string, string] {
  return [
    'idle agents registered (failed), time, rate; worker RSS at its end (peak)',
    `${g.registered} of ${g.agents} (${g.failed}) in ${fixed(g.ms / 60_000, 1)} min, ${fixed(g.perSec, 1)}/s` +
      `${g.exhaustedRetries ? `, ${g.exhaustedRetries} retries on RESOURCE_EXHAUSTED` : ''}; ` +
      `${fixed(g.rssAtEndMb)} MB (${fixed(g.peakRssMb)} MB)`,
  ];
}

/** The steers' row: their latency, then how many were sent and where they landed. */
function steersCell(s: SteerSummary | undefined): string {
  if (!s) return '—';
  if (s.perMinute === 0) return 'none sent (--steers-per-minute 0)';
  const latency = s.latencyMs
    ? `${fixed(s.latencyMs.p50)} / ${fixed(s.latencyMs.p99)} / ${fixed(s.latencyMs.max)} ms`
    : '—';
  return (
    `${latency} (${s.sent} sent, ${s.perMinute}/min: ${s.landed} landed in the turn, ${s.opened} opened one, ` +
    `${s.errors} errors, ${s.abandoned} abandoned; ${s.skipped} due with no agent in a turn)`
  );
}

/** The table `npm run bench:scale` prints, one row a figure. */
export function scaleTable(r: ScaleResult): string {
  const lat = (s: LatencySummary | null) => (s ? `${fixed(s.p50)} / ${fixed(s.p99)} ms` : '—');
  const rows: [string, string][] = [
    [
      'agents registered / active (workers, stack)',
      `${r.registered} / ${r.agents} (${r.workers} worker${r.workers > 1 ? 's' : ''}, ${r.stack})`,
    ],
    ...(r.registration ? [registrationRow(r.registration)] : []),
    [
      'active agents progressing (≥ 90% of scheduled turns)',
      `${r.progressing} of ${r.agents} (${(r.progressingShare * 100).toFixed(1)}%)`,
    ],
    ['stuck', String(r.stuck)],
    ['workflows Failed / Terminated', String(r.failed)],
    ['turns scheduled / completed / errors', `${r.turns.scheduled} / ${r.turns.completed} / ${r.turns.errors}`],
    ['turns/s (steady state; best 30 s)', `${fixed(r.turnsPerSec, 1)} (${fixed(r.peakTurnsPerSec, 1)})`],
    ['turn latency p50 / p99', lat(r.latencyMs.turn)],
    ['  of it the model p50 / p99', lat(r.latencyMs.model)],
    ['  minus the model p50 / p99', lat(r.latencyMs.overhead)],
    ['steer until answered p50 / p99 / max', steersCell(r.steers)],
    [
      r.registration ? 'worker peak RSS (timed run)' : 'worker peak RSS',
      r.peakRssMbPerWorker.map((mb) => `${fixed(mb)} MB`).join(' + '),
    ],
    ...(r.steadyRssMbPerWorker
      ? [
          [
            'worker RSS, largest sampled after the ramp',
            r.steadyRssMbPerWorker.map((mb) => `${fixed(mb)} MB`).join(' + '),
          ] as [string, string],
        ]
      : []),
    [
      'CPU % of a core: worker / Temporal / MinIO / PostgreSQL / driver',
      [r.cpuPct.worker, r.cpuPct.temporal, r.cpuPct.minio, r.cpuPct.postgres, r.cpuPct.driver]
        .map((v) => fixed(v))
        .join(' / ') + ` (the whole machine, others' work included: ${fixed(r.cpuPct.machine)})`,
    ],
    [
      'client gRPC calls (per completed turn)',
      `${Object.values(r.clientRpcs).reduce((a, b) => a + b, 0)} ` +
        `(${fixed(Object.values(r.clientRpcs).reduce((a, b) => a + b, 0) / Math.max(1, r.turns.completed), 1)}; ` +
        Object.entries(r.clientRpcs)
          .sort(([, a], [, b]) => b - a)
          .slice(0, 3)
          .map(([method, n]) => `${method} ${n}`)
          .join(', ') +
        ')',
    ],
    ['workflow cache hit rate', r.cacheHitRate === null ? '—' : `${(r.cacheHitRate * 100).toFixed(1)}%`],
    [
      'workflow task schedule-to-start mean (p50, p99 at most)',
      r.scheduleToStartMs
        ? `${fixed(r.scheduleToStartMs.mean)} ms (${upTo(r.scheduleToStartMs.p50UpTo)}, ` +
          `${upTo(r.scheduleToStartMs.p99UpTo)}); activities ${fixed(r.scheduleToStartMs.activityMean)} ms`
        : '—',
    ],
    [
      'history per run (continued as new) p50 / max',
      r.historyPerRun
        ? `${fixed(r.historyPerRun.bytesP50 / 1024, 1)} / ${fixed(r.historyPerRun.bytesMax / 1024, 1)} KB ` +
          `(${fixed(r.historyPerRun.eventsP50)} events, ${r.historyPerRun.runs} runs)`
        : '—',
    ],
    [
      'agents compacted / continued as new',
      `${r.compactions.agents} / ${r.continuedAsNew.agents} of ${r.registered} ` +
        `(${r.compactions.total} compactions, ${r.compactions.summaries} summaries, ${r.continuedAsNew.runs} runs)`,
    ],
    [
      'errors: client / server log / server timeouts',
      `${Object.values(r.errors.client).reduce((a, b) => a + b, 0)} / ${r.errors.serverLog} / ${r.errors.serverTimeouts}`,
    ],
  ];
  if (r.errors.workerCrashes?.length) {
    rows.push(['WORKER CRASHES', `${r.errors.workerCrashes.length}: ${r.errors.workerCrashes[0]!.split('\n')[0]}`]);
  }
  if (r.restart) {
    rows.push([
      'worker restart: down / every agent answered again',
      `${fixed(r.restart.downMs / 1000, 1)} s${r.restart.stopMs !== undefined ? ` (stopping ${fixed(r.restart.stopMs / 1000, 1)} s)` : ''} / ${recoveryText(r.restart)}`,
    ]);
  }
  if (r.surge) {
    rows.push(['message surge (no restart): every agent answered', recoveryText(r.surge)]);
  }
  for (const note of r.notes) rows.push(['note', note]);
  const width = Math.max(...rows.map(([name]) => name.length));
  return rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
}
