import { describe, expect, it } from 'vitest';
import { ModelOverrideError, normalizeModelId, resolveModelInfo, UnknownModelError } from '../../../engine/models.ts';

describe('model-window registry', () => {
  it.each([
    ['gpt-4o-mini', 128_000, 'o200k_base'],
    ['gpt-4o-2024-08-06', 128_000, 'o200k_base'],
    ['gpt-4.1-nano', 1_047_576, 'o200k_base'],
    ['gpt-5', 400_000, 'o200k_base'],
    ['o3-mini', 200_000, 'o200k_base'],
    ['o1-mini', 128_000, 'o200k_base'],
    ['gpt-4', 8_192, 'cl100k_base'],
    ['gpt-4-turbo-2024-04-09', 128_000, 'cl100k_base'],
    ['gpt-3.5-turbo-0125', 16_385, 'cl100k_base'],
  ])('%s: window %i, exact %s counting', (model, window, encoding) => {
    const { price, ...info } = resolveModelInfo(model);
    expect(info).toEqual({ window, encoding, margin: 1, exact: true });
    expect(price?.inputPerMillion).toBeGreaterThan(0); // every OpenAI model here has its list price
  });

  it.each([
    ['meta-llama/Llama-3.3-70B-Instruct', 131_072],
    ['Qwen/Qwen3-32B', 131_072],
    ['deepseek-chat', 128_000],
    ['mistralai/Mistral-Large-Instruct-2411', 131_072],
    ['anthropic/claude-sonnet-4', 200_000],
  ])('%s (another vendor): window %i, counted with a safety margin', (model, window) => {
    expect(resolveModelInfo(model)).toEqual({ window, encoding: 'o200k_base', margin: 1.2, exact: false });
  });

  it('normalizes gateway ids', () => {
    expect(normalizeModelId('Meta-Llama/Llama-3.3-70B-Instruct')).toBe('llama-3.3-70b-instruct');
  });

  it('an unknown model is an error unless the agent sets a window', () => {
    expect(() => resolveModelInfo('my-finetune')).toThrow(UnknownModelError);
    expect(() => resolveModelInfo('my-finetune')).toThrow('unknown model "my-finetune"');
    expect(resolveModelInfo('my-finetune', { window: 65_536 })).toEqual({
      window: 65_536,
      encoding: 'o200k_base',
      margin: 1.2,
      exact: false,
    });
  });

  it('overrides apply and are validated, naming the field and the range', () => {
    expect(resolveModelInfo('gpt-4o', { window: 64_000 }).window).toBe(64_000);
    expect(resolveModelInfo('gpt-4o', { encoding: 'cl100k_base' })).toMatchObject({ margin: 1.2, exact: false });
    expect(() => resolveModelInfo('gpt-4o', { window: -5 })).toThrow(ModelOverrideError);
    expect(() => resolveModelInfo('gpt-4o', { window: -5 })).toThrow(
      'window: -5 is outside the allowed range (an integer from 1024 to 10000000 tokens)',
    );
    expect(() => resolveModelInfo('gpt-4o', { margin: 0.5 })).toThrow(
      'margin: 0.5 is outside the allowed range (1 to 3)',
    );
  });
});
