/**
 * The orchestration: what fired and the target, then the steps in order (a tool-result cut or a masking pass alone;
 * else the loop guard's offloading or the policy's strategies, cheapest first, until the target is met), the
 * hard-limit fit, the summary spec, and the last word (a compaction that would not shrink the context, or would cost
 * more than it saves with the prompt cache it invalidates, is a skip).
 */
import { gateOf, triggerOf, triggerTokens } from '../gates.ts';
import { offloadsLargest } from '../loop-guard.ts';
import { COUNT_HALVES_OVER } from '../policy.ts';
import { backgroundFires, compactionDue, isAutomatic } from '../trigger.ts';
import type { ContextStats, Gate } from '../trigger.ts';
import { targetOf } from '../target.ts';
import type { Target } from '../target.ts';
import { Board } from './board.ts';
import type { Planning, StepResult } from './board.ts';
import { fitWindow, truncateOversized } from './fit.ts';
import { offloadLargest } from './replacing.ts';
import { preflight } from './preflight.ts';
import { lastWordOf } from './last-word.ts';
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
  /** A masking pass that would save too little: nothing planned. */
  const maskPassSkip = (reason: string): Plan => ({
    ...base,
    action: 'skip',
    maskPass: true,
    reason,
    after: before,
    reachedTarget: false,
    operations: slots.map((s) => ({ op: 'keep', id: s.meta.id })),
  });
  const planning: Planning = { board, input, maskPass, met, target };
  const strategies = strategiesOf(planning);

  const order = input.strategies?.length ? input.strategies : policy.strategies;
  if (oversized) run('truncate-tool-results', strategies['truncate-tool-results']);
  if (maskPass) {
    // The one decision the workflow made before it asked for this plan (preflight.ts): a pass it skips is skipped.
    const skip = preflight({
      context: input.context,
      policy,
      window,
      cooldown: input.cooldown,
      stats: before,
      fixedTokens: input.fixedTokens,
      goalId: input.goalId,
      pinnedIds: input.pinnedIds,
      callsSinceCompaction: input.callsSinceCompaction,
      priced: false,
    });
    if (skip) return maskPassSkip(skip.skipped);
    run('mask-tool-results', strategies['mask-tool-results']);
    const saved = before.tokens - board.stats().tokens;
    if (saved < gate.mask!.atLeast) {
      return maskPassSkip(`${maskPass}: masking would save ${saved} tokens, less than ${gate.mask!.atLeast}`);
    }
  }
  // After ineffective compactions in a row, the loop guard's attempt instead (the policy's when it finds nothing).
  const guarded = !maskPass && !oversized && offloadsLargest(policy, input.cooldown, trigger);
  const offloaded = guarded && run('offload-largest', () => offloadLargest(planning));
  // Halving breaks the policy's protection of the newest steps: an automatic compaction that the strategies before
  // it brought under the trigger's tokens stops short of its target instead (its shortfall recorded), rather than
  // fold the steps it promised to keep into the summary. A count limit that fired (unless the policy says it halves
  // nothing, `halveOnCountLimit`, below the state's bound), a forced compaction and an overflow still halve to their
  // target.
  const countHalves =
    (target.messages !== undefined || target.turns !== undefined) &&
    (policy.halveOnCountLimit !== false || before.messages > COUNT_HALVES_OVER);
  const emergencyNotNeeded = () =>
    isAutomatic(trigger) && !countHalves && board.stats().tokens < triggerTokens(policy, window);
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

  const last = lastWordOf(input, board, {
    base,
    before,
    after,
    target,
    steps,
    summary,
    oversized,
    maskPass,
    hardLimit,
  });
  if ('skip' in last) return last.skip;
  const { cost } = last;

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
