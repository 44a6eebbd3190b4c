/**
 * The compaction policy: when to compact, how far, what is protected, and which strategies run in which order.
 * Typed and validated: a bad value is a {@link PolicyError} naming the field, the value and the allowed range.
 * Named presets (`presets.ts`) are complete policies; an agent picks one and may override any field.
 *
 * @example
 *   const policy = resolvePolicy({ preset: 'default', triggerRatio: 0.75, keepTurns: 3 });
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
 * Prices per million tokens, for the cost-aware decision (Octomind's arithmetic with the provider's prompt cache,
 * see cost.ts).
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
   * only the hard limit fires (AstrBot: no compression during tool invocations). Absent: false.
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
    /** Which unprotected turns are summarized: all of them, or the oldest half (chatgpt-on-wechat). */
    span: 'all' | 'oldest-half';
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

/** Merges overrides into a base policy (nested groups field by field); does not validate. */
export function mergePolicy(base: CompactionPolicy, overrides: PolicyOverrides): CompactionPolicy {
  const merged = { ...base, ...overrides } as CompactionPolicy;
  if (overrides.backgroundRatio === null) delete merged.backgroundRatio;
  if (overrides.cost === null) delete merged.cost;
  if (overrides.loopGuard === null) delete merged.loopGuard;
  else if (overrides.loopGuard !== undefined) {
    merged.loopGuard = { ...(base.loopGuard ?? DEFAULT_LOOP_GUARD), ...overrides.loopGuard };
  }
  if (overrides.review === null) delete merged.review;
  else if (overrides.review !== undefined) {
    // Not an object: kept as given, for validation to refuse.
    merged.review =
      typeof overrides.review === 'object' && !Array.isArray(overrides.review)
        ? { ...(base.review ?? DEFAULT_REVIEW), ...overrides.review }
        : (overrides.review as ReviewPolicy);
  }
  merged.toolResults = { ...base.toolResults, ...overrides.toolResults };
  if (overrides.tools !== undefined) merged.tools = mergeToolLimits(base.tools, overrides.tools);
  const { fromRatio, ...mask } = { ...base.mask, ...overrides.mask };
  merged.mask =
    fromRatio === null ? { minTokens: mask.minTokens } : { ...mask, ...(fromRatio !== undefined ? { fromRatio } : {}) };
  merged.offload = { ...base.offload, ...overrides.offload };
  merged.summary = { ...base.summary, ...overrides.summary };
  merged.truncateRounds = { ...base.truncateRounds, ...overrides.truncateRounds };
  return merged;
}

/** Per-tool limits merged by name, field by field (not an object: kept as given, for validation to refuse). */
function mergeToolLimits(
  base: CompactionPolicy['tools'],
  overrides: NonNullable<PolicyOverrides['tools']>,
): CompactionPolicy['tools'] {
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) {
    return overrides as CompactionPolicy['tools'];
  }
  const merged: Record<string, ToolLimits> = { ...base };
  for (const [name, limits] of Object.entries(overrides)) {
    if (limits === null) delete merged[name];
    else if (typeof limits === 'object' && !Array.isArray(limits)) merged[name] = { ...base?.[name], ...limits };
    else merged[name] = limits;
  }
  return merged;
}

const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

function ratio(field: string, value: unknown, min: number, max: number, exclusiveMin = true): void {
  if (!isNumber(value) || (exclusiveMin ? value <= min : value < min) || value > max) {
    throw new PolicyError(field, value, `a number ${exclusiveMin ? '>' : '≥'} ${min} and ≤ ${max}`);
  }
}

function count(field: string, value: unknown, min: number, max: number): void {
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
    throw new PolicyError(field, value, `an integer from ${min} to ${max}`);
  }
}

function flag(field: string, value: unknown): void {
  if (typeof value !== 'boolean') throw new PolicyError(field, value, 'true or false');
}

function oneOf(field: string, value: unknown, allowed: readonly string[]): void {
  if (!allowed.includes(value as string)) throw new PolicyError(field, value, `one of ${allowed.join(', ')}`);
}

/**
 * The working context holds at most this many messages, whatever the policy (presets without a message limit get
 * this one): each message's record is part of the workflow's state, which the worker caches, continue-as-new carries
 * and the planner takes as input, and the server refuses a payload over 2 MB (ending the workflow). 2,000 records
 * stay under that limit, with full previews and several tool calls each too (a record's size measured for
 * ~400-character messages, and what 2,000 come to: see BENCHMARKS.md, The workflow's state and Figures from earlier
 * sessions).
 */
