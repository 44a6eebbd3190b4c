/**
 * Task mode: a child agent started by its parent's `delegate` (workflows/delegation.ts) has one message,
 * its task. Once that turn is done the agent closes; its state's `task` keeps what the parent reads: the answer's id,
 * the steps and tool calls, or why it stopped or failed.
 */
import type { TaskInput } from '../contract/inputs.ts';
import type { SendResult } from '../contract/results.ts';
import type { WorkflowState } from '../contract/state.ts';
import type { Inbox } from './inbox.ts';

/** The task's turn ended (`result` undefined: it failed, `state.lastError` says why): keep its outcome, close. */
export function taskDone(state: WorkflowState, inbox: Inbox, task: TaskInput, result: SendResult | undefined): void {
  if (result === undefined) {
    state.task = { parent: task.parent, steps: 0, toolCalls: 0, error: state.lastError ?? 'the task failed' };
  } else {
    state.task = {
      parent: task.parent,
      ...(result.replyId ? { replyId: result.replyId } : {}),
      steps: result.steps,
      toolCalls: result.toolCalls,
      ...(result.stopped
        ? { stopped: `its ${result.stopped.by} budget of ${result.stopped.limit} was reached` }
        : result.interrupted
          ? { stopped: `interrupted at step ${result.interrupted.step}` }
          : {}),
    };
  }
  inbox.closing = true;
}
