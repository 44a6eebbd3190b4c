/**
 * The activities' inputs and outputs: what crosses between the workflow and its activities, recorded in the
 * workflow's history. The workflow calls the activities through `proxyActivities` with these types; the activities
 * (activities/) implement them.
 */
import type { BudgetFigures } from '../engine/budget-note.ts';
import type { PinnedRef } from './pins.ts';
import type { ToolSelection } from './inputs.ts';
import type { TaskOutcome } from './delegation.ts';
import type { ContextDelta } from './context-delta.ts';
import type { CompactionEventSummary, Draft, SummaryCall } from './results.ts';
import type { ContextRecord, MessageRecord, ViewRef } from './records.ts';
import type { AgentLife } from './keys.ts';
import type { StreamAnnouncement } from './stream.ts';
import type { TaskLedger } from '../engine/ledger.ts';
import type { CallOfReply, ChatMessage, ToolCall } from '../engine/messages.ts';
import type { Counting, ModelInfo, ModelOverride } from '../engine/models.ts';
import type { ModelPrice, Spend } from '../engine/pricing.ts';
import type { Plan, PlanInput, PlanStep, SummarySpec } from '../engine/planner/index.ts';
import type { CompactionPolicy, PolicyOverrides, ToolLimits } from '../engine/policy.ts';
import type { CooldownState, Gate, GateCheck } from '../engine/trigger.ts';

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

export interface PlanCompactionInput
  extends Omit<PlanInput, 'summarizer' | 'context' | 'written' | 'lastWord'>, AgentLife {
  seq: number;
  /**
   * How the agent counts: with it the plan counts the summary's frame and the task ledger as they will be written
   * (absent in plans scheduled by earlier releases: the planner's estimates stand).
   */
  counting?: Counting;
  /**
   * The working context as the workflow holds it (records without their own keys): plans scheduled before
   * `compaction-refs`. Since, {@link contextRef} names it instead.
   */
  context?: ContextRecord[];
  /** The working context by reference: its records read from storage, as the model call reads its bodies. */
  contextRef?: ContextRef;
  summarizerFailed?: boolean;
  /**
   * Stored with the plan for a revert to before this compaction (absent in plans of earlier releases): the task
   * ledger then, and the sequence number of the first message after `context`.
   */
  ledger?: TaskLedger;
  /** The task ledger by its key (`compaction-refs`): read by the plan step and stored with the plan. */
  ledgerKey?: string;
  tailFromSeq?: number;
}

/**
 * The working context by reference, for the plan step: the records of the last compaction's context (stored by its
 * apply step as records.json; inline, once, for a context compacted before records were stored), then the messages
 * with sequence numbers `firstSeq..lastSeq`, whose records the plan step derives from their stored bodies. The
 * workflow's digest of the records it holds for them (contract/context-delta.ts `recordsDigest`) tells the plan
 * step whether it derived the same; when not, it answers `recordsDiffer` and the workflow sends them in `tail`.
 */
export interface ContextRef {
  baseRecords?: string;
  base?: ContextRecord[];
  baseLength: number;
  firstSeq: number;
  lastSeq: number;
  /** The user messages among them that steered a turn (their records say so; their bodies do not). */
  steerIds?: string[];
  tailDigest: string;
  /** The records of `firstSeq..lastSeq` as the workflow holds them, after a plan answered `recordsDiffer`. */
  tail?: ContextRecord[];
}

/** What the workflow needs of a plan; the plan itself is stored under `planKey`. */
export interface PlanOutcome {
  action: Plan['action'];
  reason: string;
  /** A masking pass below the trigger: it takes no step of the cooldown. */
  maskPass?: true;
  planKey?: string;
  steps: Omit<PlanStep, 'ids' | 'summary'>[];
  /**
   * For the summarizer: the keys of the span's messages, in order, and where the summary goes (plans made before
   * `compaction-refs`); since, only the span's length: the summarizer reads the span from the stored plan.
   */
  summary?: {
    spanKeys?: string[];
    keptKeys?: string[];
    /** The span's messages (`compaction-refs`). */
    spanLength?: number;
    prependToKey?: string;
    estimatedTokens: number;
    /** The summary message's budget, frame and pinned facts included. */
    maxTokens?: number;
    writer?: SummarySpec['writer'];
    coverage?: SummarySpec['coverage'];
    /** The messages that leave the context with the summary (not a previous summary, not a kept user message). */
    leavingIds?: string[];
  };
  tokensBefore: number;
  tokensAfter: number;
  targetTokens: number;
  /** A skip because the compaction would not shrink the context: the tokens before and expected after. */
  noGain?: { tokensBefore: number; tokensAfter: number };
  /** After a skip: the gate to check next, so that a plan that found nothing to do is not remade every step. */
  gate?: Gate;
  /**
   * The records the plan step derived for the messages since the last compaction differ from the workflow's (by
   * their digest): nothing was planned; the workflow plans again with them in `contextRef.tail`.
   */
  recordsDiffer?: true;
}

