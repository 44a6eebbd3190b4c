/**
 * The agent workflow's public contract: its name, id scheme, inputs, Updates, Signals and Queries.
 * Imported by the workflow, the worker and clients alike; the temporal CLI and the Temporal UI use the same names:
 *
 *   temporal workflow update execute --workflow-id agent-<id> --name send --input '{"text":"hi"}'
 *   temporal workflow query --workflow-id agent-<id> --type state
 *   temporal workflow signal --workflow-id agent-<id> --name close
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { MessageMeta } from '../engine/messages.ts';
import { AGENT_ID_PATTERN, AGENT_ID_RULE, lifePrefix, messageKey } from './keys.ts';
import type { AgentLife } from './keys.ts';
import type { ModelInfo, ModelOverride } from '../engine/models.ts';
import { STRATEGIES } from '../engine/policy.ts';
import type { CompactionPolicy, PolicyOverrides, StrategyName } from '../engine/policy.ts';
import type { RemovedItem } from '../engine/planner/index.ts';
import type { CooldownState, Gate, LoopGuardVerdict, Trigger } from '../engine/trigger.ts';
import type { TaskLedger } from '../engine/ledger.ts';
import type { CostEstimate } from '../engine/cost.ts';

/** Message ids are a per-agent sequence: m000001, m000002, … (so a range of them is two numbers). */
export function messageIdOf(seq: number): string {
  return `m${String(seq).padStart(6, '0')}`;
}

/** The sequence number of a message id made by {@link messageIdOf}. */
export function seqOf(messageId: string): number {
  return Number(messageId.slice(1));
}

/**
 * The working context sent to the model, by reference: the first `baseLength` keys of the stored context manifest
 * `base` (what the last compaction left), then the messages with sequence numbers `firstSeq..lastSeq`. Its size in
 * history is constant however long the context is.
 */
export interface ViewRef {
  base?: string;
  baseLength?: number;
  firstSeq: number;
  lastSeq: number;
}

/** Registered name of the workflow type. */
export const AGENT_WORKFLOW = 'agentWorkflow';

/** Longest user message accepted, in characters (well under Temporal's 2 MB payload limit). */
export const MAX_MESSAGE_CHARS = 200_000;

export const AGENT_WORKFLOW_ID_PREFIX = 'agent-';

/** The workflow id of an agent: one workflow per agent. */
export function agentWorkflowId(agentId: string): string {
  return `${AGENT_WORKFLOW_ID_PREFIX}${agentId}`;
}

export interface AgentInput {
  agentId: string;
  model: string;
  systemPrompt?: string;
  /**
   * What one turn (one user message) may spend before it stops without a final answer: model calls, tokens, wall
   * time. Default: {@link DEFAULT_TURN_STEPS} model calls, no token or time limit.
   */
  turnBudget?: TurnBudget;
  /**
   * The step budget as agents started before `turnBudget` set it: read as `turnBudget.steps` (which wins when both
   * are given). Kept so that running agents keep their setting.
   */
  maxSteps?: number;
  /** Window, encoding and safety margin, for a model the registry does not know or to override it. */
  modelOverride?: ModelOverride;
  /** The compaction policy: a preset (default `default`) and overrides of any of its fields. */
  compaction?: PolicyOverrides & { preset?: string };
  /**
   * @deprecated The former name of `compaction`, which agents started before the rename carry: read when
   * `compaction` is absent (both at once is refused).
   */
  compression?: PolicyOverrides & { preset?: string };
}

/** The agent's compaction policy as its input gives it, under its name or its former one. */
export function compactionPolicyOf(input: Pick<AgentInput, 'compaction' | 'compression'>) {
  return input.compaction ?? input.compression;
}

/**
 * A turn's budget, each part optional. A turn that reaches any of them ends without another model call: every tool
 * call already made is answered, the context stays valid, and the result says what was reached ({@link TurnStop}).
 */
export interface TurnBudget {
  /** Model calls in the turn (each step is one call and the tools it asked for). */
  steps?: number;
  /**
   * Tokens spent in the turn: per model call, the provider's reported usage (prompt + completion), or, when it
   * reports none, the request and reply as longrun counted them.
   */
  tokens?: number;
  /** Wall time since the turn began (workflow time), in seconds. */
  seconds?: number;
}

/** Model calls a turn may make when the agent sets no step budget: generous, for agents that loop over tools. */
export const DEFAULT_TURN_STEPS = 500;

/** The largest value of each budget (every budget is a positive integer up to this). */
export const TURN_BUDGET_MAX = { steps: 1_000_000, tokens: 1_000_000_000, seconds: 2_592_000 } as const;

export type TurnBudgetName = keyof typeof TURN_BUDGET_MAX;

/** The budget an agent's turns run under: its `turnBudget`, its older `maxSteps`, the default. */
export function turnBudgetOf(input: Pick<AgentInput, 'turnBudget' | 'maxSteps'>): TurnBudget & { steps: number } {
  const { tokens, seconds } = input.turnBudget ?? {};
  return {
    steps: input.turnBudget?.steps ?? input.maxSteps ?? DEFAULT_TURN_STEPS,
    ...(tokens !== undefined ? { tokens } : {}),
    ...(seconds !== undefined ? { seconds } : {}),
  };
}

