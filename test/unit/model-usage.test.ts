/** The model call's usage as each provider shape reports it (activities/usage.ts): cached input kept apart. */
import { describe, expect, it } from 'vitest';
import { readUsage } from '../../activities/usage.ts';

describe('readUsage', () => {
  it("OpenAI's prompt_tokens_details.cached_tokens", () => {
    expect(
      readUsage({
        prompt_tokens: 2_006,
        completion_tokens: 300,
        total_tokens: 2_306,
        prompt_tokens_details: { cached_tokens: 1_920, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 },
      }),
    ).toEqual({ promptTokens: 2_006, completionTokens: 300, cachedTokens: 1_920 });
  });

  it("an Anthropic gateway's cache_read_input_tokens at the top level", () => {
    expect(
      readUsage({
        prompt_tokens: 3_000,
        completion_tokens: 12,
        cache_creation_input_tokens: 500,
        cache_read_input_tokens: 2_048,
      }),
    ).toEqual({ promptTokens: 3_000, completionTokens: 12, cachedTokens: 2_048 });
  });

  it('cache_read_input_tokens inside prompt_tokens_details', () => {
    expect(
      readUsage({
        prompt_tokens: 3_000,
        completion_tokens: 12,
        prompt_tokens_details: { cache_read_input_tokens: 1_500 },
      }),
    ).toEqual({ promptTokens: 3_000, completionTokens: 12, cachedTokens: 1_500 });
  });

  it("OpenAI's field first when both are there; a reported 0 stays 0", () => {
    expect(
      readUsage({
        prompt_tokens: 3_000,
        completion_tokens: 1,
        prompt_tokens_details: { cached_tokens: 1_024 },
        cache_read_input_tokens: 2_000,
      })?.cachedTokens,
    ).toBe(1_024);
    expect(readUsage({ prompt_tokens: 30, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 0 } })).toEqual(
      { promptTokens: 30, completionTokens: 1, cachedTokens: 0 },
    );
  });

  it('nothing said about caching → cachedTokens absent, not 0; malformed counts are skipped', () => {
    const plain = readUsage({ prompt_tokens: 30, completion_tokens: 4, total_tokens: 34 });
    expect(plain).toEqual({ promptTokens: 30, completionTokens: 4 });
    expect(plain).not.toHaveProperty('cachedTokens');
    expect(readUsage({ prompt_tokens: 30, completion_tokens: 4, prompt_tokens_details: null })).not.toHaveProperty(
      'cachedTokens',
    );
    expect(
      readUsage({ prompt_tokens: 30, completion_tokens: 4, prompt_tokens_details: { cached_tokens: -1 } }),
    ).not.toHaveProperty('cachedTokens');
    expect(readUsage({ prompt_tokens: 30, completion_tokens: 4, cache_read_input_tokens: '12' })).not.toHaveProperty(
      'cachedTokens',
    );
  });

  it('no usage, or one without token counts → undefined', () => {
    expect(readUsage(undefined)).toBeUndefined();
    expect(readUsage(null)).toBeUndefined();
    expect(readUsage({})).toBeUndefined();
  });
});
