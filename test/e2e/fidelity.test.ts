/**
 * `npm run fidelity` in its short mode, on every `npm test`: the synthetic session (the recorded ones are not in the
 * repository) replayed at a small window under two presets, every figure measured and the targets every replay must
 * meet met; and the full mode without the recorded sessions stops at once, naming them and where it looked.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { runFidelity, SHORT_PRESETS, SHORT_WINDOWS } from '../../bench/fidelity.ts';
import { loadCorpus } from '../../bench/fidelity/corpus.ts';
import { renderTable, renderTargets } from '../../bench/fidelity/table.ts';
import { writeSyntheticCorpus } from '../../bench/fidelity/synthetic.ts';

/** Targets any replay meets, whatever its session (the facts kept are a property of the session, not measured here). */
const MACHINERY_TARGETS = [
  'every replay ran every recorded step',
  'every preset: 0 requests over the window',
  'every preset: 0 tool-pair violations',
  'default: every removed item reloads byte-identical',
  'every preset: the pin verbatim in every request after it, through every compaction',
];

describe('the fidelity run', () => {
  it('short: replays the synthetic session under two presets and measures every figure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-fidelity-test-'));
    try {
      const corpus = loadCorpus(writeSyntheticCorpus(dir));
      expect(corpus).toHaveLength(1);
      const lines: string[] = [];
      const run = await runFidelity(corpus, SHORT_WINDOWS, SHORT_PRESETS, (line) => lines.push(line));
      const report = `${lines.join('\n')}\n${renderTable(run.results)}\n${renderTargets(run.targets)}`;
      expect(run.results.map((r) => r.preset)).toEqual(SHORT_PRESETS);
      for (const r of run.results) {
        expect(r.error, report).toBeUndefined();
        expect(r.replayedSteps, report).toBe(r.recordedSteps);
        expect(r.compactions, report).toBeGreaterThan(0);
        expect(r.summaries, report).toBeGreaterThan(0);
        expect(r.facts.minPct, report).not.toBeNull();
        expect(r.maxRequestTokens, report).toBeLessThanOrEqual(r.window);
        expect(r.reload.total, report).toBeGreaterThan(0);
        // The replay pinned the session's task after its first turn: compactions came after, requests held it.
        expect(r.pins?.compactions, report).toBeGreaterThan(0);
        expect(r.pins?.requests, report).toBeGreaterThan(0);
      }
      for (const target of MACHINERY_TARGETS) {
        const check = run.targets.find((t) => t.target === target);
        expect(check, target).toBeDefined();
        expect(check!.missed, `${target}\n${report}`).toEqual([]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);

  it('full, without the recorded sessions: stops at once naming what is missing and where it looked', () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-fidelity-missing-'));
    try {
      writeFileSync(join(dir, 'one.facts.json'), '["a fact"]');
      const started = performance.now();
      const run = spawnSync(process.execPath, [join(PROJECT_ROOT, 'bench/fidelity.ts'), '--sessions', dir], {
        cwd: PROJECT_ROOT,
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr).toContain(`missing ${join(dir, 'one.jsonl')}`);
      expect(run.stderr).toContain(`(looked for in ${dir})`);
      expect(run.stderr).toContain('test/fixtures/sessions/README.md');
      expect(run.stderr).toContain('npm run fidelity -- --short');
      expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
