/**
 * What the agent's Updates return and what it records: a message's turn, a compaction (its event, draft and stats),
 * a discard and a revert.
 */
import type { PinResult, UnpinResult } from './pins.ts';
import type { SettingName, TurnStop } from './inputs.ts';
import type { RemovedItem } from '../engine/planner/index.ts';
import type { StrategyName } from '../engine/policy.ts';
import type { LoopGuardVerdict, Trigger } from '../engine/trigger.ts';
import type { CostEstimate } from '../engine/compaction-value.ts';
import type { CacheInvalidation } from '../engine/pricing.ts';

export interface SendResult {
  /** Turn number this message opened (1-based). */
  turn: number;
  reply: string;
  messageId: string;
  replyId: string;
  /** Tool calls run during the turn. */
  toolCalls: number;
  /** Model calls made during the turn (absent in results recorded before this field existed). */
  steps: number;
  /**
   * Set when the turn reached its budget ({@link TurnBudget}) before the model gave a final answer: `reply` then is
   * {@link turnStoppedReply}'s text (not stored in the context), and another message continues the work.
   */
  stopped?: TurnStop;
  /**
   * The model that served the reply, as the provider named it; `replayed:<model>` when the worker's model is the
   * offline replayed one (llm/replayed-model.ts `isReplayedModel`), which clients label. Absent in results recorded
   * before this field existed, and when the provider names no model.
   */
  servedBy?: string;
  /** Set when an `interrupt` ended the turn: the step it was on ({@link interruptedReply} is the reply). */
  interrupted?: { step: number };
}

/** Where a `steer` landed: the turn and the step whose request carries it (a turn it opened on an idle agent). */
export interface SteerResult {
  turn: number;
  /** The model call that carries it (1-based). */
  step: number;
  /** The steer's message id in the context. */
  messageId: string;
  /** The agent was idle: the steer opened this turn, as a message does. */
  opened: boolean;
}

/** What an `interrupt` did. */
export interface InterruptResult {
  /** A turn was in progress and ended; false when the agent was idle. */
  interrupted: boolean;
  /** The turn it ended, and its step then. */
  turn?: number;
  step?: number;
  /** In a few words: `turn 3 interrupted at step 12`, `no turn in progress`. */
  reason: string;
  /** The turn the interrupt's text opens (queued ahead of every other message). */
  opens?: number;
}

/** What became of a tool call waiting for approval. */
export interface ToolDecisionResult {
  callId: string;
  tool: string;
  decision: 'approved' | 'denied';
}

/**
 * How the result that stands in for a tool call an `interrupt` cancelled begins (workflows/turn/store.ts): the call's
 * own result never came. The offline model reads it to make such a call again (llm/offline-model.ts).
 */
export const INTERRUPTED_CALL_TAG = '[interrupted]';

/** The reply of a turn an `interrupt` ended (the `send`'s reply; the context holds what the model really said). */
export function interruptedReply(turn: number, step: number): string {
  return (
    `[turn interrupted] Turn ${turn} was interrupted at step ${step}: the model call or tools in flight were ` +
    'cancelled and every tool call left unanswered was answered as interrupted; the conversation is intact. Send ' +
    'another message to go on.'
  );
}

/**
 * An Update's result as the agent keeps it to answer the Update again (workflows/applied-updates.ts): whole, or a
 * `send`'s without its reply, which is stored under `replyId` and read back when asked (`replyStored`).
 */
export type KeptResult = UpdateResult | (Omit<SendResult, 'reply'> & { replyStored: true });

/**
 * What a compaction did, as the workflow keeps it (the last few in state; the queries and the compact Update return
 * it): everything but the list of removed items, which can run to thousands and lives in the full
 * {@link CompactionEvent} in S3. Keeping it out holds the state (which the worker caches and continue-as-new
 * carries) and each activity result to a size that does not grow with the context.
 */
