/**
 * When to compact, as the workflow decides it: the triggers, the cooldown's state and its step after a compaction,
 * and the gate the workflow checks before every model call, a handful of numbers compared in O(1) whatever the size
 * of the context (`compactionDue`, the one decision; the model-call activity and the planner make it too).
 *
 * Workflow code runs this module (it is replayed: a change here is a change to workflow code). What only activities
 * compute lives beside it: the gates they set (`gates.ts`), the loop guard's verdict (`loop-guard.ts`) and the
 * target (`target.ts`).
 */
import { MAX_CONTEXT_MESSAGES } from './policy.ts';
import type { CompactionPolicy } from './policy.ts';

/**
 * Why a compaction runs: the budget check, the soft threshold (`background`: prepared while the agent works,
 * committed at the next step boundary), a user's request, or the provider reporting an overflow.
 */
export type Trigger = 'auto' | 'background' | 'forced' | 'overflow';

/** Whether a trigger is one of the automatic ones (they take a step of the cooldown). */
export function isAutomatic(trigger: Trigger): boolean {
  return trigger === 'auto' || trigger === 'background';
}

/** What the workflow knows about its context without looking at messages. */
export interface ContextStats {
  /** Tokens of the whole request: messages, tool schemas, reply primer. */
  tokens: number;
  /** The context's messages; those the gate counts where a gate compares them ({@link countedMessages}). */
  messages: number;
  turns: number;
}

/**
 * Consecutive compactions without a user message in between, and the tokens the last one left; and the loop guard's
 * count of ineffective automatic compactions in a row (a user message does not reset it), with the pause it set.
 */
export interface CooldownState {
  consecutive: number;
  lastTokensAfter: number;
  /** The tokens the last masking pass below the trigger left, when it came after the last compaction. */
  maskedTokensAfter?: number;
  /** Ineffective automatic compactions in a row (policy `loopGuard`). Absent: none (and in states of before). */
  ineffective?: number;
  /** Automatic compaction is paused (loop guard) until the context reaches this many tokens. */
  pausedUntil?: number;
  /**
   * Why, when not the loop guard: a draft of an automatic compaction was discarded (policy `review`), e.g.
   * `draft-2 discarded`. Absent: the loop guard's pause.
   */
  pausedFor?: string;
}

/**
 * The cooldown after a compaction that left `tokensAfter`: a forced or overflow compaction resets it, an automatic
 * one takes its next step, a masking pass below the trigger takes none and only moves its own floor. The loop guard's
 * count and pause are the compaction's verdict (`guard`, `judgeCompaction` in loop-guard.ts); without one (a policy
 * without the guard, an event recorded before it) they start over.
 */
export function cooldownAfter(
  before: CooldownState,
  compaction: { trigger: Trigger; maskPass?: boolean; tokensAfter: number; guard?: LoopGuardVerdict },
): CooldownState {
  if (compaction.maskPass) return { ...before, maskedTokensAfter: compaction.tokensAfter };
  const consecutive = isAutomatic(compaction.trigger) ? before.consecutive + 1 : 0;
  const guard = compaction.guard;
  return {
    consecutive,
    lastTokensAfter: compaction.tokensAfter,
    ...(guard && guard.inARow > 0 ? { ineffective: guard.inARow } : {}),
    ...(guard?.pausedUntil !== undefined ? { pausedUntil: guard.pausedUntil } : {}),
    // A pause held on (not this compaction's own) keeps its reason.
    ...(guard?.pausedUntil !== undefined && !guard.paused && before.pausedFor ? { pausedFor: before.pausedFor } : {}),
  };
}

/**
 * What the loop guard makes of a compaction (policy `loopGuard`; docs/compaction.md, Loop guard): whether it saved
 * less than the minimum share of the context, the ineffective automatic compactions in a row after it, and the
 * pause, when this one set it or one holds.
 */
export interface LoopGuardVerdict {
  ineffective: boolean;
  /** Share of the context's tokens it saved (negative: it grew the context). */
  savedShare: number;
  /** Ineffective automatic compactions in a row, this one included. */
  inARow: number;
  /** Automatic compaction is paused until the context reaches this many tokens. */
  pausedUntil?: number;
  /** This compaction set the pause. */
  paused?: true;
}

/** How far a context grows before a skipped plan is tried again, or a paused automatic compaction resumes. */
export function holdGrowth(policy: CompactionPolicy): number {
  return Math.max(HOLD_GROWTH, policy.cooldown[0] ?? 0);
}
/** The least growth {@link holdGrowth} asks for. */
export const HOLD_GROWTH = 0.05;

export const NO_COOLDOWN: CooldownState = { consecutive: 0, lastTokensAfter: 0 };

