/**
 * The compression planner: given the working context (metadata only), the policy and a trigger, a deterministic
 * plan of what to do and the tokens expected after it. Strategies run cheapest first and stop once under the
 * target; each records only what it actually changed. The plan never throws on an agent in trouble: when even the
 * emergency steps cannot reach the target, it says so and what it did instead.
 *
 * Protection, strongest first: `fixed` (system prompt, task ledger, current summary, the user's first message —
 * the goal) is never touched by a regular strategy; `current` (the turn in progress) only by truncating tool
 * results; `recent` (the last N turns, the last N messages, the reserve) only by truncation and offloading; the rest
 * by everything. Turn-based strategies remove whole atomic groups, so no plan separates a tool call from its result.
 */
import { estimateCost } from './cost.ts';
import type { CostEstimate } from './cost.ts';
import { isUserTurn, kindOf, originalKeyOf } from './messages.ts';
import type { ChatRole, MessageKind, MessageMeta } from './messages.ts';
import type { CompressionPolicy, StrategyName } from './policy.ts';
import { gateFires, gateOf, targetOf } from './trigger.ts';
import type { ContextStats, CooldownState, Target, Trigger } from './trigger.ts';
import { groupTurns } from './turns.ts';

/** Tokens a marker, stub or preview frame adds (an upper bound: about 100 characters). */
export const STUB_TOKENS = 40;
/** The emergency step leaves at least this many tokens of a message it cuts. */
export const EMERGENCY_MIN_TOKENS = 256;

export type Protection = 'none' | 'recent' | 'current' | 'fixed';