/** Why a turn ended without a final answer: the budget it reached, its limit and what the turn used. */
export interface TurnStop {
  by: TurnBudgetName;
  limit: number;
  used: number;
}

/** 1000000 as 1,000,000. */
function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

const STOP_UNITS: Record<TurnBudgetName, (n: number) => string> = {
  steps: (n) => `${grouped(n)} model call${n === 1 ? '' : 's'}`,
  tokens: (n) => `${grouped(n)} token${n === 1 ? '' : 's'}`,
  seconds: (n) => `${grouped(n)} s`,
};

/** What a budget is called in the stop message. */
const STOP_NAMES: Record<TurnBudgetName, string> = { steps: 'step', tokens: 'token', seconds: 'time' };

/**
 * The reply of a turn stopped at its budget: what was reached, and that another message continues the work. It is
 * the `SendResult`'s reply only; the context holds what the model really said.
 */
export function turnStoppedReply(stop: TurnStop): string {
  return (
    `[turn stopped at its budget] This turn reached its ${STOP_NAMES[stop.by]} budget: ` +
    `${STOP_UNITS[stop.by](stop.used)} used of ${STOP_UNITS[stop.by](stop.limit)} allowed. The model has not given ` +
    'a final answer yet; every tool call it made was answered and the conversation is intact. Send another message ' +
    '(for example "continue") to go on with the work.'
  );
}

export interface SendInput {
  text: string;
  /**
   * Optimistic concurrency: the turn this message must open (the `turns` a client read, plus one). Rejected when
   * another message came first; the count assumes every queued message's turn succeeds.
   */
  expectedTurn?: number;
}

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
   * offline replayed one (llm/replay.ts `isReplayedModel`), which clients label. Absent in results recorded before
   * this field existed, and when the provider names no model.
   */
  servedBy?: string;
}

/**
 * An Update's result as the agent keeps it to answer the Update again (workflows/applied-updates.ts): whole, or a
 * `send`'s without its reply, which is stored under `replyId` and read back when asked (`replyStored`).
 */
export type KeptResult = UpdateResult | (Omit<SendResult, 'reply'> & { replyStored: true });

/** Metadata of a message of the working context (the body lives in S3 under `key`), as the queries return it. */
export interface MessageRecord extends MessageMeta {
  preview: string;
}

/**
 * A record as the workflow holds it and activities return it: `key` is left out when it is the message's own key
 * (agents/<id>/messages/<messageId>.json), about a third of a record; the state holds up to 2,000 of them and is
 * what the worker caches and continue-as-new carries. A replacement or a summary keeps its key.
 */
export type ContextRecord = Omit<MessageRecord, 'key'> & { key?: string };

/** A record's storage key: the one it names, or the message's own in the agent's life. */
export function recordKey(agent: AgentLife, record: ContextRecord): string {
  return record.key ?? messageKey(agent, record.id);
}

/** The record with its key, as the engine and the queries take it. */
export function keyedRecord(agent: AgentLife, record: ContextRecord): MessageRecord {
  return { ...record, key: recordKey(agent, record) };
}

/** The record without its key when that is the message's own. */
export function unkeyedRecord(agent: AgentLife, record: MessageRecord): ContextRecord {
  if (record.key !== messageKey(agent, record.id)) return record;
  const { key: _, ...rest } = record;
  return rest;
}

/**
 * What a compaction did, as the workflow keeps it (the last few in state; the queries and the compact Update return
 * it): everything but the list of removed items, which can run to thousands and lives in the full
 * {@link CompactionEvent} in S3. Keeping it out holds the state (which the worker caches and continue-as-new
 * carries) and each activity result to a size that does not grow with the context.
 */
