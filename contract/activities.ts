/**
 * The activities' inputs and outputs: what crosses between the workflow and its activities, recorded in the
 * workflow's history. The workflow calls the activities through `proxyActivities` with these types
 * (workflows/activities.ts); the activities (activities/) implement them. The compaction activities' are
 * contract/compaction-activities.ts's.
 */
import type { BudgetFigures } from '../engine/budget-note.ts';
import type { PinnedRef } from './pins.ts';
import type { ToolSelection } from './inputs.ts';
import type { TaskOutcome } from './delegation.ts';
import type { ContextRecord, ViewRef } from './records.ts';
import type { AgentLife } from './keys.ts';
import type { StreamAnnouncement } from './stream.ts';
import type { CallOfReply, ChatMessage, ToolCall } from '../engine/messages.ts';
import type { Counting, ModelInfo, ModelOverride } from '../engine/models.ts';
import type { ModelPrice, Spend } from '../engine/pricing.ts';
import type { CompactionPolicy, PolicyOverrides, ToolLimits } from '../engine/policy.ts';
import type { Gate, GateCheck } from '../engine/trigger.ts';

export interface StoreMessageInput extends AgentLife {
  messageId: string;
  message: ChatMessage;
  counting: Counting;
  /** Published to the agent's live stream once the message is stored (a denied or interrupted call's answer). */
  announce?: StreamAnnouncement[];
}

/** The stored reply of a turn, read back for an Update delivered again (workflows/applied-updates.ts). */
export interface ReadReplyInput extends AgentLife {
  replyId: string;
}

export interface DescribeModelInput {
  model: string;
  override?: ModelOverride;
  compaction?: PolicyOverrides & { preset?: string };
  /** @deprecated `compaction` as an activity scheduled before the rename names it. */
  compression?: PolicyOverrides & { preset?: string };
  /** The tool schemas the agent's model sees (its `delegation`, `tools`); absent: all but `delegate`. */
  tools?: ToolSelection;
}

export interface ModelDescription {
  info: ModelInfo;
  /** Tokens every request spends on the tool schemas and the reply primer. */
  fixedTokens: number;
  policy: CompactionPolicy;
  gate: Gate;
}

/**
 * A model call's input as the workflow schedules it, recorded in its history: what the activity can tell itself is
 * left out (contract/lean-calls.ts: `wholeModelInput` restores it, `leanModelInput` leaves it out).
 */
export interface CallModelInput extends AgentLife {
  model: string;
  /** The messages to send, by reference (constant size in history, however long the context). */
  view: ViewRef;
  /** Id under which the reply is stored. Absent: the id after the view's last message. */
  replyId?: string;
  /** 'none' forces a text answer (the turn's step limit is reached). */
  toolChoice?: 'auto' | 'none';
  /** Absent: the default counting, o200k_base × 1 (contract/lean-calls.ts `DEFAULT_COUNTING`). */
  counting?: Counting;
  /**
   * The agent's price (its model's, or its own): the call's cost in the metrics. Absent: the registry's for `model`
   * (none when the registry has none).
   */
  price?: ModelPrice;
  /** The turn and step of this call: a reply without tool calls publishes the turn's end to the live stream. */
  turn?: { turn: number; step: number };
  /** Published to the agent's live stream before the call (steers that landed in this step). */
  announce?: StreamAnnouncement[];
  /**
   * The pins whose bodies are not in the view (contract/pins.ts): sent as the pinned block, one system message right
   * after the view's leading system messages. Absent: none.
   */
  pinned?: PinnedRef[];
  /**
   * The budget note (policy `budgetNote`): appended to the request as its last message, after everything else, and
   * never stored, so the next request's prefix still matches this one up to where the note was.
   */
  budgetNote?: string;
  /** The tool schemas the agent's model sees (its `delegation`, `tools`); absent: all but `delegate`. */
  tools?: ToolSelection;
  /**
   * The budget note's figures: the activity writes the note from them (engine/budget-note.ts `budgetNote`), so the
   * history carries the figures, not the text; the window is `window`'s, no `compacted` is none, the steps used and
   * their limit as {@link LeanNoteFigures} says. `budgetNote` in calls scheduled before.
   */
  budget?: LeanNoteFigures;
  /**
   * The model's window: a request counted over it is never sent; the call fails with `ContextOverflow` (contract/failures.ts)
   * instead, and the workflow compacts further before it calls again. Absent: the registry's for `model` (calls
   * scheduled before windows were passed: none, no check).
   */
  window?: number;
  /**
   * The turn's new messages (the user's, and the system prompt on the first turn), to store and count first; they
   * are the last messages of the view. Storing them here rather than in an activity of their own saves a round trip
   * through the server on every turn; the store runs while the model answers.
   */
  newMessages?: NewMessage[];
  /**
   * With `newMessages`: the automatic trigger's gate and counters before them. When the new messages make it fire,
   * the model is not called and the result says so: the workflow compacts, then calls again.
   */
  gateCheck?: GateCheck;
  /**
   * The step's plain tool calls run in this activity once the reply is stored (absent: none is; in calls of before,
   * and on the calls of runs recorded before reachable turns): see {@link RunCalls}.
   */
  runCalls?: RunCalls;
}

