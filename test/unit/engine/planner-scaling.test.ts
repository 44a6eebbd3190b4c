/**
 * The planner's work grows at most as n log n in the context's message count, for every preset and every strategy of
 * its list (issue 41); no timing: the work is counted. Each
 * preset plans the synthetic contexts of bench/planning-context.ts (the scenarios of `node bench/planning.ts`, and
 * each strategy of its list alone, forced) at 2,048 and at 8,192 messages: four times the messages may take at most
 * 4 × log(8192)/log(2048) ≈ 4.7 times the work over arrays, maps and sets (test/support/array-work.ts), with 15% to
 * spare; a quadratic spot takes about 16 times (the planner of dabfbbf took 8 to 16 in the cases it was quadratic).
 * What the plans are is the other planner tests' business (the change that made the planner so left every plan as it
 * was: `node bench/planning.ts --baseline <tree>` compares two trees' plans).
 */
import { describe, expect, it } from 'vitest';
import { planCompaction } from '../../../engine/planner/index.ts';
import type { PlanInput } from '../../../engine/planner/index.ts';
import { PRESET_NAMES, resolvePolicy } from '../../../engine/presets.ts';
import { longToolLoop, scenarioInput, SCENARIOS } from '../../../bench/planning-context.ts';
import type { Scenario } from '../../../bench/planning-context.ts';
import { countArrayWork } from '../../support/array-work.ts';

const SMALL = 2_048;
const LARGE = 8_192;
/** n log n from SMALL to LARGE, and 15% to spare. */
const MAX_GROWTH = ((LARGE * Math.log(LARGE)) / (SMALL * Math.log(SMALL))) * 1.15;

/** The plans of the planner of dabfbbf (before issue 41) at LARGE messages, by preset and case. */

/** The cases of a preset: the benchmark's scenarios, then each strategy of its list alone (forced). */
function casesOf(preset: string): { name: string; scenario: Scenario; extra: Partial<PlanInput> }[] {
  const policy = resolvePolicy({ preset });
  return [
    ...(['loop', 'turns', 'chat'] as const).map((name) => ({ name, scenario: SCENARIOS[name], extra: {} })),
    ...policy.strategies.map((strategy) => ({
      name: `alone:${strategy}`,
      scenario: SCENARIOS.alone,
      extra: { strategies: [strategy] },
    })),
  ];
}

describe('the planner at scale', () => {
  it('counts the work of a quadratic loop as quadratic, and of a linear one as linear', () => {
    const quadratic = (n: number) =>
      countArrayWork(() => {
        const items = Array.from({ length: n }, (_, i) => i);
        return items.filter((i) => items.includes(i)).length;
      }).work;
    const linear = (n: number) => countArrayWork(() => [...new Set(Array.from({ length: n }, (_, i) => i))]).work;
    expect(quadratic(LARGE) / quadratic(SMALL)).toBeGreaterThan(15);
    expect(linear(LARGE) / linear(SMALL)).toBeLessThan(4.1);
  });

  for (const preset of PRESET_NAMES) {
    it(`${preset}: the work grows at most n log n`, () => {
      for (const { name, scenario, extra } of casesOf(preset)) {
        const [small, large] = [SMALL, LARGE].map((n) => {
          const input = scenarioInput(scenario, resolvePolicy({ preset }), longToolLoop(n, scenario), extra);
          return countArrayWork(() => planCompaction(input));
        });
        const growth = large!.work / small!.work;
        expect(growth, `${preset} ${name}: ${small!.work} → ${large!.work}`).toBeLessThanOrEqual(MAX_GROWTH);
      }
    });
  }
});