export interface CompactionEventSummary {
  /** 1, 2, 3, … per agent. */
  seq: number;
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
  /** Structured output (`json_schema`), the plain-text prompt when the provider rejected it, or none (extractive). */
  responseFormat?: 'json_schema' | 'text' | 'none';
  /** Must-keep facts of the removed messages: found in the summary, missing after one re-prompt, pinned verbatim. */
  facts?: { found: number; missing: number; reprompted: boolean; pinned: string[] };
  llm?: { model: string; promptTokens: number; completionTokens: number; durationMs: number };
  /**
   * With prices in the policy (`compaction.cost`): the estimated cost of the next turns without and with this
   * compaction (summary call included), from the tokens it actually left; `netBenefit` is what it saves.
   */
  cost?: CostEstimate;
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

/** Input of a forced compaction (Signal or Update `compact`). */
export interface CompactInput {
  /** Instructions for the summary ("keep the failing test names"). */
  instructions?: string;
  /** Use only this strategy (default: the policy's list). */
  strategy?: StrategyName;
  /**
   * Bypass the trigger and the cooldown (default true). With `false` the request compacts only if the automatic
   * trigger fires now: "compact if due", for scripts that poke agents on a schedule.
   */
  force?: boolean;
  /**
   * Plan and summarize, but do not apply: the result carries a {@link Draft} to `approve` (optionally with an edited
   * summary) or `discard`. One draft at a time: a new one, or any compaction prepared meanwhile, replaces it.
   */
  review?: boolean;
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

/**
 * What applies a draft, as the workflow keeps it: workflows/compaction.ts `Prepared` (typed there: the contract does
 * not import the workflow), with the `made` snapshot a stale check reads.
 */
export interface PreparedDraft {
  made: { messages: number; lastId: string | undefined; compactions: number };
  [field: string]: unknown;
}

/** Input of `approve`: the draft's id, and optionally the summary text to apply instead of the draft's. */
export interface ApproveInput {
  draft: string;
  /** Replaces the summary message's text; the span's must-keep facts are checked in it and the missing ones pinned. */
  summary?: string;
}

/** Input of `discard`. */
export interface DiscardInput {
  draft: string;
}

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
}

/** Input of the `revert` Update: restore the working context as it was before event `toEvent`. */
export interface RevertInput {
  /** The event (a compaction or an earlier revert) whose context before it comes back: 1 to the agent's last. */
  toEvent: number;
}

/** What a revert did: its own event (trigger `revert`), and what it restored in a sentence. */
export interface RevertResult {
  reverted: true;
  reason: string;
  event: CompactionEventSummary;
}

/** The stats of an agent that has not compacted yet. */
export const NO_COMPACTIONS: CompactionStats = { count: 0, averageReduction: 0, tokensSaved: 0 };

export interface CompactionStats {
  count: number;
  /** Mean of tokensAfter / tokensBefore over all compactions. */
  averageReduction: number;
  tokensSaved: number;
  /** Sum of the events' estimated net benefit, when the policy has prices (in the prices' currency). */
  costSaved?: number;
  /** Reverts (the `revert` Update) so far: events of their own, not counted in `count` and the reductions. */
  reverts?: number;
  /** Compactions the loop guard found ineffective (policy `loopGuard`; absent before the first judged one). */
  ineffective?: number;
  /**
   * Set while the loop guard pauses automatic compaction: it resumes when the context reaches this many tokens
   * (the hard limit still compacts; a forced compaction runs).
   */
  pausedUntil?: number;
}

/** The `stats` query's answer: the counts, and the loop guard's pause while it holds. */
export function statsOf(state: Pick<WorkflowState, 'stats' | 'cooldown' | 'contextTokens'>): CompactionStats {
  const stats = state.stats ?? NO_COMPACTIONS;
  const until = state.cooldown?.pausedUntil;
  return until !== undefined && state.contextTokens < until ? { ...stats, pausedUntil: until } : stats;
}

export type AgentStatus = 'running' | 'closed';

/**
 * The `AgentStatus` search attribute: the agent's status, `compacting` while a compaction runs (blocking or in
 * the background; one upsert when it starts and one when it ends), and `awaiting-review` while the draft of an
 * automatic compaction waits for approval (policy `review.automatic`). The phase itself is in the `progress` query
 * and the current details.
 */
export type AgentStatusAttribute = AgentStatus | 'compacting' | 'awaiting-review';

/** The draft of an automatic compaction waiting for review, as the `progress` query shows it. */
export interface ReviewProgress {
  draft: string;
  /** The compaction it would be. */
  seq: number;
  tokensBefore: number;
  tokensAfter: number;
  /** When it times out (workflow time, ISO), and what then becomes of it. */
  until: string;
  onTimeout: 'apply' | 'discard';
}

/** A draft waiting for review in a few words: `awaiting review of draft-2 (times out in 4 min 10 s, then applied)`. */
export function describeReview(review: ReviewProgress, nowMs?: number): string {
  const then = review.onTimeout === 'apply' ? 'applied' : 'discarded';
  if (nowMs === undefined) return `awaiting review of ${review.draft} (times out at ${review.until}, then ${then})`;
  const left = Math.max(0, Math.round((Date.parse(review.until) - nowMs) / 1000));
  const inWords = left >= 60 ? `${Math.floor(left / 60)} min ${left % 60} s` : `${left} s`;
  return `awaiting review of ${review.draft} (times out in ${inWords}, then ${then})`;
}

/**
 * The steps of a compaction as the workflow sees them: `planning` (planCompaction), `summarizing` (summarizeSpan; its
 * chunks are in the activity's heartbeat details), `applying` (applyCompaction), `ready` (a compaction made in the
 * background, stored, waiting for the next step boundary to be committed).
 */
export type CompactionStep = 'planning' | 'summarizing' | 'applying' | 'ready';

/** A compaction in progress, as the `progress` query shows it. */
export interface CompactionProgress {
  seq: number;
  trigger: Trigger;
  /** Made in the background while the agent works (the soft threshold), committed at the next step boundary. */
  background: boolean;
  step: CompactionStep;
  /** When the compaction began and when its step began (workflow time, ISO). */
  began: string;
  since: string;
  /** Summarizing: the messages of the span the summary is written from. */
  spanMessages?: number;
  /**
   * Summarizing: the chunk the summary model is on, `chunk` of `chunks` (a span larger than the summary model's
   * window is summarized in chunks). Read by the client from the summarizeSpan activity's heartbeat details (the
   * workflow cannot see inside an activity); absent in the query's own answer.
   */
  chunk?: number;
  chunks?: number;
}

/** The compaction in progress in a few words, for the current details and `longrun watch`. */
export function describeCompaction(compaction: CompactionProgress): string {
  const what = `compaction ${compaction.seq} (${compaction.trigger}${compaction.background ? ', in the background' : ''})`;
  switch (compaction.step) {
    case 'planning':
      return `${what}: planning`;
    case 'summarizing': {
      const span = compaction.spanMessages !== undefined ? ` ${compaction.spanMessages} messages` : '';
      const chunk =
        compaction.chunk !== undefined && compaction.chunks !== undefined
          ? `: chunk ${compaction.chunk} of ${compaction.chunks}`
          : '';
      return `${what}: summarizing${span}${chunk}`;
    }
    case 'applying':
      return `${what}: applying`;
    case 'ready':
      return `${what}: ready, committed at the next step boundary`;
  }
}

/** The turn in progress, as the `progress` query shows it. */
export interface TurnProgress {
  turn: number;
  /** The model call the turn is on (1-based). */
  step: number;
  /** When the turn began (workflow time, ISO). */
  began: string;
}

/**
 * What the agent is doing now, small enough to poll (`longrun watch`): the turn in progress and its step, the
 * compaction in progress and its step, the counts, the last reply and the last compaction. No message content but
 * the last reply's preview (as the context query shows it).
 */
export interface AgentProgress {
  agentId: string;
  status: AgentStatus;
  /** Turns completed. */
  turns: number;
  /** Inputs (messages, compaction requests) waiting behind the one in progress. */
  queued: number;
  contextTokens: number;
  window: number;
  compactions: number;
  turn?: TurnProgress;
  compaction?: CompactionProgress;
  /** The draft of an automatic compaction waiting for review (policy `review.automatic`). */
  review?: ReviewProgress;
  /** The newest answer of the model in the context (not a tool call): its id and preview. */
  lastReply?: { id: string; preview: string };
  lastCompaction?: CompactionEventSummary;
  /** Set while the loop guard (or a discarded review: `pausedFor`) pauses automatic compaction: it resumes at this many tokens. */
  pausedUntil?: number;
  /** Why automatic compaction is paused, when not the loop guard (`draft-2 discarded`). */
  pausedFor?: string;
  /** Why the last turn or compaction failed, until one succeeds. */
  lastError?: string;
}

export interface AgentState {
  agentId: string;
  /**
   * The run id this agent's life began with (continue-as-new and a reopen keep it): its objects are stored under
   * `storagePrefix`. Absent for agents started before lives existed.
   */
  life?: string;
  /** Where this life's objects are stored: agents/<agentId>/<life>/. */
  storagePrefix?: string;
  model: string;
  status: AgentStatus;
  turns: number;
  messages: MessageRecord[];
  /** The model's window and how its tokens are counted (resolved once, at the agent's start). */
  modelInfo?: ModelInfo;
  /** Tokens every request spends besides its messages: the tool schemas and the reply primer. */
  fixedTokens?: number;
  /** Tokens of the working context: every message, the reply primer and the tool schemas. */
  contextTokens: number;
  /** Runs of this agent's workflow so far (continue-as-new starts the next). */
  runs?: number;
  /** Why the last run handed over to this one. */
  lastHandOver?: string;
  /** Why the last turn failed, until a turn succeeds (e.g. the model endpoint rejected the API key). */
  lastError?: string;
  /**
   * Signals dropped because their input was invalid (a signal cannot be rejected), by signal name. The client library
   * and the CLI validate before signalling, so these come from other senders (the temporal CLI, the UI, raw clients).
   */
  droppedSignals?: DroppedSignals;
  /** Messages and turns in the working context. */
  contextTurns?: number;
  /** The compaction policy (resolved and validated at the agent's start). */
  policy?: CompactionPolicy;
  /** When compaction fires next (checked before every model call). */
  gate?: Gate;
  cooldown?: CooldownState;
  /** Model calls since the last compaction (or the agent's start): the pace the cost decision prices. */
  callsSinceCompaction?: number;
  /** The stored context manifest the working context starts with, and how many of its entries are in use. */
  base?: string;
  baseLength?: number;
  /** The sequence number of the first message after `base`. */
  tailFromSeq?: number;
  /** The sequence number the next stored message takes (its id is `messageIdOf(nextMessageSeq)`). */
  nextMessageSeq?: number;
  /** Id of the user's first message (the goal), protected from compaction. */
  goalId?: string;
  compactions?: number;
  /** The task ledger (goal, constraints, decisions, done, pending, next action), updated by each summary. */
  ledger?: TaskLedger;
  /** The last compaction events, without their removed items (the full events are in S3: `keys.event`). */
  events?: CompactionEventSummary[];
  stats?: CompactionStats;
  /**
   * Breaks of the coverage invariant found (engine/coverage.ts: every message reaches the model exactly once), when
   * the worker records them rather than failing (LONGRUN_STRICT_INVARIANTS off): how many, and the last one. Absent
   * while it holds, which is always unless longrun has a bug.
   */
  violations?: { count: number; last: string };
  /** A compaction prepared in the background while the agent works (policy `backgroundRatio`), until committed. */
  backgroundCompaction?: { seq: number; since: string; reason: string };
  /**
   * The draft awaiting review (`compact` with `review: true`), without its summary text (in S3 at `summaryKey`),
   * and what applies it; `drafts`: how many were made (the next id); `lastDraft`: what became of the last one.
   */
  draft?: { info: Omit<Draft, 'summary'>; prepared: PreparedDraft };
  drafts?: number;
  lastDraft?: string;
}

/** Dropped signals by name; `earlier` counts those dropped before they were counted by name. */
export interface DroppedSignals {
  message?: number;
  compact?: number;
  earlier?: number;
}

/** The state as the workflow holds it and continue-as-new carries it: records without their own keys. */
export type WorkflowState = Omit<AgentState, 'messages' | 'storagePrefix'> & { messages: ContextRecord[] };

/** The state as the queries return it: every record with its key, and where the agent's objects are. */
export function publicState(state: WorkflowState): AgentState {
  return {
    ...state,
    storagePrefix: lifePrefix(state),
    messages: state.messages.map((record) => keyedRecord(state, record)),
  };
}

/** The store's view of an agent's state: its id and its life. */
export function agentLife(state: { agentId: string; life?: string }): AgentLife {
  return state.life === undefined ? { agentId: state.agentId } : { agentId: state.agentId, life: state.life };
}

/**
 * Ends the working context at its last complete step: an assistant message whose tool calls did not all get results
 * leaves the context (a view must never hold an unanswered call; this happens after a failed turn, or when an agent
 * that ended mid-turn is reopened). Returns the sequence number the next message takes: the context stays a gapless
 * range of stored messages after the last compaction's manifest.
 */
export function endAtLastCompleteStep(state: WorkflowState): number {
  const caller = state.messages.findLastIndex((m) => (m.toolCallIds?.length ?? 0) > 0);
  if (caller !== -1) {
    const answered = state.messages.slice(caller + 1).filter((m) => m.role === 'tool').length;
    if (answered < state.messages[caller]!.toolCallIds!.length) {
      for (const dropped of state.messages.splice(caller)) state.contextTokens -= dropped.tokens;
      if (state.baseLength !== undefined && caller < state.baseLength) state.baseLength = caller;
    }
  }
  // Messages after the last compaction's manifest have consecutive sequence numbers from tailFromSeq on.
  const last = state.messages.slice(state.baseLength ?? 0).at(-1);
  return last ? seqOf(last.id) + 1 : (state.tailFromSeq ?? 1);
}

/** Longest instructions of a forced compaction, in characters. */
export const MAX_INSTRUCTIONS_CHARS = 4_000;

/** Input that breaks the contract of an Update or a Signal: the message names the field and the limit. */
export class InvalidInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidInputError';
  }
}

