/**
 * The compaction policy's shape: when to compact, how far, what is protected, and which strategies run in which order;
 * its defaults and bounds, and the partial form overrides take. What checks a policy is policy-validation.ts (a bad
 * value is a {@link PolicyError} naming the field, the value and the allowed range); what lays overrides over a base
 * policy, policy-merge.ts. Named presets (`presets.ts`) are complete policies; an agent picks one and may override any
 * field, and `resolvePolicy` there does both.
 *
 * @example
 *   const policy = resolvePolicy({ preset: 'default', triggerRatio: 0.75, keepTurns: 3 }); // presets.ts
 */

/** The compaction strategies, cheapest first (the default order). */
export const STRATEGIES = [
  'supersede-tool-results',
  'truncate-tool-results',
  'mask-tool-results',
  'compress-tool-runs',
  'offload-large',
  'summarize',
  'summarize-rounds',
  'summarize-current-turn',
  'compact-turns',
  'trim-turns',
  'truncate-rounds',
  'halve',
] as const;

export type StrategyName = (typeof STRATEGIES)[number];

/** How a token threshold compares: `reaches` is `≥`, `exceeds` is `>`. */
export type TriggerComparison = 'reaches' | 'exceeds';
export const TRIGGER_COMPARISONS: readonly TriggerComparison[] = ['reaches', 'exceeds'];

/** Which messages a message limit counts (policy `countMessages`). */
export type MessageCounting = 'all' | 'working-memory';
export const MESSAGE_COUNTINGS: readonly MessageCounting[] = ['all', 'working-memory'];

/** An Octomind-style pressure level: from `atTokens` on, compact to `tokens / reduction`. */
export interface PressureLevel {
  atTokens: number;
  reduction: number;
}

/**
 * The loop guard: a compaction that saves less than `minSavingRatio` of the context's tokens is ineffective; after
 * `offloadAfter` ineffective automatic compactions in a row the next one offloads the largest items instead of the
 * policy's strategies, and after `pauseAfter` automatic compaction pauses until the context has grown by the
 * cooldown's first step (at least 5%). docs/compaction.md, Loop guard.
 */
export interface LoopGuard {
  minSavingRatio: number;
  offloadAfter: number;
  pauseAfter: number;
}

/** The loop guard of every preset: 10% of the context, offload the largest after 2, pause after 3. */
export const DEFAULT_LOOP_GUARD: LoopGuard = { minSavingRatio: 0.1, offloadAfter: 2, pauseAfter: 3 };

/**
 * Review of automatic compactions (docs/compaction.md, Review and edit): with `automatic`, a compaction the trigger,
 * the soft threshold, the masking pass or a tool-result cut starts is prepared as a draft, as `compact` with
 * `review: true` makes one, and waits up to `timeoutSeconds` for `approve` or `discard`; then `onTimeout` says what
 * becomes of it: `apply` it as made, or `discard` it. A discarded draft pauses automatic compaction until the context
 * has grown by the cooldown's first step (at least 5%).
 */
export interface ReviewPolicy {
  automatic: boolean;
  timeoutSeconds: number;
  onTimeout: 'apply' | 'discard';
}

/** What a partial `review` override fills in: off, 10 minutes, then applied. No preset has a `review`. */
export const DEFAULT_REVIEW: ReviewPolicy = { automatic: false, timeoutSeconds: 600, onTimeout: 'apply' };

/** The longest a draft may wait for review: 30 days (a turn's longest time budget too). */
export const MAX_REVIEW_SECONDS = 2_592_000;

/**
 * Prices in USD per million tokens (as the model registry's), for the cost-aware decision (Octomind's arithmetic with the provider's prompt cache,
 * see compaction-value.ts).
 */
export interface CostModel {
  /** Price per million input tokens of the agent's model. */
  inputPerMillion: number;
  /**
   * Price per million input tokens read from the provider's prompt cache (a request's prefix equal to an earlier
   * request's). Default {@link DEFAULT_CACHED_INPUT_SHARE} × `inputPerMillion`; equal to it prices every call as if
   * nothing were cached (Octomind's document).
   */
  cachedInputPerMillion?: number;
  /** Price per million output tokens of the summary model. */
  summaryOutputPerMillion: number;
  /** Price per million input tokens of the summary model (default: the agent's input price). */
  summaryInputPerMillion?: number;
  /**
   * Model calls the agent is expected to make after this compaction. Unset: estimated from the session's pace
   * (the calls it took to fill the context since the last compaction, which the compacted one serves again).
   */
  expectedRemainingTurns?: number;
  /**
   * Model calls priced while the session's pace is not known yet (no model call counted since the last compaction,
   * or none given): the policy's estimate of the calls left, e.g. Octomind's document prices 10. Unset: 1 call.
   * `expectedRemainingTurns` and a known pace take precedence.
   */
  remainingTurnsUntilPace?: number;
}

