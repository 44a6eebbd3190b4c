/**
 * A tool call that waits for a person's approval: the wait (a durable timer, or an interrupt), and the result that
 * answers the call when it is not run (denied, timed out, interrupted).
 */
import { condition } from '@temporalio/workflow';
import type { CallOfReply } from '../../engine/messages.ts';
import { shownArguments } from './control.ts';
import type { Conversation } from '../conversation.ts';
import { showProgress } from '../visibility.ts';
import type { TurnReach } from './reach.ts';
import { interruptedResult } from './store.ts';

/**
 * Waits for a person to approve or deny `call` (or the timeout, or an interrupt). Resolves to true (run it), or the
 * result that answers it instead (the denial, or that the turn was interrupted).
 */
export async function approvalFor(
  conversation: Conversation,
  reach: TurnReach,
  call: CallOfReply,
  /** The call's arguments as `runTool` answered them (the reply's call came without them). */
  args = call.function.arguments ?? '',
): Promise<true | string> {
  const { control, approval } = reach;
  const now = Date.now();
  const waiting = {
    callId: call.id,
    tool: call.function.name,
    arguments: shownArguments(args),
    since: new Date(now).toISOString(),
    until: new Date(now + approval.timeoutMs).toISOString(),
    onTimeout: approval.onTimeout,
  };
  control.waitFor(waiting);
  conversation.progress.approvalsWaiting(control.awaiting());
  showProgress(conversation.state, conversation.progress);
  const entry = control.waiting.get(call.id)!;
  const then = approval.onTimeout === 'approve' ? 'approved' : 'denied';
  await condition(() => entry.decision !== undefined || reach.inbox.interruptQueued, approval.timeoutMs, {
    summary: `approval of tool ${call.function.name} (${call.id}): ${then} after ${approval.timeoutMs / 1000} s unanswered`,
  });
  control.stopWaiting(call.id);
  conversation.progress.approvalsWaiting(control.awaiting());
  showProgress(conversation.state, conversation.progress);
  const decision = entry.decision;
  if (decision === undefined && reach.inbox.interruptQueued)
    return interruptedResult(call, conversation.progress.turn?.step);
  const approved = decision ? decision.approved : approval.onTimeout === 'approve';
  if (approved) return true;
  if (decision === undefined) {
    return (
      `[denied] Nobody approved this call of ${call.function.name} within ${approval.timeoutMs / 1000} s, so it ` +
      'was not run.'
    );
  }
  const why = decision.reason ? `: ${decision.reason}` : ' (no reason given)';
  return `[denied] A person denied this call of ${call.function.name}, so it was not run${why}`;
}
