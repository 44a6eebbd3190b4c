/**
 * A step's tool calls in a reachable turn: each answered, in parallel, in the turn's cancellable scope; approval
 * first where it is needed; the workflow's own tools (`context_pin`, `context_budget`, `delegate`) answered here.
 */
import { patched } from '@temporalio/workflow';
import { runTool, TOOL_OPTIONS, UNTIL_CANCELLED } from '../activities.ts';
import type { ToolFailure } from '../../contract/activities.ts';
import { leanToolInput, wholeToolResult } from '../../contract/lean-calls.ts';
import type { CallOfReply } from '../../engine/messages.ts';
import type { ToolLimits } from '../../engine/policy.ts';
import type { ContextRecord } from '../../contract/records.ts';
import { endedByInterrupt, wasCancelled } from './control.ts';
import { resultIdsOf } from '../../contract/keys.ts';
import type { Conversation } from '../conversation.ts';
import { answerContextTool, CONTEXT_TOOLS_PATCH, WORKFLOW_TOOLS } from '../context-tools.ts';
import type { TurnUsage } from '../context-tools.ts';
import { delegate, delegatesBuiltIn } from '../delegation.ts';
import type { TurnReach } from './reach.ts';
import type { Ran } from './model-call.ts';
import { interruptedResult, resultItem, standIn, storeStandIn } from './store.ts';
import { approvalFor } from './approval.ts';

/**
 * Since this patch, a call that waits for approval because the agent's `toolApproval` names its tool goes through the
 * `runTool` activity first (approval `required`), which publishes `approval-asked` to the live stream, as a tool's own
 * rule always did. Histories of before waited with no activity (docs/changing-workflows.md).
 */
export const APPROVAL_ASKED_BY_NAME_PATCH = 'approval-asked-by-name';

/**
 * Answers a step's tool calls, in parallel, each run in the turn's cancellable scope: a call that waits for approval
 * waits first (denied: answered with the denial); a call an interrupt cancelled (or that was waiting when it came, or
 * whose activity failed as its worker died before it could confirm the cancel) is answered as interrupted. Every call
 * is answered, so the tool pairs stay whole. Any other failure fails the turn.
 * The calls the model call's activity answered (`ran`) are answered by their records; of the others, when the
 * interrupt cancelled that activity, each is answered as interrupted.
 */
export async function answerCalls(
  conversation: Conversation,
  reach: TurnReach,
  calls: CallOfReply[],
  replyId: string,
  step: number,
  usage: () => TurnUsage,
  ran?: Ran,
): Promise<ContextRecord[]> {
  const answered = calls.map((call) => ({ call, resultId: conversation.newMessageId() }));
  // The activity stored its results under the ids after the reply's: the ones taken here.
  const expected = resultIdsOf(replyId, calls.length);
  if (ran?.toolResults && answered.some(({ resultId }, i) => resultId !== expected[i])) {
    throw new Error(`the results of reply ${replyId} took ids other than ${expected.join(', ')}`);
  }
  const outcomes = await Promise.allSettled(
    answered.map(({ call, resultId }, i) => {
      const lean = ran?.toolResults?.[i];
      if (lean) return Promise.resolve(wholeToolResult(lean, { resultId, callId: call.id }) as ContextRecord);
      if (ran && reach.inbox.interruptQueued) {
        return standIn(conversation, call, resultId, interruptedResult(call, step), step);
      }
      const toolErrors = ran?.toolErrors?.[call.id];
      const failed = ran?.toolFailed?.[call.id];
      return answerCall(conversation, reach, call, replyId, resultId, { step, n: i + 1, toolErrors, failed }, usage);
    }),
  );
  // A call the interrupt cancelled, or whose activity failed as its worker died before confirming it, is interrupted.
  const failure = outcomes.find(
    (outcome): outcome is PromiseRejectedResult =>
      outcome.status === 'rejected' &&
      !wasCancelled(outcome.reason) &&
      !endedByInterrupt(outcome.reason, reach.inbox.interruptQueued),
  );
  if (failure) throw failure.reason;
  return Promise.all(
    outcomes.map((outcome, i) =>
      outcome.status === 'fulfilled'
        ? Promise.resolve(outcome.value)
        : standIn(
            conversation,
            answered[i]!.call,
            answered[i]!.resultId,
            interruptedResult(answered[i]!.call, step),
            step,
          ),
    ),
  );
}

/** Where `runTool` reads a call's arguments when the reply came without them: the stored reply. */
export function callIn(call: CallOfReply, replyId: string): { replyId?: string } {
  return call.function.arguments === undefined ? { replyId } : {};
}

