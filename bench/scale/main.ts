/**
 * `npm run bench:scale -- [--agents N] [--registered R] [--register-concurrency C] [--steers-per-minute K]
 * [--minutes M] [--interval S] [--ramp S] [--burst] [--cache N|quarter] [--workers 1|2] [--restart | --surge]
 * [--stack dev|cluster] [--window T] [--label NAME] [--out FILE] [--plot FILE]`: the scale benchmark
 * (bench/scale/run.ts). `--agents` are active; with `--registered` above it, the rest are idle agents registered
 * before the timed run (bench/scale/registration.ts). Prints a progress line every few seconds and a table at the
 * end, merges the run into the results file under its label (default bench/scale-results.json: the latest run at the
 * top level, every run under `runs`), and draws the plot of every run in the file (default bench/scale-plot.png).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { mergeResults, PLOT_FILE, readResults, RESULTS_FILE } from './files.ts';
import { writePlot } from './plot.ts';
import { scaleTable } from './results.ts';
import { DEFAULTS, runScale } from './run.ts';

/** Agents in all, the idle ones included (`--registered`). */
const MAX_REGISTERED = 20_000;

function usage(message: string): never {
  console.error(`bench:scale: ${message}`);
  process.exit(2);
}

/** An integer flag within [min, max], or a usage error naming it and the range (`range`: the range in words). */
function int(
  flag: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
  range = `an integer from ${min} to ${max}`,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max)
    usage(`--${flag}: ${JSON.stringify(value)} is not allowed (${range})`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      agents: { type: 'string' },
      registered: { type: 'string' },
      'register-concurrency': { type: 'string' },
      'steers-per-minute': { type: 'string' },
      minutes: { type: 'string' },
      interval: { type: 'string' },
      ramp: { type: 'string' },
      burst: { type: 'boolean', default: false },
      cache: { type: 'string' },
      workers: { type: 'string' },
      restart: { type: 'boolean', default: false },
      surge: { type: 'boolean', default: false },
      stack: { type: 'string', default: 'dev' },
      window: { type: 'string' },
      seed: { type: 'string' },
      label: { type: 'string' },
      out: { type: 'string', default: RESULTS_FILE },
      plot: { type: 'string', default: PLOT_FILE },
    },
    strict: true,
  });
  if (values.stack !== 'dev' && values.stack !== 'cluster') {
    usage(`--stack: ${JSON.stringify(values.stack)} is not allowed (dev or cluster)`);
  }
  const agents = int('agents', values.agents, DEFAULTS.agents, 1, 10_000);
  const registered = int(
    'registered',
    values.registered,
    agents,
    agents,
    MAX_REGISTERED,
    `an integer from ${agents} (--agents) to ${MAX_REGISTERED}`,
  );
  const registerConcurrency = int(
    'register-concurrency',
    values['register-concurrency'],
    DEFAULTS.registerConcurrency,
    1,
    500,
  );
  const steersPerMinute = int('steers-per-minute', values['steers-per-minute'], DEFAULTS.steersPerMinute, 0, 600);
  const minutes = int('minutes', values.minutes, DEFAULTS.minutes, 1, 600);
  const intervalS = int('interval', values.interval, DEFAULTS.intervalS, 1, 3_600);
  const rampS = values.burst ? 0 : int('ramp', values.ramp, DEFAULTS.rampS, 0, 3_600);
  if (values.burst && values.ramp !== undefined) usage('--burst starts every agent in the same second: no --ramp');
  if (values.restart && values.surge) usage('--restart already sends every agent a message at the restart: no --surge');
  if (rampS >= minutes * 60) usage(`--ramp: ${rampS} s is not shorter than the ${minutes}-minute run`);
  const cache = values.cache === 'quarter' ? Math.ceil(agents / 4) : int('cache', values.cache, agents, 1, 100_000);
  const workers = int('workers', values.workers, DEFAULTS.workers, 1, 2);
  const window = int('window', values.window, DEFAULTS.window, 4_096, 1_000_000);
  const seed = int('seed', values.seed, DEFAULTS.seed, 0, 2 ** 31);
  const variant = [
    registered > agents ? `of${registered}` : '',
    values.burst ? 'burst' : '',
    cache !== agents ? `cache${cache}` : '',
    values.restart ? 'restart' : '',
    values.surge ? 'surge' : '',
    workers > 1 ? `${workers}workers` : '',
    intervalS !== DEFAULTS.intervalS ? `every${intervalS}s` : '',
    steersPerMinute === 0 ? 'nosteers' : '',
    steersPerMinute > 0 && steersPerMinute !== DEFAULTS.steersPerMinute ? `steers${steersPerMinute}` : '',
  ].filter(Boolean);
  const label = values.label ?? [values.stack, `${agents}x${minutes}m`, ...variant].join('-');
  const started = Date.now();
  // Ctrl-C (or SIGTERM) ends the run early with its results so far; a second one stops at once.
  const interrupt = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (interrupt.signal.aborted) process.exit(130);
      console.log(`[scale] ${signal}: ending the run, then reading and writing its results (again to stop at once)`);
      interrupt.abort();
    });
  }
  const result = await runScale({
    interrupt: interrupt.signal,
    ...DEFAULTS,
    label,
    agents,
    registered,
    registerConcurrency,
    steersPerMinute,
    minutes,
    intervalS,
    rampS,
    cache,
    workers,
    restart: values.restart,
    surge: values.surge,
    stack: values.stack,
    window,
    seed,
    log: (line) => console.log(line),
  });
  console.log(`\n${label}, ${((Date.now() - started) / 60_000).toFixed(1)} min in all\n${scaleTable(result)}`);
  const file = readResults(values.out);
  const merged = mergeResults(file, result);
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify(merged, null, 1)}\n`);
  console.log(`\nresults: ${values.out} (under runs["${label}"])`);
  writePlot(Object.values(merged.runs), values.plot);
  console.log(`plot: ${values.plot}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
