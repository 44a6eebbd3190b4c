/**
 * A read of an agent whose worker is there but slow to answer: the server gives the query to the worker that has
 * the workflow cached, after the workflow task in flight, and a worker under load may hold that task for seconds,
 * with no new poll of the task queue to show for it. The read waits for it instead of saying no worker polls.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, inject, it } from 'vitest';
import { readAgent } from '../../client/agent-reads.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { spawnWorker } from '../support/harness.ts';
import { holdSignal, pingQuery, stopSignal } from '../support/workflows/busy-task.ts';

it('a worker holding the workflow task for 4 s: the read waits and answers', async () => {
  const stack = inject('stack');
  const taskQueue = `busy-${randomUUID()}`;
  const worker = await spawnWorker('test/support/workflows/busy-worker.ts', { LONGRUN_TASK_QUEUE: taskQueue });
  const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
  try {
    const handle = await client.workflow.start('busyTask', { taskQueue, workflowId: `busy-${randomUUID()}` });
    expect(await readAgent(client, handle, handle.workflowId, pingQuery, [])).toBe('pong after 0 hold(s)');
    await handle.signal(holdSignal, 4_000);
    await sleep(500); // the worker has taken the Signal's task and holds it; the query waits behind it
    const asked = Date.now();
    expect(await readAgent(client, handle, handle.workflowId, pingQuery, [])).toBe('pong after 1 hold(s)');
    expect(Date.now() - asked).toBeGreaterThan(2_000); // it waited past the first deadline (1.5 s)
    await handle.signal(stopSignal);
    await handle.result();
  } finally {
    worker.kill('SIGTERM');
    await client.connection.close();
  }
});
