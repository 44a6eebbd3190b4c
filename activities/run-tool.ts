/**
 * The `runTool` activity: one tool call of the model's, run and stored as a tool message. It heartbeats throughout:
 * a worker that dies meanwhile is noticed within the heartbeat timeout, and the call runs again on another worker (at
 * least once: a tool with side effects dedupes by `callId`). Once the tool has answered, its result rides on the
 * heartbeats (when it is small enough), so a retry stores it instead of running the tool again; a storage outage is
 * waited out here, not retried by running the tool again.
 *
 * Reachable turns (issue 28): asked with `approval: 'ask'`, a call whose tool's own rule asks for approval is not run
 * (the turn waits for a person). Cancelled (an `interrupt`), the tool's `signal` is aborted; a tool that stops, or
 * does not within {@link TOOL_CANCEL_GRACE_MS}, leaves the call cancelled, and whatever it returns is stored under
 * its late-result key, apart: the turn answered the call as interrupted, and nothing is written under its result id.
 *
 * The same code runs a reply's plain calls inside the model call's activity (`runReplyCalls`, contract/activities.ts
 * `RunCalls`): each call's progress rides on that activity's heartbeats instead, and a call that waits for approval,
 * is the workflow's to answer, was cancelled or whose tool threw is left to the workflow (`runTool`, told the tool's
 * errors so far in `toolErrors`).
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { FAILURE, TOOL_ERROR_ATTEMPTS } from '../contract/failures.ts';
import {
  agentLife,
  lateResultKey,
  messageKey,
  originalResultKey,
  resultIdsOf,
  resultMarksKey,
} from '../contract/keys.ts';
import { quoted } from '../contract/inputs.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { CallModelResult, LeanRecord, RunCalls, RunToolInput, ToolFailure } from '../contract/activities.ts';
import { leanToolResult, toolInputDefaults } from '../contract/lean-calls.ts';
import type { ToolOutcome, ToolOutcomePayload } from '../contract/lean-calls.ts';
import type { ContextRecord, ResultMarks } from '../contract/records.ts';
import type { Counting } from '../engine/models.ts';
import type { ChatMessage, ToolCall } from '../engine/messages.ts';
import type { BlobStore } from '../storage/s3.ts';
import { ANSWERED_BY_WORKFLOW, kindOf } from './model-reply.ts';
import { heartbeatNow, interruptSignal, untilStored, withHeartbeat } from './stored.ts';
import { loadTokenCounter } from '../engine/tokens.ts';
import { cutAtEntry, resourceOf } from './tool-results.ts';
import {
  asksApproval,
  contextReload,
  contextSearch,
  definedLimits,
  TOOL_CANCEL_GRACE_MS,
  ToolInputError,
} from './tools.ts';
import type { ToolContext, ToolDefinition, ToolRegistry } from './tools.ts';
import type { AgentStream } from './stream.ts';
import type { SearchWrites } from './search-writes.ts';

/** A tool call's result kept on the activity's heartbeats, so that a retry stores it instead of running it again. */
export interface ToolProgress {
  callId: string;
  /** The tool's result, once it has answered. */
  content?: string;
  /** Attempts of this call that the tool itself failed (not the ones a dead or frozen worker cost). */
  toolErrors?: number;
}

/** Tool results up to this many characters ride on the heartbeats (a heartbeat's details stay well under 2 MB). */
const TOOL_RESULT_IN_HEARTBEAT_CHARS = 256 * 1024;
/** A step's tool results (run in the model call's activity) ride on its heartbeats up to this many characters in all. */
const STEP_RESULTS_IN_HEARTBEAT_CHARS = 1024 * 1024;

/**
 * Runs a tool call. An unknown tool (the result names the tools there are), arguments that are not a JSON object, or
 * a {@link ToolInputError} become an error result the model can read, so the call is always answered; any other error
 * fails the attempt and Temporal retries it. A tool whose `run` resolves to anything but a string breaks its contract:
 * the call is answered with an error result naming the tool and what it returned (not retried: running it again
 * would return the same), and the worker logs a warning for the tool's author.
 */
export async function runToolCall(
  tools: ToolRegistry,
  tool: ToolDefinition | undefined,
  call: ToolCall,
  context: ToolContext,
): Promise<string> {
  if (!tool) return `error: unknown tool ${quoted(call.function.name)} (the tools: ${tools.names().join(', ')})`;
  let result: unknown;
  try {
    result = await tool.run(parseToolArguments(call), context);
  } catch (error) {
    if (!(error instanceof ToolInputError)) throw error;
    return `error: ${error.message}`;
  }
  if (typeof result === 'string') return result;
  const returned = kindOf(result);
  log.warn(`tool ${tool.name} returned ${returned}, not a string: the call is answered with an error result`, {
    callId: call.id,
  });
  return `error: tool ${tool.name} returned ${returned}, not text (a tool’s run must resolve to a string)`;
}

