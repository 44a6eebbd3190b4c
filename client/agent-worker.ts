/**
 * Whether a worker polls an agent's task queue, as `longrun state` shows it: the agent's task queue and the workers
 * the server has seen polling it (client/agent-observation.ts).
 */
import type { Client } from '@temporalio/client';
import { agentHandle } from './agents.ts';
import { observeAgent, workerPolling, workersText } from './agent-observation.ts';

/** The agent's task queue and whether a worker polls it. */
export interface TaskQueuePolled {
  taskQueue: string;
  /** Undefined when the client may not describe the task queue: unknown, not absent. */
  polled: boolean | undefined;
  /** What was seen, in words ("last polled 3 s ago by 1234@host"). */
  seen: string;
}

/** Whether a worker polls the task queue of `agentId` (a describe of the agent, and of its task queue). */
export async function taskQueuePolled(client: Client, agentId: string): Promise<TaskQueuePolled> {
  const seen = await observeAgent(client, agentHandle(client, agentId));
  return {
    taskQueue: seen.taskQueue,
    polled: seen.workersKnown ? workerPolling(seen) : undefined,
    seen: seen.workersKnown ? workersText(seen) : 'this client may not describe task queues',
  };
}
