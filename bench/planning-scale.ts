/**
 * The planner at a large context (issue 45: "planning at 50,000 messages takes under 2 s for every preset"): every
 * preset plans the synthetic contexts of planning-context.ts (one long tool loop, turns, a chat overflow) at `size`
 * messages, each the median of three runs after a warm-up; the step reports the slowest and checks it against the
 * target. bench/planning.ts gives the whole table against the size, and a baseline tree side by side.
 */
import { performance } from 'node:perf_hooks';
import { planCompaction } from '../engine/planner/index.ts';
import { PRESET_NAMES, resolvePolicy } from '../engine/presets.ts';
import { longToolLoop, scenarioInput, SCENARIOS } from './planning-context.ts';

/** The planner's target at 50,000 messages, for every preset and context (milliseconds). */
export const PLANNING_TARGET_MS = 2_000;

export interface PlanningScaleFigures {
  messages: number;
  /** Median milliseconds per preset, its slowest context. */
  perPresetMs: Record<string, number>;
  slowestMs: number;
  slowest: string;
  targetMs: number;
}

export function benchPlanningScale(log: (line: string) => void, messages: number): PlanningScaleFigures {
  const perPresetMs: Record<string, number> = {};
  let slowest = '';
  let slowestMs = 0;
  for (const key of ['loop', 'turns', 'chat'] as const) {
    const scenario = SCENARIOS[key];
    const context = longToolLoop(messages, scenario);
    for (const preset of PRESET_NAMES) {
      const policy = resolvePolicy({ preset });
      planCompaction(scenarioInput(scenario, policy, context)); // warm-up
      const runs = [0, 1, 2].map(() => {
        const input = scenarioInput(scenario, policy, context);
        const start = performance.now();
        planCompaction(input);
        return performance.now() - start;
      });
      const ms = runs.sort((a, b) => a - b)[1]!;
      perPresetMs[preset] = Math.max(perPresetMs[preset] ?? 0, ms);
      if (ms > slowestMs) [slowestMs, slowest] = [ms, `${preset}, ${key}`];
    }
  }
  const rows = PRESET_NAMES.map((preset) => `${preset} ${perPresetMs[preset]!.toFixed(0)} ms`).join(', ');
  log(`planning ${messages.toLocaleString('en')} messages (slowest of loop, turns, chat): ${rows}`);
  log(
    `slowest ${slowestMs.toFixed(0)} ms (${slowest}); target under ${PLANNING_TARGET_MS.toLocaleString('en')} ms: ` +
      (slowestMs < PLANNING_TARGET_MS ? 'met' : 'MISSED'),
  );
  return { messages, perPresetMs, slowestMs, slowest, targetMs: PLANNING_TARGET_MS };
}
