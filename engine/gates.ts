/**
 * The gates the activities set (trigger.ts holds what the workflow compares them with): after a compaction or at
 * the agent's start, with the cooldown's floor and the loop guard's pause; after a plan that found nothing worth
 * doing; after a masking pass that found too little.
 */
import { growthUntilWorthIt, tokensPerCallOf } from './compaction-value.ts';
import type { CostEstimate } from './compaction-value.ts';
import { COUNT_HALVES_OVER } from './policy.ts';
import type { CompactionPolicy } from './policy.ts';
import { holdGrowth, NO_COOLDOWN, pausedGate } from './trigger.ts';
import type { CooldownState, Gate, Trigger } from './trigger.ts';

/**
 * The least whole count that reaches `threshold` (`n ≥ threshold`), never rounded down: 820.82 is reached at 821.
 * A product of decimal ratios (1,000 × 1.1 = 1,100.0000000000002 in floating point) is taken at its exact value.
 */
export function leastReaching(threshold: number): number {
  return Math.ceil(exactly(threshold));
}

/** The least whole count that exceeds `threshold` (`n > threshold`): 50,001 exceeds 50,000, 821 exceeds 820.82. */
export function leastExceeding(threshold: number): number {
  return Math.floor(exactly(threshold)) + 1;
}

/** `x`, snapped to the nearest integer when it is one but for floating point's last bits. */
function exactly(x: number): number {
  const whole = Math.round(x);
  return Math.abs(x - whole) <= 1e-9 * Math.max(1, Math.abs(x)) ? whole : x;
}

/**
 * The token trigger for a model `window`: the least count that fires (the lowest of ratio, budget and first level,
 * each compared as the policy says, `triggerWhen`), and, when the one that fires first is an `exceeds` one, the
 * threshold it must exceed (`over`, for the reason).
 */
export function triggerOf(policy: CompactionPolicy, window: number): { tokens: number; over?: number } {
  const exceeds = policy.triggerWhen === 'exceeds';
  const least = exceeds ? leastExceeding : leastReaching;
  const byRatio = policy.triggerRatio * window;
  let found: { tokens: number; over?: number } = { tokens: least(byRatio), ...(exceeds ? { over: byRatio } : {}) };
  if (policy.maxTokens !== undefined && least(policy.maxTokens) < found.tokens) {
    found = { tokens: least(policy.maxTokens), ...(exceeds ? { over: policy.maxTokens } : {}) };
  }
  const level = policy.pressureLevels?.[0]?.atTokens; // a pressure level is reached
  if (level !== undefined && level < found.tokens) found = { tokens: level };
  if (found.over !== undefined) found.over = Number(exactly(found.over).toFixed(2));
  return found;
}

/** The tokens at which the policy triggers for a model `window` (the least count that fires, {@link triggerOf}). */
export function triggerTokens(policy: CompactionPolicy, window: number): number {
  return triggerOf(policy, window).tokens;
}

/** Growth required before the next compaction, after `consecutive` compactions without a user message. */
export function requiredGrowth(policy: CompactionPolicy, consecutive: number): number {
  if (consecutive <= 0 || policy.cooldown.length === 0) return 0;
  return policy.cooldown[Math.min(consecutive, policy.cooldown.length) - 1]!;
}

/** The gate after a compaction that left `cooldown.lastTokensAfter` tokens (or at the agent's start). */
export function gateOf(policy: CompactionPolicy, window: number, cooldown: CooldownState = NO_COOLDOWN): Gate {
  // The cooldown's step is reached at exactly its growth (+10% of 1,000 tokens: at 1,100).
  const floor = leastReaching(cooldown.lastTokensAfter * (1 + requiredGrowth(policy, cooldown.consecutive)));
  const { pausedUntil, ...running } = cooldown;
  if (pausedUntil !== undefined) return pausedGate(gateOf(policy, window, running), pausedUntil);
  const trigger = triggerOf(policy, window);
  return {
    tokens: trigger.tokens,
    ...(trigger.over !== undefined ? { over: trigger.over } : {}),
    ...(policy.maxMessages !== undefined ? { messages: policy.maxMessages } : {}),
    ...(policy.maxMessages !== undefined && policy.countMessages === 'working-memory'
      ? { countMessages: 'working-memory' as const }
      : {}),
    ...(policy.maxTurns !== undefined ? { turns: policy.maxTurns } : {}),
    ...(policy.holdInToolLoop ? { holdInToolLoop: true as const } : {}),
    floorAfterUser: 0,
    floorWithoutUser: cooldown.consecutive > 0 ? floor : 0,
    hard: Math.floor(policy.hardLimitRatio * window),
    ...(policy.backgroundRatio !== undefined ? { background: Math.floor(policy.backgroundRatio * window) } : {}),
    ...(policy.strategies.includes('truncate-tool-results')
      ? {
          toolResults: {
            maxTokens: policy.toolResults.maxTokens,
            maxChars: policy.toolResults.maxChars,
            newest: !policy.toolResults.olderTurnsOnly,
            ...(policy.toolResults.olderTurnsOnly ? { earlierTurns: true as const } : {}),
          },
        }
      : {}),
    ...maskGate(policy, window, cooldown.maskedTokensAfter ?? cooldown.lastTokensAfter),
  };
}

