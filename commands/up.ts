/**
 * The main job (`npm start`, `longrun up`): the worker process (worker/process.ts: setup, the embedded stack unless
 * TEMPORAL_ADDRESS / AWS_ENDPOINT_URL_S3 point at running servers, the worker), then a short demo conversation. It
 * keeps the worker and the stack running until Ctrl-C.
 *
 *   --once      exit 0 after the demo, leaving no process behind
 *   --no-demo   just the worker (as worker/main.ts, which the Docker image runs)
 *   --cluster   cluster mode instead (commands/cluster-job.ts): PostgreSQL, the Temporal server, its UI, MinIO and two
 *               worker processes, the production shape of docker-compose.yml
 */
import { parseArgs } from 'node:util';
import { loadSettings } from '../config/settings.ts';
import { DEMO_SESSION } from '../llm/endpoint.ts';
import { runAsEntryPoint, runWorkerProcess } from '../worker/process.ts';
import type { ReadyWorker } from '../worker/process.ts';
import { runClusterJob } from './cluster-job.ts';
import { runDemo } from './demo.ts';

const log = (line: string) => console.log(line);

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      once: { type: 'boolean', default: false },
      'no-demo': { type: 'boolean', default: false },
      cluster: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const env = process.env;
  const settings = loadSettings(env);
  const demo = (ready: ReadyWorker) =>
    runDemo(ready.client, {
      taskQueue: settings.taskQueue,
      model: settings.model,
      sessionPath: DEMO_SESSION,
      namespace: ready.temporal.namespace,
      ...(ready.uiUrl ? { uiUrl: ready.uiUrl } : {}),
      replayed: ready.replayed,
      close: values.once,
      log,
    });
  const job = { settings, env, log, exitWhenDone: values.once, ...(values['no-demo'] ? {} : { whenReady: demo }) };
  await (values.cluster ? runClusterJob(job) : runWorkerProcess(job));
}

if (import.meta.main) runAsEntryPoint(main);
