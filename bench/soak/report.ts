/**
 * The soak's figures, pure: what `npm run soak` writes to bench/soak-results.json, the table it prints (and
 * BENCHMARKS.md keeps), and its chart (an SVG of step overhead, worker RSS and context tokens against steps).
 *
 * A step's overhead is its wall time minus the model's and the tool's own: from the moment the model was asked for
 * step s to the moment it was asked for step s+1, less the time the model took to answer that request and the time
 * the `work` tool ran. Windows are `sampleEvery` steps; "early" is the second window (the first holds the start),
 * "late" the last; RSS and plan time compare the end with the tenth of the run (step 1,000 of 10,000).
 */
import { percentile } from '../stats.ts';
import type { SoakRaw } from './run.ts';
import type { Sample } from './sample.ts';

/** The stored bodies themselves: what S3 per step leaves out (they grow with what the tools return, by design). */
const BODY_KINDS = new Set(['messages', 'originals']);

export interface SoakWindow {
  from: number;
  to: number;
  overheadP50Ms?: number;
  overheadP99Ms?: number;
  planP50Ms?: number;
  plans: number;
  sample?: Sample;
}

export interface SoakResults {
  steps: number;
  kills: number;
  serverKills: number;
  storageDowns: number;
  interrupts: number;
  resumes: number;
  steersSent: number;
  lost: number;
  duplicated: number;
  streamGaps: number;
  steersOutOfOrder: number;
  invalidRequests: number;
  toolCalls: number;
  toolEffects: number;
  invariants: Record<string, boolean>;
  violations: Record<string, string[]>;
  /** Step overhead p50 of the last window against the second. */
  overheadRatio?: number;
  overheadP50MsEarly?: number;
  overheadP50MsLate?: number;
  /** Worker RSS at the end against at a tenth of the run (and the plan time's p50, the same way). */
  rssRatio?: number;
  planRatio?: number;
  searchP99MsEnd?: number;
  searchIndexBytesEnd?: number;
  maxRunHistoryBytes?: number;
  maxRunEvents?: number;
  runs?: number;
  compactions?: number;
  /** S3 bytes written per step (bodies excluded) in the last tenth of the run against the first. */
  s3BytesPerStepRatio?: number;
  durationMs: number;
  windows: SoakWindow[];
}

const ratio = (late: number | undefined, early: number | undefined) =>
  late !== undefined && early !== undefined && early > 0 ? late / early : undefined;

/** Each step's overhead (ms), by step number; the last step has none (no next request). */
export function overheads(raw: Pick<SoakRaw, 'steps' | 'toolMs'>): Map<number, number> {
  const out = new Map<number, number>();
  for (let i = 0; i + 1 < raw.steps.length; i++) {
    const step = raw.steps[i]!;
    const wall = raw.steps[i + 1]!.askedAt - step.askedAt;
    out.set(step.step, Math.max(0, wall - step.modelMs - (raw.toolMs[step.callId] ?? 0)));
  }
  return out;
}

const nonBodyBytes = (sample: Sample | undefined) =>
  sample?.s3 === undefined
    ? undefined
    : Object.entries(sample.s3).reduce((sum, [kind, v]) => sum + (BODY_KINDS.has(kind) ? 0 : v.bytes), 0);

/** The sample nearest to step `step` that read storage. */
function sampleNear(samples: readonly Sample[], step: number, need: (s: Sample) => boolean): Sample | undefined {
  let best: Sample | undefined;
  for (const s of samples) {
    if (!need(s)) continue;
    if (!best || Math.abs(s.step - step) < Math.abs(best.step - step)) best = s;
  }
  return best;
}