/** The numbers the workflow compares before every model call. */
export interface Gate {
  /** Compact at this many tokens (the lowest of the token triggers): the least count that fires. */
  tokens: number;
  /**
   * Set when that trigger is one the count must exceed (policy `triggerWhen: 'exceeds'`): the threshold, as the
   * reason states it (`tokens 50001 > 50000`). `tokens` is the least count above it.
   */
  over?: number;
  /** …or above this many messages / turns. */
  messages?: number;
  /**
   * `working-memory`: `messages` counts the conversation's messages only, not the system prompt nor the task ledger
   * (policy `countMessages`; {@link countedMessages}). Absent: every message of the context.
   */
  countMessages?: 'working-memory';
  turns?: number;
  /**
   * Inside a tool loop (the context ends with tool results; policy `holdInToolLoop`) the token trigger holds: only
   * the hard limit fires there. Absent (and in gates of before): the trigger fires anywhere.
   */
  holdInToolLoop?: true;
  /** The cooldown: the token trigger fires only from this many tokens on (0 after a user message). */
  floorAfterUser: number;
  floorWithoutUser: number;
  /** The hard limit: from this many tokens on, compaction fires whatever the floors say (absent in old states). */
  hard?: number;
  /**
   * The soft threshold (policy `backgroundRatio`): from this many tokens on (and past the cooldown's floor), a
   * compaction is prepared in the background while the agent works. Absent: off (and in states of before).
   */
  background?: number;
  /**
   * A tool result over these limits fires compaction to cut it, under any pressure: right after its call
   * (`newest`, AgentScope), or once the loop has moved on (the step before the newest, chatgpt-on-wechat's
   * "before each decision loop"). Set when the policy truncates tool results.
   */
  toolResults?: {
    maxTokens: number;
    maxChars: number;
    newest: boolean;
    /**
     * The results of the turns before the one in progress instead (chatgpt-on-wechat: "older turns only", before
     * every decision loop): those of the last completed turn, the earlier ones having been cut at its own loops.
     * Absent (and in gates of before): the step before the newest, when `newest` is false.
     */
    earlierTurns?: true;
  };
  /**
   * Below the trigger, from `tokens` on, the old tool results are masked (policy `mask.fromRatio`) when that saves at
   * least `atLeast` tokens (the plan decides, and a pass that would save less is a skip that holds until growth).
   * Not before `floor`: the last compaction's tokens after it plus `atLeast` (what a pass must find new), or the
   * tokens of a skip plus its growth.
   */
  mask?: { tokens: number; atLeast: number; floor: number };
  /** The loop guard paused automatic compaction until this many tokens (the floors above say so already). */
  pausedUntil?: number;
}

/**
 * The gate while the loop guard pauses automatic compaction: nothing automatic (trigger, soft threshold, masking
 * pass, tool-result cut) before `until` tokens, a user message or not; the hard limit still fires.
 */
export function pausedGate(gate: Gate, until: number): Gate {
  const { toolResults: _, ...rest } = gate;
  return {
    ...rest,
    floorAfterUser: Math.max(gate.floorAfterUser, until),
    floorWithoutUser: Math.max(gate.floorWithoutUser, until),
    ...(gate.mask ? { mask: { ...gate.mask, floor: Math.max(gate.mask.floor, until) } } : {}),
    pausedUntil: until,
  };
}

/**
 * The gate after a person (or the review timeout) discarded the draft of an automatic compaction (policy `review`):
 * nothing automatic fires again until the context has grown by {@link holdGrowth} from what it is now (`stats`),
 * in tokens (the trigger, the soft threshold, the masking pass and the hard limit too: a request that no longer fits
 * the window takes the overflow path, which does not wait for review), in messages and in turns, never past
 * `maxMessages` (the state's bound; at it, the next step prepares a new draft). The tool-result cut waits too.
 * Returns the gate and the tokens the pause lasts until.
 */
export function gateAfterDiscard(
  policy: CompactionPolicy,
  gate: Gate,
  stats: ContextStats,
): { gate: Gate; until: number } {
  const growth = holdGrowth(policy);
  const maxMessages = policy.maxMessages ?? MAX_CONTEXT_MESSAGES;
  const grown = (n: number) => Math.max(n + 1, Math.ceil(n * (1 + growth) - 1e-9));
  const until = Math.max(grown(stats.tokens), gate.pausedUntil ?? 0);
  const paused = pausedGate(gate, until);
  return {
    until,
    gate: {
      ...paused,
      ...(gate.hard !== undefined ? { hard: Math.max(gate.hard, until) } : {}),
      ...(gate.messages !== undefined
        ? { messages: Math.max(gate.messages, Math.min(grown(stats.messages), maxMessages)) }
        : {}),
      ...(gate.turns !== undefined ? { turns: Math.max(gate.turns, grown(stats.turns)) } : {}),
    },
  };
}

