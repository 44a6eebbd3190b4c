/**
 * The agent workflow's public contract: its name, id scheme, Updates, Signals and Queries, and what each does.
 * Imported by the workflow, the worker and clients alike; the temporal CLI and the Temporal UI use the same names:
 *
 *   temporal workflow update execute --workflow-id agent-<id> --name send --input '{"text":"hi"}'
 *   temporal workflow query --workflow-id agent-<id> --type state
 *   temporal workflow signal --workflow-id agent-<id> --name close
 *
 * Their types live beside it by role: inputs.ts (the inputs, their limits and validators), results.ts (what the
 * Updates return, the compaction events), state.ts (the state, what continue-as-new carries), progress.ts (the
 * `progress` query), records.ts (the working context's records), keys.ts (ids and storage keys).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type {
  ApproveInput,
  CompactInput,
  ConfigureInput,
  DiscardInput,
  InterruptInput,
  RenewInput,
  RevertInput,
  SendInput,
  SteerInput,
  ToolDecisionInput,
} from './inputs.ts';
import type {
  CompactionEventSummary,
  CompactionStats,
  CompactResult,
  ConfigureResult,
  DiscardResult,
  InterruptResult,
  RevertResult,
  SendResult,
  SteerResult,
  ToolDecisionResult,
} from './results.ts';
import type { AgentProgress } from './progress.ts';
import type { PinInput, PinResult, UnpinInput, UnpinResult } from './pins.ts';
import type { MessageRecord } from './records.ts';
import type { AgentState } from './state.ts';
import type { TaskLedger } from '../engine/ledger.ts';

/** Registered name of the workflow type. */
export const AGENT_WORKFLOW = 'agentWorkflow';

export const AGENT_WORKFLOW_ID_PREFIX = 'agent-';

/** The workflow id of an agent: one workflow per agent. */
export function agentWorkflowId(agentId: string): string {
  return `${AGENT_WORKFLOW_ID_PREFIX}${agentId}`;
}

/** Send a user message; resolves to the model's reply once the turn is done. */
export const sendUpdate = defineUpdate<SendResult, [SendInput]>('send');
/** Send a user message without waiting: it is queued and answered in order (read the reply with `state`). */
export const messageSignal = defineSignal<[SendInput]>('message');
/** Close the agent: it finishes the queued input, then completes. */
export const closeSignal = defineSignal('close');
/**
 * Hand over to a new run at the next safe point if this one began before `since`: how a release reaches every
 * living agent (client/rollout.ts, `longrun rollout`).
 */
export const renewSignal = defineSignal<[RenewInput]>('renew');
/**
 * What the `close` Update answers once the agent is closed: who, and how far it got. The final state itself is the
 * workflow's result, recorded once (`closeAgentAndWait` reads it); a worker of before answered the whole state here.
 */
export interface AgentClosed {
  agentId: string;
  life?: string;
  status: 'closed';
  turns: number;
  /** Messages in the working context at the end. */
  messageCount: number;
}

/** Close the agent and wait until the queued input is done; answers {@link AgentClosed}. */
export const closeUpdate = defineUpdate<AgentClosed | AgentState, []>('close');
/** The agent's state: status, turn count and stored messages (previews only). */
export const stateQuery = defineQuery<AgentState>('state');
/** Force a compaction now (bypasses the trigger and resets the cooldown). */
export const compactSignal = defineSignal<[CompactInput]>('compact');
/** Force a compaction and wait for what it did. */
export const compactUpdate = defineUpdate<CompactResult, [CompactInput]>('compact');
/**
 * The last compaction events kept in state (at most `EVENTS_KEPT`, contract/state.ts), oldest first, without their removed items:
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
 * Change a running agent's model, window or system prompt (after the queued input). A smaller window compacts first,
 * under the settings before, when the context would not fit it; the result says what changed and what that did.
 */
export const configureUpdate = defineUpdate<ConfigureResult, [ConfigureInput]>('configure');
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
 * Add a user message to the turn in progress at its next step boundary (after the step's tool results, before the
 * next model call); on an idle agent it opens a turn. Resolves to where it landed.
 */
export const steerUpdate = defineUpdate<SteerResult, [SteerInput]>('steer');
/** {@link steerUpdate} without waiting. */
export const steerSignal = defineSignal<[SteerInput]>('steer');
/** Stop the turn in progress now; with text, open the next turn with it. Resolves once the turn has ended. */
export const interruptUpdate = defineUpdate<InterruptResult, [InterruptInput]>('interrupt');
/** {@link interruptUpdate} without waiting. */
export const interruptSignal = defineSignal<[InterruptInput]>('interrupt');
/** Let a tool call waiting for approval run. */
export const approveToolUpdate = defineUpdate<ToolDecisionResult, [ToolDecisionInput]>('approveTool');
/** Refuse a tool call waiting for approval: its result says so, with the reason, and the model goes on. */
export const denyToolUpdate = defineUpdate<ToolDecisionResult, [ToolDecisionInput]>('denyTool');
/**
 * Pin a message of the working context (`{"messageId": "m000012"}`) or a text (`{"text": "..."}`): every compaction
 * keeps it verbatim (contract/pins.ts). Taken at the turn's next step boundary; over the pin budget it is refused.
 */
