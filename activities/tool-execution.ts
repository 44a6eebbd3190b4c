/**
 * One tool call run and its result stored, as both `runTool` and a reply's calls in the model call run it
 * (activities/run-tool.ts, activities/reply-calls.ts): the tool run unless the heartbeats hold its result from an
 * earlier attempt, its result kept on them when small enough; cancelled by an interrupt (the tool given
 * {@link TOOL_CANCEL_GRACE_MS} to stop, a late result kept apart); the tool's own errors counted, the call failing for
 * good at the {@link TOOL_ERROR_ATTEMPTS}th.
 */
import { log } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { FAILURE, TOOL_ERROR_ATTEMPTS } from '../contract/failures.ts';
import { lateResultKey } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { RunToolInput, ToolFailure } from '../contract/activities.ts';
import type { ContextRecord } from '../contract/records.ts';
import type { Counting } from '../engine/models.ts';
import type { ToolCall } from '../engine/messages.ts';
import type { BlobStore } from '../storage/s3.ts';
import { untilStored } from './stored.ts';
import type { AgentStream } from './stream.ts';
import { runToolCall } from './tool-call.ts';
import type { createResultEntry } from './tool-result-entry.ts';
import { TOOL_CANCEL_GRACE_MS } from './tools.ts';
import type { ToolDefinition, ToolRegistry } from './tools.ts';

/** A tool call's result kept on the activity's heartbeats, so that a retry stores it instead of running it again. */
export interface ToolProgress {
  callId: string;
  /** The tool's result, once it has answered. */
  content?: string;
  /** Attempts of this call that the tool itself failed (not the ones a dead or frozen worker cost). */
  toolErrors?: number;
}

/** Tool results up to this many characters ride on the heartbeats (a heartbeat's details stay well under 2 MB). */
export const TOOL_RESULT_IN_HEARTBEAT_CHARS = 256 * 1024;

/** A call's progress as the heartbeats carry it, and whether a result may ride on them. */
export interface ProgressSlot {
  progress: ToolProgress | undefined;
  keep: (content: string) => boolean;
  /** Told when `progress` changed (a step's calls keep theirs in one list). */
  changed?: () => void;
}

/** What running a call takes: the tools, the store, the live stream, and the storing of its result (`enter`). */
export interface ExecutionDeps {
  tools: ToolRegistry;
  store: BlobStore;
  stream: AgentStream;
  enter: ReturnType<typeof createResultEntry>;
}

/** Running one call that needs neither approval nor the workflow (`execute`). */
export function createToolExecution({ tools, store, stream, enter }: ExecutionDeps) {
  /**
   * Runs a call that needs neither approval nor the workflow: the tool (unless `slot` holds its result from an earlier
   * attempt), then its result stored and streamed. `slot` is what the heartbeats carry for the call; `beat` sends it
   * now (a tool's error is counted there before the attempt fails).
   */
  async function execute(
    agent: AgentLife,
    input: RunToolInput & { call: ToolCall; counting: Counting },
    tool: ToolDefinition | undefined,
    slot: ProgressSlot,
    beat: () => void,
    interrupt: AbortSignal,
  ): Promise<ContextRecord> {
    const { call, resultId } = input;
    /** What the tool returned after the call was cancelled: kept apart, never under the result's id. */
    const keepLate = (content: string) =>
      untilStored(() =>
        store.put(lateResultKey(agent, resultId), JSON.stringify({ role: 'tool', tool_call_id: call.id, content })),
      );
    let content = slot.progress?.content;
    // The call reaches the live stream while the tool runs (best effort: it never fails the call; one log's appends
    // keep the order they were asked in, so the result's item still follows it: storage/stream-log.ts). A retry asks
    // again (looked for in the log first): its attempt before may have died with the tool done and the item unwritten.
    const announced = stream.toolCall(agent, call);
    if (content === undefined) {
      const running = runToolCall(tools, tool, call, { ...agent, store, callId: call.id, signal: interrupt });
      try {
        content = await unlessCancelled(running, interrupt, keepLate);
      } catch (error) {
        if (error instanceof CancelledFailure) throw error;
        const toolErrors = (slot.progress?.toolErrors ?? 0) + 1;
        slot.progress = { callId: call.id, toolErrors };
        slot.changed?.();
        if (toolErrors < TOOL_ERROR_ATTEMPTS) beat();
        throw toolFailure(error, call, toolErrors);
      }
      if (slot.keep(content)) {
        slot.progress = { callId: call.id, content };
        slot.changed?.();
      }
    }
    if (interrupt.aborted) {
      await keepLate(content);
      throw new CancelledFailure('the turn was interrupted: the result is kept apart, not used');
    }
    const message = { role: 'tool' as const, tool_call_id: call.id, content };
    // Stored first: the stream shows a result that a retry keeps (one whose tool ran again may differ).
    const record = await untilStored(() => enter(agent, resultId, message, input, tool));
    await Promise.all([stream.toolResult(agent, call, content), announced]);
    return record;
  }

  return execute;
}

