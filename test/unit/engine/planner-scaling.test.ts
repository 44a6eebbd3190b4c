/**
 * The planner's work grows at most as n log n in the context's message count, for every preset and every strategy of
 * its list (issue 41), and its plans are those it made before it was made so (no timing: the work is counted). Each
 * preset plans the synthetic contexts of bench/planning-context.ts (the scenarios of `node bench/planning.ts`, and
 * each strategy of its list alone, forced) at 2,048 and at 8,192 messages: four times the messages may take at most
 * 4 × log(8192)/log(2048) ≈ 4.7 times the work over arrays, maps and sets (test/support/array-work.ts), with 15% to
 * spare; a quadratic spot takes about 16 times (the planner of dabfbbf took 8 to 16 in the cases it was quadratic).
 * The plans at 8,192 messages are compared with those of the planner of dabfbbf by digest (the first 16 hex digits
 * of the SHA-256 of the plan's JSON): a change to what the planner plans changes them on purpose, and then they are
 * recomputed.
 */
import { createHash } from 'node:crypto';
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
const DIGESTS: Record<string, string> = {
  'default loop': 'b7f6ee6077ea7af3',
  'default turns': 'e35e2a22ccb6580f',
  'default chat': 'fb2751b8acc09334',
  'default alone:supersede-tool-results': '72331a7b1091f484',
  'default alone:truncate-tool-results': '92919efa1b58cb26',
  'default alone:mask-tool-results': '8198d0beebbca500',
  'default alone:offload-large': '185856b116e8dc30',
  'default alone:summarize': 'bfdb55db112c1268',
  'default alone:truncate-rounds': 'c5b057366c18a11d',
  'default alone:halve': '0ecbf8fa51a4bdee',
  'astrbot loop': 'dafb2feaf499f45a',
  'astrbot turns': '2d45707adb204359',
  'astrbot chat': 'a05a08da9a4154ac',
  'astrbot alone:summarize': 'a12a6f0124020bce',
  'astrbot alone:halve': 'c8c2032b45a6a1b3',
  'chatgpt-on-wechat loop': 'b284cf9c338f125a',
  'chatgpt-on-wechat turns': '29a902df8b69d54f',
  'chatgpt-on-wechat chat': 'b156252255c277ec',
  'chatgpt-on-wechat alone:truncate-tool-results': 'b1a35a6836bc558e',
  'chatgpt-on-wechat alone:trim-turns': 'be47c7b481a2a4a6',
  'agentscope loop': '03febe4bbe2b581e',
  'agentscope turns': '2be15acc187e931f',
  'agentscope chat': '519535217d2b3a4d',
  'agentscope alone:truncate-tool-results': '12fba9f26a3c4851',
  'agentscope alone:summarize': '41bea7ba9b4eda33',
  'agentscope alone:halve': '277a8367512ada3a',
  'agentscope-java loop': '40ba475faaa6c286',
  'agentscope-java turns': 'c8922e909b822498',
  'agentscope-java chat': '652e14cd84650375',
  'agentscope-java alone:compress-tool-runs': '15f8fc50781756e9',
  'agentscope-java alone:offload-large': '7568dc5cd2a899dc',
  'agentscope-java alone:summarize-rounds': 'dcbc0d0b51cc362e',
  'agentscope-java alone:truncate-tool-results': '96223259ad0f7f9d',
  'agentscope-java alone:summarize-current-turn': '6eed00afa9796fc2',
  'agentscope-java alone:halve': '0640f43d196b9b08',
  'octomind loop': '07b1eb616f8b3a2d',
  'octomind turns': '1f5377b80869deb1',
  'octomind chat': 'bec88d71f3408e41',
  'octomind alone:summarize': '564f02bd43226b15',
  'octomind alone:halve': 'e70aec0524e2dd81',
};

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

const digestOf = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);

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
    it(`${preset}: the work grows at most n log n, and the plans are those of before`, () => {
      for (const { name, scenario, extra } of casesOf(preset)) {
        const [small, large] = [SMALL, LARGE].map((n) => {
          const input = scenarioInput(scenario, resolvePolicy({ preset }), longToolLoop(n, scenario), extra);
          return countArrayWork(() => planCompaction(input));
        });
        const growth = large!.work / small!.work;
        expect(growth, `${preset} ${name}: ${small!.work} → ${large!.work}`).toBeLessThanOrEqual(MAX_GROWTH);
        expect(digestOf(large!.result), `${preset} ${name}`).toBe(DIGESTS[`${preset} ${name}`]);
      }
    });
  }
});
