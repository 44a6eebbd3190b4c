/**
 * `--policy FILE`: a JSON object of compaction policy overrides on top of a preset, for `longrun replay` (CLI) and
 * `npm run fidelity`, read and checked whole before anything starts: a file that cannot be read, is not JSON or not an
 * object, names another preset than `--preset`, or holds a field out of its range is refused, naming why.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FidelitySetupError, parseOptions } from '../../bench/fidelity.ts';
import { policyFlags, readPolicyFile, UsageError } from '../../commands/cli/parse.ts';
import { PolicyError } from '../../engine/policy.ts';
import { PRESET_NAMES, resolvePolicy } from '../../engine/presets.ts';

let dir = '';
const file = async (name: string, text: string) => {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
};
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'policy-file-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('--policy FILE (longrun replay)', () => {
  it('takes the overrides on top of the preset: --preset, else the one the file names, else default', async () => {
    const budget = await file('budget.json', '{"maxTokens": 6000, "summary": {"maxTokens": 800}}');
    expect(policyFlags(undefined, budget)).toEqual({
      preset: 'default',
      overrides: { maxTokens: 6000, summary: { maxTokens: 800 } },
    });
    const named = await file('named.json', '{"preset": "agentscope", "targetRatio": 0.3}');
    expect(policyFlags(undefined, named)).toEqual({ preset: 'agentscope', overrides: { targetRatio: 0.3 } });
    expect(policyFlags('agentscope', named).preset).toBe('agentscope');
    expect(policyFlags('octomind', undefined)).toEqual({ preset: 'octomind', overrides: {} });
    // What the agent runs under: the preset with the overrides merged in, nested groups field by field.
    const policy = resolvePolicy({ ...policyFlags(undefined, budget).overrides, preset: 'default' });
    expect(policy.maxTokens).toBe(6000);
    expect(policy.summary.maxTokens).toBe(800);
    expect(policy.summary.request).toBe(resolvePolicy().summary.request);
  });

  it('refuses a file it cannot read, that is not JSON, not an object, or names another preset', async () => {
    const missing = join(dir, 'missing.json');
    expect(() => readPolicyFile(missing)).toThrow(new UsageError(`--policy: cannot read ${missing}: no such file`));
    const broken = await file('broken.json', '{"maxTokens":');
    expect(() => readPolicyFile(broken)).toThrow(UsageError);
    expect(() => readPolicyFile(broken)).toThrow(`--policy: ${broken} is not JSON: `);
    for (const [text, kind] of [
      ['[1]', 'an array'],
      ['null', 'null'],
      ['8000', 'a number'],
      ['"default"', 'a string'],
    ]) {
      const path = await file('not-object.json', text!);
      expect(() => readPolicyFile(path)).toThrow(
        `--policy: ${path} must hold a JSON object of compaction policy overrides (docs/configuration.md), not ${kind}`,
      );
    }
    const numbered = await file('numbered.json', '{"preset": 3}');
    expect(() => readPolicyFile(numbered)).toThrow(`--policy: ${numbered}: "preset" must be a preset's name, not 3`);
    const other = await file('other.json', '{"preset": "octomind"}');
    expect(() => policyFlags('default', other)).toThrow(
      new UsageError(`--policy: ${other} names the preset octomind, --preset default: give one, or the same`),
    );
  });

  it("refuses a field out of its range or unknown with the policy's own error, naming the field", async () => {
    const range = await file('range.json', '{"targetRatio": 2}');
    expect(() => policyFlags(undefined, range)).toThrow(PolicyError);
    expect(() => policyFlags(undefined, range)).toThrow(/^targetRatio: 2 is not allowed \(/);
    const unknown = await file('unknown.json', '{"triggerRatoi": 0.5}');
    expect(() => policyFlags(undefined, unknown)).toThrow(/triggerRatoi/);
    const preset = await file('preset.json', '{"preset": "nope"}');
    expect(() => policyFlags(undefined, preset)).toThrow(/^preset: "nope" is not allowed \(one of default, /);
  });
});

describe('--policy FILE (npm run fidelity)', () => {
  it('goes on top of every preset replayed; a preset the file names stands for --preset', async () => {
    const budget = await file('fidelity-budget.json', '{"maxTokens": 6000}');
    expect(parseOptions(['--policy', budget], [])).toMatchObject({
      presets: PRESET_NAMES,
      policy: { maxTokens: 6000 },
    });
    expect(parseOptions(['--policy', budget, '--preset', 'default,octomind'], [])).toMatchObject({
      presets: ['default', 'octomind'],
      policy: { maxTokens: 6000 },
    });
    const named = await file('fidelity-named.json', '{"preset": "agentscope", "maxTokens": 6000}');
    expect(parseOptions(['--policy', named], [])).toMatchObject({
      presets: ['agentscope'],
      policy: { maxTokens: 6000 },
    });
    expect(parseOptions([], []).policy).toBeUndefined();
  });

  it('refuses, before anything starts, a file bad under any preset it goes on, or naming another preset', async () => {
    const named = await file('fidelity-other.json', '{"preset": "agentscope"}');
    expect(() => parseOptions(['--policy', named, '--preset', 'default'], [])).toThrow(
      new FidelitySetupError(`--policy: ${named} names the preset agentscope, --preset default: give one, or the same`),
    );
    const range = await file('fidelity-range.json', '{"targetRatio": 2}');
    expect(() => parseOptions(['--policy', range], [])).toThrow(FidelitySetupError);
    expect(() => parseOptions(['--policy', range], [])).toThrow(/^targetRatio: 2 is not allowed \(/);
    const missing = join(dir, 'nowhere.json');
    expect(() => parseOptions(['--policy', missing], [])).toThrow(
      new FidelitySetupError(`--policy: cannot read ${missing}: no such file`),
    );
  });
});
