/**
 * What model calls cost: a model's price per million tokens (fresh input, cached input, output) and the pure
 * arithmetic that turns a call's usage into US dollars, sums an agent's calls and prices the prompt cache a
 * compaction invalidates. The workflow runs it (lint/workflow-bundle.js), so it stays free of I/O and of anything
 * that may change for a recorded history: prices come from the agent's state, never from here.
 *
 * A price that is not known is `undefined`, and a cost computed without one is `null`: never 0, which would read as
 * "free".
 *
 * @example
 *   costOf({ promptTokens: 12_000, cachedTokens: 10_240, completionTokens: 300 }, priceOf({ inputPerMillion: 0.15, outputPerMillion: 0.6 }))
 *   // (1,760 × 0.15 + 10,240 × 0.015 + 300 × 0.6) / 1e6 = $0.0005976
 */

/** A model's price in USD per million tokens; `cachedInputPerMillion` defaults to {@link DEFAULT_CACHED_INPUT_RATIO} × input. */
export interface ModelPrice {
  inputPerMillion: number;
  cachedInputPerMillion?: number;
  outputPerMillion: number;
}

/** A price with every part set (what {@link priceOf} returns). */
export type ResolvedPrice = Required<ModelPrice>;

/** The share of the input price a cached input token costs when a price gives none (OpenAI's newer models: 0.1×). */
export const DEFAULT_CACHED_INPUT_RATIO = 0.1;

/** The highest price per million tokens accepted (a price above it is a typo, not a model). */
export const MAX_PRICE_PER_MILLION = 10_000;

const PER_MILLION = 1_000_000;

/** Tokens of one model call, as the provider reported them (cached tokens are part of `promptTokens`). */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** Of `promptTokens`, those served from the prompt cache; absent: none known. */
  cachedTokens?: number;
}

/** Thrown for a price outside its range; names the field, the value and the range. */
export class PriceError extends Error {
  constructor(
    field: string,
    value: unknown,
    why = `a number of USD per million tokens from 0 to ${MAX_PRICE_PER_MILLION}`,
  ) {
    super(`${field}: ${JSON.stringify(value) ?? String(value)} is not a price (${why})`);
    this.name = 'PriceError';
  }
}

/** Checks a price's parts (`field` prefixes their names in the error, e.g. `modelOverride.price`). */
export function validatePrice(price: unknown, field = 'price'): asserts price is ModelPrice {
  if (price === null || typeof price !== 'object' || Array.isArray(price)) {
    throw new PriceError(field, price);
  }
  const parts = price as Record<string, unknown>;
  for (const key of Object.keys(parts)) {
    if (key !== 'inputPerMillion' && key !== 'cachedInputPerMillion' && key !== 'outputPerMillion') {
      throw new PriceError(
        `${field}.${key}`,
        parts[key],
        'unknown: a price has inputPerMillion, cachedInputPerMillion, outputPerMillion',
      );
    }
  }
  const check = (key: string, required: boolean) => {
    const value = parts[key];
    if (value === undefined && !required) return;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_PRICE_PER_MILLION) {
      throw new PriceError(`${field}.${key}`, value);
    }
  };
  check('inputPerMillion', true);
  check('cachedInputPerMillion', false);
  check('outputPerMillion', true);
}

/** The price with its cached input set: as given, else {@link DEFAULT_CACHED_INPUT_RATIO} × input. */
export function priceOf(price: ModelPrice): ResolvedPrice {
  return {
    inputPerMillion: price.inputPerMillion,
    cachedInputPerMillion: price.cachedInputPerMillion ?? price.inputPerMillion * DEFAULT_CACHED_INPUT_RATIO,
    outputPerMillion: price.outputPerMillion,
  };
}

/**
 * One call's cost in USD: uncached input at the input price, cached input at the cached price, output at the output
 * price. Null without a price. Cached tokens above the prompt's are read as the whole prompt cached.
 */
export function costOf(usage: TokenUsage, price: ModelPrice | undefined): number | null {
  if (!price) return null;
  const p = priceOf(price);
  const cached = Math.min(Math.max(0, usage.cachedTokens ?? 0), usage.promptTokens);
  return (
    ((usage.promptTokens - cached) * p.inputPerMillion +
      cached * p.cachedInputPerMillion +
      usage.completionTokens * p.outputPerMillion) /
    PER_MILLION
  );
}

