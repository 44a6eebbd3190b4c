/**
 * The worker's entry point (`node worker/main.ts`; the Docker image runs `dist/worker/main.js`): the worker process
 * alone (worker/process.ts), until Ctrl-C. `--no-demo` is accepted for the commands written before `longrun up`
 * (commands/main-job.ts) took the demo; it changes nothing.
 */
import { parseArgs } from 'node:util';
import { loadSettings } from '../config/settings.ts';
import { runAsEntryPoint, runWorkerProcess } from './process.ts';

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  parseArgs({ args: argv, options: { 'no-demo': { type: 'boolean', default: false } }, strict: true });
  await runWorkerProcess({ settings: loadSettings(process.env), env: process.env, log: console.log });
}

if (import.meta.main) runAsEntryPoint(main);
