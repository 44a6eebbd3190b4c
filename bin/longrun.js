#!/usr/bin/env node
// The `longrun` command. Installed as a package, it runs the built JavaScript (dist/). In the repository, the CLI is
// TypeScript run by Node's type stripping (Node >= 22.18); on an older Node, re-run on the Node 24 the project pins
// as a devDependency (node_modules/node).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const [major, minor] = process.versions.node.split('.').map(Number);
const canStripTypes = major > 22 || (major === 22 && minor >= 18);

if (!existsSync(`${root}commands/cli.ts`)) {
  // The published package: no sources (Node does not strip types under node_modules anyway).
  const { cliMain } = await import('../dist/commands/cli.js');
  cliMain();
} else if (canStripTypes) {
  const { cliMain } = await import('../commands/cli.ts');
  cliMain();
} else {
  const pinned = `${root}node_modules/node/bin/node`;
  if (!existsSync(pinned)) {
    console.error(
      `longrun needs Node 22.18 or later (this is ${process.version}). Run \`npm ci\` in ${root} to install the pinned Node 24.`,
    );
    process.exit(1);
  }
  const result = spawnSync(pinned, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