/** How much of a value an error message quotes, in characters. */
const QUOTED_CHARS = 64;

/**
 * A value as an error message quotes it: as JSON (control characters escaped), a long one cut to its first
 * {@link QUOTED_CHARS} characters with its length, so that a 10 KB input is not echoed back whole.
 *
 * @example quoted('a\u0007b') // '"a\\u0007b"'; quoted('x'.repeat(10_000)) // '"xxx…xxx…" (10000 characters)'
 */
export function quoted(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const head = Array.from(text).slice(0, QUOTED_CHARS).join(''); // by code point: never half a character
  if (head.length === text.length) return typeof value === 'string' ? JSON.stringify(value) : text;
  const cut = typeof value === 'string' ? `${JSON.stringify(head).slice(0, -1)}…"` : `${head}…`;
  return `${cut} (${text.length} characters)`;
}

/**
 * Checks a message's input (what does not depend on the agent's state): the workflow's validator, the Signal handler
 * and the client library before it signals all use this, so a message the workflow would drop is never sent.
 */
export function validateSendInput(send: SendInput): void {
  if (send === null || typeof send !== 'object') throw new InvalidInputError('send: input must be an object');
  if (typeof send.text !== 'string') throw new InvalidInputError('text: must be a string');
  if (send.text.trim() === '') throw new InvalidInputError('text: must not be empty');
  if (send.text.length > MAX_MESSAGE_CHARS) {
    throw new InvalidInputError(`text: ${send.text.length} characters is over the limit of ${MAX_MESSAGE_CHARS}`);
  }
  if (send.expectedTurn !== undefined && (!Number.isInteger(send.expectedTurn) || send.expectedTurn < 1)) {
    throw new InvalidInputError(`expectedTurn: must be a positive integer (got ${JSON.stringify(send.expectedTurn)})`);
  }
}

