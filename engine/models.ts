/**
 * The model-window registry: each known model's context window and the encoding that counts its tokens. OpenAI
 * models are counted exactly with their own encoding; models of other vendors (usually served through an
 * OpenAI-compatible endpoint or gateway) are counted with a configured encoding times a safety margin, since their
 * tokenizers differ. Each OpenAI model also has its list price (input, cached input, output per million tokens); other
 * vendors' models have none here (their cost is reported as unknown unless the agent gives one). An agent can
 * override any of it; an unknown model without an override is an error.
 */
import { priceOf, validatePrice } from './pricing.ts';
import type { ModelPrice, ResolvedPrice } from './pricing.ts';
import type { EncodingName } from './tokens.ts';

export interface ModelInfo {
  /** Context window in tokens (input + output). */
  window: number;
  encoding: EncodingName;
  /** Multiplier on counted tokens (1 = exact). */
  margin: number;
  /** True when `encoding` is the model's own tokenizer. */
  exact: boolean;
  /**
   * USD per million tokens (engine/pricing.ts): the agent's own, else the registry's list price; absent when neither
   * is known (the agent's cost is then reported as unknown, never as 0). Absent in states of agents started before
   * prices existed.
   */
  price?: ResolvedPrice;
}

/** How an agent's tokens are counted: its model's encoding and safety margin. */
export interface Counting {
  encoding: EncodingName;
  margin: number;
}

export interface ModelOverride {
  window?: number;
  encoding?: EncodingName;
  margin?: number;
  /** The price the agent's calls are charged at, instead of the registry's (cached input default: 0.1 × input). */
  price?: ModelPrice;
}

/** Safety margin for models whose tokenizer is not the configured encoding (Letta uses 1.3 on rough estimates). */
export const DEFAULT_FOREIGN_MARGIN = 1.2;

/** Thrown when an agent names a model the registry does not know and gives no window. */
export class UnknownModelError extends Error {
  readonly model: string;
  constructor(model: string) {
    super(
      `unknown model ${JSON.stringify(model)}: its context window is not in the registry; ` +
        "set the agent's window (and, for a non-OpenAI model, its encoding and margin) explicitly",
    );
    this.name = 'UnknownModelError';
    this.model = model;
  }
}

type Entry = readonly [prefix: string, window: number, encoding: EncodingName, exact: boolean];

/** Longest prefix wins. Windows as the vendors document them. */
const REGISTRY: readonly Entry[] = [
  // OpenAI: o200k_base for gpt-4o, 4.1, 4.5, 5 and the o-series; cl100k_base for gpt-4 and 3.5.
  ['gpt-5', 400_000, 'o200k_base', true],
  ['gpt-5-chat', 128_000, 'o200k_base', true],
  ['gpt-4.1', 1_047_576, 'o200k_base', true],
  ['gpt-4.5', 128_000, 'o200k_base', true],
  ['gpt-4o', 128_000, 'o200k_base', true],
  ['chatgpt-4o', 128_000, 'o200k_base', true],
  ['o1', 200_000, 'o200k_base', true],
  ['o1-mini', 128_000, 'o200k_base', true],
  ['o1-preview', 128_000, 'o200k_base', true],
  ['o3', 200_000, 'o200k_base', true],
  ['o4-mini', 200_000, 'o200k_base', true],
  ['gpt-oss', 131_072, 'o200k_base', true],
  ['gpt-4-turbo', 128_000, 'cl100k_base', true],
  ['gpt-4-1106', 128_000, 'cl100k_base', true],
  ['gpt-4-0125', 128_000, 'cl100k_base', true],
  ['gpt-4-32k', 32_768, 'cl100k_base', true],
  ['gpt-4', 8_192, 'cl100k_base', true],
  ['gpt-3.5-turbo', 16_385, 'cl100k_base', true],
  // Served through OpenAI-compatible endpoints: counted approximately.
  ['llama-3.1', 131_072, 'o200k_base', false],
  ['llama-3.2', 131_072, 'o200k_base', false],
  ['llama-3.3', 131_072, 'o200k_base', false],
  ['llama-4', 1_048_576, 'o200k_base', false],
  ['qwen2.5', 32_768, 'o200k_base', false],
  ['qwen3', 131_072, 'o200k_base', false],
  ['qwq', 131_072, 'o200k_base', false],
  ['deepseek-chat', 128_000, 'o200k_base', false],
  ['deepseek-reasoner', 128_000, 'o200k_base', false],
  ['deepseek-v3', 128_000, 'o200k_base', false],
  ['deepseek-r1', 128_000, 'o200k_base', false],
  ['mistral-large', 131_072, 'o200k_base', false],
  ['mistral-medium', 131_072, 'o200k_base', false],
  ['mistral-small', 32_768, 'o200k_base', false],
  ['codestral', 256_000, 'o200k_base', false],
  ['claude', 200_000, 'o200k_base', false],
];

type PriceEntry = readonly [prefix: string, input: number, cachedInput: number | undefined, output: number];