/**
 * Whether the masking pass fires (below the trigger, `gate.mask`): from its tokens on, once the context has grown
 * past its floor. It takes no step of the cooldown: each pass must find `atLeast` new tokens, so it cannot loop.
 */
export function maskFires(gate: Gate, stats: ContextStats): string | undefined {
  if (!gate.mask || stats.tokens < gate.mask.tokens || stats.tokens < gate.mask.floor) return undefined;
  return `tokens ${stats.tokens} ≥ ${gate.mask.tokens}: mask the old tool results`;
}

/** What the message count reads of a message. */
export interface CountedView {
  role: string;
  kind?: string;
}

/**
 * The messages a gate's message limit counts among `messages` (the context's records): all of them, or (gate
 * `countMessages: 'working-memory'`) those of the conversation, without the system prompt and the task ledger.
 */
export function countedMessages(gate: Pick<Gate, 'countMessages'>, messages: readonly CountedView[]): number {
  if (gate.countMessages !== 'working-memory') return messages.length;
  let counted = 0;
  for (const m of messages) if (m.role !== 'system' && m.kind !== 'ledger') counted++;
  return counted;
}

/** What the tool-result check reads of a message: works on the workflow's records and the engine's metadata. */
export interface ResultView {
  id: string;
  role: string;
  tokens: number;
  chars: number;
  kind?: string;
  toolCallIds?: readonly string[];
  reload?: true;
  steer?: true;
  userTurn?: true;
}

/**
 * The first uncut tool result over the gate's limits among those it checks: the newest step's results, or those of
 * the step before it. O(k) over the tail of the context.
 */
export function oversizedResult(gate: Gate, messages: readonly ResultView[]): ResultView | undefined {
  const limits = gate.toolResults;
  if (!limits) return undefined;
  if (limits.earlierTurns) return oversizedOfEarlierTurn(limits, messages);
  let i = messages.length - 1;
  const stepResults = () => {
    const results: ResultView[] = [];
    while (i >= 0 && messages[i]!.role === 'tool') results.push(messages[i--]!);
    if (i >= 0 && (messages[i]!.toolCallIds?.length ?? 0) > 0)
      i--; // the assistant message that made the calls
    else if (results.length === 0) i--; // a step without results (a user message, an answer)
    return results;
  };
  let results = stepResults();
  if (!limits.newest) results = stepResults();
  return results.find(
    (m) => (m.kind ?? 'normal') === 'normal' && !m.reload && (m.tokens > limits.maxTokens || m.chars > limits.maxChars),
  );
}

/** Whether a result is over `limits` and still whole (not cut, not a reloaded page). */
function overLimits(limits: NonNullable<Gate['toolResults']>, m: ResultView): boolean {
  return (m.kind ?? 'normal') === 'normal' && !m.reload && (m.tokens > limits.maxTokens || m.chars > limits.maxChars);
}

/**
 * The first uncut result over the limits in the last turn that is over: the turn before the one in progress, or the
 * last one when it ended (its final answer given: the next decision loop belongs to the next message). O(k) over the
 * last two turns.
 */
function oversizedOfEarlierTurn(
  limits: NonNullable<Gate['toolResults']>,
  messages: readonly ResultView[],
): ResultView | undefined {
  const opens = (m: ResultView) =>
    m.userTurn === true || (m.role === 'user' && (m.kind ?? 'normal') === 'normal' && m.steer !== true);
  let i = messages.length - 1;
  const last = messages[i];
  const ended = last !== undefined && last.role === 'assistant' && (last.toolCallIds?.length ?? 0) === 0;
  if (!ended) {
    while (i >= 0 && !opens(messages[i]!)) i--; // the turn in progress, up to its request
    i--;
  }
  let found: ResultView | undefined;
  for (; i >= 0 && !opens(messages[i]!); i--) {
    const m = messages[i]!;
    if (m.role === 'tool' && overLimits(limits, m)) found = m; // the first of the turn, in order
  }
  return found;
}

/**
 * What fired, if anything: the O(1) check the workflow makes before every model call. The cooldown floor holds
 * back the token trigger only (message and turn limits are met by any compaction, so they cannot loop).
 */