/**
 * Checks an agent's input where it is not the model's or the policy's (those are checked by resolveModelInfo and
 * resolvePolicy): the turn budget and the older `maxSteps`. The client library and the CLI check before starting,
 * and the workflow fails a start with such input (ApplicationFailure `InvalidInput`) before doing anything.
 */
export function validateAgentInput(input: AgentInput): void {
  if (input === null || typeof input !== 'object') throw new InvalidInputError('agent: input must be an object');
  // The id names the workflow and every storage key of the agent: nothing that could leave its prefix.
  if (typeof input.agentId !== 'string' || !AGENT_ID_PATTERN.test(input.agentId)) {
    throw new InvalidInputError(`agentId: ${quoted(input.agentId)} ${AGENT_ID_RULE}`);
  }
  if (typeof input.model !== 'string' || input.model.trim() === '') {
    throw new InvalidInputError(`model: must be a non-empty string (got ${quoted(input.model)})`);
  }
  const prompt = input.systemPrompt as unknown;
  if (prompt !== undefined && typeof prompt !== 'string') throw new InvalidInputError('systemPrompt: must be a string');
  if (typeof prompt === 'string' && prompt.length > MAX_MESSAGE_CHARS) {
    throw new InvalidInputError(`systemPrompt: ${prompt.length} characters is over the limit of ${MAX_MESSAGE_CHARS}`);
  }
  const objects: [string, unknown, string][] = [
    ['compaction', input.compaction, 'a preset and overrides of its fields'],
    ['compression', input.compression, 'the former name of compaction'],
    ['modelOverride', input.modelOverride, '{window?, encoding?, margin?}'],
  ];
  for (const [field, value, what] of objects) {
    if (value !== undefined && (value === null || typeof value !== 'object' || Array.isArray(value))) {
      throw new InvalidInputError(`${field}: must be an object (${what})`);
    }
  }
  const positive = (field: string, value: unknown, max: number) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
      throw new InvalidInputError(
        `${field}: ${JSON.stringify(value) ?? String(value)} is not allowed (an integer from 1 to ${grouped(max)})`,
      );
    }
  };
  if (input.maxSteps !== undefined) positive('maxSteps', input.maxSteps, TURN_BUDGET_MAX.steps);
  if (input.compaction !== undefined && input.compression !== undefined) {
    throw new InvalidInputError('compaction: given twice, as `compaction` and as `compression` (its former name)');
  }
  const budget = input.turnBudget as unknown;
  if (budget === undefined) return;
  if (budget === null || typeof budget !== 'object' || Array.isArray(budget)) {
    throw new InvalidInputError('turnBudget: must be an object {steps?, tokens?, seconds?}');
  }
  for (const [name, value] of Object.entries(budget)) {
    if (!(name in TURN_BUDGET_MAX)) {
      throw new InvalidInputError(
        `turnBudget.${name}: not a budget (one of ${Object.keys(TURN_BUDGET_MAX).join(', ')})`,
      );
    }
    if (value !== undefined) positive(`turnBudget.${name}`, value, TURN_BUDGET_MAX[name as TurnBudgetName]);
  }
}