/**
 * The tool's result, unless the call is cancelled first: then the tool has {@link TOOL_CANCEL_GRACE_MS} to stop, and
 * the call ends cancelled either way; a result that comes later is handed to `keepLate`.
 */
async function unlessCancelled(
  running: Promise<string>,
  interrupt: AbortSignal,
  keepLate: (content: string) => Promise<void>,
): Promise<string> {
  const cancelled = new Promise<void>((resolve) => {
    if (interrupt.aborted) resolve();
    else interrupt.addEventListener('abort', () => resolve(), { once: true });
  });
  // A tool that honours the cancellation rejects at once: that is the cancellation, not a failure of the tool.
  const first = await Promise.race([
    running.then(
      (content) => ({ content }),
      (error: unknown) => {
        if (interrupt.aborted) return undefined;
        throw error;
      },
    ),
    cancelled.then(() => undefined),
  ]);
  if (first !== undefined) return first.content;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<undefined>(
    (resolve) => (timer = setTimeout(() => resolve(undefined), TOOL_CANCEL_GRACE_MS)),
  );
  const settled = await Promise.race([
    running.then(
      (content) => ({ content }),
      () => ({ content: undefined }),
    ),
    grace,
  ]);
  clearTimeout(timer);
  if (settled?.content !== undefined) await keepLate(settled.content);
  else if (settled === undefined) {
    // Abandoned: the tool runs on; what it returns is kept apart when it comes.
    void running.then(keepLate, noResult).catch((error: unknown) => {
      log.warn(`late tool result not kept: ${String(error)}`);
    });
  }
  throw new CancelledFailure('the turn was interrupted: the tool call was cancelled');
}

/**
 * A tool's own error: retried (Temporal's next attempt) until it is the call's {@link TOOL_ERROR_ATTEMPTS}th, then
 * not retried again. The count rides on the heartbeat, so attempts that a worker's death or freeze cost are not
 * counted against the tool.
 */
function toolFailure(error: unknown, call: ToolCall, toolErrors: number): unknown {
  if (toolErrors < TOOL_ERROR_ATTEMPTS) return error;
  const message = error instanceof Error ? error.message : String(error);
  return failedForGood(call, { message, type: FAILURE.toolFailed }, toolErrors, error);
}

/** The failure of a tool call that is not retried: its message and type, the call and the attempts it took. */
export function failedForGood(
  call: ToolCall,
  failure: ToolFailure,
  attempts: number,
  cause?: unknown,
): ApplicationFailure {
  return ApplicationFailure.create({
    message: failure.message,
    ...(failure.type ? { type: failure.type } : {}),
    nonRetryable: true,
    details: [{ tool: call.function.name, callId: call.id, attempts }],
    ...(cause instanceof Error ? { cause } : {}),
  });
}

/** A tool that failed after its call was cancelled: nothing to keep. */
function noResult(): void {}
