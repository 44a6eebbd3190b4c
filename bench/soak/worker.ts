/**
 * The soak's worker process (killed and started again every few hundred steps): longrun's agent workflows and
 * activities with one tool of its own, `work` (script.ts `workResult`), whose side effect must happen once per call.
 * The workflow bundle is built once by the driver (SOAK_BUNDLE), so a restart takes about a second.
 *
 * What the driver reads back, as lines appended to files in SOAK_DIR (the process may die at any moment, so nothing
 * is kept in memory for later):
 *   tools.log       `<callId> <ms>` for each run of `work`: the tool's own time, which a step's overhead excludes
 *   activities.log  `<epoch ms> <activity> <ms> <ok|failed>` for each activity run: the planning's time, among others
 *   memory.log      `<epoch ms> <rss> <heap used> <external> <array buffers>` (bytes) once a second
 *   effects/<callId> the call's effect, written once
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import type { Context } from '@temporalio/activity';
import { defineTool } from '../../activities/tools.ts';
import { runHarnessWorker } from '../harness-worker.ts';
import { workResult } from './script.ts';

const dir = process.env.SOAK_DIR!;
mkdirSync(join(dir, 'effects'), { recursive: true });

const work = defineTool({
  name: 'work',
  description: 'Does one step of a task',
  parameters: {
    type: 'object',
    properties: { task: { type: 'number' }, step: { type: 'number' }, of: { type: 'number' }, run: { type: 'number' } },
    required: ['task', 'step', 'of', 'run'],
  },
  run: (args, context) => {
    const started = performance.now();
    const callId = context.callId ?? '';
    try {
      writeFileSync(join(dir, 'effects', callId), String(Date.now()), { flag: 'wx' }); // once per call id
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const result = workResult({
      task: Number(args.task),
      step: Number(args.step),
      of: Number(args.of),
      run: Number(args.run),
    });
    appendFileSync(join(dir, 'tools.log'), `${callId} ${(performance.now() - started).toFixed(2)}\n`);
    return Promise.resolve(result);
  },
});

/** Times every activity run into activities.log. */
class Timing implements ActivityInboundCallsInterceptor {
  private readonly ctx: Context;
  constructor(ctx: Context) {
    this.ctx = ctx;
  }
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const started = performance.now();
    const line = (outcome: string) =>
      appendFileSync(
        join(dir, 'activities.log'),
        `${Date.now()} ${this.ctx.info.activityType} ${(performance.now() - started).toFixed(1)} ${outcome}\n`,
      );
    try {
      const result = await next(input);
      line('ok');
      return result;
    } catch (error) {
      line('failed');
      throw error;
    }
  }
}

const memory = () => {
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  appendFileSync(join(dir, 'memory.log'), `${Date.now()} ${rss} ${heapUsed} ${external} ${arrayBuffers}\n`);
};
setInterval(memory, 1_000).unref();

memory();
await runHarnessWorker({
  name: 'soak-worker',
  bundleFile: process.env.SOAK_BUNDLE!,
  tools: [work],
  modelTimeoutMs: 10_000,
  interceptors: { activity: [(ctx) => ({ inbound: new Timing(ctx) })] },
});
