/**
 * Lean payloads: what the model and tool calls' inputs and results leave out of the workflow's history
 * because the other side knows it, and the defaults that stand for it, in one place for the workflow and the
 * activities. The workflow makes an input lean and restores a result whole; the activity restores the input whole
 * and makes its result lean. Results recorded before read the same: they are whole already.
 *
 *   leanModelInput(whole)        // workflow → callModel: no default counting, registry window and price, …
 *   wholeModelInput(lean)        // in the activity
 *   leanModelResult(result, in)  // callModel → workflow: no empty `stored`, no record id, …
 *   wholeModelResult(payload, { model, replyId })
 *
 * Pure and deterministic (the workflow runs it): unit-tested in test/unit/lean-calls.test.ts.
 */
import type {
  CallModelInput,
  CallModelPayload,
  CallModelResult,
  LeanNoteFigures,
  LeanRecord,
  ModelReply,
  ModelReplyPayload,
  NoteFigures,
  RunToolInput,
  WholeCallModelInput,
} from './activities.ts';
import type { LedgerChanges, ListChange, SummaryOutcome, SummaryPayload } from './compaction-activities.ts';
import type { TaskLedger } from '../engine/ledger.ts';
import type { ApprovalNeeded } from './activities.ts';
import type { DelegateRequest } from './delegation.ts';
import type { ContextRecord, ViewRef } from './records.ts';
import { compactionKey, messageIdOf } from './keys.ts';
import type { AgentLife } from './keys.ts';
import { DEFAULT_TURN_STEPS } from './inputs.ts';
import { resolveModelInfo } from '../engine/models.ts';
import type { Counting } from '../engine/models.ts';
import type { ModelPrice, ResolvedPrice } from '../engine/pricing.ts';
import type { CallOfReply } from '../engine/messages.ts';

/** How tokens are counted when an input says nothing: o200k_base, exact (OpenAI's current models). */
export const DEFAULT_COUNTING: Readonly<Counting> = { encoding: 'o200k_base', margin: 1 };

/** The role of a model reply's record when its payload leaves it out. */
const REPLY_ROLE = 'assistant';
/** The role of a tool result's record when its payload leaves it out. */
const RESULT_ROLE = 'tool';

const sameCounting = (a: Counting, b: Counting) => a.encoding === b.encoding && a.margin === b.margin;

const samePrice = (a: ModelPrice, b: ResolvedPrice) =>
  a.inputPerMillion === b.inputPerMillion &&
  a.cachedInputPerMillion === b.cachedInputPerMillion &&
  a.outputPerMillion === b.outputPerMillion;

/** What the registry says of `model` with no override: its window and price (undefined: the registry does not know it). */
export function registryDefaults(model: string): { window: number; price?: ResolvedPrice } | undefined {
  try {
    const info = resolveModelInfo(model);
    return { window: info.window, ...(info.price ? { price: info.price } : {}) };
  } catch {
    return undefined; // an unknown model: the input says everything
  }
}

/** The key of compaction `seq`'s context manifest in the agent's life: a view's base. */
function baseKeyOf(agent: AgentLife, seq: number): string {
  return compactionKey(agent, seq, 'context.json');
}

/** The view with its base named by compaction number when it is one of the agent's own context manifests. */
function leanView(agent: AgentLife, view: ViewRef): ViewRef {
  const match = view.base !== undefined ? /\/compactions\/(\d{6,})\/context\.json$/.exec(view.base) : null;
  if (!match) return view;
  const seq = Number(match[1]);
  if (baseKeyOf(agent, seq) !== view.base) return view;
  const { base: _, ...rest } = view;
  return { baseCompaction: seq, ...rest };
}

/** The view with its base's key whole again. */
function wholeView(agent: AgentLife, view: ViewRef): ViewRef {
  if (view.baseCompaction === undefined) return view;
  const { baseCompaction, ...rest } = view;
  return { base: baseKeyOf(agent, baseCompaction), ...rest };
}

/** The budget note's figures less the steps the activity can tell from the call's step, and the default limit. */
function leanFigures(figures: NoteFigures, turn: WholeCallModelInput['turn']): LeanNoteFigures {
  const { steps, ...rest } = figures;
  const used = turn !== undefined && steps.used === turn.step - 1 ? {} : { used: steps.used };
  const limit = steps.limit === DEFAULT_TURN_STEPS ? {} : { limit: steps.limit };
  const lean = { ...used, ...limit };
  return Object.keys(lean).length ? { ...rest, steps: lean } : rest;
}

function wholeFigures(figures: LeanNoteFigures, turn: CallModelInput['turn']): NoteFigures {
  const { steps, ...rest } = figures;
  const used = steps?.used ?? (turn !== undefined ? turn.step - 1 : 0);
  return { ...rest, steps: { used, limit: steps?.limit ?? DEFAULT_TURN_STEPS } };
}

