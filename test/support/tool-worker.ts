/**
 * A worker process with one slow tool, for tests that kill a worker while a tool runs: `slow_side_effect` appends
 * its call id to TOOL_LOG (its side effect), then waits until the file TOOL_RELEASE exists; `quick_side_effect`
 * appends `quick <call id>` and answers at once. `guarded_deploy` waits for
 * a person's approval before it runs (for tests that kill a worker while a call waits).
 */
import { appendFileSync, existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool } from '../../activities/tools.ts';
import { runAgentWorker } from '../../worker/run.ts';

const log = process.env.TOOL_LOG!;
const release = process.env.TOOL_RELEASE!;

const slow = defineTool({
  name: 'slow_side_effect',
  description: 'Does something, then waits to be released',
  parameters: { type: 'object', properties: {} },
  run: async (_args, context) => {
    appendFileSync(log, `${context.callId}\n`);
    while (!existsSync(release)) await sleep(100);
    return 'released';
  },
});

const quick = defineTool({
  name: 'quick_side_effect',
  description: 'Does something at once',
  parameters: { type: 'object', properties: {} },
  run: (_args, context) => {
    appendFileSync(log, `quick ${context.callId}\n`);
    return Promise.resolve('quick done');
  },
});

const guarded = defineTool({
  name: 'guarded_deploy',
  description: 'Deploys, once a person approves',
  parameters: { type: 'object', properties: { target: { type: 'string' } } },
  approval: 'always',
  run: ({ target }) => Promise.resolve(`deployed ${String(target)}`),
});

await runAgentWorker({ tools: [slow, quick, guarded] });
