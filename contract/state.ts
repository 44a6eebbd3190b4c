/**
 * The agent's state: as the workflow holds it ({@link WorkflowState}), as the queries return it ({@link AgentState}),
 * and what continue-as-new carries ({@link AgentCarry}), with the draft awaiting review and what applies it.
 */
import type { PlanOutcome, SummaryOutcome } from './compaction-activities.ts';
import type { CompactInput } from './inputs.ts';
import type { TaskOutcome } from './delegation.ts';
import { lifePrefix, seqOf } from './keys.ts';
import { keyedRecord } from './records.ts';
import type { ContextRecord, MessageRecord } from './records.ts';
import { NO_COMPACTIONS } from './results.ts';
import type { CompactionEventSummary, CompactionStats, Draft, KeptResult, SummaryCall } from './results.ts';
import type { ModelInfo } from '../engine/models.ts';
import { cachedShareOf, totalCostOf } from '../engine/pricing.ts';
import type { Spend } from '../engine/pricing.ts';
import type { CompactionPolicy } from '../engine/policy.ts';
import type { CooldownState, Gate, Trigger } from '../engine/trigger.ts';
import type { TaskLedger } from '../engine/ledger.ts';
import type { Pin } from './pins.ts';

/**
 * The context a compaction was made for: its first `messages` records, the last of them `lastId`, after
 * `compactions` compactions. A compaction made in the background (or a draft) is committed only while that prefix
 * is still the context's: what was added since stays after the compacted part.
 */
export interface Snapshot {
  messages: number;
  lastId: string | undefined;
  compactions: number;
}

/**
 * A compaction planned and summarized, not yet applied: what it was made for and how to apply it. The workflow keeps
 * one while it applies it, and a draft awaiting review keeps its own in the state ({@link AgentState}'s `draft`).
 */
export interface Prepared {
  seq: number;
  trigger: Trigger;
  request: CompactInput;
  startedAt: number;
  /** The cooldown when it was planned. */
  cooldown: CooldownState;
  plan: PlanOutcome;
  summary?: SummaryOutcome;
  /** The context it was made for; its tail (what is added after it) starts at `tailFromSeq`. */
  made: Snapshot;
  tailFromSeq: number;
  /** Prepared by reference (`compaction-refs`): apply returns what changed, not the whole context. */
  refs?: true;
}

/** The `stats` query's answer: the counts, and the loop guard's pause while it holds. */
export function statsOf(state: Pick<WorkflowState, 'stats' | 'cooldown' | 'contextTokens'>): CompactionStats {
  const stats = state.stats ?? NO_COMPACTIONS;
  const until = state.cooldown?.pausedUntil;
  return until !== undefined && state.contextTokens < until ? { ...stats, pausedUntil: until } : stats;
}

/** A tool call waiting for approval, as the `progress` and `state` queries show it. */
export interface ApprovalProgress {
  callId: string;
  tool: string;
  /** The call's arguments as the model wrote them (JSON text, cut to 2,000 characters). */
  arguments: string;
  /** When it began to wait and when it times out (workflow time, ISO), and what then becomes of it. */
  since: string;
  until: string;
  onTimeout: 'deny' | 'approve';
}

export type AgentStatus = 'running' | 'closed';

/**
 * The `AgentStatus` search attribute: the agent's status, `compacting` while a compaction runs (blocking or in
 * the background; one upsert when it starts and one when it ends), and `awaiting-review` while the draft of an
 * automatic compaction waits for approval (policy `review.automatic`). The phase itself is in the `progress` query
 * and the current details.
 */
export type AgentStatusAttribute = (typeof AGENT_STATUS_VALUES)[number];

/** Every value the `AgentStatus` search attribute takes (docs/temporal-ui.md lists them). */
export const AGENT_STATUS_VALUES = ['running', 'compacting', 'awaiting-review', 'awaiting-approval', 'closed'] as const;

/**
 * The agent's status as everything shows it: the `AgentStatus` search attribute (`longrun list`, the Temporal UI),
 * the state's `shownStatus` (`longrun state`) and the current details. `closed`; `compacting` while a compaction runs
 * (`compacting`: the progress has one); `awaiting-approval` while a tool call of the turn waits for a person (before
 * the others: a person must act); `awaiting-review` while the draft of an automatic compaction waits; else
 * `running`. The one place that decides it.
 */
