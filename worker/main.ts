/**
 * The worker's entry point (`node worker/main.ts`; the Docker image runs `dist/worker/main.js`): the worker process
 * alone (worker/process.ts), until Ctrl-C. `--no-demo` is accepted for the commands written before `longrun up`
 * (commands/up.ts) took the demo; it changes nothing.
 */
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadSettings } from '../config/settings.ts';
import { runWorkerProcess } from './process.ts';
import { listenForStop } from './stopping.ts';

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  parseArgs({ args: argv, options: { 'no-demo': { type: 'boolean', default: false } }, strict: true });
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const stop = listenForStop();
  try {
    await runWorkerProcess({ settings: loadSettings(process.env), env: process.env, stop, log: console.log });
  } finally {
    stop.dispose();
  }
}

if (import.meta.main) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(`longrun: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
