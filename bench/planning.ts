/**
 * `node bench/planning.ts [--sizes 2000,4000,8000,16000,32000] [--presets a,b] [--scenarios loop,turns,chat]
 * [--baseline DIR] [--budget MS] [--strategies a,b] [--measure ms|work]`: the planner's time against the context's message count, per preset (issue 41).
 * Each preset plans the synthetic contexts of bench/planning-context.ts at each size (two warm-ups, then the median of
 * up to 5 runs within the budget); the table gives the milliseconds and the ratio to the size before (a doubling:
 * about 2× is linear, 4× quadratic). With `--baseline DIR`, the planner of another tree (DIR/engine, e.g.
 * `git archive <commit> engine | tar -x -C DIR`, with a package.json of `{"type":"module"}`) plans the same contexts
 * in the same run, side by side, and the plans of both are compared (exit 1 when they differ). `npx node --expose-gc
 * bench/planning.ts` collects garbage before each timed run: steadier figures. `--measure work` counts instead of
 * timing (one run each): the elements the planner's array, map and set operations visit (test/support/array-work.ts),
 * the same on any machine under any load. `--strategies` names the strategies a forced plan uses (scenario `alone`).
 */
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import type { MessageMeta } from '../engine/messages.ts';
import * as planner from '../engine/planner/index.ts';
import type { PlanInput } from '../engine/planner/index.ts';
import type { StrategyName } from '../engine/policy.ts';
import * as presets from '../engine/presets.ts';
import { countArrayWork } from '../test/support/array-work.ts';
import { longToolLoop, scenarioInput, SCENARIOS } from './planning-context.ts';
import type { Scenario } from './planning-context.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '2000,4000,8000,16000,32000' },
    presets: { type: 'string' },
    scenarios: { type: 'string', default: 'loop,turns,chat' },
    baseline: { type: 'string' },
    budget: { type: 'string', default: '10000' },
    strategies: { type: 'string' },
    measure: { type: 'string', default: 'ms' },
  },
});

interface Engine {
  planCompaction: typeof planner.planCompaction;
  resolvePolicy: typeof presets.resolvePolicy;
}

const sizes = values.sizes.split(',').map(Number);
const names = values.presets ? values.presets.split(',') : presets.PRESET_NAMES;
const budget = Number(values.budget);
const current: Engine = { planCompaction: planner.planCompaction, resolvePolicy: presets.resolvePolicy };
const baseline: Engine | undefined = values.baseline ? await engineAt(values.baseline) : undefined;

/** The planner and the presets of the tree at `dir`. */
async function engineAt(dir: string): Promise<Engine> {
  const root = resolve(dir, 'engine');
  const p = (await import(pathToFileURL(join(root, 'planner', 'index.ts')).href)) as typeof planner;
  const r = (await import(pathToFileURL(join(root, 'presets.ts')).href)) as typeof presets;
  return { planCompaction: p.planCompaction, resolvePolicy: r.resolvePolicy };
}

/** The plan input for `context` under `preset` in `scenario`. */
function inputOf(engine: Engine, preset: string, scenario: Scenario, context: MessageMeta[]): PlanInput {
  const strategies = values.strategies?.split(',') as StrategyName[] | undefined;
  return scenarioInput(scenario, engine.resolvePolicy({ preset }), context, strategies ? { strategies } : {});
}

/** Collects garbage between runs when the process allows it (`--expose-gc`): steadier figures. */
const collect = (globalThis as { gc?: () => void }).gc ?? (() => {});

/**
 * Median milliseconds of planning `context` (two warm-ups first; fewer runs once the budget is spent), and the plan.
 */
function time(engine: Engine, preset: string, scenario: Scenario, context: MessageMeta[]) {
  if (values.measure === 'work') {
    const { result, work } = countArrayWork(() => engine.planCompaction(inputOf(engine, preset, scenario, context)));
    return { ms: work, plan: result };
  }
  let plan = engine.planCompaction(inputOf(engine, preset, scenario, context));
  engine.planCompaction(inputOf(engine, preset, scenario, context));
  const times: number[] = [];
  const started = performance.now();
  while (times.length < 5 && (times.length === 0 || performance.now() - started < budget)) {
    const input = inputOf(engine, preset, scenario, context);
    collect();
    const start = performance.now();
    plan = engine.planCompaction(input);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)]!, plan };
}

/** A row of the table: the milliseconds at each size, and the ratio to the size before. */
const row = (label: string, ms: number[]) =>
  `| ${label} | ${ms.map((t, i) => `${t.toFixed(t < 10 && values.measure !== 'work' ? 2 : 0)}${i > 0 ? ` (${(t / ms[i - 1]!).toFixed(1)}×)` : ''}`).join(' | ')} |`;

let differ = 0;
for (const key of values.scenarios.split(',') as (keyof typeof SCENARIOS)[]) {
  const scenario = SCENARIOS[key];
  const users = scenario.turnMessages === Infinity ? 'only at the start' : `every ${scenario.turnMessages} messages`;
  console.log(
    `\n${key}: ${scenario.trigger}, summarizer ${scenario.summarizer}, window ${scenario.window}, a user message ` +
      `${users}, results ×${scenario.scale}${values.strategies ? `, strategies ${values.strategies}` : ''}; ` +
      `${values.measure === 'work' ? 'work over arrays' : 'ms'} (ratio to the size before)`,
  );
  const header = ['preset', ...sizes.map((n) => `n=${n}`)];
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  const contexts = sizes.map((n) => longToolLoop(n, scenario));
  for (const name of names) {
    // Before and after at each size in turn, so that the machine's load weighs on both alike.
    const before: number[] = [];
    const after: number[] = [];
    contexts.forEach((context, i) => {
      const now = time(current, name, scenario, context);
      after.push(now.ms);
      if (!baseline) return;
      const then = time(baseline, name, scenario, context);
      before.push(then.ms);
      if (isDeepStrictEqual(now.plan, then.plan)) return;
      differ++;
      console.error(`${key} ${name} n=${sizes[i]}: the plans differ`);
    });
    if (baseline) console.log(row(`${name} before`, before));
    console.log(row(baseline ? `${name} after` : name, after));
  }
}
if (differ > 0) process.exitCode = 1;