export interface SummarizeInput extends AgentLife {
  seq: number;
  /**
   * The stored plan whose span this summarizes (`compaction-refs`): the span's keys, the kept user messages, the
   * host, the coverage, the leaving ids, the ledger and the goal come from it.
   */
  planKey?: string;
  spanKeys: string[];
  /** The user's messages of the span that stay in the context verbatim (their facts are not at risk). */
  keptKeys?: string[];
  prependToKey?: string;
  instructions?: string;
  /** The summary message's budget in tokens: the summarizer is asked for less, and the message is cut to fit. */
  maxTokens: number;
  counting: Counting;
  /** `extractive`: the summary model failed, the extractive summarizer writes it (default: the model, if any). */
  writer?: SummarySpec['writer'];
  /** What the summary stands for: its title, and where the loop stands when it reaches into the turn in progress. */
  coverage?: SummarySpec['coverage'];
  /**
   * A summary of one span in its place (a run of tool calls, a round): an assistant message where the span was, asked
   * for as such. Absent: the one summary of the context.
   */
  form?: SummarySpec['form'];
  /** Which of the plan's summaries in their places this is (0, 1, …): its own key and id. Absent: the one. */
  part?: number;
  /** The messages that leave the context, listed in the summary with where their originals are stored. */
  leavingIds?: string[];
  /** The ledger so far, and the key of the user's first message (the goal). */
  ledger?: TaskLedger;
  goalKey?: string;
  /**
   * The policy asks for the summary in conversation mode (`summary.request`): the agent's own request, as its model
   * call builds it, up to the end of the span, then the instruction. Absent: transcript mode.
   */
  conversation?: AgentRequestRef;
}

/**
 * What a summary in conversation mode repeats of the agent's own model call (activities/agent-request.ts): the model
 * it calls (the summary is asked so only when the worker's summary model is that model), the tool schemas it sees,
 * the pinned block it sends, and its window (the request, the instruction and the summary must fit it).
 */
export interface AgentRequestRef {
  model: string;
  /** The tool schemas the agent's model sees (its `delegation`, `tools`); absent: all but `delegate`. */
  tools?: ToolSelection;
  /** The pins of the pinned block, as its model call sends them (contract/pins.ts); absent: none. */
  pinned?: PinnedRef[];
  window: number;
}

/**
 * What the summarizeSpan activity takes: a {@link SummarizeInput}, or (`compaction-refs`) its stored plan's key with
 * the span left out, which the activity reads from the plan.
 */
export type SummarizeRequest = Omit<SummarizeInput, 'spanKeys'> & { spanKeys?: string[] };

/** What the fact check of a summary found: facts kept, lost after one re-prompt, and pinned verbatim. */
export interface FactCheck {
  found: number;
  missing: number;
  reprompted: boolean;
  pinned: string[];
}

/**
 * What the summarizeSpan activity's heartbeats carry: the chunk the summary model is on, `chunk` of `chunks` (1 of 1
 * for a span that fits the model's window at once; 0 before the first call). The client reads it from the pending
 * activity (`longrun watch`, `agentProgress`; `temporal workflow describe` shows it as the heartbeat details).
 */
export interface SummarizeProgress {
  chunk: number;
  chunks: number;
}

export interface SummaryOutcome {
  record: MessageRecord;
  parsedAs: string;
  /**
   * Structured output, plain text (the fallback when the provider rejected structured output, or a summary asked in
   * conversation mode: `llm.request`), or none (extractive).
   */
  responseFormat: 'json_schema' | 'text' | 'none';
  /** Summary calls the span took: more than 1 when it did not fit the summary model's window at once. */
  chunks?: number;
  facts: FactCheck;
  /**
   * The records of the plan's further summaries in their places (its parts after the first, which is `record`), in
   * order; `chunks`, `facts` and `llm` then add up all of them.
   */
  parts?: MessageRecord[];
  /** The task ledger after this summary, and its message for the context. */
  ledger: TaskLedger;
  ledgerRecord: MessageRecord;
  llm: SummaryCall;
  /** Where this outcome is stored, for the apply step (`compaction-refs`: it is not sent again). */
  summaryKey?: string;
  /** Where `ledger` is stored (`compaction-refs`): the next plan takes the ledger by this key. */
  ledgerKey?: string;
}

/**
 * {@link SummaryOutcome} as `summarizeSpan` returns it, recorded in the workflow's history: a summary by reference
 * (`planKey`) carries its ledger as `ledgerChanges` from the ledger its plan was made with, which the workflow holds
 * (contract/lean-calls.ts `ledgerWith`; the whole ledger is stored under `ledgerKey`). `ledger`: a summary of before,
 * or one not by reference.
 */
