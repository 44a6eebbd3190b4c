/**
 * A worker process for busy-task.ts's workflow (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, LONGRUN_TASK_QUEUE), in debug
 * mode: the workflow runs on this process's main thread with no 2-second deadlock check, so a `hold` blocks it
 * whole, as a worker under load is.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';

const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE!,
  taskQueue: process.env.LONGRUN_TASK_QUEUE!,
  workflowsPath: fileURLToPath(new URL('./busy-task.ts', import.meta.url)),
  debugMode: true,
});
process.on('SIGTERM', () => worker.shutdown());
console.log('[worker] polling');
await worker.run();
await connection.close();
