/**
 * Agents served from this very process: a worker on a task queue and a client beside it, torn down together.
 * The main job, `longrun replay`, the benchmark and the e2e tests all run agents this way.
 */
import type { Client } from '@temporalio/client';
import { connectClient } from '../client/agents.ts';
import type { Worker } from '@temporalio/worker';
import { createAgentWorker } from './worker.ts';
import type { AgentWorkerOptions } from './worker.ts';

export interface InProcessAgents {
  client: Client;
  worker: Worker;
  taskQueue: string;
  /** Settles when the worker stops (after close, or when the runtime stops it on SIGINT / SIGTERM). */
  running: Promise<void>;
  /** Stops the worker (after its running tasks) and closes both connections. Safe to call twice. */
  close(): Promise<void>;
}

export async function startInProcessAgents(options: AgentWorkerOptions): Promise<InProcessAgents> {
  const { worker, connection } = await createAgentWorker(options);
  const running = worker.run();
  const client = await connectClient(options.temporal).catch(async (error: unknown) => {
    worker.shutdown();
    await running;
    await connection.close();
    throw error;
  });
  let closed: Promise<void> | undefined;
  return {
    client,
    worker,
    taskQueue: options.taskQueue,
    running,
    close() {
      closed ??= (async () => {
        // The runtime may have stopped the worker already (SIGINT, SIGTERM).
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running;
        await connection.close();
        await client.connection.close();
      })();
      return closed;
    },
  };
}
