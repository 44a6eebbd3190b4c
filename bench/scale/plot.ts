/**
 * The scale benchmark's plot: for each run in the results file, worker RSS, turn latency minus the model's time (p50
 * solid, p99 dashed, log scale) and turns/s over time, drawn as an SVG (`scaleSvg`, pure) and rendered to PNG with
 * resvg. `npm run bench:scale:plot [-- --in FILE] [--out FILE] [--runs a,b]` draws it again from the results file.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Resvg } from '@resvg/resvg-js';
import { PLOT_FILE, readResults, RESULTS_FILE } from './files.ts';
import type { ScaleResult } from './results.ts';

const WIDTH = 1_200;
const PANEL_HEIGHT = 260;
const MARGIN = { left: 80, right: 300, top: 50, gap: 60 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f'];

type Run = Pick<ScaleResult, 'label' | 'series'>;
interface Line {
  run: number;
  points: [number, number][];
  dashed?: boolean;
}

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Round tick steps: 1, 2 or 5 times a power of ten, about `count` of them over [0, max]. */
export function ticks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0];
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  return Array.from({ length: Math.floor(max / step) + 1 }, (_, i) => i * step);
}

function panel(
  top: number,
  title: string,
  lines: Line[],
  options: { xMax: number; log?: boolean; unit: string },
): string {
  const width = WIDTH - MARGIN.left - MARGIN.right;
  const ys = lines.flatMap((l) => l.points.map(([, y]) => y)).filter((y) => Number.isFinite(y));
  const parts: string[] = [];
  const yMaxData = Math.max(1, ...ys);
  let yOf: (y: number) => number;
  let yTicks: number[];
  if (options.log) {
    const lo = Math.floor(Math.log10(Math.max(1, Math.min(...ys.filter((y) => y > 0), yMaxData))));
    const hi = Math.ceil(Math.log10(yMaxData));
    const span = Math.max(1, hi - lo);
    yOf = (y) => top + PANEL_HEIGHT - ((Math.log10(Math.max(y, 10 ** lo)) - lo) / span) * PANEL_HEIGHT;
    yTicks = Array.from({ length: span + 1 }, (_, i) => 10 ** (lo + i));
  } else {
    yTicks = ticks(yMaxData * 1.05);
    const yMax = Math.max(yTicks.at(-1)!, yMaxData);
    yOf = (y) => top + PANEL_HEIGHT - (y / yMax) * PANEL_HEIGHT;
  }
  const xOf = (x: number) => MARGIN.left + (x / Math.max(1, options.xMax)) * width;
  parts.push(`<text x="${MARGIN.left}" y="${top - 12}" font-size="16" font-weight="bold">${escape(title)}</text>`);
  parts.push(
    `<rect x="${MARGIN.left}" y="${top}" width="${width}" height="${PANEL_HEIGHT}" fill="none" stroke="#999"/>`,
  );
  for (const y of yTicks) {
    const py = yOf(y).toFixed(1);
    parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + width}" y1="${py}" y2="${py}" stroke="#e5e5e5"/>`);
    const label = y >= 1_000 && options.log ? `${y / 1_000} s` : `${y}${options.unit}`;
    parts.push(`<text x="${MARGIN.left - 8}" y="${py}" font-size="12" text-anchor="end" dy="4">${label}</text>`);
  }
  for (const minutes of ticks(options.xMax / 60, 8)) {
    const px = xOf(minutes * 60).toFixed(1);
    const bottom = top + PANEL_HEIGHT;
    parts.push(`<line x1="${px}" x2="${px}" y1="${top}" y2="${bottom}" stroke="#f0f0f0"/>`);
    parts.push(
      `<text x="${px}" y="${bottom + 16}" font-size="12" text-anchor="middle">${Number(minutes.toFixed(2))} min</text>`,
    );
  }
  for (const line of lines) {
    const points = line.points.filter(([, y]) => Number.isFinite(y) && (!options.log || y > 0));
    if (points.length < 2) continue;
    const d = points.map(([x, y], i) => `${i ? 'L' : 'M'}${xOf(x).toFixed(1)},${yOf(y).toFixed(1)}`).join('');
    const color = COLORS[line.run % COLORS.length]!;
    parts.push(
      `<path d="${d}" fill="none" stroke="${color}" stroke-width="1.6"${line.dashed ? ' stroke-dasharray="5,4"' : ''}/>`,
    );
  }
  return parts.join('\n');
}