/** The model call's input as the workflow schedules it: what the activity can tell itself left out. */
export function leanModelInput(input: WholeCallModelInput): CallModelInput {
  const { replyId, counting, price, window, view, budget, ...rest } = input;
  const registry = registryDefaults(input.model);
  return {
    ...rest,
    view: leanView(input, view),
    ...(replyId === messageIdOf(view.lastSeq + 1) ? {} : { replyId }),
    ...(sameCounting(counting, DEFAULT_COUNTING) ? {} : { counting }),
    ...(price === undefined || (registry?.price && samePrice(price, registry.price)) ? {} : { price }),
    ...(window === undefined || window === registry?.window ? {} : { window }),
    ...(budget !== undefined ? { budget: leanFigures(budget, input.turn) } : {}),
  };
}

/** The model call's input whole again, in the activity (an input of before is whole already). */
export function wholeModelInput(input: CallModelInput): WholeCallModelInput {
  const { replyId, counting, price, window, view, budget, ...rest } = input;
  const registry = registryDefaults(input.model);
  const resolvedPrice = price ?? registry?.price;
  const resolvedWindow = window ?? registry?.window;
  return {
    ...rest,
    view: wholeView(input, view),
    replyId: replyId ?? messageIdOf(view.lastSeq + 1),
    counting: counting ?? { ...DEFAULT_COUNTING },
    ...(resolvedPrice !== undefined ? { price: resolvedPrice } : {}),
    ...(resolvedWindow !== undefined ? { window: resolvedWindow } : {}),
    ...(budget !== undefined ? { budget: wholeFigures(budget, input.turn) } : {}),
  };
}

/** The model call's result as the activity returns it: what the workflow knows left out. */
export function leanModelResult(result: CallModelResult, input: WholeCallModelInput): CallModelPayload {
  const { stored, reply, ...rest } = result;
  return {
    ...(stored.length ? { stored } : {}),
    ...rest,
    ...(reply ? { reply: leanReply(reply, input) } : {}),
  };
}

function leanReply(reply: ModelReply, input: WholeCallModelInput): ModelReplyPayload {
  const { record, content, toolCalls, servedBy, ...rest } = reply;
  const { id, role, toolCallIds, ...fields } = record;
  if (id !== input.replyId) return reply; // not the reply asked for: whole (a record with its id reads as whole)
  const ids = toolCalls.map((call) => call.id);
  const sameIds = (toolCallIds ?? []).length === ids.length && ids.every((callId, i) => toolCallIds![i] === callId);
  return {
    record: {
      ...(role === REPLY_ROLE ? {} : { role }),
      ...fields,
      ...(sameIds ? {} : { toolCallIds: toolCallIds ?? [] }),
    },
    ...(content === '' ? {} : { content }),
    toolCalls: toolCalls.map(({ type: _, ...call }) => call),
    ...rest,
    ...(servedBy === input.model ? {} : { servedBy: servedBy ?? '' }),
  };
}

/** The model call's result whole again, in the workflow: a lean one restored, one recorded before as it is. */
export function wholeModelResult(payload: CallModelPayload, call: { model: string; replyId: string }): CallModelResult {
  const { stored, reply, ...rest } = payload;
  return { stored: stored ?? [], ...rest, ...(reply ? { reply: wholeReply(reply, call) } : {}) };
}

function wholeReply(reply: ModelReplyPayload, call: { model: string; replyId: string }): ModelReply {
  if (reply.record.id !== undefined) return reply as ModelReply; // recorded before: whole
  const { record, content, toolCalls, servedBy, ...rest } = reply;
  const { role, toolCallIds, ...fields } = record;
  const calls: CallOfReply[] = toolCalls.map(({ id, function: fn }) => ({ id, type: 'function', function: fn }));
  const ids = toolCallIds ?? calls.map((c) => c.id);
  return {
    record: { id: call.replyId, role: role ?? REPLY_ROLE, ...fields, ...(ids.length ? { toolCallIds: ids } : {}) },
    content: content ?? '',
    toolCalls: calls,
    ...rest,
    ...(servedBy === '' ? {} : { servedBy: servedBy ?? call.model }),
  };
}

/** What `runTool` answers: the result's record, or that the call waits for approval, or a delegation. */
export type ToolOutcome = ContextRecord | ApprovalNeeded | DelegateRequest;
/** {@link ToolOutcome} as recorded: a lean input's record leaves out its `id`, `role` and `toolCallId`. */
export type ToolOutcomePayload = LeanRecord | ApprovalNeeded | DelegateRequest;

