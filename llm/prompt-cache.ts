/**
 * Prompt caching as OpenAI does it, for the loopback chat server (chat-server.ts): a request whose beginning equals
 * an earlier request's (across all requests, as OpenAI's cache is per organization and prefix, not per
 * conversation) reports that prefix as `usage.prompt_tokens_details.cached_tokens`.
 *
 * The rules followed, from OpenAI's prompt caching guide (https://platform.openai.com/docs/guides/prompt-caching) and
 * cookbook (https://developers.openai.com/cookbook/examples/prompt_caching_201, "Cache hits require an exact,
 * repeated prefix match and works automatically for prompts that are 1024 tokens or longer. You can get a match until
 * the first mismatched token in 128 token blocks"; "For requests under 1024 tokens, cached_tokens will be zero"):
 * - only an exact prefix counts, up to the first token that differs;
 * - nothing is cached below 1,024 tokens of common prefix; above, in steps of 128:
 *   cached = floor((prefix - 1024) / 128) × 128 + 1024, never more than the prompt's tokens;
 * - the whole request is the prefix: the structured-output schema first (OpenAI: the schema in `response_format`
 *   "serves as a prefix to the system message", so a request with another schema, or none, shares no prefix with
 *   one that has it), then the tool definitions, then the messages in order;
 * - an entry stays for a time to live after its last use (OpenAI: "5-10 minutes of inactivity"; here 10 minutes by
 *   default, {@link PromptCacheOptions.ttlMs}); each use renews it.
 *
 * Tokens: the request's token ids by longrun's tokenizer (engine/tokens.ts, o200k_base): the JSON of the response
 * format (when the request has one), then of the tool definitions, then of each message (role, content, name, tool calls, tool call id), in order. That is an
 * approximation of the provider's own rendering (its chat template's separators are not JSON); it keeps the property
 * that matters: a request that repeats an earlier one's beginning repeats its token ids, and the first changed
 * message breaks the match there.
 *
 * Kept per block, as providers keep KV blocks: the hash of the first 1,024 tokens, then of each next 128 chained to
 * the previous, each with its last use; memory grows with the distinct blocks alive, not with the requests.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage } from '../engine/messages.ts';
import type { TokenCounter } from '../engine/tokens.ts';

/** OpenAI's documented caching granularity, and the loopback server's default time to live. */
export const PROMPT_CACHE = { minTokens: 1024, stepTokens: 128, ttlMs: 10 * 60_000 } as const;

/** Tokens reported as cached for a common prefix of `prefixTokens` with a prompt of `promptTokens` (the rule above). */
export function cachedTokensFor(prefixTokens: number, promptTokens: number): number {
  const prefix = Math.min(prefixTokens, promptTokens);
  if (prefix < PROMPT_CACHE.minTokens) return 0;
  const steps = Math.floor((prefix - PROMPT_CACHE.minTokens) / PROMPT_CACHE.stepTokens);
  return PROMPT_CACHE.minTokens + steps * PROMPT_CACHE.stepTokens;
}

/**
 * The token ids of a request as the cache compares them: its response format (`response_format`, absent: none), the
 * tool definitions, then each message, in order.
 */
export function requestTokenIds(
  counter: TokenCounter,
  messages: readonly ChatMessage[],
  tools: readonly unknown[] = [],
  responseFormat?: unknown,
): number[] {
  const ids: number[] = [];
  const push = (text: string) => {
    for (const id of counter.encode(text)) ids.push(id);
  };
  if (responseFormat !== undefined && responseFormat !== null)
    push(JSON.stringify({ response_format: responseFormat }));
  if (tools.length > 0) push(JSON.stringify(tools));
  for (const m of messages) {
    push(
      JSON.stringify({
        role: m.role,
        content: m.content ?? null,
        ...(m.name ? { name: m.name } : {}),
        ...(m.tool_calls?.length ? { tool_calls: m.tool_calls } : {}),
        ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}),
      }),
    );
  }
  return ids;
}

export interface PromptCacheOptions {
  /** How long a cached prefix lives after its last use, in ms (default {@link PROMPT_CACHE}.ttlMs). */
  ttlMs?: number;
  /** The clock (ms); tests move it. */
  now?: () => number;
}

/** Earlier requests' prefixes, by block, with their last use. */
export class PromptCache {
  readonly ttlMs: number;
  private readonly now: () => number;
  /** Block hash → last use; kept in order of last use (a use moves the entry to the end), so expiry sweeps the front. */
  private readonly blocks = new Map<string, number>();

  constructor(options: PromptCacheOptions = {}) {
    const ttl = options.ttlMs ?? PROMPT_CACHE.ttlMs;
    if (!Number.isFinite(ttl) || ttl <= 0) {
      throw new Error(`prompt cache: ttlMs must be a number of ms > 0, got ${String(options.ttlMs)}`);
    }
    this.ttlMs = ttl;
    this.now = options.now ?? Date.now;
  }

  /** Distinct blocks alive (for tests and memory checks). */
  get size(): number {
    this.sweep(this.now());
    return this.blocks.size;
  }

  /**
   * Looks `ids` (a request's token ids) up: the cached tokens its longest prefix alive earns (0 below 1,024), then
   * records the request, so a later one that begins the same way finds it.
   */
  use(ids: readonly number[]): number {
    const now = this.now();
    this.sweep(now);
    let cached = 0;
    let missed = false;
    let previous = '';
    for (let end = PROMPT_CACHE.minTokens, start = 0; end <= ids.length; start = end, end += PROMPT_CACHE.stepTokens) {
      const hash = createHash('sha1')
        .update(previous)
        .update(Uint32Array.from(ids.slice(start, end)))
        .digest('hex');
      if (!missed && this.blocks.has(hash)) cached = end;
      else missed = true;
      this.blocks.delete(hash);
      this.blocks.set(hash, now);
      previous = hash;
    }
    return cached;
  }

  private sweep(now: number): void {
    for (const [hash, used] of this.blocks) {
      if (now - used < this.ttlMs) break;
      this.blocks.delete(hash);
    }
  }
}