/**
 * What the model call needs to answer the reply's tool calls itself, in parallel, as `runTool` does (stored,
 * streamed, cut): every call it can answer cleanly. It leaves to the workflow (`runTool`, or the workflow's own
 * answer) a call of a tool the workflow answers (`context_pin`, `context_budget`, `delegate`, a team's `delegateTo`
 * tools), one that waits for approval (`approval`, or its tool's own rule), one whose tool threw (`runTool` retries
 * it), and the calls an interrupt cancelled. The results take the ids after the reply's, in call order
 * (contract/keys.ts `resultIdsOf`).
 */
export interface RunCalls {
  /** The tools whose calls wait for approval by name (the agent's `toolApproval`); absent: none. */
  approval?: string[];
  /** The policy's per-tool limits (`tools`), by tool name; absent: none. */
  limits?: Record<string, ToolLimits>;
}

/** A model call's input with what {@link CallModelInput} may leave out restored (contract/lean-calls.ts). */
export type WholeCallModelInput = Omit<CallModelInput, 'replyId' | 'counting' | 'budget'> & {
  replyId: string;
  counting: Counting;
  budget?: NoteFigures;
};

/** Input of `reportDelegation`: a delegate call's result, from what its child agent stored (activities/delegation.ts). */
export interface ReportDelegationInput extends AgentLife {
  /** The delegate call (its arguments may be left out: the report does not read them). */
  call: CallOfReply;
  resultId: string;
  counting: Counting;
  child: {
    agentId: string;
    /** The child's life (its first run id): where its objects are. */
    life: string;
    /** The sequence number of the last message it stored. */
    lastSeq: number;
    outcome?: TaskOutcome;
    spend?: Spend;
  };
}

/** Input of `storePin`: a pin's text, stored under the pin's key and counted. */
export interface StorePinInput extends AgentLife {
  pinId: string;
  text: string;
  counting: Counting;
}

/** A pinned text as stored: its key, tokens and preview. */
export interface StoredPin {
  key: string;
  tokens: number;
  preview: string;
}

export interface NewMessage {
  messageId: string;
  message: ChatMessage;
  /** A steer: a user message inside the turn (not the start of a turn, for the trigger's count of turns). */
  steer?: true;
}

/** Tokens a model call used, as the provider reported them (activities/usage.ts reads them). */
export interface ModelUsage {
  /** Input tokens, cached ones included. */
  promptTokens: number;
  completionTokens: number;
  /**
   * Of `promptTokens`, those the provider served from its prompt cache (billed at a fraction); absent when the
   * provider reports nothing about caching.
   */
  cachedTokens?: number;
}

/** The budget note's figures as a model call takes them: its window is the call's, no `compacted` is none. */
export type NoteFigures = Omit<BudgetFigures, 'window' | 'compacted'> & { compacted?: BudgetFigures['compacted'] };

/**
 * {@link NoteFigures} as a model call's input carries them: `steps.used` absent is the call's step − 1 (the steps the
 * turn made before it), `steps.limit` absent is the default turn budget (contract/inputs.ts `DEFAULT_TURN_STEPS`),
 * `steps` absent is both.
 */
export type LeanNoteFigures = Omit<NoteFigures, 'steps'> & { steps?: { used?: number; limit?: number } };

/** The figures of {@link NoteFigures} whole again, with the call's window. */
export function noteFiguresOf(figures: NoteFigures, window: number): BudgetFigures {
  return { ...figures, window, compacted: figures.compacted ?? [] };
}

export interface ModelReply {
  record: ContextRecord;
  /**
   * The reply's text: the turn's reply when it calls no tools. Empty (since `budget` was added: the same release)
   * when it calls tools and could not end the turn (no `toolChoice: 'none'`): the text is in the stored reply.
   */
  content: string;
  /**
   * Tool calls the model asked for, to run before the next model call: without their arguments (in the stored
   * reply, read by `runTool`) unless the workflow answers the call itself (`context_pin`, `context_budget`); with
   * them in replies recorded before.
   */
  toolCalls: CallOfReply[];
  usage?: ModelUsage;
  /**
   * The model that served the reply, as the provider names it (the completion's `model`, e.g. a dated version of
   * the requested one; `replayed:<model>` from the offline replayed model). Absent when the provider names none.
   */
  servedBy?: string;
}

