/**
 * The orchestration: what fired and the target, then the steps in order (a tool-result cut or a masking pass alone;
 * else the loop guard's offloading or the policy's strategies, cheapest first, until the target is met), the
 * hard-limit fit, the summary spec, and the last word (a compaction that would not shrink the context, or would cost
 * more than it saves with the prompt cache it invalidates, is a skip).
 */
import { estimateCost, tokensPerCallOf } from '../compaction-value.ts';
import type { CostEstimate } from '../compaction-value.ts';
import { MAX_CONTEXT_MESSAGES } from '../policy.ts';
import { gateOf, triggerOf, triggerTokens } from '../gates.ts';
import { offloadsLargest } from '../loop-guard.ts';
import { backgroundFires, compactionDue, isAutomatic } from '../trigger.ts';
import type { ContextStats, Gate } from '../trigger.ts';
import { targetOf } from '../target.ts';
import type { Target } from '../target.ts';
import { Board } from './board.ts';
import type { Planning, StepResult } from './board.ts';
import { fitWindow, truncateOversized } from './fit.ts';
import { cachedPrefixOf, unsentTokensOf } from './prefix.ts';
import { offloadLargest } from './replacing.ts';
import { removedOf, shortfallOf } from './report.ts';
import { strategiesOf } from './strategies.ts';
import { summarySpecOf } from './summary-spec.ts';
import type { Plan, PlanInput, PlanStep, PlanStepName } from './types.ts';