/** A run of more than this many consecutive tool messages is compressed by `compress-tool-runs` (AgentScope Java). */
export const DEFAULT_TOOL_RUN_MESSAGES = 6;

/** What cached input costs by default, as a share of the input price (OpenAI's cached input of most models). */
export const DEFAULT_CACHED_INPUT_SHARE = 0.1;

/**
 * Limits of one tool's results (policy `tools`, by tool name; a tool's definition may set them too, `defineTool`, and
 * the policy's win). docs/compaction.md, Per-tool limits.
 */
export interface ToolLimits {
  /**
   * A result over this many tokens is cut as it arrives, before it is first sent: its head and tail kept around a
   * notice that names the stored original (reloadable with `context_reload`). No cached prefix is rewritten.
   */
  maxResultTokens?: number;
  /**
   * Tokens of a result that stay when it is cut (at entry, or by `truncate-tool-results`) or masked (the stub keeps
   * this much of its head). Default: a cut keeps `maxResultTokens`; a mask keeps none.
   */
  preview?: number;
  /** This tool's results are never masked or superseded (what it returns stays readable, e.g. a plan or a spec). */
  neverMask?: boolean;
}

/** The fields of {@link ToolLimits}, as validation names them. */
export const TOOL_LIMIT_FIELDS = ['maxResultTokens', 'preview', 'neverMask'] as const;

/** The least `maxResultTokens` (and `preview`) may be: a cut keeps head, tail and the notice. */
export const MIN_RESULT_TOKENS = 16;