/** What an agent's calls spent, summed: its model calls, and apart from them its compactions' summary calls. */
export interface Spend {
  /** Model calls of the agent's turns. */
  calls: number;
  promptTokens: number;
  /** Of `promptTokens`, those the provider served from its cache. */
  cachedTokens: number;
  completionTokens: number;
  /** Calls whose provider reported no usage: their tokens are longrun's count, none of them cached. */
  countedCalls: number;
  /** USD of the model calls at the agent's price; null when the price is not known. */
  cost: number | null;
  /** USD of the compactions' summary calls whose model has a known price (see `unpricedSummaries`). */
  summaryCost: number;
  /** Summary calls whose model had no known price (their cost is not in `summaryCost`). */
  unpricedSummaries: number;
}

/** Nothing spent yet, at a known price (`cost` 0) or an unknown one (`cost` null). */
export function noSpend(price: ModelPrice | undefined): Spend {
  return {
    calls: 0,
    promptTokens: 0,
    cachedTokens: 0,
    completionTokens: 0,
    countedCalls: 0,
    cost: price ? 0 : null,
    summaryCost: 0,
    unpricedSummaries: 0,
  };
}

/**
 * The spend after one more model call: `usage` as the provider reported it, or, when it reported none (or a zero
 * prompt, which no real request has), `counted` (longrun's count of the request and the reply, none cached).
 */
export function addCall(
  spend: Spend,
  usage: TokenUsage | undefined,
  counted: { promptTokens: number; completionTokens: number },
  price: ModelPrice | undefined,
): Spend {
  const reported = usage !== undefined && usage.promptTokens > 0;
  const used: TokenUsage = reported ? usage : counted;
  const cached = Math.min(used.cachedTokens ?? 0, used.promptTokens);
  const cost = costOf(used, price);
  return {
    ...spend,
    calls: spend.calls + 1,
    promptTokens: spend.promptTokens + used.promptTokens,
    cachedTokens: spend.cachedTokens + cached,
    completionTokens: spend.completionTokens + used.completionTokens,
    countedCalls: spend.countedCalls + (reported ? 0 : 1),
    cost: spend.cost === null || cost === null ? null : spend.cost + cost,
  };
}

/** The spend after a compaction's summary call cost `cost` (null: its model's price is not known). */
export function addSummary(spend: Spend, cost: number | null): Spend {
  return cost === null
    ? { ...spend, unpricedSummaries: spend.unpricedSummaries + 1 }
    : { ...spend, summaryCost: spend.summaryCost + cost };
}

/** The share of input tokens served from the cache (0 to 1); null before any input. */
export function cachedShareOf(spend: Pick<Spend, 'promptTokens' | 'cachedTokens'>): number | null {
  return spend.promptTokens > 0 ? spend.cachedTokens / spend.promptTokens : null;
}

/** The agent's total: model calls and summary calls; null when the model calls' price is not known. */
export function totalCostOf(spend: Pick<Spend, 'cost' | 'summaryCost'>): number | null {
  return spend.cost === null ? null : spend.cost + spend.summaryCost;
}

/**
 * The prompt cache a compaction invalidated. Before it, the next call would have found the whole context cached
 * (the last call sent it all); after it, only the part before its first changed message still matches:
 * `keptTokens` (the tool schemas and the unchanged messages at the start). `invalidatedTokens` of the cached context
 * no longer match; the next call sends `rewrittenTokens` (what the compaction left after the kept part) at the full
 * input price instead of the cached one: `nextCallCost` is that difference (null without a price).
 */
export interface CacheInvalidation {
  keptTokens: number;
  invalidatedTokens: number;
  rewrittenTokens: number;
  nextCallCost: number | null;
}

/**
 * Prices the cache a rewrite invalidated: `before` and `after` are the contexts' messages in order (compared by
 * `same`), `fixedTokens` what every request sends before them (tool schemas).
 */
export function cacheInvalidation<T extends { tokens: number }>(
  before: readonly T[],
  after: readonly T[],
  fixedTokens: number,
  same: (a: T, b: T) => boolean,
  price: ModelPrice | undefined,
): CacheInvalidation {
  let kept = 0;
  while (kept < before.length && kept < after.length && same(before[kept]!, after[kept]!)) kept++;
  const keptTokens = fixedTokens + before.slice(0, kept).reduce((sum, m) => sum + m.tokens, 0);
  const beforeTokens = fixedTokens + before.reduce((sum, m) => sum + m.tokens, 0);
  const afterTokens = fixedTokens + after.reduce((sum, m) => sum + m.tokens, 0);
  const rewrittenTokens = afterTokens - keptTokens;
  const p = price ? priceOf(price) : undefined;
  return {
    keptTokens,
    invalidatedTokens: beforeTokens - keptTokens,
    rewrittenTokens,
    nextCallCost: p ? (rewrittenTokens * (p.inputPerMillion - p.cachedInputPerMillion)) / PER_MILLION : null,
  };
}
