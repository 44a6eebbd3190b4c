/**
 * ESLint finds nothing: the code rules and the size limits of eslint.config.js (`max-lines`, `max-lines-per-function`:
 * a room that grows gets a new file named for its role). Run here so that `npm test`, and so CI, fails a change that
 * regrows a file or breaks a rule; `npm run lint` is the same ESLint run, then the import rules (import-rules.test.ts).
 */
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';

/**
 * The whole project, type-checked rules included: about 35 s on a quiet 2-core machine, 85 to 116 s on one loaded by
 * other work (measured), and longer at the low priority below, so the test waits up to ten minutes.
 */
const ESLINT_TIMEOUT_MS = 600_000;
/**
 * ESLint runs at the lowest priority: it takes a core for a minute or more, and the tests running beside it (property
 * tests within vitest's 5 s, the e2e files' timings) get the CPU first.
 */
const LOWEST_PRIORITY = 19;

/** `eslint .` in the project, its exit code and everything it printed. */
async function eslintProject(): Promise<{ status: number | null; output: string }> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'node_modules/eslint/bin/eslint.js'), '.'], {
    cwd: PROJECT_ROOT,
  });
  setPriority(child.pid!, LOWEST_PRIORITY);
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, output }));
  });
}

describe('lint', () => {
  it(
    'eslint . finds no problem (the size limits included)',
    async () => {
      const { status, output } = await eslintProject();
      expect(status, output).toBe(0);
    },
    ESLINT_TIMEOUT_MS,
  );
});