export function shownStatusOf(
  state: Pick<WorkflowState, 'status' | 'draft'>,
  compacting: boolean,
  awaitingApproval = false,
): AgentStatusAttribute {
  if (state.status === 'closed') return 'closed';
  if (awaitingApproval) return 'awaiting-approval';
  return compacting ? 'compacting' : state.draft?.info.waits ? 'awaiting-review' : 'running';
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
  /**
   * The system prompt the agent sends (its start's, or the last `configure`'s). Absent in states of before it was
   * kept (read the start's input) and for an agent without one.
   */
  systemPrompt?: string;
  /** Set by `configure` once the context holds messages: the new system prompt is sent before the next message. */
  systemPromptPending?: boolean;
  status: AgentStatus;
  /** The status as `longrun list` and the UI show it ({@link shownStatusOf}); set by the `state` query. */
  shownStatus?: AgentStatusAttribute;
  /** Tool calls of the turn in progress waiting for approval; set by the `state` query while any waits. */
  awaitingApproval?: ApprovalProgress[];
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
  /**
   * What the agent's model calls and its compactions' summary calls spent, tokens and USD (engine/pricing.ts): every
   * call since prices were counted (absent in states of before). `cost` is null when the model's price is not known.
   */
  spend?: Spend;
  /**
   * Set by the `state` query from `spend`: the agent's cost so far in USD (model calls and summary calls; null when
   * the model's price is not known) and the share of its input tokens the provider served from its prompt cache
   * (null before any input).
   */
  cost?: AgentCost;
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
   * The compaction plans this agent made and how many of them found nothing to do (absent before plans were
   * counted): a plan that finds nothing costs an activity and its history for no change. `avoided`: masking passes
   * the workflow could tell would find nothing, not planned.
   */
  plans?: { made: number; empty: number; avoided?: number };
  /**
   * Where the records of the last compaction's context are stored (its records.json): the plan reads them there
   * (`compaction-refs`). Absent: none stored (a compaction of before, a revert), and the plan gets them inline.
   */
  baseRecords?: string;
  /** Where {@link ledger} is stored, once a summary stored it (`compaction-refs`): the plan takes it by this key. */
  ledgerKey?: string;
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
  draft?: { info: Omit<Draft, 'summary'>; prepared: Prepared };
  /** A child agent's task (task mode, contract/delegation.ts), once done: its answer's id, or why it failed. */
  task?: TaskOutcome;
  drafts?: number;
  lastDraft?: string;
  /** What every compaction keeps verbatim (contract/pins.ts), in the order they were made; absent: none. */
  pins?: Pin[];
  /** Tokens of the pinned block every request carries (counted in `contextTokens`); absent: none. */
  pinnedBlockTokens?: number;
  /** Pins made so far (the next id is `pin-<pinsMade + 1>`). */
  pinsMade?: number;
  /** With the budget note on (policy `budgetNote`): the compactions the last note told the model of. */
  notedCompactions?: number;
}

/** The agent's cost as the `state` query shows it. */
export interface AgentCost {
  /** USD: model calls plus summary calls; null when the model's price is not known. */
  total: number | null;
  /** USD of the model calls alone, and of the summary calls alone. */
  modelCalls: number | null;
  summaries: number;
  /** Cached input tokens / input tokens, 0 to 1; null before any input. */
  cachedInputShare: number | null;
}

/** The cost figures of a spend, as the state query and the UI details show them. */
export function agentCostOf(spend: Spend): AgentCost {
  return {
    total: totalCostOf(spend),
    modelCalls: spend.cost,
    summaries: spend.summaryCost,
    cachedInputShare: cachedShareOf(spend),
  };
}

/** USD as the reports show it: cents above $1, else enough decimals to see a single call; `unknown` for null. */
export function formatUsd(usd: number | null): string {
  if (usd === null) return 'unknown';
  return `$${usd >= 1 ? usd.toFixed(2) : usd >= 0.01 ? usd.toFixed(4) : usd.toFixed(6)}`;
}

/** A share (0 to 1) as a whole percent; `–` for null. */
export function formatShare(share: number | null): string {
  return share === null ? '–' : `${Math.round(share * 100)}%`;
}

/**
 * How a compaction's summary call was asked (policy `summary.request`; events of before: as a transcript) and the
 * share of its input the provider served from its prompt cache: `conversation, 91% cached`. Undefined without a call
 * (an extractive summary, or none).
 */
