/**
 * The compaction activities' inputs and outputs (plan, summarize, apply, revert, drafts): what crosses between the
 * workflow's compaction pipeline (workflows/compaction-pipeline.ts, reviews.ts) and activities/compaction/, recorded in
 * the workflow's history, by reference wherever a body would otherwise go (docs/compaction.md). The agent's other
 * activities (messages, the model call, tools) are contract/activities.ts's.
 */
import type { PinnedRef } from './pins.ts';
import type { ToolSelection } from './inputs.ts';
import type { ContextDelta } from './context-delta.ts';
import type { CompactionEventSummary, Draft, SummaryCall } from './results.ts';
import type { ContextRecord, MessageRecord } from './records.ts';
import type { AgentLife } from './keys.ts';
import type { TaskLedger } from '../engine/ledger.ts';
import type { Counting } from '../engine/models.ts';
import type { Plan, PlanInput, PlanStep, SummarySpec } from '../engine/planner/index.ts';
import type { CompactionPolicy } from '../engine/policy.ts';
import type { CooldownState, Gate } from '../engine/trigger.ts';

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
