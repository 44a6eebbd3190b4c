/**
 * The main job (`longrun up`, `npm start`): the worker process (worker/process.ts: setup, the embedded stack unless
 * TEMPORAL_ADDRESS / AWS_ENDPOINT_URL_S3 point at running servers, the worker), then a short demo conversation. It
 * keeps the worker and the stack running until Ctrl-C. Its flags are `longrun up`'s (commands/cli/table.ts).
 */
import type { Settings } from '../config/settings.ts';
import { DEMO_SESSION } from '../llm/endpoint.ts';
import { runWorkerProcess } from '../worker/process.ts';
import type { ReadyWorker } from '../worker/process.ts';
import { runClusterJob } from './cluster-job.ts';
import { closeDemoAgent, runDemo } from './demo.ts';

export interface MainJobOptions {
  settings: Settings;
  /** Exit 0 after the demo, leaving no process behind. */
  once: boolean;
  /** Run the demo conversation once the worker is ready (without it: just the worker, as worker/main.ts). */
  demo: boolean;
  /** Cluster mode instead (commands/cluster-job.ts), the production shape of docker-compose.yml. */
  cluster: boolean;
}

const log = (line: string) => console.log(line);

export async function runMainJob({ settings, once, demo, cluster }: MainJobOptions): Promise<void> {
  const env = process.env;
  const runDemoWhenReady = (ready: ReadyWorker) =>
    runDemo(ready.client, {
      // Each start makes a new demo agent: it is closed when the job stops, not left running in the stack.
      onStarted: (agentId) => ready.onStop(() => closeDemoAgent(ready.client, agentId, log)),
      taskQueue: settings.taskQueue,
      model: settings.model,
      sessionPath: DEMO_SESSION,
      namespace: ready.temporal.namespace,
      ...(ready.uiUrl ? { uiUrl: ready.uiUrl } : {}),
      replayed: ready.replayed,
      close: once,
      log,
    });
  const job = { settings, env, log, exitWhenDone: once, ...(demo ? { whenReady: runDemoWhenReady } : {}) };
  await (cluster ? runClusterJob(job) : runWorkerProcess(job));
}
