/**
 * `npm run chaos [-- --short] [--kills N] [--stream-kills N] [--agents N] [--tasks N] [--out FILE]`: the chaos run
 * (run.ts; `--stream-kills`: the worker kills mid-stream of F9, stream.ts). Prints
 * its progress and a table, writes the results as JSON (default bench/chaos-results.json), exits 1 when an invariant
 * broke.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { chaosTable, FULL, runChaos, SHORT } from './run.ts';

const { values } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    kills: { type: 'string' },
    'stream-kills': { type: 'string' },
    agents: { type: 'string' },
    tasks: { type: 'string' },
    out: { type: 'string', default: join(PROJECT_ROOT, 'bench', 'chaos-results.json') },
  },
});

/** A positive integer flag, or a usage error naming it. */
function count(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 10_000) {
    console.error(`--${flag}: ${JSON.stringify(value)} is not allowed (an integer from 1 to 10,000)`);
    process.exit(2);
  }
  return n;
}

const base = values.short ? SHORT : FULL;
const started = Date.now();
// An error of the driver itself (an uncaught exception, an unhandled rejection, a server that does not start again)
// comes back as a failed run with its stack (run.ts DRIVER_INVARIANT), never as Node dying in the middle.
const result = await runChaos({
  ...base,
  kills: count('kills', values.kills, base.kills),
  agents: count('agents', values.agents, base.agents),
  tasks: count('tasks', values.tasks, base.tasks),
  stream: { ...base.stream, kills: count('stream-kills', values['stream-kills'], base.stream.kills) },
  log: (line) => console.log(`${line} (${((Date.now() - started) / 1000).toFixed(0)} s)`),
});
console.log(`\n${chaosTable(result)}`);
mkdirSync(dirname(values.out), { recursive: true });
writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
console.log(`\nresults: ${values.out}`);
process.exit(Object.values(result.invariants).every(Boolean) ? 0 : 1);