/** A tool call's input as the workflow schedules it (reachable turns): the lean shape, see `RunToolInput`. */
export function leanToolInput(input: RunToolInput & { counting: Counting; call: CallOfReply }): RunToolInput {
  const { call, counting, approval, ...rest } = input;
  const { type: _, ...ref } = call;
  const byReply = call.function.arguments === undefined && input.replyId !== undefined;
  return {
    ...rest,
    call: byReply ? { id: call.id } : ref,
    ...(sameCounting(counting, DEFAULT_COUNTING) ? {} : { counting }),
    ...(approval === 'ask' ? {} : { approval }),
  };
}

/** Whether a `runTool` input is lean (its call without `type`): its defaults stand, its result is lean too. */
export function isLeanToolInput(input: RunToolInput): boolean {
  return input.call.type === undefined;
}

/** The defaults of a tool call's input, in the activity: a lean one's, or as one of before says. */
export function toolInputDefaults(input: RunToolInput): {
  counting: Counting;
  approval: RunToolInput['approval'];
} {
  const lean = isLeanToolInput(input);
  return {
    counting: input.counting ?? { ...DEFAULT_COUNTING },
    approval: input.approval ?? (lean ? 'ask' : undefined),
  };
}

/** `runTool`'s answer as recorded: a result's record less what a lean input says (its ids, its role). */
export function leanToolResult(outcome: ToolOutcome, input: RunToolInput): ToolOutcomePayload {
  if (!isLeanToolInput(input) || !('id' in outcome)) return outcome;
  const { id, role, toolCallId, ...fields } = outcome;
  if (id !== input.resultId || toolCallId !== input.call.id) return outcome; // (never: whole, read as it is)
  return { ...(role === RESULT_ROLE ? {} : { role }), ...fields };
}

/** `runTool`'s answer whole again, in the workflow: a lean record restored, anything else as it is. */
export function wholeToolResult(payload: ToolOutcomePayload, call: { resultId: string; callId: string }): ToolOutcome {
  if ('approvalNeeded' in payload || 'delegate' in payload || payload.id !== undefined) return payload as ToolOutcome;
  const { role, ...fields } = payload;
  return { id: call.resultId, role: role ?? RESULT_ROLE, ...fields, toolCallId: call.callId };
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** `list` as the end of `base` from some index, then what it adds; undefined when it is not one (or no shorter). */
function listChange(base: readonly string[], list: readonly string[]): ListChange | undefined {
  for (let from = 0; from <= base.length; from++) {
    const kept = base.length - from;
    if (kept <= list.length && sameList(base.slice(from), list.slice(0, kept))) {
      const change = { from, add: list.slice(kept) };
      return JSON.stringify(change).length < JSON.stringify(list).length ? change : undefined;
    }
  }
  return undefined;
}

/** The ledger as a change of `base` (the ledger its plan was made with): what is the same left out. */
export function ledgerChangesOf(base: TaskLedger | undefined, ledger: TaskLedger): LedgerChanges {
  if (base === undefined) return { ...ledger };
  const changes: Record<string, unknown> = {};
  const keys = new Set([...Object.keys(base), ...Object.keys(ledger)] as (keyof TaskLedger)[]);
  for (const key of keys) {
    const was = base[key];
    const now = ledger[key];
    if (now === undefined) {
      if (was !== undefined) changes[key] = null;
    } else if (Array.isArray(now) && Array.isArray(was)) {
      if (!sameList(was, now)) changes[key] = listChange(was, now) ?? now;
    } else if (now !== was) changes[key] = now;
  }
  return changes;
}

/** The ledger `changes` make of `base`: {@link ledgerChangesOf} undone. */
export function ledgerWith(base: TaskLedger | undefined, changes: LedgerChanges): TaskLedger {
  const ledger: Record<string, unknown> = { ...base };
  for (const [key, change] of Object.entries(changes) as [keyof TaskLedger, unknown][]) {
    if (change === null) delete ledger[key];
    else if (change !== null && typeof change === 'object' && !Array.isArray(change)) {
      const { from, add } = change as ListChange;
      ledger[key] = [...((base?.[key] as string[] | undefined) ?? []).slice(from), ...add];
    } else ledger[key] = change;
  }
  return ledger as unknown as TaskLedger;
}

/** The summary's outcome as recorded: its ledger as a change of `base`, the ledger its plan was made with. */
export function leanSummary(outcome: SummaryOutcome, base: TaskLedger | undefined): SummaryPayload {
  const { ledger, ...rest } = outcome;
  return { ...rest, ledgerChanges: ledgerChangesOf(base, ledger) };
}

/** The summary's outcome whole again, in the workflow: `base` is the ledger it sent its plan (one of before: as it is). */
export function wholeSummary(payload: SummaryPayload, base: TaskLedger | undefined): SummaryOutcome {
  if (payload.ledger !== undefined || payload.ledgerChanges === undefined) return payload as SummaryOutcome;
  const { ledgerChanges, ...rest } = payload;
  return { ...rest, ledger: ledgerWith(base, ledgerChanges) };
}
