/**
 * Agents served from this very process: a worker on a task queue and a client beside it, torn down together.
 * The main job, `longrun replay`, the benchmark and the e2e tests all run agents this way.
 */
import type { Client } from '@temporalio/client';
import { connectClient } from '../config/temporal.ts';
import type { ActivityInterceptorsFactory, Worker } from '@temporalio/worker';
import { createAgentWorker } from './worker.ts';
import type { AgentWorkerOptions } from './worker.ts';

/** An activity the worker is running. */
export interface ActivityInFlight {
  /** The activity type: callModel, runTool, summarizeSpan, … */
  type: string;
  workflowId: string;
  attempt: number;
  startedAt: number;
}

/** What the worker is busy with, e.g. to say what stopping waits for. */
export interface WorkInFlight {
  activities: ActivityInFlight[];
  /** Workflow activations (workflow tasks) being processed. */
  workflowTasks: number;
}

export interface InProcessAgents {
  client: Client;
  worker: Worker;
  taskQueue: string;
  /** Settles when the worker stops (after close, or when the runtime stops it on SIGINT / SIGTERM). */
  running: Promise<void>;
  /** The activities and workflow tasks the worker has in flight right now. */
  inFlight(): WorkInFlight;
  /** Stops the worker (after its running tasks) and closes both connections. Safe to call twice. */
  close(): Promise<void>;
}

export async function startInProcessAgents(options: AgentWorkerOptions): Promise<InProcessAgents> {
  const activities = new Set<ActivityInFlight>();
  const tracking: ActivityInterceptorsFactory = (context) => ({
    inbound: {
      async execute(input, next) {
        const activity: ActivityInFlight = {
          type: context.info.activityType,
          workflowId: context.info.workflowExecution?.workflowId ?? '',
          attempt: context.info.attempt,
          startedAt: Date.now(),
        };
        activities.add(activity);
        try {
          return await next(input);
        } finally {
          activities.delete(activity);
        }
      },
    },
  });
  const interceptors = { ...options.interceptors, activity: [tracking, ...(options.interceptors?.activity ?? [])] };
  const { worker, connection } = await createAgentWorker({ ...options, interceptors });
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
    inFlight: () => ({
      activities: [...activities],
      workflowTasks: worker.getStatus().numInFlightWorkflowActivations,
    }),
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
