/**
 * The fidelity table: one row per session × window × preset, then the issue's targets (issue 13) checked against
 * the rows.
 */
import type { RunResult } from './measure.ts';

interface Column {
  title: string;
  align: 'left' | 'right';
  cell: (r: RunResult) => string;
}

function pct(value: number | null): string {
  return value === null ? '–' : `${Math.floor(value)}%`;
}

/** USD with four decimals: a replay's cost is cents. */
function usd(value: number): string {
  return `$${value.toFixed(4)}`;
}

/** 16000 → 16k, 128000 → 128k, 8192 → 8192. */
export function windowLabel(window: number): string {
  return window % 1000 === 0 ? `${window / 1000}k` : String(window);
}

/** Strategies with the number of compactions that used each, most used first, e.g. `summarize×6 halve×1`. */
export function strategiesLabel(byStrategy: Record<string, number>): string {
  return Object.entries(byStrategy)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([name, count]) => `${name}×${count}`)
    .join(' ');
}

const COLUMNS: Column[] = [
  { title: 'session', align: 'left', cell: (r) => r.session },
  { title: 'window', align: 'right', cell: (r) => windowLabel(r.window) },
  { title: 'preset', align: 'left', cell: (r) => r.preset },
  { title: 'steps', align: 'right', cell: (r) => `${r.replayedSteps}/${r.recordedSteps}` },
  { title: 'compr', align: 'right', cell: (r) => String(r.compactions) },
  { title: 'summ', align: 'right', cell: (r) => String(r.summaries) },
  { title: 'nosum', align: 'right', cell: (r) => String(r.removedWithoutSummary) },
  { title: 'facts min/mean', align: 'right', cell: (r) => `${pct(r.facts.minPct)} / ${pct(r.facts.meanPct)}` },
  {
    title: 'findable',
    align: 'right',
    cell: (r) =>
      r.findable === undefined || r.findable.missing === 0 ? '—' : `${r.findable.found}/${r.findable.missing}`,
  },
  {
    title: 'pins',
    align: 'right',
    cell: (r) => (r.pins === undefined ? '—' : `${r.pins.verbatim}/${r.pins.requests}`),
  },
  {
    title: 'max req',
    align: 'right',
    cell: (r) => `${r.maxRequestTokens} (${(r.maxRequestTokens / r.window).toFixed(2)})`,
  },
  { title: 'over', align: 'right', cell: (r) => (r.requestsOverWindow === null ? '≥1' : String(r.requestsOverWindow)) },
  {
    title: 'sent (floor)',
    align: 'right',
    cell: (r) =>
      `${r.tokensRatio.toFixed(2)}${r.tokensRatioFloor !== undefined ? ` (${r.tokensRatioFloor.toFixed(2)})` : ''}`,
  },
  {
    title: 'cost (× all)',
    align: 'right',
    cell: (r) =>
      r.cost === null
        ? '–'
        : `${usd(r.cost)}${r.costWithoutCompaction ? ` (${(r.cost / r.costWithoutCompaction).toFixed(2)})` : ''}`,
  },
  {
    title: 'all+cache',
    align: 'right',
    cell: (r) => (r.costWithoutCompaction === null ? '–' : usd(r.costWithoutCompaction)),
  },
  {
    title: 'floor (× all)',
    align: 'right',
    cell: (r) =>
      r.costFloor === null || r.costFloor === undefined
        ? '–'
        : `${usd(r.costFloor)}${r.costWithoutCompaction ? ` (${(r.costFloor / r.costWithoutCompaction).toFixed(2)})` : ''}`,
  },
  { title: 'cached', align: 'right', cell: (r) => (r.cachedInputShare === null ? '–' : pct(r.cachedInputShare * 100)) },
  { title: 'pairs', align: 'right', cell: (r) => String(r.toolPairViolations) },
  { title: 'reload', align: 'right', cell: (r) => `${r.reload.identical}/${r.reload.total}` },
  { title: 'time', align: 'right', cell: (r) => `${(r.durationMs / 1000).toFixed(1)}s` },
  { title: 'strategies', align: 'left', cell: (r) => (r.error ? `FAILED: ${r.error}` : strategiesLabel(r.byStrategy)) },
];