/** Checks a compaction request's input, as {@link validateSendInput} does for messages. */
export function validateCompactInput(request: CompactInput): void {
  if (request === null || typeof request !== 'object') throw new InvalidInputError('compact: input must be an object');
  if (request.strategy !== undefined && !(STRATEGIES as readonly string[]).includes(request.strategy)) {
    throw new InvalidInputError(`strategy: ${JSON.stringify(request.strategy)} is not one of ${STRATEGIES.join(', ')}`);
  }
  if (request.instructions !== undefined && typeof request.instructions !== 'string') {
    throw new InvalidInputError('instructions: must be a string');
  }
  if (request.force !== undefined && typeof request.force !== 'boolean') {
    throw new InvalidInputError(`force: must be true or false (got ${JSON.stringify(request.force)})`);
  }
  if (request.review !== undefined && typeof request.review !== 'boolean') {
    throw new InvalidInputError(`review: must be true or false (got ${quoted(request.review)})`);
  }
  if ((request.instructions?.length ?? 0) > MAX_INSTRUCTIONS_CHARS) {
    throw new InvalidInputError(
      `instructions: ${request.instructions!.length} characters is over the limit of ${MAX_INSTRUCTIONS_CHARS}`,
    );
  }
}

/**
 * Checks a revert's input: `toEvent` an integer from 1 to `lastEvent` (the agent's last event, when known; the
 * workflow's validator knows it, the client library checks the shape only).
 */
