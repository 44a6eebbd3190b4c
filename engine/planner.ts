/**
 * The compaction planner: given the working context (metadata only), the policy and a trigger, a deterministic
 * plan of what to do and the tokens expected after it. Strategies run cheapest first and stop once under the
 * target; each records only what it actually changed. The plan never throws on an agent in trouble: when even the
 * emergency steps cannot reach the target, it says so and what it did instead.
 *
 * The unit is the step, not the turn: a long-running agent spends hundreds of steps inside one user message, so the
 * older steps of the turn in progress are compactable like any others. Protection, strongest first: `fixed` (system
 * prompt, task ledger, summaries, the user's first message — the goal — and the message that opened the turn in
 * progress) is never touched by a regular strategy; `newest` (the newest step: results the model has not seen yet)
 * only by truncating tool results, with a reload reference; `recent` (the newest N steps, the last N messages, the
 * reserve, the user's messages and final answers of the last N turns) only by truncation and offloading; the rest by
 * everything. Strategies that remove messages remove whole steps, so no plan separates a tool call from its result,
 * and whatever they remove goes into one summary (the model's, or the extractive one) that names what it covers:
 * nothing leaves the context without a trace. When the plan still falls short of the hard limit, the older steps
 * are summarized down to the newest one, and if that is not enough the largest messages are cut to fit.
 */
import { estimateCost } from './cost.ts';
import type { CostEstimate } from './cost.ts';
import { isUserTurn, kindOf, originalKeyOf } from './messages.ts';
import type { ChatRole, MessageKind, MessageMeta } from './messages.ts';
import { MAX_CONTEXT_MESSAGES } from './policy.ts';
import type { CompactionPolicy, StrategyName } from './policy.ts';
import { backgroundFires, compactionDue, gateOf, isAutomatic, offloadsLargest, targetOf } from './trigger.ts';
import type { ContextStats, CooldownState, Target, Trigger } from './trigger.ts';
import { layoutSteps, opensTurn } from './turns.ts';
import type { StepLayout } from './turns.ts';

/** Tokens a marker, stub or preview frame adds (an upper bound: about 100 characters). */
export const STUB_TOKENS = 40;
/** Tokens a mask stub is planned at: the stub and the error lines and paths it keeps (`REPORTED_CHARS`, apply.ts). */
export const MASK_TOKENS = STUB_TOKENS + 100;
/** The emergency step leaves at least this many tokens of a message it cuts. */
export const EMERGENCY_MIN_TOKENS = 256;
/** Tokens the summary's own frame adds: its header, what it covers, where the loop stands, the removed ids. */
export const SUMMARY_FRAME_TOKENS = 160;
/** The summary message is at most this share of the window (a small window cannot hold a 2,000-token summary). */
export const SUMMARY_WINDOW_SHARE = 0.15;
/**
 * Tokens the task ledger's message is planned at when a plan's summary makes the first one: its header and sections,
 * besides the goal (the user's first message, up to {@link GOAL_PLAN_TOKENS}). Later summaries replace it in place.
 */
export const LEDGER_FRAME_TOKENS = 64;
/** The goal's tokens in the first ledger, at most (the ledger keeps its first 1,000 characters). */
const GOAL_PLAN_TOKENS = 250;
/** The newest steps protected when a stored policy predates `keepSteps`. */
const DEFAULT_KEEP_STEPS = 4;

