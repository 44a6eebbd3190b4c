/**
 * A reply's plain tool calls run inside the model call's activity (`runReplyCalls`, contract/activities.ts
 * {@link RunCalls}), in parallel, each as `runTool` runs it (activities/tool-execution.ts): each call's progress rides
 * on the model call's heartbeats. A call that waits for approval, is the workflow's to answer, was cancelled or whose
 * tool threw is left to the workflow (`runTool`, told the tool's errors so far in `toolErrors`).
 */
import { log } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { resultIdsOf } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { CallModelResult, LeanRecord, RunCalls, ToolFailure } from '../contract/activities.ts';
import { leanToolResult } from '../contract/lean-calls.ts';
import type { ContextRecord } from '../contract/records.ts';
import type { Counting } from '../engine/models.ts';
import type { ToolCall } from '../engine/messages.ts';
import { ANSWERED_BY_WORKFLOW } from './model-reply.ts';
import { argumentsForRule } from './tool-call.ts';
import { TOOL_RESULT_IN_HEARTBEAT_CHARS } from './tool-execution.ts';
import type { createToolExecution, ProgressSlot, ToolProgress } from './tool-execution.ts';
import { asksApproval } from './tools.ts';
import type { ToolRegistry } from './tools.ts';

/** A step's tool results (run in the model call's activity) ride on its heartbeats up to this many characters in all. */
const STEP_RESULTS_IN_HEARTBEAT_CHARS = 1024 * 1024;

/** Running a reply's plain calls (`runReplyCalls`) with the tools and the running of one call (`execute`). */
export function createReplyCalls({
  tools,
  execute,
}: {
  tools: ToolRegistry;
  execute: ReturnType<typeof createToolExecution>;
}) {
  /**
   * Runs the tool calls of a stored reply that the model call answers itself ({@link RunCalls}), in parallel, each as
   * `runTool` runs it. `progress` holds each call's progress (what the model call's heartbeats carry, read back on a
   * retry); `beat` heartbeats it now. Returns the records of the calls answered, in call order, and the tool errors of
   * the calls whose tool threw (left to `runTool`, which goes on counting them).
   */
  async function runReplyCalls(
    agent: AgentLife,
    { replyId, counting, runCalls }: { replyId: string; counting: Counting; runCalls: RunCalls },
    calls: ToolCall[],
    progress: ToolProgress[],
    beat: () => void,
    interrupt: AbortSignal,
  ): Promise<Pick<CallModelResult, 'toolResults' | 'toolErrors' | 'toolFailed'>> {
    const byName = new Set(runCalls.approval ?? []);
    const resultIds = resultIdsOf(replyId, calls.length);
    /** Results ride on the heartbeats up to this many characters in all (a heartbeat's details stay under 2 MB). */
    let room = STEP_RESULTS_IN_HEARTBEAT_CHARS;
    const keep = (content: string) => {
      if (content.length > TOOL_RESULT_IN_HEARTBEAT_CHARS || content.length > room) return false;
      room -= content.length;
      return true;
    };
    const toolErrors: Record<string, number> = {};
    const toolFailed: Record<string, ToolFailure> = {};
    const outcomes = await Promise.all(
      calls.map(async (call, i): Promise<ContextRecord | undefined> => {
        const tool = tools.get(call.function.name);
        const plain =
          !ANSWERED_BY_WORKFLOW.has(call.function.name) &&
          !byName.has(call.function.name) &&
          !tool?.delegation &&
          !asksApproval(tool, () => argumentsForRule(call));
        if (!plain || interrupt.aborted) return undefined;
        const index = progress.findIndex((p) => p.callId === call.id);
        const earlier = index >= 0 ? progress[index] : undefined;
        if (earlier?.toolErrors) {
          toolErrors[call.id] = earlier.toolErrors; // an earlier attempt's: `runTool` runs it again
          return undefined;
        }
        if (earlier?.content !== undefined) room -= earlier.content.length;
        const slot: ProgressSlot = { progress: earlier, keep };
        /** The call's progress in the list the heartbeats carry, as it changes. */
        slot.changed = () => {
          const at = progress.findIndex((p) => p.callId === call.id);
          if (slot.progress === undefined) return;
          if (at >= 0) progress[at] = slot.progress;
          else progress.push(slot.progress);
        };
        const limits = runCalls.limits?.[call.function.name];
        const input = { ...agent, call, resultId: resultIds[i]!, counting, ...(limits ? { limits } : {}) };
        try {
          return await execute(agent, input, tool, slot, beat, interrupt);
        } catch (error) {
          // Cancelled (answered as interrupted), or the tool threw (`runTool` retries it), or anything else: the
          // workflow answers the call as it did before the model call ran calls.
          if (error instanceof ApplicationFailure && error.nonRetryable) {
            // Failed for good: `runTool` raises it without running the tool again.
            toolFailed[call.id] = { message: error.message, ...(error.type ? { type: error.type } : {}) };
          } else if (slot.progress?.toolErrors) toolErrors[call.id] = slot.progress.toolErrors;
          else if (!(error instanceof CancelledFailure)) {
            log.warn(`tool call ${call.id} left to runTool: ${String((error as Error)?.message ?? error)}`);
          }
          return undefined;
        }
      }),
    );
    // Lean, as `runTool` answers a lean input: the workflow knows each result's id, role and call id.
    const toolResults = outcomes.map((record, i) =>
      record
        ? (leanToolResult(record, { ...agent, call: { id: calls[i]!.id }, resultId: resultIds[i]! }) as LeanRecord)
        : null,
    );
    return {
      ...(toolResults.some((record) => record !== null) ? { toolResults } : {}),
      ...(Object.keys(toolErrors).length ? { toolErrors } : {}),
      ...(Object.keys(toolFailed).length ? { toolFailed } : {}),
    };
  }

  return runReplyCalls;
}