export const MAX_CONTEXT_MESSAGES = 2_000;

const MAX_TOKENS = 10_000_000;
const MAX_CHARS = 100_000_000;

/** Throws {@link PolicyError} for the first field out of range; returns the policy otherwise. */
export function validatePolicy(policy: CompactionPolicy): CompactionPolicy {
  ratio('triggerRatio', policy.triggerRatio, 0, 0.9);
  ratio('targetRatio', policy.targetRatio, 0, policy.triggerRatio);
  if (policy.targetRatio >= policy.triggerRatio) {
    throw new PolicyError('targetRatio', policy.targetRatio, `below triggerRatio (${policy.triggerRatio})`);
  }
  if (policy.backgroundRatio !== undefined) {
    ratio('backgroundRatio', policy.backgroundRatio, 0, policy.triggerRatio);
    if (policy.backgroundRatio >= policy.triggerRatio) {
      throw new PolicyError('backgroundRatio', policy.backgroundRatio, `below triggerRatio (${policy.triggerRatio})`);
    }
  }
  if (policy.triggerWhen !== undefined) oneOf('triggerWhen', policy.triggerWhen, TRIGGER_COMPARISONS);
  if (policy.countMessages !== undefined) oneOf('countMessages', policy.countMessages, MESSAGE_COUNTINGS);
  if (policy.holdInToolLoop !== undefined) flag('holdInToolLoop', policy.holdInToolLoop);
  if (policy.maxTokens !== undefined) count('maxTokens', policy.maxTokens, 1, MAX_TOKENS);
  if (policy.maxMessages !== undefined) {
    // Counting the working memory, the system prompt and the task ledger come on top of the limit.
    const most = policy.countMessages === 'working-memory' ? MAX_CONTEXT_MESSAGES - 2 : MAX_CONTEXT_MESSAGES;
    count('maxMessages', policy.maxMessages, 2, most);
  }
  if (policy.maxTurns !== undefined) count('maxTurns', policy.maxTurns, 1, 1_000_000);
  if (policy.pressureLevels !== undefined) {
    if (!Array.isArray(policy.pressureLevels) || policy.pressureLevels.length === 0) {
      throw new PolicyError('pressureLevels', policy.pressureLevels, 'a non-empty list of { atTokens, reduction }');
    }
    policy.pressureLevels.forEach((level, i) => {
      count(`pressureLevels[${i}].atTokens`, level?.atTokens, 1, MAX_TOKENS);
      ratio(`pressureLevels[${i}].reduction`, level.reduction, 1, 1_000);
      const previous = policy.pressureLevels![i - 1];
      if (previous && level.atTokens <= previous.atTokens) {
        throw new PolicyError(`pressureLevels[${i}].atTokens`, level.atTokens, `above ${previous.atTokens}`);
      }
    });
  }
  flag('escalate', policy.escalate);
  count('keepSteps', policy.keepSteps, 0, 10_000);
  count('keepTurns', policy.keepTurns, 0, 10_000);
  count('keepMessages', policy.keepMessages, 0, 100_000);
  ratio('reserveRatio', policy.reserveRatio, 0, 0.9, false);
  if (!Array.isArray(policy.cooldown) || policy.cooldown.length > 16) {
    throw new PolicyError('cooldown', policy.cooldown, 'a list of at most 16 growth ratios, e.g. [0.1, 0.2, 0.4, 0.8]');
  }
  policy.cooldown.forEach((growth, i) => ratio(`cooldown[${i}]`, growth, 0, 10));
  if (!Array.isArray(policy.strategies) || policy.strategies.length === 0) {
    throw new PolicyError('strategies', policy.strategies, `a non-empty list of ${STRATEGIES.join(', ')}`);
  }
  policy.strategies.forEach((name, i) => oneOf(`strategies[${i}]`, name, STRATEGIES));
  if (new Set(policy.strategies).size !== policy.strategies.length) {
    throw new PolicyError('strategies', policy.strategies, 'each strategy at most once');
  }
  flag('oneStrategyPerCheck', policy.oneStrategyPerCheck);
  const tool = policy.toolResults;
  count('toolResults.maxTokens', tool?.maxTokens, 16, MAX_TOKENS);
  count('toolResults.maxChars', tool.maxChars, 64, MAX_CHARS);
  count('toolResults.headChars', tool.headChars, 0, MAX_CHARS);
  count('toolResults.tailChars', tool.tailChars, 0, MAX_CHARS);
  if (tool.headChars + tool.tailChars >= tool.maxChars) {
    throw new PolicyError(
      'toolResults.headChars',
      tool.headChars,
      `headChars + tailChars below maxChars (${tool.maxChars})`,
    );
  }
  if (typeof tool.marker !== 'string' || tool.marker.length > 500) {
    throw new PolicyError('toolResults.marker', tool.marker, 'a string of at most 500 characters');
  }
  flag('toolResults.olderTurnsOnly', tool.olderTurnsOnly);
  count('mask.minTokens', policy.mask?.minTokens, 0, MAX_TOKENS);
  if (policy.mask.fromRatio !== undefined || policy.mask.atLeastRatio !== undefined) {
    ratio('mask.fromRatio', policy.mask.fromRatio, 0, 1); // at or above the trigger it never runs alone
    ratio('mask.atLeastRatio', policy.mask.atLeastRatio, 0, 1);
  }
  count('offload.minChars', policy.offload?.minChars, 64, MAX_CHARS);
  count('offload.previewChars', policy.offload.previewChars, 0, 100_000);
  if (policy.offload.previewChars >= policy.offload.minChars) {
    throw new PolicyError(
      'offload.previewChars',
      policy.offload.previewChars,
      `below offload.minChars (${policy.offload.minChars})`,
    );
  }
  flag('offload.includeProtected', policy.offload.includeProtected);
  if (policy.offload.beforeLatestAnswer !== undefined) {
    flag('offload.beforeLatestAnswer', policy.offload.beforeLatestAnswer);
  }
  if (policy.toolRunMessages !== undefined) count('toolRunMessages', policy.toolRunMessages, 1, 10_000);
  count('summary.maxTokens', policy.summary?.maxTokens, 64, 100_000);
  oneOf('summary.placement', policy.summary.placement, ['message', 'first-kept-user']);
  oneOf('summary.span', policy.summary.span, ['all', 'oldest-half']);
  count('summary.keepUserTokens', policy.summary.keepUserTokens, 0, MAX_TOKENS);
  oneOf('summary.fallback', policy.summary.fallback, ['truncate-rounds', 'halve']);
  oneOf('summary.withoutModel', policy.summary.withoutModel, ['extractive', 'fallback']);
  if (policy.summary.request !== undefined) {
    oneOf('summary.request', policy.summary.request, ['conversation', 'transcript']);
  }
  count('truncateRounds.perStep', policy.truncateRounds?.perStep, 1, 10_000);
  if (policy.truncateRounds.until !== undefined) {
    oneOf('truncateRounds.until', policy.truncateRounds.until, ['target', 'trigger']);
  }
  ratio('hardLimitRatio', policy.hardLimitRatio, policy.triggerRatio, 1, false);
  if (policy.tools !== undefined) validateToolLimitsByName(policy.tools);
  if (policy.pinRatio !== undefined) ratio('pinRatio', policy.pinRatio, 0, 0.5, false);
  if (policy.budgetNote !== undefined) flag('budgetNote', policy.budgetNote);
  if (policy.loopGuard !== undefined) validateLoopGuard(policy.loopGuard);
  if (policy.review !== undefined) validateReview(policy.review);
  if (policy.cost !== undefined) {
    const cost = policy.cost;
    const known = [
      'inputPerMillion',
      'cachedInputPerMillion',
      'summaryOutputPerMillion',
      'summaryInputPerMillion',
      'expectedRemainingTurns',
      'remainingTurnsUntilPace',
    ];
    const unknown = Object.keys(cost).find((key) => !known.includes(key));
    if (unknown) {
      throw new PolicyError(
        `cost.${unknown}`,
        cost[unknown as keyof CostModel],
        `not a cost field (${known.join(', ')})`,
      );
    }
    ratio('cost.inputPerMillion', cost.inputPerMillion, 0, 10_000, false);
    ratio('cost.summaryOutputPerMillion', cost.summaryOutputPerMillion, 0, 10_000, false);
    if (cost.cachedInputPerMillion !== undefined) {
      ratio('cost.cachedInputPerMillion', cost.cachedInputPerMillion, 0, cost.inputPerMillion, false);
    }
    if (cost.summaryInputPerMillion !== undefined) {
      ratio('cost.summaryInputPerMillion', cost.summaryInputPerMillion, 0, 10_000, false);
    }
    if (cost.expectedRemainingTurns !== undefined) {
      count('cost.expectedRemainingTurns', cost.expectedRemainingTurns, 0, 1_000_000);
    }
    if (cost.remainingTurnsUntilPace !== undefined) {
      count('cost.remainingTurnsUntilPace', cost.remainingTurnsUntilPace, 1, 1_000_000);
    }
  }
  return policy;
}

