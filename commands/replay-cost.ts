/**
 * What a replayed session cost (`longrun replay`, `npm run fidelity`), with prompt caching as OpenAI does it, and what
 * sending everything would have cost with the same caching.
 *
 * - With compaction: each request's cached tokens are its longest prefix of whole messages (the tool schemas first)
 *   that an earlier request of the session began with, under OpenAI's rule (llm/prompt-cache.ts `cachedTokensFor`:
 *   nothing below 1,024 tokens, then steps of 128). A compaction rewrites the context from its first changed message
 *   on, so the request after it finds only the part before that message cached.
 * - Without compaction (`costWithoutCompaction`): each request is the whole transcript so far, and the previous
 *   request, the whole transcript up to then, is its cached prefix (by the same rule).
 *
 * Either way each request's input is priced at the input price for its uncached part and the cached price for the
 * rest, its reply at the output price (engine/pricing.ts); the cache's time to live is not modelled (a replay runs in
 * minutes, a real session may pause longer). Pure: tokens are counted by the caller.
 */
import { createHash } from 'node:crypto';
import type { ChatMessage } from '../engine/messages.ts';
import { costOf } from '../engine/pricing.ts';
import type { ModelPrice } from '../engine/pricing.ts';
import { cachedTokensFor } from '../llm/prompt-cache.ts';

/**
 * For each request in order, how many of its first messages an earlier request began with too (the longest such
 * prefix): the part a provider's prompt cache can serve. Messages compare by role, content, name, tool calls and
 * tool call id.
 */
export function sharedPrefixLengths(requests: readonly (readonly ChatMessage[])[]): number[] {
  const seen = new Set<string>();
  return requests.map((request) => {
    let chain = '';
    let shared = 0;
    let matching = true;
    for (const message of request) {
      chain = createHash('sha1')
        .update(chain)
        .update(
          JSON.stringify([
            message.role,
            message.content ?? null,
            message.name ?? null,
            message.tool_calls ?? null,
            message.tool_call_id ?? null,
          ]),
        )
        .digest('hex');
      if (matching && seen.has(chain)) shared++;
      else matching = false;
      seen.add(chain);
    }
    return shared;
  });
}

/**
 * Each request's tokens had the agent never compacted: the whole recording up to the request's last message (found by
 * walking the recording forward, so that repeated texts match in order), a system prompt the request has and the
 * recording lacks, and `fixedTokens` (the reply primer and the schemas). The recording's running token sums make each
 * request a lookup: linear in the recording's length and the requests' count, where summing each prefix again was
 * quadratic (hours for a recording of tens of thousands of steps). `tokensOf` counts one message.
 */
export function tokensWithoutCompaction(
  requests: readonly (readonly ChatMessage[])[],
  session: readonly ChatMessage[],
  tokensOf: (message: ChatMessage) => number,
  fixedTokens: number,
): number[] {
  const same = (a: ChatMessage, b: ChatMessage) =>
    a.role === b.role && (a.content ?? '') === (b.content ?? '') && (a.tool_call_id ?? '') === (b.tool_call_id ?? '');
  const runningSum = [0];
  for (const message of session) runningSum.push(runningSum.at(-1)! + tokensOf(message));
  let position = 0;
  return requests.map((request) => {
    const last = request.at(-1);
    for (let i = position; last && i < session.length; i++) {
      if (same(session[i]!, last)) {
        position = i;
        break;
      }
    }
    const system = request[0]?.role === 'system' && session[0]?.role !== 'system' ? tokensOf(request[0]) : 0;
    return fixedTokens + system + runningSum[Math.min(position + 1, session.length)]!;
  });
}

/** Each request's cached tokens: its shared prefix's tokens, under OpenAI's rule, never more than the request. */
export function cachedTokensOf(prefixTokens: readonly number[], requestTokens: readonly number[]): number[] {
  return requestTokens.map((tokens, i) => cachedTokensFor(prefixTokens[i] ?? 0, tokens));
}

/** Each request's cached tokens when every request sends the whole transcript: the previous request is its prefix. */
export function cachedTokensWithoutCompaction(fullTokens: readonly number[]): number[] {
  return fullTokens.map((tokens, i) => (i === 0 ? 0 : cachedTokensFor(Math.min(fullTokens[i - 1]!, tokens), tokens)));
}

