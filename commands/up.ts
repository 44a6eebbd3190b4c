/**
 * `npm start`: `longrun up` (the main job, commands/main-job.ts) with the same flags, read by the CLI's table:
 * `npm start -- --once`, `--no-demo`, `--cluster`; `npm start -- --help` lists them.
 */
import { runAsEntryPoint } from '../worker/process.ts';
import { run } from './cli/main.ts';

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  await run(['up', ...argv]);
}

if (import.meta.main) runAsEntryPoint(main);
