/**
 * The `runTool` activity: one tool call of the model's, run and stored as a tool message. It heartbeats throughout:
 * a worker that dies meanwhile is noticed within the heartbeat timeout, and the call runs again on another worker (at
 * least once: a tool with side effects dedupes by `callId`). Once the tool has answered, its result rides on the
 * heartbeats (when it is small enough), so a retry stores it instead of running the tool again; a storage outage is
 * waited out here, not retried by running the tool again.
 *
 * Reachable turns: asked with `approval: 'ask'`, a call whose tool's own rule asks for approval is not run
 * (the turn waits for a person). Cancelled (an `interrupt`), the tool's `signal` is aborted; a tool that stops, or
 * does not within {@link TOOL_CANCEL_GRACE_MS}, leaves the call cancelled, and whatever it returns is stored under
 * its late-result key, apart: the turn answered the call as interrupted, and nothing is written under its result id.
 *
 * The same code runs a reply's plain calls inside the model call's activity (`runReplyCalls`, contract/activities.ts
 * `RunCalls`): each call's progress rides on that activity's heartbeats instead, and a call that waits for approval,
 * is the workflow's to answer, was cancelled or whose tool threw is left to the workflow (`runTool`, told the tool's
 * errors so far in `toolErrors`).
 *
 * Here, the activity: the call read, approval asked, a delegation handed to the workflow. The running of one call is
 * tool-execution.ts (the tool itself: tool-call.ts; its result stored: tool-result-entry.ts); a reply's calls,
 * reply-calls.ts.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../contract/failures.ts';
import { agentLife, messageKey } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { RunToolInput } from '../contract/activities.ts';
import { leanToolResult, toolInputDefaults } from '../contract/lean-calls.ts';
import type { ToolOutcome, ToolOutcomePayload } from '../contract/lean-calls.ts';
import type { ChatMessage, ToolCall } from '../engine/messages.ts';
import { createReplyCalls } from './reply-calls.ts';
import { heartbeatNow, interruptSignal, untilStored, withHeartbeat } from './stored.ts';
import type { AgentStream } from './stream.ts';
import { argumentsForRule } from './tool-call.ts';
import { createToolExecution, failedForGood, TOOL_RESULT_IN_HEARTBEAT_CHARS } from './tool-execution.ts';
import type { ProgressSlot, ToolProgress } from './tool-execution.ts';
import { createResultEntry } from './tool-result-entry.ts';
import type { ResultEntryDeps } from './tool-result-entry.ts';
import { asksApproval } from './tools.ts';
import type { ToolRegistry } from './tools.ts';

/** What the activity needs: the tools, the live stream, and how a result is stored (the store, `save`, the index). */
export interface RunToolDeps extends ResultEntryDeps {
  tools: ToolRegistry;
  /** The live stream: the call, its result, an approval asked (activities/stream.ts). */
  stream: AgentStream;
}

/**
 * The `runTool` activity, and the same running of a reply's plain tool calls inside the model call's activity
 * (`runReplyCalls`, contract/activities.ts {@link RunCalls}).
 */
export function createToolRunner({ tools, store, save, stream, search }: RunToolDeps) {
  const enter = createResultEntry({ store, save, search });
  const execute = createToolExecution({ tools, store, stream, enter });
  const runReplyCalls = createReplyCalls({ tools, execute });

  /** The call with its arguments: as the input has it, or from the stored reply that made it (`replyId`). */
  async function callOf(agent: AgentLife, input: RunToolInput): Promise<ToolCall> {
    const { call, replyId } = input;
    if (call.function?.arguments !== undefined) return { ...call, type: 'function' } as ToolCall;
    if (replyId === undefined) {
      throw ApplicationFailure.nonRetryable(
        `runTool: call ${call.id} has no arguments and no replyId to read them from`,
      );
    }
    const key = messageKey(agent, replyId);
    const body = await untilStored(() => store.get(key));
    if (body === undefined) {
      throw ApplicationFailure.nonRetryable(`stored object ${key} is missing`, FAILURE.missingObject);
    }
    const stored = ((JSON.parse(body) as ChatMessage).tool_calls ?? []).find((c) => c.id === call.id);
    if (!stored) {
      throw ApplicationFailure.nonRetryable(
        `runTool: the reply ${replyId} holds no call ${call.id}`,
        FAILURE.missingObject,
      );
    }
    return stored;
  }

  /** Runs the call; its answer (the result's record, lean for a lean input: contract/lean-calls.ts). */
  async function runTool(lean: RunToolInput): Promise<ToolOutcomePayload> {
    return leanToolResult(await run(lean), lean);
  }

  async function run(lean: RunToolInput): Promise<ToolOutcome> {
    const agent = agentLife(lean);
    const call = await callOf(agent, lean);
    // The tool failed for good in the model call's activity (RunCalls): the same failure, the tool not run again.
    if (lean.failed) throw failedForGood(call, lean.failed, 1);
    // What a lean input leaves out: the default counting, approval `ask` (contract/lean-calls.ts).
    const input = { ...lean, ...toolInputDefaults(lean), call };
    const tool = tools.get(call.function.name);
    const asked =
      input.approval === 'required' || (input.approval === 'ask' && asksApproval(tool, () => argumentsForRule(call)));
    if (asked) {
      await stream.announce(agent, [
        {
          kind: 'approval-asked',
          id: `approval-asked:${call.id}`,
          callId: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        },
      ]);
      return { approvalNeeded: true, arguments: call.function.arguments };
    }
    await stream.announce(agent, input.announce);
    // A team's sub-agent (`delegateTo`): nothing runs here; the workflow starts the child (workflows/delegation.ts).
    // (Turns of runs recorded before reachable turns ask with no `approval`: they cannot delegate; the call's
    // result says so.)
    if (tool?.delegation && input.approval !== undefined) {
      return { delegate: tool.delegation, arguments: call.function.arguments };
    }
    const context = Context.current();
    const earlier = context.info.heartbeatDetails as ToolProgress | undefined;
    // The attempts the tool failed in the model call's activity count too (RunCalls).
    const spent = lean.toolErrors ? { callId: call.id, toolErrors: lean.toolErrors } : undefined;
    const slot: ProgressSlot = {
      progress: earlier?.callId === call.id ? earlier : spent,
      keep: (content) => content.length <= TOOL_RESULT_IN_HEARTBEAT_CHARS,
    };
    return withHeartbeat(
      () => execute(agent, input, tool, slot, () => heartbeatNow(slot.progress), interruptSignal(context)),
      () => slot.progress,
    );
  }

  return { runTool, runReplyCalls };
}

/** The tool runner: `runTool`, and `runReplyCalls` for the model call. */
export type ToolRunner = ReturnType<typeof createToolRunner>;