/**
 * An optional group of the policy (`field`): an object of the `known` fields only (`what`: "a loop guard field"), or a
 * {@link PolicyError} naming the group or the unknown field.
 */
function group(field: string, value: object, known: readonly string[], what: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new PolicyError(field, value, `an object {${known.join(', ')}}, or null (off)`);
  }
  const unknown = Object.keys(value).find((key) => !known.includes(key));
  if (unknown) {
    throw new PolicyError(
      `${field}.${unknown}`,
      (value as Record<string, unknown>)[unknown],
      `not ${what} (${known.join(', ')})`,
    );
  }
}

function validateLoopGuard(guard: LoopGuard): void {
  group('loopGuard', guard, ['minSavingRatio', 'offloadAfter', 'pauseAfter'], 'a loop guard field');
  ratio('loopGuard.minSavingRatio', guard.minSavingRatio, 0, 0.9);
  count('loopGuard.offloadAfter', guard.offloadAfter, 1, 100);
  count('loopGuard.pauseAfter', guard.pauseAfter, guard.offloadAfter + 1, 101);
}

function validateReview(review: ReviewPolicy): void {
  group('review', review, ['automatic', 'timeoutSeconds', 'onTimeout'], 'a review field');
  flag('review.automatic', review.automatic);
  count('review.timeoutSeconds', review.timeoutSeconds, 1, MAX_REVIEW_SECONDS);
  oneOf('review.onTimeout', review.onTimeout, ['apply', 'discard']);
}

