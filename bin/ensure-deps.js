#!/usr/bin/env node
// Runs before `npm start` and `npm test` (prestart / pretest), on whatever Node the machine has: installs the
// project's dependencies, Node 24 among them, with `npm ci` when node_modules is missing or older than the lock file.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const lock = `${root}package-lock.json`;
const installed = `${root}node_modules/.package-lock.json`;
const pinnedNode = `${root}node_modules/node/bin/node`;

const fresh = existsSync(installed) && existsSync(pinnedNode) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs;
if (!fresh) {
  console.error(
    '[setup] installing dependencies with npm ci (node_modules is missing or older than package-lock.json)',
  );
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error('[setup] npm ci failed; see the output above');
    process.exit(result.status ?? 1);
  }
}
