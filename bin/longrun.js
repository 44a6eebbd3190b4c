#!/usr/bin/env node
// The `longrun` command. Installed as a package, it runs the built JavaScript (dist/). In the repository, the CLI is
// TypeScript run by Node's type stripping (Node >= 22.18); on an older Node, re-run on the Node 24 the project pins
// as a devDependency (node_modules/node).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const [major, minor] = process.versions.node.split('.').map(Number);
const canStripTypes = major > 22 || (major === 22 && minor >= 18);

if (!existsSync(`${root}commands/cli/main.ts`)) {
  // The published package: no sources (Node does not strip types under node_modules anyway).
  const { cliMain } = await import('../dist/commands/cli/main.js');
  cliMain();
} else if (canStripTypes) {
  const { cliMain } = await import('../commands/cli/main.ts');
  cliMain();
} else {
  const pinned = `${root}node_modules/node/bin/node`;
  if (!existsSync(pinned)) {
    console.error(
      `longrun needs Node 22.18 or later (this is ${process.version}). Run \`npm ci\` in ${root} to install the pinned Node 24.`,
    );
    process.exit(1);
  }
  // The child shares this terminal's process group, so Ctrl-C reaches it directly: this wrapper waits for it to
  // finish (it prints its own last lines and picks its exit code) instead of dying of the signal first. Signals sent
  // to this process alone (`kill`, a supervisor's SIGTERM) are passed on.
  const child = spawn(pinned, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.on('SIGINT', () => {});
  for (const signal of ['SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    console.error(`longrun: could not run ${pinned}: ${error.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (signal ? osConstants.signals[signal] : 0)));
}
