/**
 * `npm run soak [-- --short] [--tasks N] [--steps-per-task N] [--kill-every N|0] [--interrupt-every N|0] [--out FILE] [--chart FILE] [--raw FILE]`: the soak (run.ts). Prints
 * its progress and a table (report.ts), writes the figures as JSON (default bench/soak-results.json) and the chart as
 * SVG (default bench/soak-chart.svg) and what it measured (bench/soak-raw.json, not kept in git), exits 1 when an invariant broke.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { soakChart, soakResults, soakTable } from './report.ts';
import { FULL, runSoak, SHORT } from './run.ts';

const { values } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    tasks: { type: 'string' },
    'steps-per-task': { type: 'string' },
    'kill-every': { type: 'string' },
    'interrupt-every': { type: 'string' },
    out: { type: 'string', default: join(PROJECT_ROOT, 'bench', 'soak-results.json') },
    chart: { type: 'string', default: join(PROJECT_ROOT, 'bench', 'soak-chart.svg') },
    raw: { type: 'string', default: join(PROJECT_ROOT, 'bench', 'soak-raw.json') },
  },
});

/** A positive integer flag, or a usage error naming it and its range. */
function count(flag: string, value: string | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    console.error(
      `--${flag}: ${JSON.stringify(value)} is not allowed (an integer from 1 to ${max.toLocaleString('en')})`,
    );
    process.exit(2);
  }
  return n;
}

const base = values.short ? SHORT : FULL;
const started = Date.now();
const raw = await runSoak({
  ...base,
  tasks: count('tasks', values.tasks, base.tasks, 100),
  stepsPerTask: count('steps-per-task', values['steps-per-task'], base.stepsPerTask, 100_000),
  killEvery: values['kill-every'] === '0' ? 0 : count('kill-every', values['kill-every'], base.killEvery, 100_000),
  // 0: no interrupt, so each task is one turn of all its steps.
  interruptEvery:
    values['interrupt-every'] === '0'
      ? 0
      : count('interrupt-every', values['interrupt-every'], base.interruptEvery, 100_000),
  log: (line) => console.log(`${line} (${((Date.now() - started) / 1000).toFixed(0)} s)`),
  // Saved before the read-back, so a read-back that fails loses no measurement.
  onMeasured: (measured) => writeFileSync(values.raw, JSON.stringify(measured)),
});
// Everything measured, so the figures can be computed again (not kept in git: megabytes).
writeFileSync(values.raw, JSON.stringify(raw));
const results = soakResults(raw);
console.log(`\n${soakTable(results)}`);
mkdirSync(dirname(values.out), { recursive: true });
writeFileSync(values.out, `${JSON.stringify({ options: raw.options, ...results }, null, 2)}\n`);
writeFileSync(values.chart, `${soakChart(results, raw.kills)}\n`);
console.log(`\nresults: ${values.out}\nchart: ${values.chart}`);
process.exit(Object.values(results.invariants).every(Boolean) ? 0 : 1);