export interface CallModelResult {
  /** Records of the stored `newMessages`, in order. */
  stored: ContextRecord[];
  /** What fired when the new messages made compaction due: the model was not called, `reply` is absent. */
  compactionDue?: string;
  reply?: ModelReply;
  /**
   * With `runCalls`: one entry per tool call of the reply, in call order: the record of its result when the activity
   * answered it (without what the workflow knows: its id, role and call id), null when the workflow is to answer it.
   * Absent: none answered (and in results of before).
   */
  toolResults?: (LeanRecord | null)[];
  /** With `runCalls`: the calls whose tool threw here, by call id: the attempts spent (`runTool` goes on counting). */
  toolErrors?: Record<string, number>;
  /**
   * With `runCalls`: the calls whose tool failed here for good (it threw a non-retryable error), by call id: the
   * error, which `runTool` raises without running the tool again, so the turn fails as it did before.
   */
  toolFailed?: Record<string, ToolFailure>;
}

/** A tool's non-retryable error, as the model call's activity hands it to `runTool` (contract/activities.ts). */
export interface ToolFailure {
  message: string;
  /** The error's type (an ApplicationFailure's), when it has one. */
  type?: string;
}

/**
 * A tool call of a reply as the model-call activity returns it: without `type` (always `function`) in replies since
 * lean payloads (contract/lean-calls.ts).
 */
export type LeanCallOfReply = Omit<CallOfReply, 'type'> & { type?: 'function' };

/**
 * A reply as the model-call activity returns it, recorded in the workflow's history: {@link ModelReply} less what the
 * workflow knows (contract/lean-calls.ts `wholeModelResult` restores it). A record without `id` tells this shape:
 * `id` is the call's `replyId`, `role` absent is `assistant`, `toolCallIds` absent are the calls' ids, `content`
 * absent is empty, `servedBy` absent is the model asked for and empty is none named. A record with `id`: a reply
 * recorded before, whole.
 */
export interface ModelReplyPayload extends Omit<ModelReply, 'record' | 'content' | 'toolCalls'> {
  record: LeanRecord;
  content?: string;
  toolCalls: LeanCallOfReply[];
}

/** A record as a lean payload carries it: `id` and `role` left out when the workflow knows them. */
export type LeanRecord = Omit<ContextRecord, 'id' | 'role'> & { id?: string; role?: ContextRecord['role'] };

/** {@link CallModelResult} as the activity returns it: `stored` absent is none, `reply` lean. */
export interface CallModelPayload extends Pick<CallModelResult, 'toolResults' | 'toolErrors' | 'toolFailed'> {
  stored?: ContextRecord[];
  compactionDue?: string;
  reply?: ModelReplyPayload;
}

/** A break of the coverage invariant the workflow found in its context (engine/coverage.ts). */
export interface ViolationInput extends AgentLife {
  /** Where: `before the model call for <replyId>`, `committing compaction <seq>`. */
  where: string;
  problems: string[];
}

/**
 * A tool call's input as the workflow schedules it. Since lean payloads (contract/lean-calls.ts), `call` comes without
 * `type`: that shape leaves out `counting` (absent: the default, o200k_base × 1), `approval` (absent: `ask`) and the
 * call's `function` when the stored reply holds it, and its result leaves out what the input says (`id`, `role`,
 * `toolCallId`). A `call` with `type`: the shape of before (runs recorded before reachable turns keep it), whole.
 */
export interface RunToolInput extends AgentLife {
  /**
   * The call; without its arguments when `replyId` names the stored reply that holds them, and then (lean) without
   * its `function` at all.
   */
  call: ToolCall | CallOfReply | ToolCallRef;
  /** The stored reply that made the call, where the activity reads its arguments (absent: `call` carries them). */
  replyId?: string;
  /** Id under which the tool result message is stored. */
  resultId: string;
  counting?: Counting;
  /**
   * `ask`: a call of a tool whose own rule asks for approval is not run; the activity answers {@link ApprovalNeeded}
   * and the turn waits for a person. `required`: the agent's `toolApproval` names the tool: not run, the activity
   * says in the live stream that the call waits, and answers {@link ApprovalNeeded}. `granted`: run it. Absent: `ask`
   * in a lean input, run it in one of before (whole: runs recorded before reachable turns).
   */
  approval?: 'ask' | 'required' | 'granted';
  /** Published to the agent's live stream before the call runs (its approval answered). */
  announce?: StreamAnnouncement[];
  /**
   * The agent's policy's limits for this call's tool (`tools`), over the tool definition's own. Absent: none (and in
   * runs of before).
   */
  limits?: ToolLimits;
  /**
   * Attempts of this call the tool already failed in the model call's activity ({@link RunCalls}): they count toward
   * `TOOL_ERROR_ATTEMPTS`. Absent: none.
   */
  toolErrors?: number;
  /** The tool failed for good in the model call's activity: raised as this error, the tool not run again. */
  failed?: ToolFailure;
}

/** A tool call as a lean `runTool` input names it: its id, and its `function` unless the stored reply holds it. */
export interface ToolCallRef {
  id: string;
  type?: 'function';
  function?: { name: string; arguments?: string };
}

/** What `runTool` answers for a call that waits for approval by its tool's own rule (nothing run, nothing stored). */
export interface ApprovalNeeded {
  approvalNeeded: true;
  /** The call's arguments, as the person asked sees them (absent in runs of before: the call carried them). */
  arguments?: string;
}