export interface CompactionEventSummary {
  /** 1, 2, 3, … per agent. */
  seq: number;
  /** The pins it kept verbatim (contract/pins.ts), as the state's events list them; absent: none. */
  pinned?: string[];
  /** What fired it; `revert` for a revert (the `revert` Update: the context as it was before an earlier event). */
  trigger: Trigger | 'revert';
  /** What fired, or the forced compaction's request. */
  reason: string;
  /** ISO time (workflow time) when it was applied. */
  at: string;
  strategies: StrategyName[] | string[];
  /** Notes of the steps (a fallback taken, an emergency cut). */
  notes: string[];
  tokensBefore: number;
  tokensAfter: number;
  messagesBefore: number;
  messagesAfter: number;
  targetTokens: number;
  reachedTarget: boolean;
  shortfall?: string;
  /** How many messages left the context (listed in the full event, `keys.event`). */
  removedCount: number;
  summaryTokens?: number;
  /** How the summary reply was read: structured output, headings, or plain text. */
  summaryParsedAs?: string;
  /** Summary calls a span too large for the summary model's window took (chunks, each folding in the one before). */
  summaryChunks?: number;
  /**
   * Structured output (`json_schema`), plain text (the fallback when the provider rejected structured output, or a
   * summary asked in conversation mode: `llm.request`), or none (extractive).
   */
  responseFormat?: 'json_schema' | 'text' | 'none';
  /** Must-keep facts of the removed messages: found in the summary, missing after one re-prompt, pinned verbatim. */
  facts?: { found: number; missing: number; reprompted: boolean; pinned: string[] };
  llm?: SummaryCall;
  /**
   * With prices in the policy (`compaction.cost`): the estimated cost of the next turns without and with this
   * compaction (summary call included), from the tokens it actually left; `netBenefit` is what it saves.
   */
  cost?: CostEstimate;
  /**
   * What this compaction cost (engine/pricing.ts), set by the workflow when it commits it and then added to the stored
   * copy of the event, `keys.event` (absent in events of before, and in stored copies of before the `event-spent`
   * patch): its summary call(s) in USD at the summary model's price
   * (0 for an extractive summary or none; null when that model's price is not known), and the prompt cache it
   * invalidated: what the next model call sends uncached that it would have found cached, and what that costs more.
   */
  spent?: { summary: number | null; cache: CacheInvalidation };
  /**
   * The loop guard's verdict (policy `loopGuard`): whether it saved less than the minimum share (`ineffective`, its
   * note in `notes`), the ineffective automatic compactions in a row, and the pause it set (`paused`,
   * `pausedUntil`). Absent without a guard, and in events recorded before it.
   */
  loopGuard?: LoopGuardVerdict;
  durationMs: number;
  /** Storage keys of the event, the removed segment (JSONL) and the new context manifest. */
  keys: { event: string; removed: string; context: string };
  instructions?: string;
}

/**
 * The summary call(s) of a compaction: the summary model, their tokens and time, and their cost in USD at that model's
 * list price (0 for the extractive summarizer; null when the model has no known price; absent before prices).
 */
export interface SummaryCall {
  model: string;
  promptTokens: number;
  /** Of `promptTokens`, those the provider served from its prompt cache (priced at the cached price); absent: none reported. */
  cachedTokens?: number;
  completionTokens: number;
  durationMs: number;
  cost?: number | null;
  /**
   * How the summary was asked (policy `summary.request`): `conversation`, the agent's own request up to the span's
   * end and an instruction (its prefix served from the agent's prompt cache), or `transcript`, the summarizer's own
   * prompt. Absent: extractive (no call), or an event of before.
   */
  request?: 'conversation' | 'transcript';
  /** Why a summary the policy asked in conversation mode was asked as a transcript (another model, too large, chunks). */
  transcriptBecause?: string;
}

/** The full compaction event, stored at `keys.event` (all of them, for as long as the agent's objects are kept). */
export interface CompactionEvent extends CompactionEventSummary {
  /** Every message that left the context, with the storage key of its original. */
  removed: RemovedItem[];
}

/**
 * The summary of an event. Also reads events recorded before summaries existed (no `removedCount`, a `removed`
 * list), which a running agent may still hold in its state.
 */
export function summaryOfEvent(event: CompactionEventSummary | CompactionEvent): CompactionEventSummary {
  const { removed, ...summary } = event as CompactionEventSummary & { removed?: RemovedItem[] };
  return { ...summary, removedCount: summary.removedCount ?? removed?.length ?? 0 };
}

/** A compaction planned and summarized, kept for review (`compact` with `review: true`). */
export interface Draft {
  /** `draft-1`, `draft-2`, … per agent. */
  id: string;
  /** The event seq it would take when applied. */
  seq: number;
  /** Workflow time (ISO) it was made. */
  createdAt: string;
  reason: string;
  /** The plan's steps and what each saves; the whole plan is stored at `planKey`. */
  steps: { strategy: string; tokensSaved: number; note?: string }[];
  planKey: string;
  tokensBefore: number;
  /** The plan's estimate of the tokens after (the summary's own count is in `summaryTokens`). */
  tokensAfter: number;
  /** The summary message's text (absent when the plan summarizes nothing), where it is stored, and its tokens. */
  summary?: string;
  summaryKey?: string;
  summaryTokens?: number;
  /** Must-keep facts of the span: found in the summary, missing, pinned verbatim. */
  facts?: { found: number; missing: number; reprompted: boolean; pinned: string[] };
  /** The context it was made for: after `compactions` events, its first `messages` records. */
  madeFor: { compactions: number; messages: number };
  /** The summary's first characters (what the current details show of it). */
  summaryPreview?: string;
  /**
   * The draft of an automatic compaction (policy `review.automatic`): it waits for `approve` or `discard` until
   * `until` (workflow time, ISO; `timeoutSeconds` after it was made), then is applied or discarded (`onTimeout`).
   */
  waits?: { until: string; timeoutSeconds: number; onTimeout: 'apply' | 'discard' };
}

