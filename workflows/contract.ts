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
import { messageKey } from '../storage/keys.ts';
import type { ModelInfo, ModelOverride } from '../engine/models.ts';
import type { CompressionPolicy, PolicyOverrides, StrategyName } from '../engine/policy.ts';
import type { RemovedItem } from '../engine/planner.ts';
import type { CooldownState, Gate, Trigger } from '../engine/trigger.ts';
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
 * `base` (what the last compression left), then the messages with sequence numbers `firstSeq..lastSeq`. Its size in
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
  /** Model calls per turn that may call tools (default 8); one more forces a text answer. */
  maxSteps?: number;
  /** Window, encoding and safety margin, for a model the registry does not know or to override it. */
  modelOverride?: ModelOverride;
  /** The compression policy: a preset (default `default`) and overrides of any of its fields. */
  compression?: PolicyOverrides & { preset?: string };
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
}

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

/** A record's storage key: the one it names, or the message's own. */
export function recordKey(agentId: string, record: ContextRecord): string {
  return record.key ?? messageKey(agentId, record.id);
}

/** The record with its key, as the engine and the queries take it. */
export function keyedRecord(agentId: string, record: ContextRecord): MessageRecord {
  return { ...record, key: recordKey(agentId, record) };
}

/** The record without its key when that is the message's own. */
export function unkeyedRecord(agentId: string, record: MessageRecord): ContextRecord {
  if (record.key !== messageKey(agentId, record.id)) return record;
  const { key: _, ...rest } = record;
  return rest;
}

/**
 * What a compression did, as the workflow keeps it (the last few in state; the queries and the compact Update return
 * it): everything but the list of removed items, which can run to thousands and lives in the full
 * {@link CompressionEvent} in S3. Keeping it out holds the state (which the worker caches and continue-as-new
 * carries) and each activity result to a size that does not grow with the context.
 */
export interface CompressionEventSummary {
  /** 1, 2, 3, … per agent. */
  seq: number;
  trigger: Trigger;
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
   * With prices in the policy (`compression.cost`): the estimated cost of the next turns without and with this
   * compression (summary call included), from the tokens it actually left; `netBenefit` is what it saves.
   */
  cost?: CostEstimate;
  durationMs: number;
  /** Storage keys of the event, the removed segment (JSONL) and the new context manifest. */
  keys: { event: string; removed: string; context: string };
  instructions?: string;
}

/** The full compression event, stored at `keys.event` (all of them, for as long as the agent's objects are kept). */
export interface CompressionEvent extends CompressionEventSummary {
  /** Every message that left the context, with the storage key of its original. */
  removed: RemovedItem[];
}

/**
 * The summary of an event. Also reads events recorded before summaries existed (no `removedCount`, a `removed`
 * list), which a running agent may still hold in its state.
 */
export function summaryOfEvent(event: CompressionEventSummary | CompressionEvent): CompressionEventSummary {
  const { removed, ...summary } = event as CompressionEventSummary & { removed?: RemovedItem[] };
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
}

/** What a forced compaction did: the event, or why nothing was done. */
export interface CompactResult {
  compressed: boolean;
  reason: string;
  event?: CompressionEventSummary;
}

export interface CompressionStats {
  count: number;
  /** Mean of tokensAfter / tokensBefore over all compressions. */
  averageReduction: number;
  tokensSaved: number;
  /** Sum of the events' estimated net benefit, when the policy has prices (in the prices' currency). */
  costSaved?: number;
}

export type AgentStatus = 'running' | 'closed';

export interface AgentState {
  agentId: string;
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
  /** `message` signals dropped because their text was invalid (a signal cannot be rejected). */
  droppedSignals?: number;
  /** Messages and turns in the working context. */
  contextTurns?: number;
  /** The compression policy (resolved and validated at the agent's start). */
  policy?: CompressionPolicy;
  /** When compression fires next (checked before every model call). */
  gate?: Gate;
  cooldown?: CooldownState;
  /** The stored context manifest the working context starts with, and how many of its entries are in use. */
  base?: string;
  baseLength?: number;
  /** The sequence number of the first message after `base`. */
  tailFromSeq?: number;
  /** Id of the user's first message (the goal), protected from compression. */
  goalId?: string;
  compressions?: number;
  /** The task ledger (goal, constraints, decisions, done, pending, next action), updated by each summary. */
  ledger?: TaskLedger;
  /** The last compression events, without their removed items (the full events are in S3: `keys.event`). */
  events?: CompressionEventSummary[];
  stats?: CompressionStats;
}

/** The state as the workflow holds it and continue-as-new carries it: records without their own keys. */
export type WorkflowState = Omit<AgentState, 'messages'> & { messages: ContextRecord[] };

/** The state as the queries return it: every record with its key. */
export function publicState(state: WorkflowState): AgentState {
  return { ...state, messages: state.messages.map((record) => keyedRecord(state.agentId, record)) };
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
 * The last compression events kept in state (at most {@link EVENTS_KEPT}), oldest first, without their removed items:
 * `since` (a seq; events after it), `limit`. Every full event is in S3 (`keys.event`; the client's
 * `compressionHistory`, `longrun events`).
 */
export const compressionEventsQuery = defineQuery<CompressionEventSummary[], [{ since?: number; limit?: number }?]>(
  'compressionEvents',
);
/** Compressions so far: count, average reduction, tokens saved, cost saved (with prices in the policy). */
export const statsQuery = defineQuery<CompressionStats>('stats');
/** The task ledger (empty until the first summary). */
export const ledgerQuery = defineQuery<TaskLedger>('ledger');
/** The working context as previews (full bodies: `longrun reload`). */
export const contextQuery = defineQuery<MessageRecord[]>('context');

/** The failure type of a model call over the provider's context window: the workflow compacts and calls again. */
export const CONTEXT_OVERFLOW = 'ContextOverflow';

/** How many compression events the workflow keeps in its state (all of them are in S3). */
export const EVENTS_KEPT = 10;
