/**
 * The import rules hold (the direction between folders, no cycle, what workflow code imports, the engine modules the
 * workflow bundle runs): `npm run lint:deps`, dependency-cruiser with .dependency-cruiser.js and
 * lint/workflow-bundle.js, run here so that `npm test`, and so CI, checks them.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';

describe('import rules', () => {
  it('npm run lint:deps finds no violation', () => {
    const run = spawnSync('npm', ['run', '--silent', 'lint:deps'], { cwd: PROJECT_ROOT, encoding: 'utf8' });
    expect(run.error).toBeUndefined();
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
  }, 60_000);
});