/** A tool's name as the Chat Completions API takes it. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

export interface CompactionPolicy {
  /** The preset this policy came from. */
  preset: string;
  /** Compact when tokens (system prompt, tool schemas, summary, context) reach this share of the window. */
  triggerRatio: number;
  /**
   * How the token trigger (`triggerRatio` × window, and `maxTokens`) compares: `reaches` fires at the threshold
   * (`≥`), `exceeds` only above it (`>`, chatgpt-on-wechat's budget, AgentScope's `trigger_ratio × context_size`). A
   * ratio's threshold is never rounded down before the comparison: 820 tokens have not reached 82% of 1,001. Absent
   * (policies stored before): `reaches`.
   */
  triggerWhen?: TriggerComparison;
  /** Compact down to this share of the window. */
  targetRatio: number;
  /**
   * The soft threshold: from this share of the window on (below `triggerRatio`), a compaction is prepared in the
   * background while the agent keeps working, and committed at the next step boundary; the summary replaces exactly
   * the span it covered, and what the agent added meanwhile stays after it. Absent: compaction only blocks.
   */
  backgroundRatio?: number;
  /** Also compact when the context tokens exceed this many (chatgpt-on-wechat's 50,000 budget). */
  maxTokens?: number;
  /** Also compact when the context holds more messages than this (at most, and by default, MAX_CONTEXT_MESSAGES). */
  maxMessages?: number;
  /**
   * Which messages `maxMessages` counts: `all` of the context's, or those of the conversation's `working-memory`,
   * without the system prompt and longrun's task ledger (AgentScope Java's `msgThreshold`). Absent: `all`.
   */
  countMessages?: MessageCounting;
  /**
   * Inside a tool loop (the context ends with tool results the model has yet to read), the token trigger holds and
   * only the hard limit fires (AstrBot: no compaction during tool invocations). Absent: false.
   */
  holdInToolLoop?: boolean;
  /** Also compact when the context holds more turns than this. */
  maxTurns?: number;
  /** Pressure levels (ascending): the trigger is the lowest, the target the reduction of the level reached. */
  pressureLevels?: PressureLevel[];
  /** Escalate the pressure level with each consecutive compaction (round-robin through the levels). */
  escalate: boolean;
  /**
   * The newest N steps are protected from everything but truncation and offloading. A step is a user message, an
   * assistant message with all its tool calls' results, or a final answer; the newest step (results the model has not
   * seen yet) is always protected, whatever N.
   */
  keepSteps: number;
  /**
   * The user's messages and the final answers of the last N turns are protected likewise: a chat keeps its last
   * exchanges verbatim, while the tool steps inside them stay compactable.
   */
  keepTurns: number;
  /** The last N messages are protected likewise (whichever protects more wins), widened to whole steps. */
  keepMessages: number;
  /** The newest messages within this share of the window are protected likewise (0: off). */
  reserveRatio: number;
  /** Required growth between consecutive compactions without a user message (e.g. 0.1, 0.2, 0.4, 0.8); [] = off. */
  cooldown: number[];
  /** Strategies to run, in order, stopping once under the target. */
  strategies: StrategyName[];
  /** At most one strategy is applied per check (AgentScope Java). */
  oneStrategyPerCheck: boolean;
  /**
   * When a message or turn limit fired, `halve` follows the strategies to the count's target, whatever the tokens.
   * `false`: an automatic compaction halves only at or over the token trigger; the count alone starts the strategies
   * and, when none applies, nothing is done (AgentScope Java's msgThreshold). Absent: true.
   */
  halveOnCountLimit?: boolean;
  /**
   * `compress-tool-runs` (AgentScope Java's `minConsecutiveToolMessages`): a run of more than this many consecutive
   * tool messages (calls and results) is compressed into one assistant message. Default
   * {@link DEFAULT_TOOL_RUN_MESSAGES}.
   */
  toolRunMessages?: number;
  toolResults: {
    /** A tool result over this many tokens is cut to head and tail. */
    maxTokens: number;
    /** …or over this many characters. */
    maxChars: number;
    headChars: number;
    tailChars: number;
    /** Marker between head and tail; `{ref}` becomes the storage key of the full result, `{omitted}` the count. */
    marker: string;
    /**
     * Only the results of earlier turns are cut, not those of the turn in progress (chatgpt-on-wechat, before every
     * decision loop, whether or not a limit is exceeded); otherwise any result over the limit is, the newest step's
     * included, right after its call (AgentScope).
     */
    olderTurnsOnly: boolean;
  };
  mask: {
    /** Tool results under this many tokens are not worth masking. */
    minTokens: number;
    /**
     * From this share of the window on, below the trigger, the tool results older than the protected steps are
     * masked (reloadable stubs that keep their error lines and paths), with no summary and no other strategy, as
     * Anthropic's context editing clears old tool uses. Absent: masking only as part of a compaction.
     */
    fromRatio?: number;
    /**
     * Such a pass runs only when it saves at least this share of the window: each pass changes the context in the
     * middle, which costs the provider's prompt cache from there on once. Set with `fromRatio`.
     */
    atLeastRatio?: number;
  };
  offload: {
    /** Messages over this many characters are offloaded to a preview. */
    minChars: number;
    previewChars: number;
    /** After the unprotected messages, also offload protected ones (never the current round). */
    includeProtected: boolean;
    /**
     * Only messages before the latest final answer of the assistant, never it or anything after it (AgentScope Java's
     * strategies 2 and 3); without a final answer, none once past the protected ones.
     */
    beforeLatestAnswer?: boolean;
  };
  summary: {
    /** Upper bound of the summary's tokens, used to plan (and asked of the summarizer). */
    maxTokens: number;
    /** Where the summary goes: its own message after the system prompt, or prepended to the first kept user message. */
    placement: 'message' | 'first-kept-user';
    /**
     * Which unprotected turns are summarized: all of them, the oldest half (chatgpt-on-wechat), or only the rounds
     * before the last `keepTurns` and the one in progress, which stay whole (AstrBot: when every complete round is
     * among those it keeps there is nothing to summarize, and halving follows).
     */
    span: 'all' | 'oldest-half' | 'older-rounds';
    /** The user's own messages kept verbatim beside the summary, newest first, up to this many tokens. */
    keepUserTokens: number;
    /** What runs instead of `summarize` when the summary model failed, or when there is none and `withoutModel` says so. */
    fallback: 'truncate-rounds' | 'halve';
    /**
     * Without a summary model: `extractive` summarizes with the extractive summarizer (quotes, no new sentences);
     * `fallback` runs the fallback (AstrBot: truncate by rounds when there is no compaction model). Whatever removes
     * content leaves a summary of what it removed either way (the extractive one without a model).
     */
    withoutModel: 'extractive' | 'fallback';
    /**
     * How the summary model is asked, when it is the agent's own model: `conversation` repeats the agent's own request
     * up to the end of the span (the same tool schemas, system prompt, pinned block and messages, so the provider
     * serves that prefix from its prompt cache) and adds one instruction; `transcript` sends the summarizer's own
     * system prompt and the span as a transcript, with structured output. A summary model other than the agent's, a
     * prefix that would not fit the window, or a span in chunks is asked as `transcript` whatever this says. Absent
     * (policies stored before it): `transcript`.
     */
    request?: 'conversation' | 'transcript';
  };
  truncateRounds: {
    /** Turns dropped per step, oldest first. */
    perStep: number;
    /**
     * `trigger`: an automatic compaction that drops rounds (no summary model) stops once the context is below the
     * trigger (AstrBot: "until the context meets the requirement", 82%), instead of at the target. Absent: `target`.
     */
    until?: 'target' | 'trigger';
  };
  /** Per-tool limits by tool name ({@link ToolLimits}). Absent: none (and in policies stored before). */
  tools?: Record<string, ToolLimits>;
  /**
   * The cost-aware decision: an automatic compaction (the trigger, the soft threshold, the masking pass, a tool-result
   * cut) is skipped when what it saves over the calls it expects costs less than the cached prefix it throws away and
   * its summary call; until the hard limit or the message bound. Absent: off.
   */
  cost?: CostModel;
  /** Above this share of the window, compact whatever the cost and cooldown say. */
  hardLimitRatio: number;
  /** The loop guard (every preset has {@link DEFAULT_LOOP_GUARD}). Absent: off (and in policies stored before). */
  loopGuard?: LoopGuard;
  /** Automatic compactions wait for review ({@link ReviewPolicy}). Absent (every preset): they apply at once. */
  review?: ReviewPolicy;
  /** The pin budget: pins (contract/pins.ts) may count at most this share of the window. Absent: 0.1. */
  pinRatio?: number;
  /**
   * A short note at the end of every request to the model: tokens used of the window, steps and tokens left in the
   * turn's budget, what was compacted since the last note. Appended to the request only, never stored, so the prompt
   * cache keeps the whole request before it. On in the default preset; absent: off.
   */
  budgetNote?: boolean;
}