/**
 * OpenAI's list prices (standard tier, USD per million tokens: input, cached input, output), longest prefix wins.
 * A model without a cached-input price here takes 0.1 × input (engine/pricing.ts); models OpenAI does not sell
 * (gpt-oss) and other vendors' have none.
 */
const PRICES: readonly PriceEntry[] = [
  ['gpt-5', 1.25, 0.125, 10],
  ['gpt-5-mini', 0.25, 0.025, 2],
  ['gpt-5-nano', 0.05, 0.005, 0.4],
  ['gpt-5-chat', 1.25, 0.125, 10],
  ['gpt-4.1', 2, 0.5, 8],
  ['gpt-4.1-mini', 0.4, 0.1, 1.6],
  ['gpt-4.1-nano', 0.1, 0.025, 0.4],
  ['gpt-4.5', 75, 37.5, 150],
  ['gpt-4o', 2.5, 1.25, 10],
  ['gpt-4o-mini', 0.15, 0.075, 0.6],
  ['chatgpt-4o', 5, undefined, 15],
  ['o1', 15, 7.5, 60],
  ['o1-mini', 1.1, 0.55, 4.4],
  ['o1-preview', 15, 7.5, 60],
  ['o3', 2, 0.5, 8],
  ['o3-mini', 1.1, 0.55, 4.4],
  ['o4-mini', 1.1, 0.275, 4.4],
  ['gpt-4-turbo', 10, undefined, 30],
  ['gpt-4-1106', 10, undefined, 30],
  ['gpt-4-0125', 10, undefined, 30],
  ['gpt-4-32k', 60, undefined, 120],
  ['gpt-4', 30, undefined, 60],
  ['gpt-3.5-turbo', 0.5, undefined, 1.5],
];

function longestPrefix<E extends readonly [string, ...unknown[]]>(entries: readonly E[], id: string): E | undefined {
  let best: E | undefined;
  for (const entry of entries) {
    if (id.startsWith(entry[0]) && (!best || entry[0].length > best[0].length)) best = entry;
  }
  return best;
}

/** The registry's list price of a model (cached input filled in), or undefined when it has none. */
export function registryPrice(model: string): ResolvedPrice | undefined {
  const entry = longestPrefix(PRICES, normalizeModelId(model));
  if (!entry) return undefined;
  const [, inputPerMillion, cachedInputPerMillion, outputPerMillion] = entry;
  return priceOf({
    inputPerMillion,
    ...(cachedInputPerMillion !== undefined ? { cachedInputPerMillion } : {}),
    outputPerMillion,
  });
}

/** Thrown for an override outside its range; names the field, the value and the range. */
export class ModelOverrideError extends Error {
  constructor(field: string, value: unknown, range: string) {
    super(`${field}: ${JSON.stringify(value)} is outside the allowed range (${range})`);
    this.name = 'ModelOverrideError';
  }
}

function validateOverride(override: ModelOverride): void {
  const { window, margin, encoding } = override;
  if (window !== undefined && (!Number.isInteger(window) || window < 1_024 || window > 10_000_000)) {
    throw new ModelOverrideError('window', window, 'an integer from 1024 to 10000000 tokens');
  }
  if (margin !== undefined && (!Number.isFinite(margin) || margin < 1 || margin > 3)) {
    throw new ModelOverrideError('margin', margin, '1 to 3');
  }
  if (encoding !== undefined && encoding !== 'o200k_base' && encoding !== 'cl100k_base') {
    throw new ModelOverrideError('encoding', encoding, 'o200k_base or cl100k_base');
  }
  if (override.price !== undefined) validatePrice(override.price, 'price'); // PriceError, naming the part
}

/** `Meta-Llama/Llama-3.3-70B-Instruct` → `llama-3.3-70b-instruct`: vendor prefixes of gateways dropped. */
export function normalizeModelId(model: string): string {
  const id = model.trim().toLowerCase();
  const slash = id.lastIndexOf('/');
  const bare = slash === -1 ? id : id.slice(slash + 1);
  return bare.replace(/^meta-llama-/, 'llama-').replace(/^(anthropic|openai)\./, '');
}

/** The model's window and encoding, with the agent's overrides applied. Throws {@link UnknownModelError}. */
export function resolveModelInfo(model: string, override: ModelOverride = {}): ModelInfo {
  validateOverride(override);
  const id = normalizeModelId(model);
  const best = longestPrefix(REGISTRY, id);
  if (!best && override.window === undefined) throw new UnknownModelError(model);
  const exact = best?.[3] ?? false;
  const price = override.price ? priceOf(override.price) : registryPrice(model);
  const encoding = override.encoding ?? best?.[2] ?? 'o200k_base';
  return {
    window: override.window ?? best![1],
    encoding,
    margin: override.margin ?? (exact && encoding === best?.[2] ? 1 : DEFAULT_FOREIGN_MARGIN),
    exact: exact && encoding === best?.[2],
    ...(price ? { price } : {}),
  };
}
