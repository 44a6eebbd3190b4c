/**
 * A workflow whose workflow task a test can hold for a while: the `hold` Signal blocks the task it arrives in for
 * the given milliseconds (as a worker under load or replaying a long history does), then `ping` answers again.
 * Run with `debugMode: true`, which turns off the sandbox's 2-second deadlock check.
 */
import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';

export const holdSignal = defineSignal<[number]>('hold');
export const pingQuery = defineQuery<string>('ping');
export const stopSignal = defineSignal('stop');

export async function busyTask(): Promise<void> {
  let holds = 0;
  let stopped = false;
  setHandler(holdSignal, (ms: number) => {
    holds++;
    // Blocks this thread (the task in flight) without reading a clock; the same on replay.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  });
  setHandler(pingQuery, () => `pong after ${holds} hold(s)`);
  setHandler(stopSignal, () => void (stopped = true));
  await condition(() => stopped);
}