/** The plot of `runs` as an SVG document. */
export function scaleSvg(runs: readonly Run[]): string {
  const xMax = Math.max(60, ...runs.flatMap((r) => r.series.map((s) => s.t)));
  const series = (pick: (s: Run['series'][number]) => number | undefined, run: Run): [number, number][] =>
    run.series.flatMap((s) => {
      const y = pick(s);
      return y === undefined ? [] : [[s.t, y] as [number, number]];
    });
  const rss: Line[] = runs.flatMap((run, i) => {
    const workers = Math.max(1, ...run.series.map((s) => s.workerRssMb.length));
    return Array.from({ length: workers }, (_, w) => ({
      run: i,
      points: series((s) => s.workerRssMb[w] || undefined, run),
      ...(w > 0 ? { dashed: true } : {}),
    }));
  });
  const latency: Line[] = runs.flatMap((run, i) => [
    { run: i, points: series((s) => s.overheadP50Ms, run) },
    { run: i, points: series((s) => s.overheadP99Ms, run), dashed: true },
  ]);
  const rate: Line[] = runs.map((run, i) => ({ run: i, points: series((s) => s.turnsPerSec, run) }));
  const tops = [0, 1, 2].map((k) => MARGIN.top + k * (PANEL_HEIGHT + MARGIN.gap));
  const height = tops[2]! + PANEL_HEIGHT + 50;
  const legend = runs.map((run, i) => {
    const y = MARGIN.top + 10 + i * 22;
    const x = WIDTH - MARGIN.right + 20;
    const color = COLORS[i % COLORS.length]!;
    return (
      `<line x1="${x}" x2="${x + 24}" y1="${y}" y2="${y}" stroke="${color}" stroke-width="3"/>` +
      `<text x="${x + 32}" y="${y + 4}" font-size="13">${escape(run.label)}</text>`
    );
  });
  const note = WIDTH - MARGIN.right + 20;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="DejaVu Sans, sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    panel(tops[0]!, 'Worker RSS (second worker dashed)', rss, { xMax, unit: ' MB' }),
    panel(tops[1]!, 'Turn latency minus model time: p50 solid, p99 dashed (log scale)', latency, {
      xMax,
      log: true,
      unit: ' ms',
    }),
    panel(tops[2]!, 'Turns completed per second', rate, { xMax, unit: '' }),
    ...legend,
    `<text x="${note}" y="${MARGIN.top + 20 + runs.length * 22}" font-size="11" fill="#555">` +
      `x: time since the first agent started</text>`,
    '</svg>',
  ].join('\n');
}

/** Renders the plot of `runs` to a PNG file. */
export function writePlot(runs: readonly Run[], path: string): void {
  const svg = scaleSvg(runs);
  const png = new Resvg(svg, { font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } }).render().asPng();
  writeFileSync(path, png);
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      in: { type: 'string', default: RESULTS_FILE },
      out: { type: 'string', default: PLOT_FILE },
      runs: { type: 'string' },
    },
    strict: true,
  });
  const all = readResults(values.in).runs;
  const wanted = values.runs?.split(',').map((s) => s.trim()) ?? Object.keys(all);
  const missing = wanted.filter((label) => !all[label]);
  if (missing.length) {
    console.error(`--runs: ${missing.join(', ')} not in ${values.in} (it has ${Object.keys(all).join(', ')})`);
    process.exit(2);
  }
  writePlot(
    wanted.map((label) => all[label]!),
    values.out,
  );
  console.log(`plot of ${wanted.length} run(s): ${values.out}`);
}