export function soakResults(raw: SoakRaw): SoakResults {
  const every = raw.options.sampleEvery;
  const total = raw.steps.length;
  const perStep = overheads(raw);
  const askedAt = (step: number) => raw.steps[Math.min(step, total) - 1]?.askedAt ?? Number.POSITIVE_INFINITY;
  const windows: SoakWindow[] = [];
  for (let from = 1; from <= total; from += every) {
    const to = Math.min(total, from + every - 1);
    const values = [...perStep].filter(([s]) => s >= from && s <= to).map(([, ms]) => ms);
    const [start, end] = [askedAt(from), to < total ? askedAt(to + 1) : Number.POSITIVE_INFINITY];
    const plans = raw.activities.filter((a) => a.name === 'planCompaction' && a.ok && a.at >= start && a.at < end);
    const sample = raw.samples.find((s) => s.step >= to && s.step < to + every);
    windows.push({
      from,
      to,
      ...(values.length ? { overheadP50Ms: percentile(values, 50)!, overheadP99Ms: percentile(values, 99)! } : {}),
      ...(plans.length
        ? {
            planP50Ms: percentile(
              plans.map((p) => p.ms),
              50,
            )!,
          }
        : {}),
      plans: plans.length,
      ...(sample ? { sample } : {}),
    });
  }
  const early = windows[1] ?? windows[0];
  const late = windows.at(-1);
  const tenth = Math.max(2 * every, Math.round(total / 10));
  const plansIn = (from: number, to: number) =>
    raw.activities
      .filter((a) => a.name === 'planCompaction' && a.ok && a.at >= askedAt(from) && a.at < askedAt(to))
      .map((a) => a.ms);
  const last = raw.samples.at(-1);
  const rssAt = sampleNear(raw.samples, tenth, (s) => s.rssMb !== undefined);
  const rssEnd = [...raw.samples].reverse().find((s) => s.rssMb !== undefined);
  const s3 = (s: Sample) => s.s3 !== undefined;
  const [a0, a1] = [sampleNear(raw.samples, every, s3), sampleNear(raw.samples, tenth, s3)];
  const [b0, b1] = [sampleNear(raw.samples, total - tenth, s3), [...raw.samples].reverse().find(s3)];
  const perStepBytes = (x: Sample | undefined, y: Sample | undefined) =>
    x && y && y.step > x.step ? (nonBodyBytes(y)! - nonBodyBytes(x)!) / (y.step - x.step) : undefined;
  const searchEnd = [...raw.samples].reverse().find((s) => s.searchP99Ms !== undefined);
  const max = (pick: (s: Sample) => number | undefined) => {
    const values = raw.samples.flatMap((s) => (pick(s) === undefined ? [] : [pick(s)!]));
    return values.length ? Math.max(...values) : undefined;
  };
  const invariants = Object.fromEntries(raw.invariants.map((i) => [i.name, i.passed]));
  const violations = Object.fromEntries(raw.invariants.filter((i) => !i.passed).map((i) => [i.name, i.violations]));
  const optional = (key: string, value: number | undefined) => (value === undefined ? {} : { [key]: value });
  return {
    steps: total,
    kills: raw.kills.length,
    serverKills: raw.serverKills,
    storageDowns: raw.storageDowns,
    interrupts: raw.interrupts,
    resumes: raw.resumes,
    steersSent: raw.steers.sent,
    lost: raw.lost,
    duplicated: raw.duplicated,
    streamGaps: raw.streamGaps,
    steersOutOfOrder: raw.steersOutOfOrder,
    invalidRequests: raw.invalidRequests,
    toolCalls: raw.toolCalls,
    toolEffects: raw.toolEffects,
    invariants,
    violations,
    ...optional('overheadRatio', ratio(late?.overheadP50Ms, early?.overheadP50Ms)),
    ...optional('overheadP50MsEarly', early?.overheadP50Ms),
    ...optional('overheadP50MsLate', late?.overheadP50Ms),
    ...optional('rssRatio', ratio(rssEnd?.rssMb, rssAt?.rssMb)),
    ...optional(
      'planRatio',
      ratio(
        percentile(plansIn(total - tenth, total), 50),
        percentile(plansIn(Math.ceil(tenth / 2), tenth + Math.ceil(tenth / 2)), 50),
      ),
    ),
    ...optional('searchP99MsEnd', searchEnd?.searchP99Ms),
    ...optional('searchIndexBytesEnd', last?.s3?.search?.bytes),
    ...optional(
      'maxRunHistoryBytes',
      max((s) => s.historyBytes),
    ),
    ...optional(
      'maxRunEvents',
      max((s) => s.historyEvents),
    ),
    ...optional(
      'runs',
      max((s) => s.runs),
    ),
    ...optional(
      'compactions',
      max((s) => s.compactions),
    ),
    ...optional('s3BytesPerStepRatio', ratio(perStepBytes(b0, b1), perStepBytes(a0, a1))),
    durationMs: raw.durationMs,
    windows,
  };
}

const fixed = (n: number | undefined, digits = 0) => (n === undefined ? '—' : n.toFixed(digits));

