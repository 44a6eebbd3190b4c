/** What model calls cost (engine/pricing.ts) and the registry's prices (engine/models.ts). */
import { describe, expect, it } from 'vitest';
import {
  addCall,
  addSummary,
  cachedShareOf,
  cacheInvalidation,
  costOf,
  DEFAULT_CACHED_INPUT_RATIO,
  noSpend,
  PriceError,
  priceOf,
  totalCostOf,
  validatePrice,
} from '../../../engine/pricing.ts';
import { registryPrice, resolveModelInfo } from '../../../engine/models.ts';

const mini = { inputPerMillion: 0.15, cachedInputPerMillion: 0.075, outputPerMillion: 0.6 };

describe('costOf', () => {
  it('prices uncached input, cached input and output apart', () => {
    const usage = { promptTokens: 12_000, cachedTokens: 10_240, completionTokens: 300 };
    expect(costOf(usage, mini)).toBeCloseTo((1_760 * 0.15 + 10_240 * 0.075 + 300 * 0.6) / 1e6, 15);
  });

  it('takes cached input at 0.1 × input when the price gives none', () => {
    expect(DEFAULT_CACHED_INPUT_RATIO).toBe(0.1);
    const price = { inputPerMillion: 3, outputPerMillion: 15 };
    expect(priceOf(price).cachedInputPerMillion).toBeCloseTo(0.3, 15);
    expect(costOf({ promptTokens: 1_000_000, cachedTokens: 1_000_000, completionTokens: 0 }, price)).toBeCloseTo(0.3);
  });

  it('is null without a price (never 0), and reads cached tokens above the prompt as the whole prompt', () => {
    expect(costOf({ promptTokens: 100, completionTokens: 10 }, undefined)).toBeNull();
    expect(costOf({ promptTokens: 100, cachedTokens: 500, completionTokens: 0 }, mini)).toBeCloseTo(
      (100 * 0.075) / 1e6,
      15,
    );
  });
});

describe('validatePrice', () => {
  it('accepts a price and names the part and the range of a bad one', () => {
    expect(() => validatePrice({ inputPerMillion: 1, outputPerMillion: 2 })).not.toThrow();
    expect(() => validatePrice({ inputPerMillion: -1, outputPerMillion: 2 })).toThrow(PriceError);
    expect(() => validatePrice({ inputPerMillion: -1, outputPerMillion: 2 })).toThrow(
      /price\.inputPerMillion: -1 is not a price \(a number of USD per million tokens from 0 to 10000\)/,
    );
    expect(() => validatePrice({ inputPerMillion: 1 })).toThrow(/price\.outputPerMillion/);
    expect(() => validatePrice({ inputPerMillion: 1, outputPerMillion: 1, cachedInput: 1 })).toThrow(
      /price\.cachedInput: 1 is not a price \(unknown/,
    );
    expect(() => resolveModelInfo('gpt-4o', { price: { inputPerMillion: 1, outputPerMillion: 'x' } as never })).toThrow(
      /price\.outputPerMillion: "x"/,
    );
  });
});

describe('the registry prices', () => {
  it("gives OpenAI models their list price, the longest prefix winning, and other vendors' models none", () => {
    expect(registryPrice('gpt-4o-mini-2024-07-18')).toEqual(mini);
    expect(registryPrice('gpt-4o')).toEqual({
      inputPerMillion: 2.5,
      cachedInputPerMillion: 1.25,
      outputPerMillion: 10,
    });
    expect(registryPrice('openai/gpt-5-mini')?.inputPerMillion).toBe(0.25);
    expect(registryPrice('gpt-4-turbo')?.cachedInputPerMillion).toBeCloseTo(1, 12); // none listed: 0.1 × 10
    expect(registryPrice('claude-sonnet-4')).toBeUndefined();
    expect(registryPrice('gpt-oss-120b')).toBeUndefined();
    expect(resolveModelInfo('gpt-4o-mini').price).toEqual(mini);
    expect(resolveModelInfo('claude-sonnet-4').price).toBeUndefined();
  });

  it("takes the agent's price over the registry's, its cached input 0.1 × input when it gives none", () => {
    expect(resolveModelInfo('claude-sonnet-4', { price: { inputPerMillion: 3, outputPerMillion: 15 } }).price).toEqual({
      inputPerMillion: 3,
      cachedInputPerMillion: 0.30000000000000004,
      outputPerMillion: 15,
    });
    expect(resolveModelInfo('gpt-4o-mini', { price: { ...mini, cachedInputPerMillion: 0 } }).price).toEqual({
      ...mini,
      cachedInputPerMillion: 0,
    });
  });
});

describe('Spend', () => {
  it('sums calls and summaries; the cached share is of all input', () => {
    let spend = noSpend(mini);
    spend = addCall(
      spend,
      { promptTokens: 2_000, cachedTokens: 1_024, completionTokens: 10 },
      { promptTokens: 0, completionTokens: 0 },
      mini,
    );
    spend = addCall(spend, undefined, { promptTokens: 2_000, completionTokens: 20 }, mini);
    spend = addSummary(spend, 0.001);
    spend = addSummary(spend, null);
    expect(spend).toMatchObject({ calls: 2, promptTokens: 4_000, cachedTokens: 1_024, countedCalls: 1 });
    expect(spend.unpricedSummaries).toBe(1);
    expect(cachedShareOf(spend)).toBeCloseTo(0.256, 12);
    const calls = (976 * 0.15 + 1_024 * 0.075 + 10 * 0.6 + 2_000 * 0.15 + 20 * 0.6) / 1e6;
    expect(spend.cost).toBeCloseTo(calls, 15);
    expect(totalCostOf(spend)).toBeCloseTo(calls + 0.001, 15);
    expect(cachedShareOf(noSpend(mini))).toBeNull();
    expect(
      totalCostOf(addCall(noSpend(undefined), undefined, { promptTokens: 5, completionTokens: 1 }, undefined)),
    ).toBeNull();
  });
});

describe('cacheInvalidation', () => {
  const m = (id: string, tokens: number) => ({ id, tokens });
  const same = (a: { id: string }, b: { id: string }) => a.id === b.id;

  it('keeps the prefix up to the first changed message; the rest of the old context is invalidated', () => {
    const before = [m('a', 100), m('b', 200), m('c', 300), m('d', 400)];
    const after = [m('a', 100), m('s', 50), m('d', 400)];
    expect(cacheInvalidation(before, after, 10, same, mini)).toEqual({
      keptTokens: 110,
      invalidatedTokens: 900,
      rewrittenTokens: 450,
      nextCallCost: (450 * (0.15 - 0.075)) / 1e6,
    });
  });

  it('invalidates nothing when the context only grew at its end, and has no cost without a price', () => {
    const before = [m('a', 100)];
    expect(cacheInvalidation(before, [...before, m('b', 5)], 0, same, undefined)).toEqual({
      keptTokens: 100,
      invalidatedTokens: 0,
      rewrittenTokens: 5,
      nextCallCost: null,
    });
  });
});