export interface PlanInput {
  context: readonly MessageMeta[];
  policy: CompressionPolicy;
  window: number;
  /** Tokens every request spends besides its messages (tool schemas, reply primer). */
  fixedTokens: number;
  trigger: Trigger;
  cooldown: CooldownState;
  /** Overflow: how many times the provider has rejected the context in a row (1 = first). */
  attempt?: number;
  /** Id of the user's first message (the goal): protected. */
  goalId?: string;
  /** Whether an LLM summarizer can run: `failed` after it failed its retries (the plan uses the fallback). */
  summarizer: 'available' | 'none' | 'failed';
  /** A forced compaction may name the strategies to use instead of the policy's. */
  strategies?: readonly StrategyName[];
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

/** The summary the plan asks for: the span (bodies the summarizer reads) and where the result goes. */
export interface SummarySpec {
  /** Messages the summarizer reads, in order (a previous summary among them is carried forward). */
  spanIds: string[];
  /** The user's own messages of the span kept verbatim beside the summary. */
  keptUserIds: string[];
  /** Insert the summary message before this id (undefined: at the end), or prepend it to that user message. */
  placement: { mode: 'message'; beforeId?: string } | { mode: 'prepend'; id: string };
  estimatedTokens: number;
  /** What runs instead when the summarizer fails. */
  fallback: StrategyName;
}

export interface PlanStep {
  strategy: StrategyName | 'truncate-oversized';
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
  by: PlanStep['strategy'];
  /** What took its place, if anything. */
  replacedBy?: MessageKind;
}

export interface Plan {
  trigger: Trigger;
  action: 'compress' | 'skip';
  /** Why it compresses (what fired) or why it skips. */
  reason: string;
  target: Target;
  before: ContextStats;
  /** Expected after the plan (the summary at its estimated size). */
  after: ContextStats;
  reachedTarget: boolean;
  /** When the target is out of reach: why, and what the plan did instead. */
  shortfall?: string;
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
  turn: number;
  protect: Protection;
  op: Operation;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

const RANK: Record<Protection, number> = { none: 0, recent: 1, current: 2, fixed: 3 };

/** The protection of each message of `context` under `policy`. */
export function protectionOf(
  context: readonly MessageMeta[],
  policy: CompressionPolicy,
  window: number,
  goalId?: string,
): Protection[] {
  const layout = groupTurns(context);
  const protect: Protection[] = context.map(() => 'none');
  const raise = (i: number, level: Protection) => {
    if (RANK[level] > RANK[protect[i]!]) protect[i] = level;
  };
  for (let i = layout.preamble.start; i < layout.preamble.end; i++) raise(i, 'fixed');
  context.forEach((m, i) => {
    const kind = kindOf(m);
    if (m.role === 'system' || kind === 'ledger' || kind === 'summary' || m.id === goalId) raise(i, 'fixed');
  });
  const turns = layout.turns;
  const current = turns.at(-1);
  if (current) for (let i = current.start; i < current.end; i++) raise(i, 'current');
  for (const turn of turns.slice(Math.max(0, turns.length - 1 - policy.keepTurns), -1)) {
    for (let i = turn.start; i < turn.end; i++) raise(i, 'recent');
  }
  // The last N messages and the reserve, widened to whole atomic groups.
  let firstProtected = Math.max(0, context.length - policy.keepMessages);
  const reserve = policy.reserveRatio * window;
  let reserved = 0;
  for (let i = context.length - 1; i >= 0 && reserve > 0; i--) {
    reserved += context[i]!.tokens;
    if (reserved > reserve) break;
    firstProtected = Math.min(firstProtected, i);
  }
  for (const turn of turns) {
    for (const group of turn.groups) {
      if (group.end > firstProtected) for (let i = group.start; i < group.end; i++) raise(i, 'recent');
    }
  }
  return protect;
}

/** Plans a compression. Deterministic: the same input gives the same plan. */
export function planCompression(input: PlanInput): Plan {
  const { context, policy, window, fixedTokens, trigger } = input;
  const layout = groupTurns(context);
  const turnOf: number[] = context.map(() => -1);
  layout.turns.forEach((turn, t) => {
    for (let i = turn.start; i < turn.end; i++) turnOf[i] = t;
  });
  const protect = protectionOf(context, policy, window, input.goalId);
  const slots: Slot[] = context.map((meta, i) => ({
    meta,
    index: i,
    tokens: meta.tokens,
    turn: turnOf[i]!,
    protect: protect[i]!,
    op: { op: 'keep', id: meta.id },
  }));
  const live = () => slots.filter((s) => s.op.op !== 'drop');
  const turnSlots: Slot[][] = layout.turns.map((turn) => slots.slice(turn.start, turn.end));
  const opensTurn = (s: Slot) => isUserTurn(s.meta);
  // Running totals, kept up to date by `replace`, so that every check is O(1).
  const totals = {
    tokens: slots.reduce((sum, s) => sum + s.tokens, 0),
    messages: slots.length,
    turns: slots.filter(opensTurn).length,
  };
  let summary: SummarySpec | undefined;
  const stats = (): ContextStats => ({
    tokens: fixedTokens + totals.tokens + (summary?.estimatedTokens ?? 0),
    messages: totals.messages + (summary && summary.placement.mode === 'message' ? 1 : 0),
    turns: totals.turns,
  });
  const before = stats();
  const target = targetOf(policy, window, before, trigger, input.cooldown.consecutive, input.attempt ?? 1);
  const met = () => {
    const now = stats();
    return (
      now.tokens <= target.tokens &&
      now.messages <= (target.messages ?? Infinity) &&
      now.turns <= (target.turns ?? Infinity)
    );
  };

  const fired =
    trigger === 'auto'
      ? gateFires(gateOf(policy, window, input.cooldown), before, input.cooldown.consecutive === 0)
      : trigger === 'forced'
        ? 'forced by request'
        : `the provider reported a context overflow (attempt ${input.attempt ?? 1})`;
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
  const run = (strategy: PlanStep['strategy'], body: () => { ids: string[]; note?: string }) => {
    const tokensBefore = stats().tokens;
    const { ids, note } = body();
    if (ids.length > 0) {
      steps.push({
        strategy,
        ids,
        tokensSaved: tokensBefore - stats().tokens,
        ...(note ? { note } : {}),
        ...(strategy === 'summarize' && summary ? { summary } : {}),
      });
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
      if (opensTurn(slot)) totals.turns--;
    }
  };
  const dropTurns = (turnIds: number[]) => {
    const ids: string[] = [];
    for (const t of turnIds) {
      for (const slot of turnSlots[t]!) {
        if (slot.op.op === 'drop' || slot.protect === 'fixed') continue;
        replace(slot, { op: 'drop', id: slot.meta.id }, 0);
        ids.push(slot.meta.id);
      }
    }
    return ids;
  };
  /** Turns whose non-fixed messages are all at or below `level`, oldest first, that still hold something to drop. */
  const droppableTurns = (level: Protection) => {
    const turns: number[] = [];
    turnSlots.forEach((inTurn, t) => {
      const droppable = inTurn.filter((s) => s.op.op !== 'drop' && s.protect !== 'fixed');
      if (droppable.length > 0 && droppable.every((s) => RANK[s.protect] <= RANK[level])) turns.push(t);
    });
    return turns;
  };

  const strategies: Record<StrategyName, () => { ids: string[]; note?: string }> = {
    'truncate-tool-results': () => {
      const { maxTokens, maxChars, headChars, tailChars, olderTurnsOnly } = policy.toolResults;
      const limit: Protection = olderTurnsOnly ? 'none' : 'current';
      const ids: string[] = [];
      for (const slot of live()) {
        const m = slot.meta;
        if (m.role !== 'tool' || slot.op.op !== 'keep' || kindOf(m) !== 'normal') continue;
        if (RANK[slot.protect] > RANK[limit] || (m.chars <= maxChars && slot.tokens <= maxTokens)) continue;
        // Keep head + tail, fewer characters when the text is dense (more tokens per character than the limit allows).
        const keepChars = Math.min(headChars + tailChars, Math.floor((m.chars * maxTokens) / Math.max(1, slot.tokens)));
        if (keepChars >= m.chars) continue;
        const head = Math.round((keepChars * headChars) / Math.max(1, headChars + tailChars));
        const tokens = Math.ceil((slot.tokens * keepChars) / Math.max(1, m.chars)) + STUB_TOKENS;
        if (tokens >= slot.tokens) continue;
        replace(slot, { op: 'truncate', id: m.id, headChars: head, tailChars: keepChars - head }, tokens);
        ids.push(m.id);
      }
      return { ids };
    },
    'mask-tool-results': () => {
      const ids: string[] = [];
      // Oldest first, stopping at the target: every masked result is one the model can no longer read directly.
      for (const slot of live()) {
        if (met()) break;
        const kind = kindOf(slot.meta);
        if (slot.meta.role !== 'tool' || slot.protect !== 'none' || (kind !== 'normal' && kind !== 'truncated'))
          continue;
        if (slot.op.op === 'mask' || slot.op.op === 'offload' || slot.tokens < policy.mask.minTokens) continue;
        if (slot.tokens <= STUB_TOKENS) continue;
        replace(slot, { op: 'mask', id: slot.meta.id }, STUB_TOKENS);
        ids.push(slot.meta.id);
      }
      return { ids };
    },
    'offload-large': () => {
      const { minChars, previewChars, includeProtected } = policy.offload;
      const ids: string[] = [];
      const pass = (level: Protection) => {
        for (const slot of live()) {
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
      if (input.summarizer !== 'available') {
        const why = input.summarizer === 'none' ? 'no summarizer is configured' : 'the summarizer failed';
        const fallback = policy.summary.fallback;
        const ids = fallback === 'halve' ? halve() : truncateRounds();
        return { ids, note: `${why}: ${fallback} instead` };
      }
      let turns = droppableTurns('none');
      if (policy.summary.span === 'oldest-half') turns = turns.slice(0, Math.ceil(turns.length / 2));
      const previous = live().filter((s) => kindOf(s.meta) === 'summary' && s.meta.role === 'user');
      const inSpan = new Set(turns);
      const span = live().filter((s) => (inSpan.has(s.turn) && s.protect !== 'fixed') || previous.includes(s));
      if (span.length - previous.length < 2) return { ids: [] };
      const spanTokens = span.reduce((sum, s) => sum + s.tokens, 0);
      const estimatedTokens = Math.min(policy.summary.maxTokens, Math.max(64, Math.ceil(spanTokens * 0.25)));
      // The user's own words, newest first, up to the budget: they stay verbatim.
      const keptUser = new Set<Slot>();
      let budget = policy.summary.keepUserTokens;
      for (const slot of [...span].reverse()) {
        if (slot.meta.role !== 'user' || kindOf(slot.meta) !== 'normal' || slot.tokens > budget) continue;
        keptUser.add(slot);
        budget -= slot.tokens;
      }
      const removed = span.filter((s) => !keptUser.has(s));
      // Worth an LLM call only if the summary at most halves what it replaces.
      if (spanTokens - [...keptUser].reduce((sum, s) => sum + s.tokens, 0) < 2 * estimatedTokens) return { ids: [] };
      const lastSpanIndex = span.at(-1)!.index;
      const after = slots.slice(lastSpanIndex + 1).filter((s) => s.op.op !== 'drop');
      const firstUserAfter = after.find(
        (s) => s.meta.role === 'user' && kindOf(s.meta) === 'normal' && s.op.op === 'keep',
      );
      const placement: SummarySpec['placement'] =
        policy.summary.placement === 'first-kept-user' && firstUserAfter
          ? { mode: 'prepend', id: firstUserAfter.meta.id }
          : { mode: 'message', ...(after[0] ? { beforeId: after[0].meta.id } : {}) };
      for (const slot of removed) replace(slot, { op: 'drop', id: slot.meta.id }, 0);
      if (placement.mode === 'prepend') firstUserAfter!.protect = 'fixed'; // it carries the summary now
      summary = {
        spanIds: span.map((s) => s.meta.id),
        keptUserIds: [...keptUser].map((s) => s.meta.id).reverse(),
        placement,
        estimatedTokens,
        fallback: policy.summary.fallback,
      };
      return { ids: removed.map((s) => s.meta.id) };
    },
    'compact-turns': () => {
      // Keep only the user's text and the final reply of each unprotected turn.
      const ids: string[] = [];
      for (const t of droppableTurns('none')) {
        const inTurn = turnSlots[t]!.filter((s) => s.op.op !== 'drop');
        const finalReply = inTurn.findLast((s) => s.meta.role === 'assistant' && !(s.meta.toolCallIds?.length ?? 0));
        for (const slot of inTurn) {
          if (slot.protect === 'fixed' || slot === finalReply || slot.meta.role === 'user') continue;
          replace(slot, { op: 'drop', id: slot.meta.id }, 0);
          ids.push(slot.meta.id);
        }
      }
      return { ids };
    },
    'truncate-rounds': () => ({ ids: truncateRounds() }),
    halve: () => ({ ids: halve() }),
  };

  function truncateRounds(): string[] {
    const ids: string[] = [];
    let turns = droppableTurns('none');
    while (!met() && turns.length > 0) {
      ids.push(...dropTurns(turns.slice(0, policy.truncateRounds.perStep)));
      turns = droppableTurns('none');
    }
    return ids;
  }

  /** Emergency: drop the oldest half of the turns (recent ones included; never the current turn or fixed messages). */
  function halve(): string[] {
    const ids: string[] = [];
    let turns = droppableTurns('recent');
    while (!met() && turns.length > 0) {
      ids.push(...dropTurns(turns.slice(0, Math.ceil(turns.length / 2))));
      turns = droppableTurns('recent');
    }
    return ids;
  }

  const order = input.strategies?.length ? input.strategies : policy.strategies;
  for (const name of order) {
    if (met()) break;
    if (run(name, strategies[name]) && policy.oneStrategyPerCheck && trigger === 'auto') break;
  }

  // Emergency: a request over the hard limit cannot be sent. Cut the largest messages (even protected ones, never
  // the system prompt or the summary) until it fits, leaving head and tail and the reference to the original.
  const hardLimit = Math.floor(policy.hardLimitRatio * window);
  if (stats().tokens > hardLimit) {
    run('truncate-oversized', () => {
      const ids: string[] = [];
      const candidates = live()
        .filter((s) => s.meta.role !== 'system' && kindOf(s.meta) !== 'summary' && s.tokens > EMERGENCY_MIN_TOKENS)
        .filter((s) => s.op.op === 'keep' || s.op.op === 'truncate')
        .filter((s) => !(summary?.placement.mode === 'prepend' && summary.placement.id === s.meta.id))
        .sort((a, b) => b.tokens - a.tokens || a.index - b.index);
      for (const slot of candidates) {
        const excess = stats().tokens - Math.min(target.tokens, hardLimit);
        if (excess <= 0) break;
        const keepTokens = Math.max(EMERGENCY_MIN_TOKENS, slot.tokens - excess - STUB_TOKENS);
        const chars = slot.meta.chars;
        const keepChars = Math.floor((chars * keepTokens) / Math.max(1, slot.meta.tokens));
        if (keepChars >= chars) continue;
        const head = Math.ceil(keepChars * 0.7);
        replace(
          slot,
          { op: 'truncate', id: slot.meta.id, headChars: head, tailChars: keepChars - head },
          keepTokens + STUB_TOKENS,
        );
        ids.push(slot.meta.id);
      }
      return { ids, note: `over the hard limit (${hardLimit} tokens): the largest messages cut to head and tail` };
    });
  }

  const after = stats();
  const reachedTarget = met();
  const removed: RemovedItem[] = [];
  const lastStepOf = new Map<string, PlanStep>();
  for (const step of steps) for (const id of step.ids) lastStepOf.set(id, step);
  for (const slot of slots) {
    if (slot.op.op === 'keep') continue;
    const step = lastStepOf.get(slot.meta.id)!;
    const replacedBy = slot.op.op === 'drop' ? undefined : REPLACED_KIND[slot.op.op];
    removed.push({
      id: slot.meta.id,
      role: slot.meta.role,
      tokens: slot.meta.tokens,
      key: originalKeyOf(slot.meta),
      by: step.strategy,
      ...(replacedBy ? { replacedBy } : {}),
    });
  }
  if (summary?.placement.mode === 'prepend') {
    const id = summary.placement.id;
    const slot = slots.find((s) => s.meta.id === id)!;
    removed.push({
      id,
      role: slot.meta.role,
      tokens: slot.meta.tokens,
      key: originalKeyOf(slot.meta),
      by: 'summarize',
      replacedBy: 'summary',
    });
  }

  const operations = slots.map((s) => s.op);
  if (steps.length === 0) {
    const protectedTokens = slots.filter((s) => s.protect !== 'none').reduce((sum, s) => sum + s.tokens, 0);
    return {
      ...base,
      action: 'skip',
      reason: `nothing to compress: ${fired}, but no strategy of [${order.join(', ')}] applies (protected messages hold ${protectedTokens} tokens)`,
      after,
      reachedTarget,
      ...(reachedTarget ? {} : { shortfall: shortfallOf(after, target, slots) }),
      operations,
    };
  }

  let cost: CostEstimate | undefined;
  if (policy.cost) {
    const summaryIn = summary
      ? slots.filter((s) => summary!.spanIds.includes(s.meta.id)).reduce((n, s) => n + s.meta.tokens, 0)
      : 0;
    cost = estimateCost(policy.cost, before.tokens, after.tokens, summaryIn, summary?.estimatedTokens ?? 0);
    if (trigger === 'auto' && cost.netBenefit < 0 && before.tokens < hardLimit) {
      return {
        ...base,
        action: 'skip',
        reason: `not worth it: compressing would cost ${cost.withCompression.toFixed(4)} against ${cost.withoutCompression.toFixed(4)} without (below the hard limit of ${hardLimit} tokens)`,
        after: before,
        reachedTarget: false,
        operations: slots.map((s) => ({ op: 'keep', id: s.meta.id })),
        cost,
      };
    }
  }

  return {
    trigger,
    action: 'compress',
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
    `summary, goal, current and recent turns) hold ${heldTokens} tokens` +
    (largest ? `, the largest ${largest.meta.id} (${largest.meta.role}, ${largest.tokens} tokens)` : '')
  );
}