/** Thrown for a policy value out of range; names the field, the value and the allowed range. */
export class PolicyError extends Error {
  readonly field: string;
  constructor(field: string, value: unknown, allowed: string) {
    super(`${field}: ${JSON.stringify(value)} is not allowed (${allowed})`);
    this.name = 'PolicyError';
    this.field = field;
  }
}

/** Partial policy for overrides: nested groups may be given in part. */
export type PolicyOverrides = Partial<
  Omit<
    CompactionPolicy,
    'toolResults' | 'mask' | 'offload' | 'summary' | 'backgroundRatio' | 'loopGuard' | 'review' | 'tools' | 'cost'
  >
> & {
  /** `null` turns the cost-aware decision off. */
  cost?: CostModel | null;
  /** `null` turns review of automatic compactions off; fields given in part take {@link DEFAULT_REVIEW}'s. */
  review?: Partial<ReviewPolicy> | null;
  /** `null` turns background compaction off. */
  backgroundRatio?: number | null;
  /** `null` turns the loop guard off; fields given in part keep the others. */
  loopGuard?: Partial<LoopGuard> | null;
  toolResults?: Partial<CompactionPolicy['toolResults']>;
  /** Per-tool limits, merged by tool name field by field; a tool given `null` drops its limits. */
  tools?: Record<string, ToolLimits | null>;
  /** `fromRatio: null` turns the masking pass below the trigger off. */
  mask?: Partial<Omit<CompactionPolicy['mask'], 'fromRatio'>> & { fromRatio?: number | null };
  offload?: Partial<CompactionPolicy['offload']>;
  summary?: Partial<CompactionPolicy['summary']>;
  truncateRounds?: Partial<CompactionPolicy['truncateRounds']>;
};

/**
 * The working context holds at most this many messages, whatever the policy (presets without a message limit get
 * this one): each message's record is part of the workflow's state, which the worker caches, continue-as-new carries
 * and the planner takes as input, and the server refuses a payload over 2 MB (ending the workflow). 2,000 records
 * stay under that limit, with full previews and several tool calls each too (a record's size measured for
 * ~400-character messages, and what 2,000 come to: see BENCHMARKS.md, The workflow's state and Figures from earlier
 * sessions).
 */
export const MAX_CONTEXT_MESSAGES = 2_000;

/**
 * Messages over which a count limit that fired halves whatever the policy says (`halveOnCountLimit`): the state's
 * bound, less the system prompt and the task ledger a working-memory count leaves out.
 */
export const COUNT_HALVES_OVER = MAX_CONTEXT_MESSAGES - 2;