export function validateRevertInput(request: RevertInput, lastEvent?: number): void {
  if (request === null || typeof request !== 'object') {
    throw new InvalidInputError('revert: input must be an object {"toEvent": n}');
  }
  const n: unknown = request.toEvent;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
    throw new InvalidInputError(`toEvent: must be an integer ≥ 1, an event's seq (got ${quoted(n)})`);
  }
  if (lastEvent !== undefined && n > lastEvent) {
    throw new InvalidInputError(
      lastEvent === 0
        ? `toEvent: ${n} is not an event of this agent (it has none yet: nothing to revert)`
        : `toEvent: ${n} is not an event of this agent (its events are 1 to ${lastEvent})`,
    );
  }
}

/**
 * Checks `approve` and `discard` input: a draft id, and an edited summary of at most {@link MAX_MESSAGE_CHARS}
 * characters, not empty. Against `pending` (the workflow's draft, when known): the id must be the pending draft's.
 */
export function validateDraftInput(
  request: ApproveInput | DiscardInput,
  pending?: { id: string } | null,
  lastDraft?: string,
): void {
  if (request === null || typeof request !== 'object') {
    throw new InvalidInputError('input must be an object {"draft": "draft-N", "summary"?: "..."}');
  }
  if (typeof request.draft !== 'string' || !/^draft-\d+$/.test(request.draft)) {
    throw new InvalidInputError(`draft: must be a draft id like "draft-1" (got ${quoted(request.draft)})`);
  }
  const summary: unknown = (request as ApproveInput).summary;
  if (summary !== undefined) {
    if (typeof summary !== 'string' || summary.trim() === '') {
      throw new InvalidInputError('summary: must be a non-empty string (the edited summary)');
    }
    if (summary.length > MAX_MESSAGE_CHARS) {
      throw new InvalidInputError(`summary: ${summary.length} characters is over the limit of ${MAX_MESSAGE_CHARS}`);
    }
  }
  if (pending === undefined) return;
  if (pending === null || pending.id !== request.draft) {
    const now = pending ? `the pending draft is ${pending.id}` : 'no draft is pending';
    const last = lastDraft ? ` (${lastDraft})` : '';
    throw new InvalidInputError(`draft: ${request.draft} is not pending: ${now}${last}`);
  }
}

/**
 * Checks the query of the compaction events (`since`, `limit`: integers ≥ 0), as the client library sends it.
 * `null` (what the temporal CLI and the UI send for no input) is no query.
 */
export function validateEventsQuery(query: { since?: number; limit?: number } | null | undefined): void {
  if (query === null || query === undefined) return;
  if (typeof query !== 'object') throw new InvalidInputError('events: query must be an object {since?, limit?}');
  for (const field of ['since', 'limit'] as const) {
    const value: unknown = query[field];
    if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 0)) {
      throw new InvalidInputError(`${field}: must be an integer ≥ 0 (got ${quoted(value)})`);
    }
  }
}

/** Send a user message; resolves to the model's reply once the turn is done. */
export const sendUpdate = defineUpdate<SendResult, [SendInput]>('send');
/** Send a user message without waiting: it is queued and answered in order (read the reply with `state`). */
export const messageSignal = defineSignal<[SendInput]>('message');
/** Close the agent: it finishes the queued input, then completes. */
export const closeSignal = defineSignal('close');
/** Close the agent and wait until the queued input is done; resolves to the final state. */
export const closeUpdate = defineUpdate<AgentState, []>('close');
/** The agent's state: status, turn count and stored messages (previews only). */
export const stateQuery = defineQuery<AgentState>('state');
/** Force a compaction now (bypasses the trigger and resets the cooldown). */
export const compactSignal = defineSignal<[CompactInput]>('compact');
/** Force a compaction and wait for what it did. */
export const compactUpdate = defineUpdate<CompactResult, [CompactInput]>('compact');
/**
 * The last compaction events kept in state (at most {@link EVENTS_KEPT}), oldest first, without their removed items:
 * `since` (a seq; events after it), `limit`. Every full event is in S3 (`keys.event`; the client's
 * `compactionHistory`, `longrun events`).
 */
export const compactionEventsQuery = defineQuery<CompactionEventSummary[], [{ since?: number; limit?: number }?]>(
  'compactionEvents',
);
/** @deprecated The former name of {@link compactionEventsQuery}, still answered for scripts that use it. */
export const compressionEventsQuery = defineQuery<CompactionEventSummary[], [{ since?: number; limit?: number }?]>(
  'compressionEvents',
);
/**
 * Restore the working context as it was before event `toEvent`, from the stored manifests and originals (every
 * message stored since follows it, raw), and the task ledger with it; recorded as an event of its own.
 */
export const revertUpdate = defineUpdate<RevertResult, [RevertInput]>('revert');
/** Apply a draft (`compact` with `review: true`), optionally with an edited summary (its facts checked, pinned). */
export const approveUpdate = defineUpdate<CompactResult, [ApproveInput]>('approve');
/** Drop a draft. */
export const discardUpdate = defineUpdate<DiscardResult, [DiscardInput]>('discard');
/**
 * Compactions so far: count, average reduction, tokens saved, cost saved (with prices in the policy), ineffective ones
 * (the loop guard), and `pausedUntil` while the loop guard pauses automatic compaction.
 */