function validateToolLimitsByName(tools: Record<string, ToolLimits>): void {
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) {
    throw new PolicyError('tools', tools, 'an object of per-tool limits by tool name');
  }
  for (const [name, limits] of Object.entries(tools)) {
    if (!TOOL_NAME_PATTERN.test(name)) {
      throw new PolicyError(`tools.${name}`, limits, 'a tool name of 1 to 64 letters, digits, underscores or hyphens');
    }
    validateToolLimits(
      limits,
      (field, value, allowed) => new PolicyError(`tools.${name}${field ? `.${field}` : ''}`, value, allowed),
    );
  }
}

/**
 * Checks one tool's limits (in a policy's `tools`, or a tool's definition); the first field out of range becomes
 * `error(field, value, allowed)` (`field` empty: the limits are not an object).
 */
export function validateToolLimits(
  limits: ToolLimits,
  error: (field: string, value: unknown, allowed: string) => Error,
): void {
  if (limits === null || typeof limits !== 'object' || Array.isArray(limits)) {
    throw error('', limits, `an object {${TOOL_LIMIT_FIELDS.join(', ')}}`);
  }
  const unknown = Object.keys(limits).find((key) => !(TOOL_LIMIT_FIELDS as readonly string[]).includes(key));
  if (unknown) {
    const value = (limits as Record<string, unknown>)[unknown];
    throw error(unknown, value, `not a tool limit (${TOOL_LIMIT_FIELDS.join(', ')})`);
  }
  const { maxResultTokens, preview, neverMask } = limits;
  const integer = (value: unknown, min: number, max: number) =>
    Number.isInteger(value) && (value as number) >= min && (value as number) <= max;
  if (maxResultTokens !== undefined && !integer(maxResultTokens, MIN_RESULT_TOKENS, MAX_TOKENS)) {
    throw error('maxResultTokens', maxResultTokens, `an integer from ${MIN_RESULT_TOKENS} to ${MAX_TOKENS}`);
  }
  if (preview !== undefined && !integer(preview, 0, maxResultTokens ?? MAX_TOKENS)) {
    const upTo = maxResultTokens !== undefined ? `maxResultTokens (${maxResultTokens})` : String(MAX_TOKENS);
    throw error('preview', preview, `an integer from 0 to ${upTo}`);
  }
  if (neverMask !== undefined && typeof neverMask !== 'boolean') throw error('neverMask', neverMask, 'true or false');
}