/** The masking pass's part of the gate, held until `from` tokens plus the least it must save. */
function maskGate(policy: CompactionPolicy, window: number, from: number): Pick<Gate, 'mask'> {
  if (policy.mask.fromRatio === undefined || !policy.strategies.includes('mask-tool-results')) return {};
  const atLeast = Math.ceil((policy.mask.atLeastRatio ?? 0) * window);
  return { mask: { tokens: Math.floor(policy.mask.fromRatio * window), atLeast, floor: from + atLeast } };
}

/**
 * The gate after a plan that found nothing worth doing at `tokens`: it holds until the context has grown by
 * `growth`, a user message or not (else every model call of a long loop would plan again for nothing). The hard
 * limit still fires. A policy whose count limit halves nothing (`halveOnCountLimit: false`) holds that limit too,
 * once it fired (`messages`: the context's count), until the count has grown as much, up to the state's bound.
 */
export function gateAfterSkip(
  policy: CompactionPolicy,
  window: number,
  tokens: number,
  growth: number,
  cooldown: CooldownState = NO_COOLDOWN,
  messages?: number,
): Gate {
  // A pause of the loop guard holds on (a forced request that found nothing to do does not lift it).
  const floor = Math.max(leastReaching(tokens * (1 + growth)), cooldown.pausedUntil ?? 0);
  // Without the tool-result check: a result the plan could not cut would make it plan again on every call.
  const { toolResults: _, ...gate } = gateOf(policy, window);
  const holdsCount =
    policy.halveOnCountLimit === false &&
    gate.messages !== undefined &&
    messages !== undefined &&
    messages > gate.messages;
  return {
    ...gate,
    floorAfterUser: floor,
    floorWithoutUser: floor,
    ...(gate.mask ? { mask: { ...gate.mask, floor } } : {}),
    ...(holdsCount ? { messages: Math.min(COUNT_HALVES_OVER, leastReaching(messages * (1 + growth)) - 1) } : {}),
    ...(cooldown.pausedUntil !== undefined ? { pausedUntil: cooldown.pausedUntil } : {}),
  };
}

/**
 * The gate after a masking pass that found less than its minimum to mask at `tokens`: the pass holds until the
 * context has grown by `growth`; the token trigger and everything else stay as they were (`cooldown`).
 */
export function gateAfterMaskSkip(
  policy: CompactionPolicy,
  window: number,
  cooldown: CooldownState,
  tokens: number,
  growth: number,
): Gate {
  const gate = gateOf(policy, window, cooldown);
  return gate.mask ? { ...gate, mask: { ...gate.mask, floor: leastReaching(tokens * (1 + growth)) } } : gate;
}

/**
 * The gate after a plan of an automatic trigger was skipped at `tokens` (`plan`: what it was): a masking pass holds
 * back only itself ({@link gateAfterMaskSkip}); a tool-result cut (one that could not be made, or would not pay for
 * the prompt cache it invalidates) waits for the next compaction, which cuts it with the rest: the gate is the
 * cooldown's, without the tool-result check; anything else holds until growth ({@link gateAfterSkip}).
 */
export function gateAfterPlanSkip(
  policy: CompactionPolicy,
  window: number,
  cooldown: CooldownState,
  plan: { maskPass?: true; toolResultCut?: true; tokens: number; messages?: number },
  growth: number,
): Gate {
  if (plan.maskPass) return gateAfterMaskSkip(policy, window, cooldown, plan.tokens, growth);
  if (plan.toolResultCut) {
    const { toolResults: _, ...gate } = gateOf(policy, window, cooldown);
    return gate;
  }
  return gateAfterSkip(policy, window, plan.tokens, growth, cooldown, plan.messages);
}

/**
 * The gate after the plan of an automatic `trigger` was skipped at `plan.tokens`, as {@link gateAfterPlanSkip} moves
 * it. One that did not pay (`plan.cost`, a negative net benefit) holds until it would, at the session's pace
 * (engine/compaction-value.ts `growthUntilWorthIt`), not for the fixed hold only: planning again sooner finds the same
 * answer. A background compaction that did not pay is not tried again before the next compaction: the trigger's own
 * check prices it then.
 */
export function gateAfterSkippedPlan(
  policy: CompactionPolicy,
  window: number,
  cooldown: CooldownState,
  plan: { maskPass?: true; toolResultCut?: true; tokens: number; messages?: number; cost?: CostEstimate },
  trigger: Trigger,
  callsSinceCompaction: number | undefined,
): Gate {
  const untilWorthIt =
    plan.cost && policy.cost
      ? growthUntilWorthIt(
          plan.cost,
          policy.cost,
          tokensPerCallOf(plan.tokens, cooldown.lastTokensAfter, callsSinceCompaction),
        )
      : undefined;
  const growth = Math.max(holdGrowth(policy), untilWorthIt ?? 0);
  const gate = gateAfterPlanSkip(policy, window, cooldown, plan, growth);
  if (trigger === 'background' && untilWorthIt !== undefined) delete gate.background;
  return gate;
}
