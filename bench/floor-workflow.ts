/**
 * The floor a turn is measured against: the same server, worker and client doing the least a turn does, one Update
 * whose handler awaits one activity that echoes its input (no storage, no model, no tokenizer).
 */
import { condition, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';

export const echoUpdate = defineUpdate<string, [string]>('echo');

const { echo } = proxyActivities<{ echo(text: string): Promise<string> }>({ startToCloseTimeout: '10 seconds' });

export async function floorWorkflow(): Promise<void> {
  let done = false;
  setHandler(echoUpdate, (text: string) => echo(text));
  setHandler(defineUpdate<void>('stop'), () => {
    done = true;
  });
  await condition(() => done);
}
