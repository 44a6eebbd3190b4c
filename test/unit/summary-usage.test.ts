/**
 * A compaction's summary call records its usage as the model call does (activities/usage.ts): the cached part of its
 * input apart, so its cost (`llm.cost`, the event's `spent.summary`) prices that part at the cached price.
 */
import { describe, expect, it } from 'vitest';
import { costOf, priceOf } from '../../engine/pricing.ts';
import { registryPrice } from '../../engine/models.ts';
import type { WireUsage } from '../support/stored-agent.ts';
import { agentLoop, inActivity, storedAgent, summaryModel } from '../support/stored-agent.ts';

const MODEL = 'gpt-4o-mini'; // a model with a list price

const REPLY = JSON.stringify({
  task_overview: 'Find why checkout fails since Monday; do not restart production; report by 17:00.',
  current_state: 'Pages 1 to 11 of the log read: every /api/cart request answered 200.',
  important_discoveries: 'No failed checkout request in pages 1 to 11.',
  next_steps: 'Read page 12.',
  context_to_preserve: '/api/cart',
});

/** The summary call(s) of a forced summary of a 12-page loop, the model reporting `usage` for each call. */
async function summaryCall(usage: WireUsage) {
  let calls = 0;
  const model = summaryModel(
    () => REPLY,
    () => (calls++, usage),
  );
  const loop = agentLoop(12, (i, step) => `request ${i}: GET /api/cart ${step} answered 200`);
  const { activities, context, planInput, summarize } = await storedAgent('usage', loop, model, MODEL);
  const plan = await inActivity(() =>
    activities.planCompaction({
      ...planInput({ seq: 1, trigger: 'forced', window: 16_000, policy: { strategies: ['summarize'] } }),
      context,
    }),
  );
  if (plan.action === 'skip' || !plan.summary) throw new Error(`no summary planned: ${plan.reason}`);
  const outcome = await summarize(1, plan.summary);
  return { llm: outcome.llm, calls };
}

describe("a summary call's usage", () => {
  it('keeps the cached input apart and prices it at the cached price', async () => {
    const { llm, calls } = await summaryCall({
      prompt_tokens: 3_000,
      completion_tokens: 200,
      prompt_tokens_details: { cached_tokens: 2_048 },
    });
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(llm).toMatchObject({
      model: MODEL,
      promptTokens: 3_000 * calls,
      cachedTokens: 2_048 * calls,
      completionTokens: 200 * calls,
    });
    const price = priceOf(registryPrice(MODEL)!);
    expect(price.cachedInputPerMillion).toBeLessThan(price.inputPerMillion);
    const perCall =
      (952 * price.inputPerMillion + 2_048 * price.cachedInputPerMillion + 200 * price.outputPerMillion) / 1e6;
    expect(llm.cost).toBeCloseTo(perCall * calls, 12);
    // Less than the same tokens all uncached.
    expect(llm.cost!).toBeLessThan(costOf({ promptTokens: 3_000 * calls, completionTokens: 200 * calls }, price)!);
  });

  it("reads an Anthropic gateway's cache_read_input_tokens too", async () => {
    const { llm, calls } = await summaryCall({
      prompt_tokens: 3_000,
      completion_tokens: 200,
      cache_read_input_tokens: 1_024,
    });
    expect(llm.cachedTokens).toBe(1_024 * calls);
  });

  it('a provider that says nothing about caching: no cachedTokens, all input at the input price', async () => {
    const { llm, calls } = await summaryCall({ prompt_tokens: 3_000, completion_tokens: 200 });
    expect(llm).not.toHaveProperty('cachedTokens');
    const price = priceOf(registryPrice(MODEL)!);
    expect(llm.cost).toBeCloseTo(((3_000 * price.inputPerMillion + 200 * price.outputPerMillion) / 1e6) * calls, 12);
  });
});