/** Characters of a draft's summary the current details show. */
export const SUMMARY_PREVIEW_CHARS = 200;

/** What `discard` did. */
export interface DiscardResult {
  discarded: string;
  /** The draft of an automatic compaction: automatic compaction is paused until the context reaches this many tokens. */
  pausedUntil?: number;
}

/** What a forced compaction did: the event, or why nothing was done. */
export interface CompactResult {
  compacted: boolean;
  reason: string;
  event?: CompactionEventSummary;
  /** With `review: true`: the draft, not applied. */
  draft?: Draft;
  /**
   * Not compacted because it would not shrink the context (unless asked with `evenIfLarger`): the tokens before and
   * after, `estimated` when the plan expected it (else the summary and ledger as written came to more).
   */
  noGain?: { tokensBefore: number; tokensAfter: number; estimated: boolean };
}

/** What a revert did: its own event (trigger `revert`), and what it restored in a sentence. */
export interface RevertResult {
  reverted: true;
  reason: string;
  event: CompactionEventSummary;
}

/** The stats of an agent that has not compacted yet. */
export const NO_COMPACTIONS: CompactionStats = { count: 0, averageSizeRatio: 0, tokensSaved: 0 };

export interface CompactionStats {
  count: number;
  /**
   * The context's size after a compaction as a share of its size before, averaged over the compactions (mean of
   * tokensAfter / tokensBefore: 0.4 = the context came to 40% of what it was; over 1, compactions grew it). Named
   * `averageReduction` in earlier releases, with the same meaning (a ratio, not a reduction).
   */
  averageSizeRatio: number;
  /** Tokens before minus tokens after, summed: net, a compaction that grew the context counts what it added. */
  tokensSaved: number;
  /**
   * Sum of the compactions' estimated net benefit when each was made, in USD, when the policy has prices
   * (`compaction.cost`, USD per million tokens); reverts take nothing off it.
   */
  costSaved?: number;
  /** Reverts (the `revert` Update) so far: events of their own, not counted in `count` and the reductions. */
  reverts?: number;
  /**
   * Tokens the reverts put back into the context, net (each revert's tokens after minus before: what the compactions
   * it undid had saved): `tokensSaved - tokensRestored` is what the compactions save now. Absent before a revert (and
   * for reverts of agents from before the field).
   */
  tokensRestored?: number;
  /** Compactions the loop guard found ineffective (policy `loopGuard`; absent before the first judged one). */
  ineffective?: number;
  /**
   * Set while the loop guard pauses automatic compaction: it resumes when the context reaches this many tokens
   * (the hard limit still compacts; a forced compaction runs).
   */
  pausedUntil?: number;
}

/** A setting `configure` changed: its value before and after (a system prompt as its text). */
export interface SettingChange {
  setting: SettingName;
  from: string | number | undefined;
  to: string | number;
}

/** What `configure` did. */
export interface ConfigureResult {
  /** The settings that changed (none when each was already as asked). */
  changed: SettingChange[];
  /** A compaction ran first, so that the context fits the smaller window (under the settings before). */
  compacted: boolean;
  /** That compaction's result (its event), or why none was needed or made. */
  compaction?: CompactResult;
  /** The settings now. */
  settings: { model: string; window: number };
}

/**
 * What an Update is answered with when the agent's run hands over to a new one (continue-as-new) inside a turn, while
 * the Update waits: an Update cannot outlive its run, so the client sends it again, with the same id, to the agent's
 * next run, which carries the input and answers it there (workflows/inbox.ts). `client/updates.ts` does that itself:
 * callers of this package never see it; a caller of the raw Update (the temporal CLI) sends it again.
 */
export interface HandedOverResult {
  handedOver: {
    /** Why the run handed over (its history budget). */
    reason: string;
    /** The turn in progress and the step it goes on at in the next run. */
    turn: number;
    step: number;
  };
}

/** Whether an Update's answer is {@link HandedOverResult}: send it again. */
export function isHandedOver(result: unknown): result is HandedOverResult {
  return typeof result === 'object' && result !== null && 'handedOver' in result;
}

/** An Update's result, as kept to answer it again when it is delivered twice. */
export type UpdateResult =
  | SendResult
  | CompactResult
  | RevertResult
  | DiscardResult
  | ConfigureResult
  | SteerResult
  | InterruptResult
  | ToolDecisionResult
  | PinResult
  | UnpinResult;
