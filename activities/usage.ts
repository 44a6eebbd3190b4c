/**
 * The usage a model call reports, read into longrun's shape: prompt (input) and completion (output) tokens, and the
 * part of the prompt the provider served from its prompt cache, kept apart so that cached and uncached input can be
 * priced apart.
 *
 * Fields read for `cachedTokens`, the first present wins:
 * - `usage.prompt_tokens_details.cached_tokens`: OpenAI's Chat Completions field (and the loopback server's,
 *   llm/prompt-cache.ts; also what OpenRouter, xAI, DeepSeek-compatible and most gateways send);
 * - `usage.cache_read_input_tokens`: Anthropic's name, at the usage's top level, as OpenAI-compatible gateways for
 *   Anthropic models pass it on (LiteLLM, for one);
 * - `usage.prompt_tokens_details.cache_read_input_tokens`: the same name inside the details, as other gateways nest it.
 * A field that is absent or not a whole number >= 0 is skipped; none → `cachedTokens` absent (not 0: the provider
 * said nothing about caching). Cache writes (`cache_creation_input_tokens`) are not read. As OpenAI counts them, the
 * cached tokens are part of `promptTokens`.
 */
import type { ModelUsage } from '../contract/activities.ts';

const count = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;

/** `usage` as a provider sent it (anything), read as {@link ModelUsage}; undefined when it has no token counts. */
export function readUsage(usage: unknown): ModelUsage | undefined {
  if (!usage || typeof usage !== 'object') return undefined;
  const raw = usage as Record<string, unknown>;
  const promptTokens = count(raw.prompt_tokens);
  const completionTokens = count(raw.completion_tokens);
  if (promptTokens === undefined && completionTokens === undefined) return undefined;
  const details =
    raw.prompt_tokens_details && typeof raw.prompt_tokens_details === 'object'
      ? (raw.prompt_tokens_details as Record<string, unknown>)
      : {};
  const cachedTokens =
    count(details.cached_tokens) ?? count(raw.cache_read_input_tokens) ?? count(details.cache_read_input_tokens);
  return {
    promptTokens: promptTokens ?? 0,
    completionTokens: completionTokens ?? 0,
    ...(cachedTokens !== undefined ? { cachedTokens } : {}),
  };
}
