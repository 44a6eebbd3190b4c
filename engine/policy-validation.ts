/**
 * Checking a compaction policy (policy.ts) field by field: the first value out of range is a {@link PolicyError} naming
 * the field, the value and the allowed range. Also checks one tool's limits, for a policy's `tools` and for a tool's
 * own definition (activities/tools.ts `defineTool`).
 */
import {
  MAX_CONTEXT_MESSAGES,
  MAX_REVIEW_SECONDS,
  MESSAGE_COUNTINGS,
  MIN_RESULT_TOKENS,
  PolicyError,
  STRATEGIES,
  TOOL_LIMIT_FIELDS,
  TOOL_NAME_PATTERN,
  TRIGGER_COMPARISONS,
} from './policy.ts';
import type { CompactionPolicy, CostModel, LoopGuard, ReviewPolicy, ToolLimits } from './policy.ts';

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
  if (policy.halveOnCountLimit !== undefined) flag('halveOnCountLimit', policy.halveOnCountLimit);
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
  oneOf('summary.span', policy.summary.span, ['all', 'oldest-half', 'older-rounds']);
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