/** The requests' cost in USD (input, cached input, replies); null without a price. */
export function requestsCost(
  promptTokens: readonly number[],
  cachedTokens: readonly number[],
  completionTokens: readonly number[],
  price: ModelPrice | undefined,
): number | null {
  if (!price) return null;
  return promptTokens.reduce(
    (sum, prompt, i) =>
      sum +
      costOf(
        { promptTokens: prompt, cachedTokens: cachedTokens[i] ?? 0, completionTokens: completionTokens[i] ?? 0 },
        price,
      )!,
    0,
  );
}

/** Cached tokens over input tokens, 0 to 1; null with no input. */
export function cachedShare(promptTokens: readonly number[], cachedTokens: readonly number[]): number | null {
  const input = promptTokens.reduce((a, b) => a + b, 0);
  return input > 0 ? cachedTokens.reduce((a, b) => a + b, 0) / input : null;
}

/**
 * The least the session could cost under any compaction that sends each recorded message whole at least once and keeps
 * the first request (the system prompt, the tool schemas, the task) at the front of every request: each request pays
 * the transcript's growth since the request before it uncached, and at best finds the first request cached; the replies
 * are the same. Summary calls are left out. Below it only by cutting messages before they are first sent.
 */
export function costFloorOf(
  fullTokens: readonly number[],
  replyTokens: readonly number[],
  price: ModelPrice | undefined,
): number | null {
  if (!price || fullTokens.length === 0) return price ? 0 : null;
  const first = fullTokens[0]!;
  const prompts = fullTokens.map((tokens, i) => (i === 0 ? tokens : first + Math.max(0, tokens - fullTokens[i - 1]!)));
  const cached = prompts.map((prompt, i) => (i === 0 ? 0 : cachedTokensFor(first, prompt)));
  return requestsCost(prompts, cached, replyTokens, price);
}

/** A replay's cost figures (commands/replay-report.ts `ReplayReport`). */
export interface ReplayCost {
  /** The price the figures use (USD per million tokens), or null when none is known. */
  price: Required<ModelPrice> | null;
  /** Each request's cached tokens, beside `requestTokens`. */
  cachedTokens: number[];
  /** Each request's reply tokens (the recorded answer, counted). */
  replyTokens: number[];
  /** USD of the requests as sent, with caching, plus the compactions' summary calls. */
  cost: number | null;
  /** USD of sending everything with caching (the same replies, no summary calls). */
  costWithoutCompaction: number | null;
  /** The least any compaction that sends each message whole could cost ({@link costFloorOf}); null without a price. */
  costFloor: number | null;
  cachedInputShare: number | null;
  cachedInputShareWithoutCompaction: number | null;
}

/**
 * The figures from the tokens: each request's (`requestTokens`), its shared prefix's (`prefixTokens`), the whole
 * transcript up to it (`fullTokens`), its reply's (`replyTokens`), and what the summary calls cost.
 */
export function replayCost(
  tokens: {
    requestTokens: readonly number[];
    prefixTokens: readonly number[];
    fullTokens: readonly number[];
    replyTokens: readonly number[];
  },
  price: Required<ModelPrice> | undefined,
  summaryCost: number,
): ReplayCost {
  const cached = cachedTokensOf(tokens.prefixTokens, tokens.requestTokens);
  const cachedWithout = cachedTokensWithoutCompaction(tokens.fullTokens);
  const cost = requestsCost(tokens.requestTokens, cached, tokens.replyTokens, price);
  return {
    price: price ?? null,
    cachedTokens: cached,
    replyTokens: [...tokens.replyTokens],
    cost: cost === null ? null : cost + summaryCost,
    costWithoutCompaction: requestsCost(tokens.fullTokens, cachedWithout, tokens.replyTokens, price),
    costFloor: costFloorOf(tokens.fullTokens, tokens.replyTokens, price),
    cachedInputShare: cachedShare(tokens.requestTokens, cached),
    cachedInputShareWithoutCompaction: cachedShare(tokens.fullTokens, cachedWithout),
  };
}
