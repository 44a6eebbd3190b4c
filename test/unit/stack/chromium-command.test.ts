/**
 * The command docs/streaming.md gives to install Chromium for the page tests works as written on the machine's own
 * Node, whatever its version: an npm script (which runs the project's pinned Node), not `node stack/chromium.ts` (a
 * Node before 22.18 refuses a `.ts` file: `Unknown file extension ".ts"`).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../../config/settings.ts';
import { findChromium } from '../../../stack/chromium.ts';

const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');

/** The commands docs/streaming.md puts in code spans in the sentence that says how Chromium is installed. */
function chromiumCommands(): string[] {
  const text = read('docs/streaming.md').replace(/\n/g, ' ');
  const sentence = /[^.]*Chromium is not there[^.]*\./.exec(text);
  expect(sentence, 'docs/streaming.md says how Chromium is installed on a fresh machine').not.toBeNull();
  return [...sentence![0].matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((span) => /^(npm|npx|node) /.test(span));
}

describe("docs/streaming.md's command that installs Chromium", () => {
  it('is an npm script of the project that runs stack/chromium.ts, with the dependencies (the pinned Node) first', () => {
    const commands = chromiumCommands();
    expect(commands).toEqual(['npm run chromium']);
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.chromium).toBe('node stack/chromium.ts');
    expect(scripts.prechromium).toBe('node bin/ensure-deps.js');
    expect(read('docs/streaming.md')).not.toMatch(/`node stack\/chromium\.ts`/);
  });

  it('runs on the machine’s Node: it names the Chromium it found, or says how to install it', () => {
    // PATH as a shell has it, without the pinned Node that `npx vitest` puts first.
    const path = (process.env.PATH ?? '')
      .split(':')
      .filter((dir) => !dir.includes('node_modules'))
      .join(':');
    const [command, ...args] = chromiumCommands()[0]!.split(' ');
    // Without its pre-script (the dependency install, checked above): a test never reinstalls node_modules.
    const run = spawnSync(command!, [...args, '--ignore-scripts'], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, PATH: path },
      encoding: 'utf8',
    });
    expect(run.stderr).not.toMatch(/Unknown file extension/);
    const found = findChromium();
    if (found) {
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).toContain(`[setup] chromium: ${found}`);
    } else {
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('Chromium is not installed');
    }
  });
});