export const statsQuery = defineQuery<CompactionStats>('stats');
/** What the agent is doing now: the turn and compaction in progress, their steps, the counts ({@link AgentProgress}). */
export const progressQuery = defineQuery<AgentProgress>('progress');
/** The task ledger (empty until the first summary). */
export const ledgerQuery = defineQuery<TaskLedger>('ledger');
/** The working context as previews (full bodies: `longrun reload`). */
export const contextQuery = defineQuery<MessageRecord[]>('context');

/**
 * What each Update, Signal and Query does, as the Temporal UI and `temporal workflow metadata` show it (the workflow
 * registers its handlers with these).
 */
export const HANDLER_DESCRIPTIONS = {
  send:
    'Send a user message and wait for the reply. Input {"text": "...", "expectedTurn"?: n} (text 1 to 200,000 ' +
    'characters; expectedTurn: the turn it must open). Returns {turn, reply, messageId, replyId, toolCalls, steps, ' +
    'stopped?}; stopped {by, limit, used} when the turn reached its budget (steps, tokens, seconds) first.',
  message:
    'Queue a user message without waiting (input {"text": "..."}); answered in order. Invalid input is dropped and ' +
    'counted in state.droppedSignals.message.',
  closeSignal: 'Close the agent: it finishes the queued input, then completes.',
  closeUpdate: 'Close the agent and wait until the queued input is done. Returns the final state.',
  compactSignal:
    'Ask for a compaction after the queued input. Input {"instructions"?: "..." (up to 4,000 characters), ' +
    '"strategy"?: name, "force"?: false (only if due)}. Invalid input is dropped and counted in ' +
    'state.droppedSignals.compact.',
  compactUpdate:
    'Compact now and wait. Input {"instructions"?, "strategy"?, "force"?} as for the compact signal, and ' +
    '"review"?: true to get a draft (plan, summary text, tokens, facts) to approve or discard instead of applying ' +
    'it. Returns {compacted, reason, event?, draft?}.',
  state: 'The agent: status, turns, tokens of the window, model, policy and the working context (previews, keys).',
  context: 'The working context: every message as a preview with its storage key (full bodies: longrun reload).',
  compactionEvents:
    'The last 10 compaction events (summaries) after {"since"?: seq, "limit"?: n}; every full event is in S3.',
  compressionEvents: 'The former name of compactionEvents (deprecated): the same answer.',
  stats:
    'Compactions so far: count, average reduction, tokens saved, cost saved (with prices in the policy), ' +
    'ineffective ones (loop guard), and pausedUntil while the loop guard pauses automatic compaction.',
  ledger: 'The task ledger: goal, constraints, decisions, done, pending, next action (empty until the first summary).',
  revert:
    'Restore the working context as it was before event N, byte-identical, every message stored since after it ' +
    'raw, and the task ledger of then. Input {"toEvent": N} (1 to the last event; a revert is an event too). ' +
    'Returns {reverted, reason, event} (event.trigger "revert").',
  approve:
    'Apply a draft made by compact with {"review": true}, or by an automatic compaction that waits for review ' +
    '(policy review.automatic). Input {"draft": "draft-N", "summary"?: "edited text"}: ' +
    "an edited summary replaces the draft's, the must-keep facts it lost are pinned. A draft made for a context " +
    'that has changed since (stale) is refused. Returns {compacted, reason, event?} as compact does.',
  discard:
    'Drop a draft. Input {"draft": "draft-N"}. Returns {discarded}; for the draft of an automatic compaction also ' +
    'pausedUntil: automatic compaction is paused until the context reaches that many tokens.',
  progress:
    'What the agent is doing now: the turn in progress and its model call, the compaction in progress and its step ' +
    '(planning, summarizing, applying, ready), the draft waiting for review and its timeout, queued inputs, tokens, ' +
    'the last reply and compaction. The summary ' +
    "model's chunk k of n is in the summarizeSpan activity's heartbeat details (temporal workflow describe).",
} as const;

/** How many compaction events the workflow keeps in its state (all of them are in S3). */
export const EVENTS_KEPT = 10;

/** An Update's result, as kept to answer it again when it is delivered twice. */
export type UpdateResult = SendResult | CompactResult | RevertResult | DiscardResult;

/** State carried across continue-as-new. */
export interface AgentCarry {
  state: WorkflowState;
  /**
   * The same as `state.nextMessageSeq`, which a run of an earlier release did not have: it read this one. Still
   * written, so a worker of that release that picks the next run up gives no id twice.
   */
  nextMessageSeq: number;
  /** The latest Updates applied, by id (see workflows/applied-updates.ts): answered, not re-applied, when delivered again. */
  applied: [updateId: string, result: KeptResult | null][];
  /**
   * Set when a client reopens a closed agent (`longrun start --reopen`): a new workflow execution that continues the
   * closed one's life, with its messages, ids and storage keys. `closedAs` is how the last run ended.
   */
  reopened?: { closedAs: string };
}