export type SummaryPayload = Omit<SummaryOutcome, 'ledger'> & { ledger?: TaskLedger; ledgerChanges?: LedgerChanges };

/**
 * A task ledger as a change of another: a field left out is the other's; a list as `{ from, add }` is the other's
 * list from index `from`, then `add`; null is a field the ledger no longer has.
 */
export type LedgerChanges = {
  [K in keyof TaskLedger]?: (TaskLedger[K] extends string[] | undefined ? ListChange : never) | TaskLedger[K] | null;
};

/** A list as the end of another's from index `from`, then `add`. */
export interface ListChange {
  from: number;
  add: string[];
}

export interface ApplyCompactionInput extends AgentLife {
  seq: number;
  planKey: string;
  /** The summarizer's outcome, inline (applies scheduled before `compaction-refs`). */
  summary?: SummaryOutcome;
  /** The summarizer's outcome by its key (`compaction-refs`). */
  summaryKey?: string;
  /** Return what changed ({@link ApplyOutcome}'s `delta`), not the whole new context (`compaction-refs`). */
  delta?: true;
  at: string;
  instructions?: string;
  counting: Counting;
  fixedTokens: number;
  startedAt: number;
  /** Consecutive compactions without a user message, this one included (the cooldown's step). */
  consecutive: number;
  window: number;
  /** The draft of an automatic compaction this applies, and how it was decided (a note of the event). */
  review?: string;
  /**
   * Apply even when the compaction, as written, leaves the context larger than it found it: a forced compaction asked
   * so (`evenIfLarger`), or a person approved the draft. Without it an automatic or forced one that would grow the
   * context is not committed ({@link NoGainOutcome}); an overflow or a message or turn limit is applied regardless.
   */
  evenIfLarger?: boolean;
}

/**
 * What a committed compaction cost (`spent`, set by the workflow as it commits it: workflows/conversation.ts), for
 * the stored copy of its event (`keys.event`), which the apply step wrote before it was known (patch `event-spent`).
 */
export interface RecordSpentInput extends AgentLife {
  seq: number;
  spent: NonNullable<CompactionEventSummary['spent']>;
}

export interface RevertContextInput extends AgentLife {
  /** The revert's own event number (the agent's last event + 1). */
  seq: number;
  /** The event whose context before it comes back. */
  toEvent: number;
  /** The working context now, the ledger now and the first sequence number after it: stored for a later revert. */
  context: ContextRecord[];
  ledger?: TaskLedger;
  tailFromSeq: number;
  /** The last message stored (every message from the restored context's tail up to it comes back raw). */
  lastSeq: number;
  counting: Counting;
  fixedTokens: number;
  policy: CompactionPolicy;
  window: number;
  at: string;
  startedAt: number;
}

export interface RevertOutcome {
  /** The restored context: the context before `toEvent` (the manifest `event.keys.context`), then the tail. */
  context: ContextRecord[];
  /** How many records of `context` the manifest holds; the rest are messages `tailFromSeq` on, in order. */
  baseLength: number;
  tailFromSeq: number;
  /** The ledger of then (absent: the event's plan did not store one, and the ledger now is kept). */
  ledger?: TaskLedger;
  event: CompactionEventSummary;
  gate: Gate;
  cooldown: CooldownState;
}

export interface StoreDraftInput extends AgentLife {
  seq: number;
  /** The draft as the workflow knows it; the activity adds the summary text read from `summaryKey`. */
  draft: Omit<Draft, 'summary'>;
}

export interface ReviseSummaryInput extends AgentLife {
  seq: number;
  /** The draft's plan (its span: whose must-keep facts are checked in the edit). */
  planKey: string;
  /** The edited text of the summary message. */
  text: string;
  /** The summarizer's outcome the edit replaces (its ledger stays). */
  summary: SummaryOutcome;
  counting: Counting;
}

/**
 * The apply step found that the compaction, as written, would not shrink the context: nothing was committed (the
 * stored summary and replacements stay, unreferenced), and the gate holds until the context grows, as after a skip.
 */
export interface NoGainOutcome {
  noGain: { tokensBefore: number; tokensAfter: number };
  reason: string;
  gate: Gate;
}

export interface ApplyOutcome {
  /** The new working context, its records without their own keys (as the workflow holds them); absent with `delta`. */
  context?: ContextRecord[];
  /**
   * What changed, when asked (`compaction-refs`): the ranges of the context the plan was made for that stay, and the
   * records the compaction made, in order (contract/context-delta.ts).
   */
  delta?: ContextDelta;
  /** Where the new context's records are stored (the next plan reads them there). */
  baseRecords?: string;
  /** Breaks of the coverage invariant the compaction made (recorded, LONGRUN_STRICT_INVARIANTS off); absent: none. */
  violations?: string[];
  /** The event without its removed items (stored in full at `event.keys.event`). */
  event: CompactionEventSummary;
  /** When compaction fires next. */
  gate: Gate;
}
