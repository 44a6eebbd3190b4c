/** The model call's usage as each provider shape reports it (activities/usage.ts): cached input kept apart. */
import { describe, expect, it } from 'vitest';
import { readUsage } from '../../activities/usage.ts';

/** What readUsage reads from `usage`: a prompt of `prompt` tokens, a reply of `completion`, and the cached part. */
const read = (usage: Record<string, unknown>, prompt = 3_000, completion = 12) =>
  readUsage({ prompt_tokens: prompt, completion_tokens: completion, ...usage });

describe('readUsage', () => {
  it("OpenAI's prompt_tokens_details.cached_tokens", () => {
    expect(
      read(
        {
          total_tokens: 2_306,
          prompt_tokens_details: { cached_tokens: 1_920, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 0 },
        },
        2_006,
        300,
      ),
    ).toEqual({ promptTokens: 2_006, completionTokens: 300, cachedTokens: 1_920 });
  });

  it("an Anthropic gateway's cache_read_input_tokens at the top level", () => {
    expect(read({ cache_creation_input_tokens: 500, cache_read_input_tokens: 2_048 })).toEqual({
      promptTokens: 3_000,
      completionTokens: 12,
      cachedTokens: 2_048,
    });
  });

  it('cache_read_input_tokens inside prompt_tokens_details', () => {
    expect(read({ prompt_tokens_details: { cache_read_input_tokens: 1_500 } })).toEqual({
      promptTokens: 3_000,
      completionTokens: 12,
      cachedTokens: 1_500,
    });
  });

  it("OpenAI's field first when both are there; a reported 0 stays 0", () => {
    expect(
      read({ prompt_tokens_details: { cached_tokens: 1_024 }, cache_read_input_tokens: 2_000 }, 3_000, 1)?.cachedTokens,
    ).toBe(1_024);
    expect(read({ prompt_tokens_details: { cached_tokens: 0 } }, 30, 1)).toEqual({
      promptTokens: 30,
      completionTokens: 1,
      cachedTokens: 0,
    });
  });

  it('nothing said about caching → cachedTokens absent, not 0; malformed counts are skipped', () => {
    const plain = read({ total_tokens: 34 }, 30, 4);
    expect(plain).toEqual({ promptTokens: 30, completionTokens: 4 });
    expect(plain).not.toHaveProperty('cachedTokens');
    for (const malformed of [
      { prompt_tokens_details: null },
      { prompt_tokens_details: { cached_tokens: -1 } },
      { cache_read_input_tokens: '12' },
    ]) {
      expect(read(malformed, 30, 4), JSON.stringify(malformed)).not.toHaveProperty('cachedTokens');
    }
  });

  it('no usage, or one without token counts → undefined', () => {
    expect(readUsage(undefined)).toBeUndefined();
    expect(readUsage(null)).toBeUndefined();
    expect(readUsage({})).toBeUndefined();
  });
});