export function summaryCallNote(llm: SummaryCall | undefined): string | undefined {
  if (!llm || llm.promptTokens + llm.completionTokens === 0) return undefined;
  const share = llm.promptTokens > 0 ? (llm.cachedTokens ?? 0) / llm.promptTokens : null;
  return `${llm.request ?? 'transcript'}, ${formatShare(share)} cached`;
}

/** The cost line of the current details and `longrun state`: the total, the summaries' part, the cached share. */
export function costLine(spend: Spend): string {
  const cost = agentCostOf(spend);
  const summaries = spend.summaryCost > 0 ? ` (summaries ${formatUsd(spend.summaryCost)})` : '';
  return `cost: ${formatUsd(cost.total)}${summaries} · cached input ${formatShare(cost.cachedInputShare)}`;
}

/** Dropped signals by name; `earlier` counts those dropped before they were counted by name. */
export interface DroppedSignals {
  message?: number;
  compact?: number;
  steer?: number;
  interrupt?: number;
  earlier?: number;
}

/** The state as the workflow holds it and continue-as-new carries it: records without their own keys. */
export type WorkflowState = Omit<
  AgentState,
  'messages' | 'storagePrefix' | 'shownStatus' | 'awaitingApproval' | 'cost'
> & {
  messages: ContextRecord[];
};

/**
 * The state as the queries return it: every record with its key, where the agent's objects are, and the status as
 * shown (`compacting`: a compaction is in progress).
 */
export function publicState(
  state: WorkflowState,
  compacting = false,
  awaitingApproval: ApprovalProgress[] = [],
): AgentState {
  return {
    ...state,
    shownStatus: shownStatusOf(state, compacting, awaitingApproval.length > 0),
    ...(awaitingApproval.length > 0 ? { awaitingApproval } : {}),
    ...(state.spend ? { cost: agentCostOf(state.spend) } : {}),
    storagePrefix: lifePrefix(state),
    messages: state.messages.map((record) => keyedRecord(state, record)),
  };
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

/** How many compaction events the workflow keeps in its state (all of them are in S3). */
export const EVENTS_KEPT = 10;

/** State carried across continue-as-new. */
/**
 * The shape of the carry this release writes ({@link AgentCarry.schema}). 1: every carry written before the number
 * (read by its shape: the migrations in `Conversation.begin`, docs/changing-workflows.md); 2: since the release
 * test (0.1.0). A release that changes the carry's shape raises it, with its migration beside the others.
 */
export const CARRY_SCHEMA = 2;

export interface AgentCarry {
  /**
   * The carry's shape ({@link CARRY_SCHEMA}; absent: 1). A worker refuses a carry newer than it reads: the run's
   * workflow task fails and waits for a worker of the release that wrote it (a rollback while runs of the newer
   * release live), instead of reading a state it does not know.
   */
  schema?: number;
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
  /**
   * Set when the run handed over inside a turn (its history budget reached at a step boundary): the turn, which the
   * next run goes on with at its next step, and the inputs that were queued, in their order. The Updates among them
   * (and the turn's own `send`) were answered `handedOver` (results.ts `HandedOverResult`); their clients send them
   * again, with the same ids, and the next run answers them when done (workflows/inbox.ts).
   */
  inFlight?: InFlight;
}

/** A turn and the inputs in flight across a hand-over inside the turn ({@link AgentCarry.inFlight}). */
export interface InFlight {
  turn: TurnCarry;
  queued: CarriedInput[];
  /** A close came while the run handed over: the next run closes once the turn and the inputs before it are done. */
  closing?: true;
}

/** Where a turn handed over: what the next run goes on with. */
export interface TurnCarry {
  /** The message that opened the turn (a steer's text for a turn a steer opened). */
  text: string;
  /** The `send` Update that opened it, if one did (its client sends it again). */
  updateId?: string;
  turn: number;
  /** The step the next run makes first. */
  step: number;
  /** What the turn used so far: model calls, tool calls, tokens; when it began (workflow time, ms). */
  steps: number;
  toolCalls: number;
  tokens: number;
  began: number;
  /** The id of the message that opened the turn. */
  messageId: string;
}

/** An input queued when the run handed over: its kind and input, and its Update's id (none for a Signal). */
export interface CarriedInput {
  kind: string;
  input: unknown;
  updateId?: string;
}