export const pinUpdate = defineUpdate<PinResult, [PinInput]>('pin');
/** Remove a pin (`{"pin": "pin-N"}`): the message is compactable again, the text leaves the pinned block. */
export const unpinUpdate = defineUpdate<UnpinResult, [UnpinInput]>('unpin');

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
  renew:
    'Hand over to a new run (continue-as-new) at the next safe point, if this run began before `since` (input ' +
    '{"since": "<ISO time>"}): idle at once, in a turn at its next step, a tool call waiting for approval once ' +
    'answered. Sent by `longrun rollout` to every agent after a release.',
  closeUpdate:
    'Close the agent and wait until the queued input is done. Returns {agentId, status, turns, messageCount}; the ' +
    'final state is the workflow result.',
  compactSignal:
    'Ask for a compaction after the queued input. Input {"instructions"?: "..." (up to 4,000 characters), ' +
    '"strategy"?: name, "force"?: false (only if due), "evenIfLarger"?: true (apply even if it grows the context)}. ' +
    'Invalid input is dropped and counted in ' +
    'state.droppedSignals.compact.',
  compactUpdate:
    'Compact now and wait. Input {"instructions"?, "strategy"?, "force"?, "evenIfLarger"?} as for the compact signal, and ' +
    '"review"?: true to get a draft (plan, summary text, tokens, facts) to approve or discard instead of applying ' +
    'it. Returns {compacted, reason, event?, draft?, noGain?} (noGain: not made, it would not shrink the context).',
  state: 'The agent: status, turns, tokens of the window, model, policy and the working context (previews, keys).',
  context: 'The working context: every message as a preview with its storage key (full bodies: longrun reload).',
  compactionEvents:
    'The last 10 compaction events (summaries) after {"since"?: seq, "limit"?: n}; every full event is in S3.',
  compressionEvents: 'The former name of compactionEvents (deprecated): the same answer.',
  stats:
    'Compactions so far: count, average size ratio (after / before), tokens saved (net), cost saved (with prices in the policy), ' +
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
  configure:
    'Change the settings of the running agent, after the queued input. Input {"model"?: name, "window"?: tokens ' +
    '(1024 to 10000000), "systemPrompt"?: text}, at least one; a new model without a window takes its window from ' +
    'the registry, and must count tokens as the agent does (same encoding and margin). A smaller window compacts ' +
    'first when the context would not fit it; a new system prompt is sent before the next message. Returns ' +
    '{changed: [{setting, from, to}], compacted, compaction?, settings: {model, window}}.',
  steer:
    "Add a user message to the turn in progress at its next step boundary: the model sees it after the step's tool " +
    'results. On an idle agent it opens a turn as send does. Input {"text": "..."} (1 to 200,000 characters). ' +
    'Returns {turn, step, messageId, opened} (the step whose model call carries it).',
  steerSignal:
    'Steer without waiting (input {"text": "..."}). Invalid input is dropped and counted in state.droppedSignals.steer.',
  interrupt:
    'Stop the turn in progress now: the model call or tool in flight is cancelled, every unanswered tool call is ' +
    'answered as interrupted, and the turn ends with a reply that says so (the send that opened it gets that ' +
    'reply). Input {"text"?: "..."}: the next turn opens with it, ahead of other queued messages. Returns ' +
    '{interrupted, turn?, step?, reason, opens?} once the turn has ended.',
  interruptSignal:
    'Interrupt without waiting (input {"text"?: "..."}). Invalid input is dropped and counted in ' +
    'state.droppedSignals.interrupt.',
  approveTool:
    'Let a tool call waiting for approval run. Input {"callId": "..."} (the state\'s and progress\'s ' +
    'awaitingApproval list it). Returns {callId, tool, decision}.',
  denyTool:
    'Refuse a tool call waiting for approval: the model sees a result that says it was denied, with the reason. ' +
    'Input {"callId": "...", "reason"?: "..." (up to 4,000 characters)}. Returns {callId, tool, decision}.',
  pin:
    'Pin a message of the working context or a text: every compaction (forced, automatic, background, overflow) and ' +
    'a revert keep it verbatim, a message in place, a text in the pinned block after the system prompt. Input ' +
    '{"messageId": "m000012"} or {"text": "..."} (1 to 200,000 characters). Pins count against the pin budget ' +
    '(policy pinRatio of the window, 0.1 by default); over it the pin is refused. Returns {pin, pins, ' +
    'pinnedTokens, budget}.',
  unpin:
    'Remove a pin. Input {"pin": "pin-N"} (the state lists the pins). Returns {unpinned, pins, pinnedTokens, budget}.',
  progress:
    'What the agent is doing now: the turn in progress and its model call, the compaction in progress and its step ' +
    '(planning, summarizing, applying, ready), the draft waiting for review and its timeout, queued inputs, tokens, ' +
    'the last reply and compaction. The summary ' +
    "model's chunk k of n is in the summarizeSpan activity's heartbeat details (temporal workflow describe).",
} as const;
