/**
 * `npm run bench`: prints a table and merges the figures into bench/results.json (git-ignored), one section per
 * benchmark, so that benchmarks added later keep the others' figures.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../config/settings.ts';
import { benchAgent } from './agent.ts';
import { benchCounting } from './counting.ts';
import { benchDecision } from './decision.ts';

const RESULTS = join(PROJECT_ROOT, 'bench', 'results.json');

async function main(): Promise<void> {
  const log = (line: string) => console.log(line);
  log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}\n`);
  log('counting (o200k_base)');
  const counting = await benchCounting(log);
  log(
    `\nproduction is ${counting.ratios.productionVsJsTiktoken.toFixed(1)}× js-tiktoken and ` +
      `${counting.ratios.productionVsTiktokenWasm.toFixed(1)}× tiktoken WASM (same run)`,
  );
  log('\ndecision');
  const decision = await benchDecision(log);
  log('\nagent (embedded Temporal + MinIO, zero-latency model)');
  const agent = await benchAgent(log);
  const previous = existsSync(RESULTS) ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as Record<string, unknown>) : {};
  const results = {
    ...previous,
    machine: { cpus: cpus().length, node: process.version, at: new Date().toISOString() },
    counting,
    decision,
    agent,
  };
  writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
  log(`\nwritten to ${RESULTS}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
