/**
 * The chaos run's worker process (killed and restarted many times): longrun's agent workflows and activities with
 * one tool, `work`, whose side effect must happen once. The workflow bundle is built once by the driver and read
 * from CHAOS_BUNDLE, so a restart takes about a second, not a bundling.
 *
 * `work({agent, task, step, of})` records each run in CHAOS_DIR/runs.log (how often it ran) and applies its effect
 * once per call id (CHAOS_DIR/effects/<callId>: the dedupe longrun's contract asks of such tools), then returns a
 * deterministic result of about 1.5 KB that names the step, so the scripted model can go on.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { defineTool } from '../../activities/tools.ts';
import { runHarnessWorker } from '../harness-worker.ts';

const dir = process.env.CHAOS_DIR!;
mkdirSync(join(dir, 'effects'), { recursive: true });

/** About 1.5 KB of text, the same for the same step of the same task. */
export function workResult(agent: string, task: number, step: number, of: number): string {
  const lines = [`step ${step} of ${of} (task ${task} of ${agent})`];
  for (let i = 0; lines.join('\n').length < 1_500; i++) {
    lines.push(createHash('sha256').update(`${agent}/${task}/${step}/${i}`).digest('hex'));
  }
  return lines.join('\n');
}

const work = defineTool({
  name: 'work',
  description: 'Does one step of a task',
  parameters: {
    type: 'object',
    properties: {
      agent: { type: 'string' },
      task: { type: 'number' },
      step: { type: 'number' },
      of: { type: 'number' },
    },
    required: ['agent', 'task', 'step', 'of'],
  },
  run: (args, context) => {
    const callId = context.callId ?? '';
    appendFileSync(join(dir, 'runs.log'), `${callId}\n`);
    try {
      writeFileSync(join(dir, 'effects', callId), String(Date.now()), { flag: 'wx' }); // once per call id
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    return Promise.resolve(workResult(String(args.agent), Number(args.task), Number(args.step), Number(args.of)));
  },
});

await runHarnessWorker({
  name: 'chaos-worker',
  bundleFile: process.env.CHAOS_BUNDLE!,
  tools: [work],
  modelTimeoutMs: 5_000,
});
