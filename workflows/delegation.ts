/**
 * Sub-agents: a call of the built-in `delegate` tool, or of a team's `delegateTo` tool, answered by the
 * agent's workflow. It starts a child workflow of the agent workflow type in task mode (the task its first message;
 * it closes after that one turn), with its own context, compaction policy, tools, model and budget; the turn waits
 * for it durably (a worker's crash is replayed up to the wait; the child, an agent like any, survives its own
 * workers' crashes); then `reportDelegation` answers the call with the child's final answer and manifest, bounded.
 *
 * The child's workflow id derives from the parent's: `agent-<parent>.d<turn>-<step>-<n>`. Its parent close policy
 * terminates it when the parent's workflow closes in any way (terminated, failed, timed out); an interrupt of the
 * parent's turn, or a `close` of the parent, cancels it at once and answers the call as interrupted. A steer waits
 * for the step's end, as it does for any tool call. The parent never continues-as-new during a turn, so never while
 * it waits.
 */
import {
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  ParentClosePolicy,
  patched,
  startChild,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { DELEGATION_REPORT_OPTIONS, reportDelegation } from './activities.ts';
import { AGENT_WORKFLOW, agentWorkflowId } from '../contract/agent.ts';
import {
  childAgentId,
  DEFAULT_CHILD_PROMPT,
  DELEGATE_TOOL,
  delegateArguments,
  validateDelegationInput,
} from '../contract/delegation.ts';
import { validateAgentInput } from '../contract/input-checks.ts';
import type { AgentInput, ChildSettings, DelegationSettings } from '../contract/inputs.ts';
import type { ContextRecord } from '../contract/records.ts';
import type { AgentState } from '../contract/state.ts';
import type { CallOfReply } from '../engine/messages.ts';
import type { Conversation } from './conversation.ts';
import { argumentsObjectOf } from './context-tools.ts';
import type { TurnControl } from './turn/control.ts';
import { wasCancelled } from './turn/control.ts';

/** Since this patch, a `delegate` call of an agent with `delegation` is answered by a child agent workflow. */
export const DELEGATION_PATCH = 'delegation';

/** Whether `call` is the built-in `delegate` of an agent that has it on (`delegation`: its settings). */
export function delegatesBuiltIn(call: CallOfReply, delegation: DelegationSettings | undefined): boolean {
  return call.function.name === DELEGATE_TOOL && delegation !== undefined && patched(DELEGATION_PATCH);
}

/** Where the call is in the turn: its turn, step, and place among the step's calls (1-based). */
export interface CallPlace {
  turn: number;
  step: number;
  n: number;
}

/**
 * Answers a delegate call: the child's answer and manifest, or a refusal (bad arguments, the agent closing), or that
 * the wait was interrupted, or that the child failed. `answer` stores a result the workflow wrote.
 */
export async function delegate(
  conversation: Conversation,
  control: TurnControl,
  call: CallOfReply,
  resultId: string,
  place: CallPlace,
  settings: DelegationSettings | ChildSettings,
  answer: (content: string) => Promise<ContextRecord>,
): Promise<ContextRecord> {
  const { state } = conversation;
  const args = argumentsObjectOf(call) ?? 'the arguments must be a JSON object with a task';
  const asked = typeof args === 'string' ? args : delegateArguments(args, settings);
  if (typeof asked === 'string') return answer(`[refused] ${call.function.name}: ${asked}`);
  if (control.closing) return answer(`[refused] ${call.function.name}: the agent is closing; nothing was delegated`);
  const childId = childAgentId(state.agentId, place.turn, place.step, place.n);
  const input: AgentInput = {
    agentId: childId,
    model: settings.model ?? state.model,
    systemPrompt: settings.systemPrompt ?? DEFAULT_CHILD_PROMPT,
    ...(settings.compaction ? { compaction: settings.compaction } : {}),
    turnBudget: { ...settings.turnBudget, steps: asked.steps },
    ...(settings.tools ? { tools: settings.tools } : {}),
    task: { text: asked.task, parent: state.agentId, callId: call.id },
  };
  try {
    validateAgentInput(input);
    validateDelegationInput(input);
  } catch (error) {
    return answer(`[refused] ${call.function.name}: the sub-agent's settings: ${(error as Error).message}`);
  }
  let life = '';
  let final: AgentState;
  try {
    final = await control.runDelegation(async () => {
      const child = await startChild<(input: AgentInput) => Promise<AgentState>>(AGENT_WORKFLOW, {
        workflowId: agentWorkflowId(childId),
        args: [input],
        parentClosePolicy: ParentClosePolicy.TERMINATE,
        cancellationType: ChildWorkflowCancellationType.TRY_CANCEL,
        staticSummary: `sub-agent of ${state.agentId}: ${asked.task.slice(0, 120)}`,
      });
      life = child.firstExecutionRunId;
      return child.result();
    });
  } catch (error) {
    if (wasCancelled(error) || (error instanceof ChildWorkflowFailure && wasCancelled(error.cause))) {
      const why = control.closing ? 'the agent was closed' : 'a person interrupted the turn';
      return answer(
        `[interrupted] The sub-agent ${childId} was cancelled before it answered: ${why}. What it stored stays ` +
          `under its own id.`,
      );
    }
    if (error instanceof WorkflowExecutionAlreadyStartedError) {
      return answer(`[refused] ${call.function.name}: a workflow with the sub-agent's id ${childId} is running`);
    }
    if (error instanceof ChildWorkflowFailure) {
      let cause: Error = error;
      while (cause.cause instanceof Error) cause = cause.cause;
      return answer(`[failed] The sub-agent ${childId} ended without an answer: ${cause.message}`);
    }
    throw error;
  }
  return reportDelegation.executeWithOptions(
    { ...DELEGATION_REPORT_OPTIONS, summary: `report sub-agent ${childId} → ${resultId}` },
    [
      {
        ...conversation.life,
        // The call without its arguments (the task is in the child's input already).
        call: { id: call.id, type: 'function' as const, function: { name: call.function.name } },
        resultId,
        counting: conversation.counting,
        child: {
          agentId: childId,
          life: final.life ?? life,
          lastSeq: (final.nextMessageSeq ?? 1) - 1,
          ...(final.task ? { outcome: final.task } : {}),
          ...(final.spend ? { spend: final.spend } : {}),
        },
      },
    ],
  );
}