export type Protection = 'none' | 'recent' | 'newest' | 'fixed';

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
   * Who can summarize: the summary model (`available`), none configured (`none`: the extractive summarizer, or the
   * policy's fallback), or the model failed its retries (`failed`: the fallback, summarized extractively).
   */
  summarizer: 'available' | 'none' | 'failed';
  /** A forced compaction may name the strategies to use instead of the policy's. */
  strategies?: readonly StrategyName[];
  /** Model calls since the last compaction (or the agent's start): the pace the cost decision prices. */
  callsSinceCompaction?: number;
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
  | { op: 'mask'; id: string; tokens: number }
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

/** The summary the plan asks for: the span (bodies the summarizer reads) and where the result goes. */
export interface SummarySpec {
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

interface Slot {
  meta: MessageMeta;
  index: number;
  tokens: number;
  /** Index of its step in the layout. */
  step: number;
  /** Its turn (-1 before the first). */
  turn: number;
  protect: Protection;
  op: Operation;
  /** Dropped into the summary (as opposed to kept, replaced, or kept verbatim beside it). */
  summarized?: boolean;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

const RANK: Record<Protection, number> = { none: 0, recent: 1, newest: 2, fixed: 3 };

/** The protection of each message of `context` under `policy`. */
export function protectionOf(
  context: readonly MessageMeta[],
  policy: CompactionPolicy,
  window: number,
  goalId?: string,
  layout: StepLayout = layoutSteps(context),
): Protection[] {
  const { steps, turns } = layout;
  const protect: Protection[] = context.map(() => 'none');
  const raise = (i: number, level: Protection) => {
    if (RANK[level] > RANK[protect[i]!]) protect[i] = level;
  };
  const raiseStep = (s: number, level: Protection) => {
    for (let i = steps[s]!.start; i < steps[s]!.end; i++) raise(i, level);
  };
  context.forEach((m, i) => {
    const kind = kindOf(m);
    if (m.role === 'system' || kind === 'ledger' || kind === 'summary' || m.id === goalId) raise(i, 'fixed');
  });
  const current = turns.at(-1);
  if (current) raise(current.start, 'fixed'); // the user's request of the turn in progress stays verbatim
  if (steps.length > 0) raiseStep(steps.length - 1, 'newest');
  // The newest N steps and the last N messages (widened to whole steps), as long as they hold at most half the
  // target: in a small window a few large tool results would otherwise protect more than compaction may leave.
  // And the reserve: the newest steps within its share of the window.
  const keepSteps = policy.keepSteps ?? DEFAULT_KEEP_STEPS;
  const firstByCount = Math.max(0, context.length - policy.keepMessages);
  const byCountCap = (policy.targetRatio * window) / 2;
  const reserve = policy.reserveRatio * window;
  let held = 0;
  for (let s = steps.length - 1; s >= 0; s--) {
    const step = steps[s]!;
    for (let i = step.start; i < step.end; i++) held += context[i]!.tokens;
    const byCount = (s >= steps.length - keepSteps || step.end > firstByCount) && held <= byCountCap;
    if (byCount || held <= reserve) raiseStep(s, 'recent');
    else break;
  }
  // The conversation of the last N turns before the one in progress: the user's words and the final answer.
  for (const turn of turns.slice(Math.max(0, turns.length - 1 - policy.keepTurns), -1)) {
    raise(turn.start, 'recent');
    for (let i = turn.end - 1; i > turn.start; i--) {
      const m = context[i]!;
      if (m.role === 'assistant' && !(m.toolCallIds?.length ?? 0)) {
        raise(i, 'recent');
        break;
      }
    }
  }
  return protect;
}

/** Plans a compaction. Deterministic: the same input gives the same plan. */
export function planCompaction(input: PlanInput): Plan {
  const { context, policy, window, fixedTokens, trigger } = input;
  const layout = layoutSteps(context);
  const protect = protectionOf(context, policy, window, input.goalId, layout);
  const slots: Slot[] = context.map((meta, i) => ({
    meta,
    index: i,
    tokens: meta.tokens,
    step: -1,
    turn: -1,
    protect: protect[i]!,
    op: { op: 'keep', id: meta.id },
  }));
  layout.steps.forEach((step, s) => {
    for (let i = step.start; i < step.end; i++) {
      slots[i]!.step = s;
      slots[i]!.turn = step.turn;
    }
  });
  const stepSlots = layout.steps.map((step) => slots.slice(step.start, step.end));
  const slotById = new Map(slots.map((slot) => [slot.meta.id, slot]));
  const currentTurn = layout.turns.length - 1;
  const opener = layout.turns.at(-1) ? slots[layout.turns.at(-1)!.start] : undefined;
  const isSummary = (s: Slot) => kindOf(s.meta) === 'summary';
  // Running totals, kept up to date by `replace`, so that every check is O(1).
  const totals = {
    tokens: slots.reduce((sum, s) => sum + s.tokens, 0),
    messages: slots.length,
    turns: slots.filter((s) => isUserTurn(s.meta)).length,
  };
  /** Tokens of everything dropped into the summary (its estimate follows them). */
  let summarizedTokens = 0;
  let summarizedCount = 0;
  const summaryBudget = Math.max(
    64,
    Math.min(policy.summary.maxTokens, Math.floor(SUMMARY_WINDOW_SHARE * window)) - SUMMARY_FRAME_TOKENS,
  );
  const summaryEstimate = () =>
    summarizedCount === 0
      ? 0
      : Math.min(summaryBudget, Math.max(64, Math.ceil(summarizedTokens * 0.25))) + SUMMARY_FRAME_TOKENS;
  let prependTo: Slot | undefined;
  // The first summary brings the task ledger's message with it (the goal verbatim); later ones replace it in place.
  const firstLedger = slots.some((s) => kindOf(s.meta) === 'ledger')
    ? 0
    : LEDGER_FRAME_TOKENS + Math.min(GOAL_PLAN_TOKENS, slotById.get(input.goalId ?? '')?.tokens ?? 0);
  const stats = (): ContextStats => ({
    tokens: fixedTokens + totals.tokens + summaryEstimate() + (summarizedCount > 0 ? firstLedger : 0),
    messages: totals.messages + (summarizedCount > 0 ? (prependTo ? 0 : 1) + (firstLedger > 0 ? 1 : 0) : 0),
    turns: totals.turns,
  });
  const before = stats();
  const target = targetOf(policy, window, before, trigger, input.cooldown.consecutive, input.attempt ?? 1);
  const hardLimit = Math.floor(policy.hardLimitRatio * window);
  const met = () => {
    const now = stats();
    return (
      now.tokens <= target.tokens &&
      now.messages <= (target.messages ?? Infinity) &&
      now.turns <= (target.turns ?? Infinity)
    );
  };

  const gate = gateOf(policy, window, input.cooldown);
  const due = trigger === 'auto' ? compactionDue(gate, before, input.cooldown.consecutive === 0, context) : undefined;
  const fired =
    trigger === 'auto'
      ? due?.reason
      : trigger === 'background'
        ? backgroundFires(gate, before, input.cooldown.consecutive === 0)
        : trigger === 'forced'
          ? 'forced by request'
          : `the request was over the window (attempt ${input.attempt ?? 1})`;
  // Under no pressure, a tool result over the policy's limit is cut, and nothing else is done.
  const oversized = due?.kind === 'tool-result';
  if (oversized) {
    target.tokens = before.tokens;
    target.reason = 'cut the tool results over the limit (the window is not under pressure)';
  }
  // Below the trigger, from the policy's mask threshold: the old tool results masked, all of them at once (the
  // pass changes the context once), and nothing else.
  const maskPass = due?.kind === 'mask' ? due.reason : undefined;
  if (maskPass) {
    target.tokens = before.tokens - gate.mask!.atLeast;
    target.reason = `mask the tool results older than the protected steps, saving at least ${gate.mask!.atLeast} tokens`;
  }
  const base = { trigger, target, before, summary: undefined, removed: [], steps: [] };
  if (fired === undefined) {
    return {
      ...base,
      action: 'skip',
      reason: `below the trigger (${before.tokens} tokens, ${before.messages} messages, ${before.turns} turns)`,
      after: before,
      reachedTarget: met(),
      operations: slots.map((s) => s.op),
    };
  }

  const steps: PlanStep[] = [];
  /** Runs one strategy and records a step if (and only if) it changed something. */
  const run = (strategy: PlanStepName, body: () => { ids: string[]; note?: string }) => {
    const tokensBefore = stats().tokens;
    const { ids, note } = body();
    if (ids.length > 0) {
      steps.push({ strategy, ids, tokensSaved: tokensBefore - stats().tokens, ...(note ? { note } : {}) });
    }
    return ids.length > 0;
  };

  /** Replaces a message (its planned size in `tokens`: an estimate the activity's count replaces) or drops it. */
  const replace = (slot: Slot, op: DistributiveOmit<Operation, 'tokens'>, tokens: number) => {
    if (slot.op.op === 'drop') return;
    slot.op = op.op === 'keep' || op.op === 'drop' ? op : { ...op, tokens };
    totals.tokens += tokens - slot.tokens;
    slot.tokens = tokens;
    if (op.op === 'drop') {
      totals.messages--;
      if (isUserTurn(slot.meta)) totals.turns--;
    }
  };
  /**
   * Drops messages into the summary. The first drop also folds every earlier summary into it: the context holds one
   * summary, which covers everything that left it.
   */
  const summarize = (slot: Slot) => {
    if (slot.op.op === 'drop') return;
    if (summarizedCount === 0) {
      for (const s of slots) {
        if (isSummary(s) && s.op.op !== 'drop' && s !== slot && s.meta.ref === undefined) summarize(s);
      }
    }
    summarizedTokens += slot.meta.tokens;
    summarizedCount++;
    slot.summarized = true;
    replace(slot, { op: 'drop', id: slot.meta.id }, 0);
  };
  /** Drops whole steps into the summary; returns the ids dropped (never a fixed message). */
  const summarizeSteps = (stepIds: readonly number[]) => {
    const ids: string[] = [];
    for (const s of stepIds) {
      for (const slot of stepSlots[s]!) {
        if (slot.op.op === 'drop' || slot.protect === 'fixed') continue;
        summarize(slot);
        ids.push(slot.meta.id);
      }
    }
    return ids;
  };
  /** Steps whose non-fixed messages are all at or below `level` and still hold something, oldest first. */
  const removableSteps = (level: Protection, where: (s: number) => boolean = () => true) => {
    const found: number[] = [];
    stepSlots.forEach((inStep, s) => {
      if (!where(s)) return;
      const removable = inStep.filter((slot) => slot.op.op !== 'drop' && slot.protect !== 'fixed');
      if (removable.length > 0 && removable.every((slot) => RANK[slot.protect] <= RANK[level])) found.push(s);
    });
    return found;
  };
  /** Completed turns (not the one in progress) whose non-fixed messages are all removable at `level`, oldest first. */
  const removableTurns = (level: Protection) => {
    const byTurn = new Map<number, number[]>();
    const blocked = new Set<number>();
    stepSlots.forEach((inStep, s) => {
      const turn = layout.steps[s]!.turn;
      if (turn < 0 || turn === currentTurn) return;
      const removable = inStep.filter((slot) => slot.op.op !== 'drop' && slot.protect !== 'fixed');
      if (removable.some((slot) => RANK[slot.protect] > RANK[level])) blocked.add(turn);
      else if (removable.length > 0) byTurn.set(turn, [...(byTurn.get(turn) ?? []), s]);
    });
    return [...byTurn.entries()].filter(([turn]) => !blocked.has(turn));
  };
  const stepTokens = (s: number) =>
    stepSlots[s]!.reduce((sum, slot) => sum + (slot.op.op === 'drop' ? 0 : slot.tokens), 0);
  const noModel =
    input.summarizer === 'failed' || (input.summarizer === 'none' && policy.summary.withoutModel === 'fallback');

  /** Summarizes the unprotected steps (up to `level`), oldest first; `half`: only the oldest half of them. */
  const summarizeSpan = (level: Protection, options: { half?: boolean; toTarget?: boolean } = {}) => {
    let found = removableSteps(level);
    if (options.half) found = found.slice(0, Math.ceil(found.length / 2));
    const candidates = found.flatMap((s) => stepSlots[s]!.filter((x) => x.op.op !== 'drop' && x.protect !== 'fixed'));
    if (candidates.length < 2) return [];
    const spanTokens = candidates.reduce((sum, x) => sum + x.tokens, 0);
    // Worth a summary only if it at most halves what it replaces (a forced compaction asked for it anyway).
    const estimate = Math.min(summaryBudget, Math.max(64, Math.ceil(spanTokens * 0.25))) + SUMMARY_FRAME_TOKENS;
    if (!options.toTarget && trigger !== 'forced' && spanTokens < 2 * estimate) return [];
    // The user's own words, newest first, up to the budget: they stay verbatim beside the summary.
    let budget = policy.summary.keepUserTokens;
    const keptUser = new Set<Slot>();
    for (const slot of [...candidates].reverse()) {
      if (!isUserTurn(slot.meta) || slot.tokens > budget) continue;
      keptUser.add(slot);
      budget -= slot.tokens;
    }
    const ids: string[] = [];
    for (const s of found) {
      if (options.toTarget && met()) break;
      for (const slot of stepSlots[s]!) {
        if (slot.op.op === 'drop' || slot.protect === 'fixed' || keptUser.has(slot)) continue;
        summarize(slot);
        ids.push(slot.meta.id);
      }
    }
    return ids;
  };

  const strategies: Record<StrategyName, () => { ids: string[]; note?: string }> = {
    'truncate-tool-results': () => {
      const { maxTokens, maxChars, headChars, tailChars, olderTurnsOnly } = policy.toolResults;
      const limit: Protection = olderTurnsOnly ? 'none' : 'newest';
      const ids: string[] = [];
      for (const slot of slots) {
        if (slot.op.op === 'drop') continue;
        const m = slot.meta;
        if (m.role !== 'tool' || slot.op.op !== 'keep' || kindOf(m) !== 'normal') continue;
        if (RANK[slot.protect] > RANK[limit] || (m.chars <= maxChars && slot.tokens <= maxTokens)) continue;
        // A reloaded page is cut only once the model has seen it (a cut would point back to itself).
        if (m.reload && RANK[slot.protect] > RANK.none) continue;
        // Keep head + tail: at most the characters the policy allows and the tokens of the per-result limit.
        const budget = Math.min(maxTokens, Math.ceil((slot.tokens * (headChars + tailChars)) / Math.max(1, m.chars)));
        const tokens = Math.min(maxTokens, budget + STUB_TOKENS);
        if (tokens >= slot.tokens) continue;
        const keepChars = Math.min(headChars + tailChars, Math.floor((m.chars * budget) / Math.max(1, slot.tokens)));
        const head = Math.round((keepChars * headChars) / Math.max(1, headChars + tailChars));
        replace(
          slot,
          { op: 'truncate', id: m.id, headChars: head, tailChars: keepChars - head, maxTokens: tokens },
          tokens,
        );
        ids.push(m.id);
      }
      return { ids };
    },
    'mask-tool-results': () => {
      const ids: string[] = [];
      // Oldest first, stopping at the target: every masked result is one the model can no longer read directly. A
      // mask pass below the trigger masks every old result: it changes the context once, not once per result.
      for (const slot of slots) {
        if (slot.op.op === 'drop') continue;
        if (!maskPass && met()) break;
        const kind = kindOf(slot.meta);
        if (slot.meta.role !== 'tool' || slot.protect !== 'none' || (kind !== 'normal' && kind !== 'truncated'))
          continue;
        if (slot.op.op === 'mask' || slot.op.op === 'offload' || slot.tokens < policy.mask.minTokens) continue;
        if (slot.tokens <= MASK_TOKENS) continue;
        replace(slot, { op: 'mask', id: slot.meta.id }, MASK_TOKENS);
        ids.push(slot.meta.id);
      }
      return { ids };
    },
    'offload-large': () => {
      const { minChars, previewChars, includeProtected } = policy.offload;
      const ids: string[] = [];
      const pass = (level: Protection) => {
        for (const slot of slots) {
          if (slot.op.op === 'drop') continue;
          if (met()) break;
          const m = slot.meta;
          if (m.role === 'system' || slot.op.op !== 'keep' || kindOf(m) !== 'normal' || m.chars <= minChars) continue;
          if (RANK[slot.protect] > RANK[level]) continue;
          const tokens = Math.ceil((slot.tokens * previewChars) / Math.max(1, m.chars)) + STUB_TOKENS;
          if (tokens >= slot.tokens) continue;
          replace(slot, { op: 'offload', id: m.id, previewChars }, tokens);
          ids.push(m.id);
        }
      };
      pass('none');
      if (includeProtected && !met()) pass('recent');
      return { ids };
    },
    summarize: () => {
      if (noModel) {
        const why = input.summarizer === 'failed' ? 'the summary model failed' : 'no summary model is configured';
        const fallback = policy.summary.fallback;
        const ids = fallback === 'halve' ? halve() : truncateRounds();
        return { ids, note: `${why}: ${fallback} instead, with an extractive summary of what it removed` };
      }
      return { ids: summarizeSpan('none', { half: policy.summary.span === 'oldest-half' }) };
    },
    'summarize-current-turn': () => {
      // AgentScope Java's last strategy: the turn in progress as a whole, down to its newest step.
      const ids = summarizeSpan('recent', { toTarget: true });
      return { ids };
    },
    'compact-turns': () => {
      // Keep only the user's text and the final reply of each completed, unprotected turn.
      const ids: string[] = [];
      for (const [turn, found] of removableTurns('none')) {
        const inTurn = found.flatMap((s) => stepSlots[s]!).filter((x) => x.op.op !== 'drop');
        const finalReply = inTurn.findLast((x) => x.meta.role === 'assistant' && !(x.meta.toolCallIds?.length ?? 0));
        for (const slot of inTurn) {
          if (slot.protect === 'fixed' || slot === finalReply || opensTurn(slot.meta) || slot.turn !== turn) continue;
          summarize(slot);
          ids.push(slot.meta.id);
        }
      }
      return { ids };
    },
    'truncate-rounds': () => ({ ids: truncateRounds() }),
    halve: () => ({ ids: halve() }),
  };

  /**
   * The loop guard's attempt: the largest messages (unprotected or recent, never the newest step or a fixed one)
   * offloaded to a preview with the reference to the original, largest first, until the target is met.
   */
  function offloadLargest(): { ids: string[]; note: string } {
    const { previewChars } = policy.offload;
    const ids: string[] = [];
    const candidates = slots
      .filter((slot) => slot.op.op === 'keep' && slot.meta.role !== 'system' && RANK[slot.protect] <= RANK.recent)
      .filter(
        (slot) => ['normal', 'truncated'].includes(kindOf(slot.meta)) && !(slot.meta.reload && slot.protect !== 'none'),
      )
      .sort((a, b) => b.tokens - a.tokens || a.index - b.index);
    for (const slot of candidates) {
      if (met()) break;
      const tokens = Math.ceil((slot.tokens * previewChars) / Math.max(1, slot.meta.chars)) + STUB_TOKENS;
      if (tokens >= slot.tokens) continue;
      replace(slot, { op: 'offload', id: slot.meta.id, previewChars }, tokens);
      ids.push(slot.meta.id);
    }
    const inARow = input.cooldown.ineffective ?? 0;
    return {
      ids,
      note: `loop guard: ${inARow} ineffective compactions in a row, so the largest items are offloaded instead of the policy's strategies`,
    };
  }

  /**
   * Drops the oldest rounds into the summary, `perStep` at a time, until the target is met: whole completed turns
   * first, then the unprotected steps of the turn in progress (inside a long agent loop, a round is a step).
   */
  function truncateRounds(): string[] {
    const ids: string[] = [];
    // Protection does not change while planning: the rounds removable now stay so until dropped.
    const rounds = [
      ...removableTurns('none').map(([, found]) => found),
      ...removableSteps('none', (s) => layout.steps[s]!.turn === currentTurn).map((s) => [s]),
    ];
    for (let r = 0; r < rounds.length && !met(); r += policy.truncateRounds.perStep) {
      ids.push(...summarizeSteps(rounds.slice(r, r + policy.truncateRounds.perStep).flat()));
    }
    return ids;
  }

  /**
   * Emergency: drops the oldest steps holding about half the tokens of the removable ones (recent ones included;
   * never the newest step or a fixed message) into the summary, and again until the target is met.
   */
  function halve(): string[] {
    const ids: string[] = [];
    for (;;) {
      if (met()) break;
      const found = removableSteps('recent');
      if (found.length === 0) break;
      const total = found.reduce((sum, s) => sum + stepTokens(s), 0);
      let dropped = 0;
      const half: number[] = [];
      for (const s of found) {
        if (half.length > 0 && dropped >= total / 2) break;
        half.push(s);
        dropped += stepTokens(s);
      }
      ids.push(...summarizeSteps(half));
    }
    return ids;
  }

  const order = input.strategies?.length ? input.strategies : policy.strategies;
  if (oversized) run('truncate-tool-results', strategies['truncate-tool-results']);
  if (maskPass) {
    run('mask-tool-results', strategies['mask-tool-results']);
    const saved = before.tokens - stats().tokens;
    if (saved < gate.mask!.atLeast) {
      return {
        ...base,
        action: 'skip',
        maskPass: true,
        reason: `${maskPass}: masking would save ${saved} tokens, less than ${gate.mask!.atLeast}`,
        after: before,
        reachedTarget: false,
        operations: slots.map((s) => ({ op: 'keep', id: s.meta.id })),
      };
    }
  }
  // After ineffective compactions in a row, the loop guard's attempt instead (the policy's when it finds nothing).
  const guarded = !maskPass && !oversized && offloadsLargest(policy, input.cooldown, trigger);
  const offloaded = guarded && run('offload-largest', offloadLargest);
  for (const name of maskPass || offloaded ? [] : order) {
    if (met()) break;
    if (run(name, strategies[name]) && policy.oneStrategyPerCheck && isAutomatic(trigger)) break;
  }

  // Every request fits: over the hard limit, the older steps (recent ones included) go into the summary, oldest
  // first, down to the newest step; what is still over is cut, the largest messages first, to head and tail with the
  // reference to the original.
  const limit = Math.min(target.tokens, hardLimit);
  const overLimit = () => stats().tokens > limit;
  if (stats().tokens > hardLimit) {
    run('fit-window', () => {
      const ids: string[] = [];
      for (const s of removableSteps('recent')) {
        if (!overLimit()) break;
        ids.push(...summarizeSteps([s]));
      }
      return {
        ids,
        note: `over the hard limit (${hardLimit} tokens): the older steps summarized down to the newest one`,
      };
    });
  }
  if (stats().tokens > hardLimit) {
    run('truncate-oversized', () => {
      const ids: string[] = [];
      const candidates = slots
        .filter((s) => s.op.op !== 'drop')
        .filter((s) => s.meta.role !== 'system' && !isSummary(s) && kindOf(s.meta) !== 'ledger')
        .filter((s) => s.tokens > EMERGENCY_MIN_TOKENS && (s.op.op === 'keep' || s.op.op === 'truncate'))
        .sort((a, b) => b.tokens - a.tokens || a.index - b.index);
      for (const slot of candidates) {
        const excess = stats().tokens - limit;
        if (excess <= 0) break;
        const keepTokens = Math.max(EMERGENCY_MIN_TOKENS, slot.tokens - excess - STUB_TOKENS);
        const chars = slot.meta.chars;
        const keepChars = Math.floor((chars * keepTokens) / Math.max(1, slot.meta.tokens));
        if (keepTokens + STUB_TOKENS >= slot.tokens) continue;
        const head = Math.ceil(keepChars * 0.7);
        replace(
          slot,
          {
            op: 'truncate',
            id: slot.meta.id,
            headChars: head,
            tailChars: keepChars - head,
            maxTokens: keepTokens + STUB_TOKENS,
          },
          keepTokens + STUB_TOKENS,
        );
        ids.push(slot.meta.id);
      }
      return { ids, note: `over the hard limit (${hardLimit} tokens): the largest messages cut to head and tail` };
    });
  }

  // The one summary: what every removing step dropped, with the previous summary folded in.
  let summary: SummarySpec | undefined;
  if (summarizedCount > 0) {
    const span = slots.filter((s) => s.summarized);
    const kept = slots.filter((s) => s.op.op !== 'drop');
    const lastSpanIndex = span.at(-1)!.index;
    const after = kept.filter((s) => s.index > lastSpanIndex);
    const keptUser = new Set(kept.filter((s) => isUserTurn(s.meta) && s.index < lastSpanIndex && s.protect === 'none'));
    const firstUserAfter = after.find((s) => isUserTurn(s.meta) && s.op.op === 'keep');
    const placement: SummarySpec['placement'] =
      policy.summary.placement === 'first-kept-user' && firstUserAfter
        ? { mode: 'prepend', id: firstUserAfter.meta.id }
        : { mode: 'message', ...(after[0] ? { beforeId: after[0].meta.id } : {}) };
    if (placement.mode === 'prepend') prependTo = firstUserAfter;
    let currentTurnSpan: SummaryCoverage['currentTurn'];
    if (opener && span.some((s) => s.turn === currentTurn && s.index > opener.index)) {
      // Steps of the turn in progress: those an earlier summary of it covered, then the assistant messages now.
      const earlier = Math.max(
        0,
        ...span.filter((s) => s.meta.covers?.turnId === opener.meta.id).map((s) => s.meta.covers!.steps),
      );
      const now = span.filter((s) => s.turn === currentTurn && s.meta.role === 'assistant').length;
      currentTurnSpan = { turnId: opener.meta.id, steps: earlier + now };
    }
    // The summarizer reads the user's messages kept verbatim beside it too (their facts are not at risk).
    const read = slots.filter((s) => s.summarized || keptUser.has(s));
    summary = {
      spanIds: read.map((s) => s.meta.id),
      keptUserIds: [...keptUser].map((s) => s.meta.id),
      placement,
      estimatedTokens: summaryEstimate(),
      maxTokens: summaryBudget + SUMMARY_FRAME_TOKENS,
      writer: input.summarizer === 'available' ? 'model' : 'extractive',
      coverage: {
        firstId: span[0]!.meta.id,
        lastId: span.at(-1)!.meta.id,
        messages: span.length,
        ...(currentTurnSpan ? { currentTurn: currentTurnSpan } : {}),
      },
      fallback: policy.summary.fallback,
      ...(firstLedger > 0 ? { ledgerTokens: firstLedger } : {}),
    };
    for (const step of steps) {
      if (step.ids.some((id) => slotById.get(id)?.summarized)) step.summary = summary;
    }
  }

  const after = stats();
  const reachedTarget = met();
  const removed: RemovedItem[] = [];
  const lastStepOf = new Map<string, PlanStep>();
  for (const step of steps) for (const id of step.ids) lastStepOf.set(id, step);
  for (const slot of slots) {
    if (slot.op.op === 'keep') continue;
    const step = lastStepOf.get(slot.meta.id);
    const replacedBy = slot.op.op === 'drop' ? 'summary' : REPLACED_KIND[slot.op.op];
    removed.push({
      id: slot.meta.id,
      role: slot.meta.role,
      tokens: slot.meta.tokens,
      key: originalKeyOf(slot.meta),
      // A previous summary folded into the new one is removed by the step that made the new one.
      by: step?.strategy ?? steps.find((s) => s.summary)!.strategy,
      replacedBy,
    });
  }
  if (summary?.placement.mode === 'prepend') {
    const host = prependTo!;
    removed.push({
      id: host.meta.id,
      role: host.meta.role,
      tokens: host.meta.tokens,
      key: originalKeyOf(host.meta),
      by: steps.find((s) => s.summary)!.strategy,
      replacedBy: 'summary',
    });
  }

  const operations = slots.map((s) => s.op);
  if (steps.length === 0) {
    const protectedTokens = slots.filter((s) => s.protect !== 'none').reduce((sum, s) => sum + s.tokens, 0);
    return {
      ...base,
      action: 'skip',
      reason: `nothing to compact: ${fired}, but no strategy of [${order.join(', ')}] applies (protected messages hold ${protectedTokens} tokens)`,
      after,
      reachedTarget,
      ...(reachedTarget ? {} : { shortfall: shortfallOf(after, target, slots) }),
      operations,
    };
  }

  // An automatic compaction that would leave as many tokens as it found is not made (the ledger and the summary's
  // frame can outweigh a small span); it holds until the context grows, as a skip does. A message or turn limit that
  // fired is met by fewer messages, whatever the tokens.
  const countsMet =
    (target.messages !== undefined && after.messages < before.messages) ||
    (target.turns !== undefined && after.turns < before.turns);
  if (isAutomatic(trigger) && after.tokens >= before.tokens && !countsMet) {
    return {
      ...base,
      action: 'skip',
      reason: `would not shrink the context: ${before.tokens} tokens, ${after.tokens} expected after [${steps.map((s) => s.strategy).join(', ')}]`,
      after: before,
      reachedTarget: false,
      operations: slots.map((s) => ({ op: 'keep', id: s.meta.id })),
    };
  }

  let cost: CostEstimate | undefined;
  if (policy.cost) {
    const summaryIn = summary ? summarizedTokens : 0;
    cost = estimateCost(
      policy.cost,
      before.tokens,
      after.tokens,
      summaryIn,
      summary?.estimatedTokens ?? 0,
      input.callsSinceCompaction,
    );
    // The hard limit and the bound on the context's messages override the cost decision.
    const bounded = before.tokens >= hardLimit || before.messages > (policy.maxMessages ?? MAX_CONTEXT_MESSAGES);
    if (isAutomatic(trigger) && cost.netBenefit < 0 && !bounded) {
      return {
        ...base,
        action: 'skip',
        reason:
          `not worth it: compacting would cost ${cost.withCompaction.toFixed(4)} against ` +
          `${cost.withoutCompaction.toFixed(4)} without over ${cost.remainingTurns} remaining calls ` +
          `(${cost.remainingFrom === 'pace' ? "the session's pace" : 'the policy'}; below the hard limit of ${hardLimit} tokens)`,
        after: before,
        reachedTarget: false,
        operations: slots.map((s) => ({ op: 'keep', id: s.meta.id })),
        cost,
      };
    }
  }

  return {
    trigger,
    action: 'compact',
    ...(maskPass ? { maskPass: true as const } : {}),
    ...(oversized ? { toolResultCut: true as const } : {}),
    reason: fired,
    target,
    before,
    after,
    reachedTarget,
    ...(reachedTarget ? {} : { shortfall: shortfallOf(after, target, slots) }),
    steps,
    operations,
    ...(summary ? { summary } : {}),
    removed,
    ...(cost ? { cost } : {}),
  };
}

function shortfallOf(after: ContextStats, target: Target, slots: readonly Slot[]): string {
  const held = slots.filter((s) => s.op.op !== 'drop' && s.protect !== 'none');
  const heldTokens = held.reduce((sum, s) => sum + s.tokens, 0);
  const largest = [...held].sort((a, b) => b.tokens - a.tokens)[0];
  return (
    `expected ${after.tokens} tokens, ${after.messages} messages, ${after.turns} turns against a target of ` +
    `${target.tokens} tokens${target.messages !== undefined ? `, ${target.messages} messages` : ''}` +
    `${target.turns !== undefined ? `, ${target.turns} turns` : ''}: the protected messages (system prompt, ` +
    `summary, goal, the turn's request, the newest steps) hold ${heldTokens} tokens` +
    (largest ? `, the largest ${largest.meta.id} (${largest.meta.role}, ${largest.tokens} tokens)` : '')
  );
}