/** The rows as an aligned plain-text table with a header line. */
export function renderTable(results: readonly RunResult[]): string {
  const cells = results.map((r) => COLUMNS.map((c) => c.cell(r)));
  const widths = COLUMNS.map((c, i) => Math.max(c.title.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => {
        if (i === COLUMNS.length - 1) return v;
        return COLUMNS[i]!.align === 'left' ? v.padEnd(widths[i]!) : v.padStart(widths[i]!);
      })
      .join('  ')
      .trimEnd();
  return [line(COLUMNS.map((c) => c.title)), ...cells.map(line)].join('\n');
}

/** One of the issue's targets, and the rows that miss it. */
export interface TargetCheck {
  target: string;
  rows: number;
  missed: string[];
}

function rowName(r: RunResult): string {
  return `${r.session} ${windowLabel(r.window)} ${r.preset}`;
}

/** The targets of issue 13 that `npm run fidelity` measures, each with the rows that miss it. */
export function checkTargets(results: readonly RunResult[]): TargetCheck[] {
  const check = (target: string, rows: readonly RunResult[], missed: (r: RunResult) => boolean): TargetCheck => ({
    target,
    rows: rows.length,
    missed: rows.filter(missed).map(rowName),
  });
  const defaults = results.filter((r) => r.preset === 'default');
  return [
    check('every replay ran every recorded step', results, (r) => !!r.error || r.replayedSteps < r.recordedSteps),
    check('every preset: 0 requests over the window', results, (r) => r.requestsOverWindow !== 0),
    check('every preset: 0 tool-pair violations', results, (r) => r.toolPairViolations > 0),
    check('default: 0 compactions without a summary', defaults, (r) => r.removedWithoutSummary > 0),
    check('default: ≥ 95% of facts kept after every compaction', defaults, (r) => (r.facts.minPct ?? 100) < 95),
    check(
      'default: every fact missing after a compaction findable by context_search (top 5)',
      defaults,
      (r) => r.findable !== undefined && r.findable.found < r.findable.missing,
    ),
    check(
      'every preset: the pin verbatim in every request after it, through every compaction',
      results,
      (r) => r.pins !== undefined && r.pins.verbatim < r.pins.requests,
    ),
    check('default: tokens sent ≤ 0.5× sending everything', defaults, (r) => r.tokensRatio > 0.5),
    check('default: every removed item reloads byte-identical', defaults, (r) => r.reload.identical < r.reload.total),
  ];
}

/** The target checks as lines: met, or missed with the rows that miss it. */
export function renderTargets(checks: readonly TargetCheck[]): string {
  return checks
    .map((c) =>
      c.missed.length === 0
        ? `  met     ${c.target} (${c.rows} rows)`
        : `  MISSED  ${c.target}: ${c.missed.length} of ${c.rows} rows (${c.missed.join('; ')})`,
    )
    .join('\n');
}

/** The Temporal history the replays left against their recordings' bytes (issue 29's target: at most 2×). */
export function historyLine(results: readonly RunResult[]): string {
  const measured = results.filter((r) => r.history !== undefined);
  if (measured.length === 0) return 'Temporal history: not reported';
  const ratios = measured.map((r) => r.history!.ratio);
  const bytes = measured.reduce((sum, r) => sum + r.history!.bytes, 0);
  const own = measured.reduce((sum, r) => sum + r.history!.sessionBytes, 0);
  return (
    `Temporal history: ${(bytes / own).toFixed(2)}× the recordings' own bytes over ${measured.length} replays ` +
    `(${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}× each)`
  );
}
