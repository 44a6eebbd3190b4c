/**
 * The agent workflow's public contract: its name, id scheme, inputs, Updates, Signals and Queries.
 * Imported by the workflow, the worker and clients alike; the temporal CLI and the Temporal UI use the same names:
 *
 *   temporal workflow update execute --workflow-id agent-<id> --name send --input '{"text":"hi"}'
 *   temporal workflow query --workflow-id agent-<id> --type state
 *   temporal workflow signal --workflow-id agent-<id> --name close
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ChatRole } from '../engine/messages.ts';
import type { ModelInfo, ModelOverride } from '../engine/models.ts';

/** Message ids are a per-agent sequence: m000001, m000002, … (so a range of them is two numbers). */
export function messageIdOf(seq: number): string {
  return `m${String(seq).padStart(6, '0')}`;
}

/** The sequence number of a message id made by {@link messageIdOf}. */
export function seqOf(messageId: string): number {
  return Number(messageId.slice(1));
}

/**
 * The working context sent to the model, by reference: the messages with sequence numbers `firstSeq..lastSeq`.
 * Its size in history is constant however long the context is (the compression issue adds a stored manifest for
 * the part before `firstSeq`).
 */
export interface ViewRef {
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
}

export interface SendInput {
  text: string;
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

/** Metadata the workflow keeps for a stored message; the body lives in S3 under `key`. */
export interface MessageRecord {
  id: string;
  role: ChatRole;
  key: string;
  chars: number;
  /** Tokens of the message in the agent's encoding, chat overhead and safety margin included. */
  tokens: number;
  preview: string;
  /** For an assistant message that calls tools: the call ids, each answered by a tool message. */
  toolCallIds?: string[];
  /** For a tool message: the call it answers. */
  toolCallId?: string;
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