/** The table `npm run soak` prints: one row per tenth of the run, then the figures and the invariants. */
export function soakTable(results: SoakResults): string {
  const rows: string[] = [
    '| steps | overhead p50 (ms) | plan p50 (ms) | worker RSS (MB) | heap (MB) | history (events / KB) | runs | context tokens | S3 objects (non-body / all) | search p99 (ms) | index (KB) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const stride = Math.max(1, Math.round(results.windows.length / 10));
  for (let i = 0; i < results.windows.length; i += stride) {
    const w = results.windows[Math.min(results.windows.length - 1, i + stride - 1)]!;
    const s = w.sample;
    const objects = s?.s3 ? Object.values(s.s3).reduce((n, v) => n + v.objects, 0) : undefined;
    const nonBody = s?.s3
      ? Object.entries(s.s3).reduce((n, [k, v]) => n + (BODY_KINDS.has(k) ? 0 : v.objects), 0)
      : undefined;
    rows.push(
      `| ${w.to} | ${fixed(w.overheadP50Ms)} | ${fixed(w.planP50Ms)} | ${fixed(s?.rssMb)} | ${fixed(s?.heapMb)} | ` +
        `${s?.historyEvents ?? '—'} / ${fixed(s?.historyBytes === undefined ? undefined : s.historyBytes / 1024)} | ` +
        `${s?.runs ?? '—'} | ${s?.contextTokens ?? '—'} | ${nonBody ?? '—'} / ${objects ?? '—'} | ` +
        `${fixed(s?.searchP99Ms, 1)} | ${fixed(s?.s3?.search ? s.s3.search.bytes / 1024 : undefined)} |`,
    );
  }
  const r = results;
  return [
    ...rows,
    '',
    `steps ${r.steps} in ${(r.durationMs / 60_000).toFixed(1)} min; worker kills ${r.kills}, Temporal server kills ` +
      `${r.serverKills}, MinIO down ${r.storageDowns}; interrupts ${r.interrupts} (resumed ${r.resumes}), steers ${r.steersSent}`,
    `overhead p50 ${fixed(r.overheadP50MsEarly, 1)} → ${fixed(r.overheadP50MsLate, 1)} ms (${fixed(r.overheadRatio, 2)}×); ` +
      `RSS ${fixed(r.rssRatio, 2)}×; plan ${fixed(r.planRatio, 2)}×; S3 bytes per step ${fixed(r.s3BytesPerStepRatio, 2)}×; ` +
      `search p99 at the end ${fixed(r.searchP99MsEnd, 1)} ms`,
    `largest run: ${r.maxRunEvents ?? '—'} events, ${fixed(r.maxRunHistoryBytes === undefined ? undefined : r.maxRunHistoryBytes / 1024)} KB; ` +
      `runs ${r.runs ?? '—'}, compactions ${r.compactions ?? '—'}`,
    `lost ${r.lost}, duplicated ${r.duplicated}, stream gaps ${r.streamGaps}, steers out of order ${r.steersOutOfOrder}, ` +
      `invalid requests ${r.invalidRequests}, tool calls ${r.toolCalls} with ${r.toolEffects} effects`,
    ...Object.entries(r.invariants).map(([name, held]) => `${held ? 'held  ' : 'BROKEN'} ${name}`),
    ...Object.entries(r.violations).flatMap(([name, lines]) => [`${name}:`, ...lines.map((l) => `  ${l}`)]),
  ].join('\n');
}

/** One panel of the chart: a polyline of (step, value) in its own band. */
function panel(
  points: { x: number; y: number }[],
  opts: { top: number; height: number; width: number; left: number; maxX: number; title: string; color: string },
): string {
  if (points.length === 0) return '';
  const highest = Math.max(...points.map((p) => p.y));
  const maxY = highest * 1.1 || 1;
  const sx = (x: number) => opts.left + (x / opts.maxX) * opts.width;
  const sy = (y: number) => opts.top + opts.height - (y / maxY) * opts.height;
  const line = points.map((p) => `${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
  return [
    `<text x="${opts.left}" y="${opts.top - 6}" font-size="12">${opts.title} (highest ${highest.toFixed(0)})</text>`,
    `<line x1="${opts.left}" y1="${opts.top + opts.height}" x2="${opts.left + opts.width}" y2="${opts.top + opts.height}" stroke="#999"/>`,
    `<line x1="${opts.left}" y1="${opts.top}" x2="${opts.left}" y2="${opts.top + opts.height}" stroke="#999"/>`,
    `<text x="${opts.left - 4}" y="${opts.top + 10}" font-size="10" text-anchor="end">${maxY.toFixed(0)}</text>`,
    `<text x="${opts.left - 4}" y="${opts.top + opts.height}" font-size="10" text-anchor="end">0</text>`,
    `<polyline fill="none" stroke="${opts.color}" stroke-width="1.5" points="${line}"/>`,
  ].join('\n');
}

/** The chart: step overhead p50, worker RSS and context tokens against steps; worker kills as ticks. */
export function soakChart(results: SoakResults, kills: readonly number[] = []): string {
  const [width, left, height] = [640, 60, 120];
  const maxX = Math.max(1, results.steps);
  const pick = (f: (w: SoakWindow) => number | undefined) =>
    results.windows.flatMap((w) => (f(w) === undefined ? [] : [{ x: w.to, y: f(w)! }]));
  const panels = [
    { title: 'step overhead p50 (ms)', color: '#c0392b', points: pick((w) => w.overheadP50Ms) },
    { title: 'worker RSS (MB)', color: '#2471a3', points: pick((w) => w.sample?.rssMb) },
    { title: 'context tokens', color: '#1e8449', points: pick((w) => w.sample?.contextTokens) },
  ];
  const body = panels.map((p, i) =>
    panel(p.points, { top: 30 + i * (height + 40), height, width, left, maxX, title: p.title, color: p.color }),
  );
  const bottom = 30 + panels.length * (height + 40) - 20;
  const ticks = kills.map((k) => {
    const x = left + (k / maxX) * width;
    return `<line x1="${x.toFixed(1)}" y1="${bottom - 6}" x2="${x.toFixed(1)}" y2="${bottom}" stroke="#000"/>`;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 20}" height="${bottom + 30}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...body,
    ...ticks,
    `<text x="${left}" y="${bottom + 20}" font-size="11">steps (0 – ${maxX}); ticks: worker kill -9</text>`,
    '</svg>',
  ].join('\n');
}