/** Plans a compaction. Deterministic: the same input gives the same plan. */
export function planCompaction(input: PlanInput): Plan {
  const { policy, window, trigger } = input;
  const board = new Board(input);
  const { slots } = board;
  const before = board.stats();
  // The trigger and the target compare the messages the policy counts (policy `countMessages`).
  const counted = { ...before, messages: board.countedMessages() };
  const target = targetOf(policy, window, counted, trigger, input.cooldown.consecutive, input.attempt ?? 1);
  untilTrigger(input, target);
  const hardLimit = Math.floor(policy.hardLimitRatio * window);
  const met = () => board.meets(target);

  const { gate, fired, oversized, maskPass } = whatFired(input, counted, target);
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
  const run = (strategy: PlanStepName, body: () => StepResult) => {
    const tokensBefore = board.stats().tokens;
    const { ids, note } = body();
    if (ids.length > 0) {
      steps.push({ strategy, ids, tokensSaved: tokensBefore - board.stats().tokens, ...(note ? { note } : {}) });
    }
    return ids.length > 0;
  };
  const planning: Planning = { board, input, maskPass, met };
  const strategies = strategiesOf(planning);

  const order = input.strategies?.length ? input.strategies : policy.strategies;
  if (oversized) run('truncate-tool-results', strategies['truncate-tool-results']);
  if (maskPass) {
    run('mask-tool-results', strategies['mask-tool-results']);
    const saved = before.tokens - board.stats().tokens;
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
  const offloaded = guarded && run('offload-largest', () => offloadLargest(planning));
  // Halving breaks the policy's protection of the newest steps: an automatic compaction that the strategies before
  // it brought under the trigger's tokens stops short of its target instead (its shortfall recorded), rather than
  // fold the steps it promised to keep into the summary. A count limit that fired, a forced compaction and an
  // overflow still halve to their target.
  const emergencyNotNeeded = () =>
    isAutomatic(trigger) &&
    target.messages === undefined &&
    target.turns === undefined &&
    board.stats().tokens < triggerTokens(policy, window);
  for (const name of maskPass || offloaded ? [] : order) {
    if (met()) break;
    if (name === 'halve' && emergencyNotNeeded()) break;
    if (run(name, strategies[name]) && policy.oneStrategyPerCheck && isAutomatic(trigger)) break;
  }

  // Every request fits (fit.ts).
  const limit = Math.min(target.tokens, hardLimit);
  if (board.stats().tokens > hardLimit) run('fit-window', () => fitWindow(board, hardLimit, limit));
  if (board.stats().tokens > hardLimit) run('truncate-oversized', () => truncateOversized(board, hardLimit, limit));

  const summary = summarySpecOf(board, input, steps);
  const after = board.stats();
  const reachedTarget = met();
  const removed = removedOf(board, steps, summary);

  const operations = slots.map((s) => s.op);
  if (steps.length === 0) {
    const protectedTokens = slots.filter((s) => s.protect !== 'none').reduce((sum, s) => sum + s.tokens, 0);
    return {
      ...base,
      action: 'skip',
      ...(oversized ? { toolResultCut: true as const } : {}),
      reason: `nothing to compact: ${fired}, but no strategy of [${order.join(', ')}] applies (protected messages hold ${protectedTokens} tokens)`,
      after,
      reachedTarget,
      ...(reachedTarget ? {} : { shortfall: shortfallOf(after, target, slots) }),
      operations,
    };
  }

  // A compaction that would leave as many tokens as it found is not made (the ledger and the summary's frame can
  // outweigh a small span): an automatic one holds until the context grows, as a skip does; a forced one says there
  // is nothing to gain, and is made only when asked for even so (`evenIfLarger`). A message or turn limit that fired
  // is met by fewer messages, whatever the tokens; an overflow must fit, whatever it costs.
  const countsMet =
    (target.messages !== undefined && after.messages < before.messages) ||
    (target.turns !== undefined && after.turns < before.turns);
  const noGain = after.tokens >= before.tokens && !countsMet && trigger !== 'overflow';
  const decides = input.lastWord !== false;
  if (decides && noGain && (isAutomatic(trigger) || (trigger === 'forced' && !input.evenIfLarger))) {
    const strategies = steps.map((s) => s.strategy).join(', ');
    return {
      ...base,
      action: 'skip',
      ...(oversized ? { toolResultCut: true as const } : {}),
      reason: isAutomatic(trigger)
        ? `would not shrink the context: ${before.tokens} tokens, ${after.tokens} expected after [${strategies}]`
        : noGainReason(before.tokens, after.tokens, strategies),
      noGain: { tokensBefore: before.tokens, tokensAfter: after.tokens },
      after: before,
      reachedTarget: false,
      operations: slots.map((s) => ({ op: 'keep', id: s.meta.id })),
    };
  }

  let cost: CostEstimate | undefined;
  if (policy.cost) {
    // The summary call costs what the summary model reads and writes; the extractive summarizer costs nothing.
    const summaryCall = summary?.writer === 'model';
    cost = estimateCost(
      policy.cost,
      before.tokens,
      after.tokens,
      summaryCall ? board.summarizedTokens : 0,
      summaryCall ? summary.estimatedTokens : 0,
      input.callsSinceCompaction,
      {
        cachedPrefixTokens: cachedPrefixOf(slots, input.fixedTokens, summary),
        unsentTokens: unsentTokensOf(slots),
        tokensPerCall: tokensPerCallOf(before.tokens, input.cooldown.lastTokensAfter, input.callsSinceCompaction),
      },
    );
    // The hard limit, the bound on the context's messages and a message or turn limit that fired override the cost
    // decision: a request that would not fit is never sent. Below them, an automatic compaction that does not pay
    // waits (a masking pass or a cut goes with the next compaction that does).
    const bounded =
      before.tokens >= hardLimit ||
      before.messages > (policy.maxMessages ?? MAX_CONTEXT_MESSAGES) ||
      target.messages !== undefined ||
      target.turns !== undefined;
    if (decides && isAutomatic(trigger) && cost.netBenefit < 0 && !bounded) {
      return {
        ...base,
        action: 'skip',
        ...(maskPass ? { maskPass: true as const } : {}),
        ...(oversized ? { toolResultCut: true as const } : {}),
        reason:
          `not worth it: compacting would cost ${cost.withCompaction.toFixed(4)} against ` +
          `${cost.withoutCompaction.toFixed(4)} without over ${cost.remainingTurns} remaining calls ` +
          `(${REMAINING_FROM[cost.remainingFrom]}; ${cost.invalidatedTokens} tokens ` +
          `out of the prompt cache from its first change on; below the hard limit of ${hardLimit} tokens)`,
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

/**
 * AstrBot without a summary model (policy `truncateRounds.until: 'trigger'`): an automatic compaction drops rounds
 * until the context meets the requirement, just below the trigger, not down to the target ratio.
 */
function untilTrigger(input: PlanInput, target: Target): void {
  const { policy, summarizer } = input;
  if (policy.truncateRounds.until !== 'trigger' || !isAutomatic(input.trigger)) return;
  if (target.messages !== undefined || target.turns !== undefined || target.level !== undefined) return;
  const fallback = summarizer === 'failed' || (summarizer === 'none' && policy.summary.withoutModel === 'fallback');
  if (!fallback || policy.summary.fallback !== 'truncate-rounds') return;
  const below = triggerOf(policy, input.window).tokens - 1;
  if (below <= target.tokens) return;
  target.tokens = below;
  target.reason = `below the trigger (${below} tokens): rounds dropped until the context meets it`;
}

/** Where the remaining calls a cost decision priced came from, as its reason says it. */
const REMAINING_FROM: Record<CostEstimate['remainingFrom'], string> = {
  pace: "the session's pace",
  policy: 'the policy',
  estimate: "the policy's estimate until the session's pace is known",
};

/** Why a forced compaction whose plan expects no gain is not made (the CLI and the client print it as it is). */
export function noGainReason(before: number, after: number, strategies: string): string {
  return (
    `nothing to gain (${before} → ~${after} tokens): [${strategies}] would leave the context larger, the summary's ` +
    'frame and the task ledger outweighing what leaves; not compacted'
  );
}

/**
 * What fired (undefined: nothing, below the trigger), and whether it is one of the two passes under no pressure that
 * do one thing only: a cut of a tool result over the policy's limit (`oversized`), or the masking pass below the
 * trigger (`maskPass`, its reason). Either sets the `target`'s tokens and reason.
 */
function whatFired(
  input: PlanInput,
  before: ContextStats,
  target: Target,
): { gate: Gate; fired: string | undefined; oversized: boolean; maskPass: string | undefined } {
  const { context, policy, window, trigger } = input;
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
  return { gate, fired, oversized, maskPass };
}
