/** The plan's shape: what the planner is given (`PlanInput`) and what it returns (`Plan`, its steps and operations). */
import type { CostEstimate } from '../compaction-value.ts';
import type { ChatRole, MessageKind, MessageMeta } from '../messages.ts';
import type { CompactionPolicy, StrategyName } from '../policy.ts';
import type { ContextStats, CooldownState, Trigger } from '../trigger.ts';
import type { Target } from '../target.ts';

export interface PlanInput {
  context: readonly MessageMeta[];
  policy: CompactionPolicy;
  window: number;
  /** Tokens every request spends besides its messages (tool schemas, reply primer). */
  fixedTokens: number;
  trigger: Trigger;
  cooldown: CooldownState;
  /** Overflow: how many times the request was over the window in a row (1 = first). */
  attempt?: number;
  /** Id of the user's first message (the goal): protected. */
  goalId?: string;
  /**
   * Messages pinned (contract/pins.ts): `fixed`, with the rest of their step (a tool call and its results stay
   * together), and never cut by the emergency steps. Absent: none.
   */
  pinnedIds?: readonly string[];
  /**
   * Who can summarize: the summary model (`available`), none configured (`none`: the extractive summarizer, or the
   * policy's fallback), or the model failed its retries (`failed`: the fallback, summarized extractively).
   */
  summarizer: 'available' | 'none' | 'failed';
  /** A forced compaction may name the strategies to use instead of the policy's. */
  strategies?: readonly StrategyName[];
  /** Model calls since the last compaction (or the agent's start): the pace the cost decision prices. */
  callsSinceCompaction?: number;
  /**
   * A forced compaction whose plan expects no gain is made anyway (default false: it is a skip that says "nothing to
   * gain"). An automatic one that would not shrink the context is never made.
   */
  evenIfLarger?: boolean;
  /**
   * The summary message and the task ledger as they will be written for this plan's span, counted by the plan
   * activity from the span's bodies (a second pass over the same input): they replace the planner's estimates in the
   * plan's `after` and in its decisions. Absent: the estimates stand.
   */
  written?: WrittenSizes;
  /**
   * `false`: the plan's steps and summary only, without its last word (the skips of a compaction that would not shrink
   * the context or is not worth it): the plan activity's first pass, whose summary it then counts as written.
   */
  lastWord?: boolean;
}

/** The summary message and the ledger as the summarize step will write them (see {@link PlanInput.written}). */
export interface WrittenSizes {
  /**
   * Tokens the summary message adds, frame included (prepended to a user message: beyond that message's own).
   * Absent when only its frame is known (a model writes the body): the frame plus the planner's estimate of the body.
   */
  summaryTokens?: number;
  /** Tokens of the summary message's frame: its title, headings, where the loop stands, the removed-ids line. */
  frameTokens: number;
  /** Tokens of the task ledger's message after this compaction (it replaces the context's ledger in place). */
  ledgerTokens: number;
}

/** The kind of message a replacing operation leaves in the context. */
export const REPLACED_KIND = { truncate: 'truncated', mask: 'masked', offload: 'offloaded' } as const satisfies Record<
  string,
  MessageKind
>;

/** What happens to one message of the context. */
export type Operation =
  | { op: 'keep'; id: string }
  | { op: 'drop'; id: string }
  | {
      op: 'truncate';
      id: string;
      /** The planner's estimate of the cut in characters (head share = headChars / (headChars + tailChars)). */
      headChars: number;
      tailChars: number;
      tokens: number;
      /**
       * The replacement message may count at most this many tokens (chat overhead and margin included): the apply
       * step finds the cut by counting, so the result lands at or just under it. Absent in plans stored before.
       */
      maxTokens?: number;
    }
  | {
      op: 'mask';
      id: string;
      tokens: number;
      /**
       * Superseded (`supersede-tool-results`): the newer result of the same tool with the same arguments, which the
       * marker names instead of a stub.
       */
      supersededBy?: string;
      /** Tokens of the result's head the stub keeps (the tool's `preview`). */
      previewTokens?: number;
    }
  | { op: 'offload'; id: string; previewChars: number; tokens: number };

/** What a summary covers, for its header: the message ids, and the steps of the turn in progress. */
export interface SummaryCoverage {
  firstId: string;
  lastId: string;
  /** Messages of the context it stands for (a previous summary counts as one). */
  messages: number;
  /** Set when the span reaches into the turn in progress: the summary then covers its steps 1 to `steps`. */
  currentTurn?: { turnId: string; steps: number };
}