/** The policy's limits for a call's tool (`tools`), for `runTool`: none (nothing added) when it sets none. */
export function toolLimits(conversation: Conversation, call: CallOfReply): { limits?: ToolLimits } {
  const limits = conversation.state.policy?.tools?.[call.function.name];
  return limits ? { limits } : {};
}

/**
 * The `runTool` activity's summary in the UI, as its approval has it: a call the agent's `toolApproval` names is only
 * asked about (it waits for a person, not run); an approved one runs; any other runs (unless its tool's own rule asks
 * for approval, which the activity alone can tell: the timer of the wait that follows says so).
 */
export function runToolSummary(call: CallOfReply, resultId: string, approval: 'ask' | 'required' | 'granted'): string {
  const tool = `tool ${call.function.name} (${call.id})`;
  if (approval === 'required') return `${tool}: waits for approval, not run`;
  if (approval === 'granted') return `${tool}, approved → ${resultId}`;
  return `${tool} → ${resultId}`;
}

/** One tool call of a reachable turn: approval first when it needs one, then the tool, cancellable. */
async function answerCall(
  conversation: Conversation,
  reach: TurnReach,
  call: CallOfReply,
  replyId: string,
  resultId: string,
  {
    step,
    n,
    toolErrors,
    failed,
  }: { step: number; n: number; toolErrors?: number | undefined; failed?: ToolFailure | undefined },
  usage: () => TurnUsage,
): Promise<ContextRecord> {
  // `context_pin` and `context_budget`: answered here, from the agent's state (workflows/context-tools.ts).
  if (WORKFLOW_TOOLS.has(call.function.name) && patched(CONTEXT_TOOLS_PATCH)) {
    const content = await answerContextTool(conversation, call, usage());
    return storeStandIn(conversation, call, resultId, content, [resultItem(call, content)]);
  }
  // `delegate` (and a team's `delegateTo` tools, below): a child agent workflow (workflows/delegation.ts).
  const answer = (content: string) => storeStandIn(conversation, call, resultId, content, [resultItem(call, content)]);
  const place = { turn: conversation.state.turns + 1, step, n };
  if (delegatesBuiltIn(call, reach.delegation)) {
    return delegate(conversation, reach.control, call, resultId, place, reach.delegation!, answer);
  }
  const run = async (approval: 'ask' | 'required' | 'granted') => {
    const payload = await reach.control.run(() =>
      runTool.executeWithOptions(
        { ...TOOL_OPTIONS, ...UNTIL_CANCELLED, summary: runToolSummary(call, resultId, approval) },
        [
          // What the activity can tell itself left out of the history (contract/lean-calls.ts).
          leanToolInput({
            ...conversation.life,
            call,
            ...callIn(call, replyId),
            resultId,
            counting: conversation.counting,
            ...toolLimits(conversation, call),
            approval,
            // Attempts the tool failed in the model call's activity count toward its limit.
            ...(toolErrors ? { toolErrors } : {}),
            // A tool that failed for good there fails here, not run again.
            ...(failed ? { failed } : {}),
            // An approved call says so in the live stream as it runs.
            ...(approval === 'granted'
              ? {
                  announce: [
                    {
                      kind: 'approval-answered' as const,
                      id: `approval-answered:${call.id}`,
                      callId: call.id,
                      approved: true,
                    },
                  ],
                }
              : {}),
          }),
        ],
      ),
    );
    return wholeToolResult(payload, { resultId, callId: call.id });
  };
  const byName = reach.approval.tools.has(call.function.name);
  // A call the agent's `toolApproval` names asks through the activity too, which says so in the live stream; runs of
  // before this waited without it (APPROVAL_ASKED_BY_NAME_PATCH).
  const asks = !byName || patched(APPROVAL_ASKED_BY_NAME_PATCH);
  let result = asks ? await run(byName ? 'required' : 'ask') : undefined;
  if (result === undefined || 'approvalNeeded' in result) {
    const decided = await approvalFor(conversation, reach, call, result?.arguments);
    if (decided !== true) return standIn(conversation, call, resultId, decided, step);
    result = await run('granted');
  }
  if ('approvalNeeded' in result) throw new Error(`tool ${call.function.name} asked for approval twice`);
  if ('delegate' in result) {
    // The call's arguments as `runTool` read them (a lean reply's call comes without them).
    const whole = { ...call, function: { name: call.function.name, arguments: result.arguments } };
    return delegate(conversation, reach.control, whole, resultId, place, result.delegate, answer);
  }
  return result;
}
