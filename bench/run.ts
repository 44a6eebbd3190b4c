/**
 * `npm run bench [-- --short]`: prints a table and merges the figures into bench/results.json (git-ignored), one
 * section per benchmark, so that benchmarks added later keep the others' figures. `--short` runs every step on a
 * smaller scale (`npm test` runs it: test/e2e/bench.test.ts) and writes nothing. SIGINT or SIGTERM stops it at once,
 * its servers with it (lifecycle.ts).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PROJECT_ROOT } from '../config/settings.ts';
import {
  AGENT_FULL,
  AGENT_SHORT,
  benchAgent,
  benchCompactionHistory,
  benchStepLatency,
  checkAgentOptions,
} from './agent.ts';
import type { AgentBenchOptions } from './agent.ts';
import { benchControl, CONTROL_FULL, CONTROL_SHORT } from './control.ts';
import type { ControlOptions } from './control.ts';
import { benchCounting } from './counting.ts';
import { benchDecision } from './decision.ts';
import { stopOnSignals } from './lifecycle.ts';
import { benchPlanningScale } from './planning-scale.ts';
import { benchSearch, SEARCH_FULL, SEARCH_SHORT } from './search.ts';
import type { SearchBenchOptions } from './search.ts';
import { startBenchStack } from './stack.ts';
import { benchStream, STREAM_FULL, STREAM_SHORT } from './stream.ts';
import type { StreamBenchOptions } from './stream.ts';

const RESULTS = join(PROJECT_ROOT, 'bench', 'results.json');

export interface BenchOptions {
  /** The mixed corpus of the counting step (bytes). */
  countingBytes: number;
  /** The context's messages of the planning step. */
  planningMessages: number;
  agent: AgentBenchOptions;
  stream: StreamBenchOptions;
  control: ControlOptions;
  search: SearchBenchOptions;
}

export const BENCH_FULL: BenchOptions = {
  countingBytes: 1024 * 1024,
  planningMessages: 50_000,
  agent: AGENT_FULL,
  stream: STREAM_FULL,
  control: CONTROL_FULL,
  search: SEARCH_FULL,
};
export const BENCH_SHORT: BenchOptions = {
  countingBytes: 128 * 1024,
  planningMessages: 5_000,
  agent: AGENT_SHORT,
  stream: STREAM_SHORT,
  control: CONTROL_SHORT,
  search: SEARCH_SHORT,
};

/** Every step of the bench; resolves with the figures as results.json holds them. */
export async function runBench(options: BenchOptions, log: (line: string) => void) {
  log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}\n`);
  log('counting (o200k_base)');
  const counting = await benchCounting(log, options.countingBytes);
  log(
    `\nproduction is ${counting.ratios.productionVsJsTiktoken.toFixed(1)}× js-tiktoken and ` +
      `${counting.ratios.productionVsTiktokenWasm.toFixed(1)}× tiktoken WASM (same run)`,
  );
  log('\ndecision');
  const decision = await benchDecision(log);
  log('\nplanning at scale (every preset)');
  const planning = benchPlanningScale(log, options.planningMessages);
  checkAgentOptions(options.agent); // before the stack starts
  // One embedded stack (Temporal + MinIO) for the steps that run agents (each brings its model and worker) and search.
  log('\nstack for the agent, stream, control and search steps (embedded Temporal + MinIO)');
  const stack = await startBenchStack(log);
  try {
    log('\nagent (zero-latency model)');
    const agent = await benchAgent(log, options.agent, stack);
    log('\nstream (the live stream: a streamed reply on loopback)');
    const stream = await benchStream(log, options.stream, stack);
    log('\ncontrol: reaching an agent while it works (loopback model)');
    const control = await benchControl(log, options.control, stack);
    log('\nsearch: context_search over one agent’s stored bodies (MinIO)');
    const search = await benchSearch(log, options.search, stack);
    return { counting, decision, planning, agent: { ...agent, search }, stream, control };
  } finally {
    await stack.stop();
  }
}

/** The `agent` figures results.json holds from an earlier run, which a part run alone keeps beside its own. */
function previousAgentFigures(): object {
  return existsSync(RESULTS) ? ((JSON.parse(readFileSync(RESULTS, 'utf8')) as { agent?: object }).agent ?? {}) : {};
}

/**
 * The parts `--only` runs alone (`npm run bench -- --only agent.historyBytesPerCompaction`): their figures are merged
 * into results.json under their section, beside the others' figures.
 */
const ONLY: Record<string, (options: BenchOptions, log: (line: string) => void) => Promise<Record<string, unknown>>> = {
  'agent.historyBytesPerCompaction': async (options, log) => ({
    agent: { ...previousAgentFigures(), ...(await benchCompactionHistory(log, options.agent)) },
  }),
  'agent.stepLatency': async (options, log) => ({
    agent: { ...previousAgentFigures(), ...(await benchStepLatency(log, options.agent)) },
  }),
  'agent.search': async (options, log) => ({
    agent: { ...previousAgentFigures(), search: await benchSearch(log, options.search) },
  }),
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { short: { type: 'boolean', default: false }, only: { type: 'string' } },
    strict: true,
  });
  const log = (line: string) => console.log(line);
  stopOnSignals(log);
  const started = performance.now();
  const options = values.short ? BENCH_SHORT : BENCH_FULL;
  if (values.only !== undefined && !(values.only in ONLY)) {
    throw new Error(`--only: no part ${values.only} (${Object.keys(ONLY).join(', ')})`);
  }
  const figures = values.only ? await ONLY[values.only]!(options, log) : await runBench(options, log);
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  if (values.short) {
    log(`\nshort run done in ${seconds} s (its figures are not written)`);
    return;
  }
  const previous = existsSync(RESULTS) ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as Record<string, unknown>) : {};
  const results = {
    ...previous,
    machine: { cpus: cpus().length, node: process.version, at: new Date().toISOString() },
    ...figures,
  };
  writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
  log(`\nwritten to ${RESULTS} (${seconds} s)`);
}

if (import.meta.main) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error instanceof Error && error.name === 'UnreachableTargetError' ? error.message : error);
      process.exit(1);
    },
  );
}