export function gateFires(
  gate: Gate,
  stats: ContextStats,
  userSinceLastCompaction: boolean,
  inToolLoop = false,
): string | undefined {
  const floor = userSinceLastCompaction ? gate.floorAfterUser : gate.floorWithoutUser;
  const held = inToolLoop && gate.holdInToolLoop === true; // only the hard limit, inside a tool loop
  if (!held && stats.tokens >= gate.tokens && stats.tokens >= floor) {
    return gate.over !== undefined
      ? `tokens ${stats.tokens} > ${gate.over}`
      : `tokens ${stats.tokens} ≥ ${gate.tokens}`;
  }
  if (gate.hard !== undefined && stats.tokens >= gate.hard) return `tokens ${stats.tokens} ≥ hard limit ${gate.hard}`;
  if (gate.messages !== undefined && stats.messages > gate.messages) {
    return gate.countMessages === 'working-memory'
      ? `messages in working memory ${stats.messages} ≥ ${gate.messages + 1}`
      : `messages ${stats.messages} > ${gate.messages}`;
  }
  if (gate.turns !== undefined && stats.turns > gate.turns) return `turns ${stats.turns} > ${gate.turns}`;
  return undefined;
}

/**
 * Whether a compaction should start in the background (the soft threshold): from `gate.background` tokens on (moved
 * up with the cooldown's floor), while the blocking trigger has not fired (then the compaction runs before the call).
 */
export function backgroundFires(gate: Gate, stats: ContextStats, userSinceLastCompaction: boolean): string | undefined {
  if (gate.background === undefined) return undefined;
  if (gate.pausedUntil !== undefined && stats.tokens < gate.pausedUntil) return undefined; // the loop guard's pause
  // The cooldown's floor holds the token trigger back; the soft threshold moves with it, the same distance below
  // where the trigger now fires, so that the agent keeps its steps of head start in a long loop too.
  const floor = userSinceLastCompaction ? gate.floorAfterUser : gate.floorWithoutUser;
  const at = Math.max(gate.tokens, floor) - Math.max(0, gate.tokens - gate.background);
  if (stats.tokens < at) return undefined;
  return at === gate.background
    ? `tokens ${stats.tokens} ≥ soft threshold ${gate.background}`
    : `tokens ${stats.tokens} ≥ soft threshold ${at} (${gate.background}, moved up with the cooldown's floor ${floor})`;
}

/** The gate with the context's counters and the cooldown step: everything the automatic trigger looks at. */
export interface GateCheck {
  gate: Gate;
  stats: ContextStats;
  /** Automatic compactions since the user last spoke (0: the cooldown is reset). */
  consecutive: number;
}

/** Why compaction is due: the trigger (tokens, messages, turns), a tool result over its limit, or the masking pass. */
export type Due =
  | { kind: 'trigger'; reason: string }
  | { kind: 'tool-result'; reason: string; result: ResultView }
  | { kind: 'mask'; reason: string };

/**
 * Whether compaction is due: the one decision, made by the workflow before every model call, by the model-call
 * activity for the messages it stores, and by the planner (which acts on its kind). The trigger first (the hard
 * limit, the cooldown), then a tool result over the per-result limit among the newest (when `messages` are given),
 * then the masking pass below the trigger. O(1), and O(k) over the context's tail for the tool results.
 */
export function compactionDue(
  gate: Gate,
  stats: ContextStats,
  userSinceLastCompaction: boolean,
  messages?: readonly ResultView[],
  inToolLoop = messages?.at(-1)?.role === 'tool',
): Due | undefined {
  const fired = gateFires(gate, stats, userSinceLastCompaction, inToolLoop);
  if (fired !== undefined) return { kind: 'trigger', reason: fired };
  const result = messages ? oversizedResult(gate, messages) : undefined;
  if (result) {
    return {
      kind: 'tool-result',
      reason: `tool result ${result.id} over the limit (${result.tokens} tokens, ${result.chars} chars)`,
      result,
    };
  }
  const mask = maskFires(gate, stats);
  return mask === undefined ? undefined : { kind: 'mask', reason: mask };
}

/**
 * {@link compactionDue} for the gate check the workflow keeps, once `added` messages join the context: their tokens
 * and count add up, and a user's message (a new turn) resets the cooldown.
 */
export function gateFiresWith(
  check: GateCheck,
  added: { tokens: number; userTurn: boolean; role?: string }[] = [],
  messages?: readonly ResultView[],
): Due | undefined {
  const turns = added.filter((m) => m.userTurn).length;
  const stats = {
    tokens: check.stats.tokens + added.reduce((sum, m) => sum + m.tokens, 0),
    // (A message added without its role is counted: the system prompt is, when the gate counts working memory.)
    messages:
      check.stats.messages +
      countedMessages(
        check.gate,
        added.map((m) => ({ role: m.role ?? 'user' })),
      ),
    turns: check.stats.turns + turns,
  };
  // Inside a tool loop: the context ends with tool results; with only steers added (no new turn), the loop goes on.
  const inToolLoop = turns === 0 && (messages ? messages.at(-1)?.role === 'tool' : added.length > 0);
  return compactionDue(check.gate, stats, check.consecutive === 0 || turns > 0, messages, inToolLoop);
}