/**
 * A summary of one span in its place (AgentScope Java's strategies 1, 4 and 6): `tool-run`, a run of consecutive tool
 * calls and results; `round`, a round's tools and final answer, its user message kept verbatim before it;
 * `current-round`, the steps of the round in progress after its request, down to its newest step. Written as an
 * assistant message where the span was; earlier summaries stay where they are, and no task ledger is added.
 */
export type SummaryForm = 'tool-run' | 'round' | 'current-round';

/** One summary in its place ({@link SummaryForm}): its span, the request it reads beside it, where it goes. */
export interface SummaryPart {
  /** What it stands for (absent in a plan stored before parts had their own: the spec's `form`). */
  form?: SummaryForm;
  spanIds: string[];
  keptUserIds: string[];
  /** Insert it before this id (undefined: at the end). */
  beforeId?: string;
  coverage: SummaryCoverage;
  estimatedTokens: number;
}

/** The summary the plan asks for: the span (bodies the summarizer reads) and where the result goes. */
export interface SummarySpec {
  /**
   * Set for summaries of spans in their places ({@link SummaryForm}), one message each (`parts`); the fields below
   * then stand for all of them together (the span, the coverage) and the first (the placement and the form: each
   * part has its own). Absent: the one summary of the context.
   */
  form?: SummaryForm;
  parts?: SummaryPart[];
  /** Messages the summarizer reads, in order (a previous summary among them is carried forward). */
  spanIds: string[];
  /** The user's own messages of the span kept verbatim beside the summary. */
  keptUserIds: string[];
  /** Insert the summary message before this id (undefined: at the end), or prepend it to that user message. */
  placement: { mode: 'message'; beforeId?: string } | { mode: 'prepend'; id: string };
  estimatedTokens: number;
  /** The summary message may count at most this many tokens, frame and pinned facts included. */
  maxTokens: number;
  /** Who writes it: the summary model, or the extractive summarizer (none configured, or it failed). */
  writer: 'model' | 'extractive';
  coverage: SummaryCoverage;
  /** What runs instead when the summarizer fails. */
  fallback: StrategyName;
  /** Set when the summary brings the first task ledger: the tokens it is planned at (counted in the plan's after). */
  ledgerTokens?: number;
}

/**
 * A step of the plan: a policy strategy, one of the two emergency steps that make a request fit the window, or the
 * loop guard's offloading of the largest items (after ineffective compactions in a row, policy `loopGuard`).
 */
export type PlanStepName = StrategyName | 'fit-window' | 'truncate-oversized' | 'offload-largest';

export interface PlanStep {
  strategy: PlanStepName;
  /** Messages this step changed or removed. */
  ids: string[];
  tokensSaved: number;
  note?: string;
  summary?: SummarySpec;
}

/** A message that left the working context (dropped, summarized or replaced); its original stays in storage. */
export interface RemovedItem {
  id: string;
  role: ChatRole;
  tokens: number;
  /** Storage key of the original body. */
  key: string;
  by: PlanStepName;
  /** What took its place: a replacement, or the summary that covers it. */
  replacedBy?: MessageKind;
}

export interface Plan {
  trigger: Trigger;
  action: 'compact' | 'skip';
  /**
   * Set on a skip because the compaction would not shrink the context (an automatic one, or a forced one without
   * `evenIfLarger`): the tokens before and the tokens expected after.
   */
  noGain?: { tokensBefore: number; tokensAfter: number };
  /** Why it compacts (what fired) or why it skips. */
  reason: string;
  target: Target;
  before: ContextStats;
  /** Expected after the plan (the summary at its estimated size). */
  after: ContextStats;
  reachedTarget: boolean;
  /** When the target is out of reach: why, and what the plan did instead. */
  shortfall?: string;
  /**
   * The masking pass below the trigger (policy `mask.fromRatio`): it takes no step of the cooldown, and its skip
   * holds back only itself.
   */
  maskPass?: true;
  /** A cut of the tool results over the policy's limit, under no pressure: the loop guard neither counts it nor resets. */
  toolResultCut?: true;
  steps: PlanStep[];
  /** One operation per message of the context, in order. */
  operations: Operation[];
  summary?: SummarySpec;
  removed: RemovedItem[];
  cost?: CostEstimate;
}