function parseToolArguments(call: ToolCall): Record<string, unknown> {
  let args: unknown;
  try {
    args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
  } catch (error) {
    throw new ToolInputError(
      `arguments of ${call.function.name} are not valid JSON (${(error as Error).message}); they must be a JSON object`,
    );
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new ToolInputError(`arguments of ${call.function.name} must be a JSON object`);
  }
  return args as Record<string, unknown>;
}

/** What the activity needs: the tools, the store, and how a message is stored and counted. */
export interface RunToolDeps {
  tools: ToolRegistry;
  store: BlobStore;
  /** The live stream: the call, its result, an approval asked (activities/stream.ts). */
  stream: AgentStream;
  save: (agent: AgentLife, messageId: string, message: ChatMessage, counting: Counting) => Promise<ContextRecord>;
  /** The search index: a stored result (and its whole original) is added to it (activities/search-writes.ts). */
  search?: SearchWrites;
}

/** A call's progress as the heartbeats carry it, and whether a result may ride on them. */
interface ProgressSlot {
  progress: ToolProgress | undefined;
  keep: (content: string) => boolean;
  /** Told when `progress` changed (a step's calls keep theirs in one list). */
  changed?: () => void;
}

/**
 * The `runTool` activity, and the same running of a reply's plain tool calls inside the model call's activity
 * (`runReplyCalls`, contract/activities.ts {@link RunCalls}).
 */
export function createToolRunner({ tools, store, save, stream, search }: RunToolDeps) {
  /**
   * Stores a tool's result as it enters the context: cut to its tool's `maxResultTokens` (the policy's, over the
   * definition's) with the whole stored apart, and its record naming the tool and the resource the call read.
   */
  async function enter(
    agent: AgentLife,
    resultId: string,
    message: ChatMessage & { content: string },
    input: RunToolInput & { call: ToolCall; counting: Counting },
    tool: ToolDefinition | undefined,
  ): Promise<ContextRecord> {
    const { record, marks } = await stored(agent, resultId, message, input, tool);
    // What the record says beyond the body, beside it: the plan step derives the same record from the two.
    if (marks) await store.put(resultMarksKey(agent, resultId), JSON.stringify(marks), 'application/json');
    return { ...record, ...marks };
  }

  /** The result stored (cut, the whole apart), its record as the body gives it, and what the record says beyond it. */
  async function stored(
    agent: AgentLife,
    resultId: string,
    message: ChatMessage & { content: string },
    { call, counting, limits: policyLimits }: RunToolInput & { call: ToolCall; counting: Counting },
    tool: ToolDefinition | undefined,
  ): Promise<{ record: ContextRecord; marks?: ResultMarks }> {
    // What context_reload and context_search return is stored content again: not indexed a second time.
    if (tool === contextReload)
      return { record: await save(agent, resultId, message, counting), marks: { reload: true } };
    if (tool === contextSearch) return { record: await save(agent, resultId, message, counting) };
    const own = tool ? definedLimits(tool) : {};
    const limits = { ...own, ...policyLimits };
    const resource = resourceOf(call);
    const marks: ResultMarks = {
      tool: call.function.name,
      ...(resource !== undefined ? { resource } : {}),
      ...(own.neverMask ? { neverMask: true as const } : {}),
      ...(own.preview !== undefined ? { resultPreview: own.preview } : {}),
    };
    const originalKey = originalResultKey(agent, resultId);
    const cut =
      limits.maxResultTokens === undefined
        ? undefined
        : cutAtEntry(message, limits, originalKey, await loadTokenCounter(counting.encoding), counting.margin);
    if (cut === undefined) {
      const record = await save(agent, resultId, message, counting);
      await search?.messages(agent, [{ messageId: resultId, message }]);
      return { record, marks };
    }
    // The whole result first: the cut names it, and nothing the model reads may point at what is not stored yet.
    await store.put(originalKey, JSON.stringify(message), 'application/json');
    const record = await save(agent, resultId, cut, counting);
    await search?.messages(agent, [{ messageId: resultId, message: cut, original: message }]);
    return { record, marks: { kind: 'truncated', ref: originalKey, ...marks } };
  }

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
    if (content === undefined) {
      await stream.toolCall(agent, call);
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
    const record = await untilStored(() => enter(agent, resultId, message, input, tool));
    await stream.toolResult(agent, call, content);
    return record;
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

  return { runTool, runReplyCalls };
}

/** The tool runner: `runTool`, and `runReplyCalls` for the model call. */
export type ToolRunner = ReturnType<typeof createToolRunner>;

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
function failedForGood(call: ToolCall, failure: ToolFailure, attempts: number, cause?: unknown): ApplicationFailure {
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

/** The arguments a tool's approval rule sees: the call's, or none when they are not a JSON object. */
function argumentsForRule(call: ToolCall): Record<string, unknown> {
  try {
    return parseToolArguments(call);
  } catch {
    return {};
  }
}
