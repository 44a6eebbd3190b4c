/**
 * Token accounting behind a small interface. Production counting is longrun's own tokenizer over gpt-tokenizer's
 * rank data (`tokenizer.ts`: a hand-written pre-tokenizer, direct lookups of one-token pieces, cuts in CJK runs where
 * no token can span, a count-only path with a memo of recent pieces, and an O(n log n) merge for long pieces). Its
 * token ids are OpenAI's: js-tiktoken is the conformance reference in tests, and tiktoken (WASM) agrees except on
 * U+FEFF and U+0085, which JavaScript's and Rust's `\s` class differently (production follows js-tiktoken). Literal
 * special tokens such as `<|endoftext|>` in user or tool text are counted as the ordinary text they are, never thrown
 * on.
 */
import type { ChatMessage, ContentPart, MessageContent } from './messages.ts';
import { isImagePart, isTextPart } from './messages.ts';
import { cl100kPieceEnd, o200kPieceEnd } from './pretokenize.ts';
import { Tokenizer } from './tokenizer.ts';
import type { RawRanks } from './tokenizer-ranks.ts';

/** The encodings longrun counts in: o200k_base (GPT-4o and later), cl100k_base (GPT-4, GPT-3.5). */
export type EncodingName = 'o200k_base' | 'cl100k_base';

/** Every {@link EncodingName}. */
export const ENCODINGS: readonly EncodingName[] = ['o200k_base', 'cl100k_base'];

/** Counts tokens of text in one encoding. */
export interface TokenCounter {
  readonly encoding: EncodingName;
  encode(text: string): number[];
  count(text: string): number;
}

/** OpenAI's chat format: 3 tokens per message, 1 more per name, 3 to prime the reply. */
export const CHAT_OVERHEAD = { perMessage: 3, perName: 1, replyPrimer: 3 } as const;

/**
 * Tokens an image part is counted as. OpenAI's published rule: a `low` detail image costs 85 tokens; `high` (and
 * `auto`, which picks high for all but small images) costs 85 plus 170 per 512×512 tile of the image scaled to fit
 * 2048×2048 and then to 768 px on its short side. The image's size is not in the message (a URL, or a `data:` URL
 * we do not decode), so a high or auto detail image is counted as a typical 1024×1024 one: 4 tiles, 85 + 4 × 170 =
 * 765 tokens. A larger or smaller image costs up to 1,105 (a 2048×4096 one: 6 tiles) or as few as 255 (1 tile); the
 * agent's margin and the provider's own count (an overflow reply compacts and retries) cover the difference.
 */
export const IMAGE_TOKENS = { low: 85, high: 765 } as const;

/**
 * Tokens of one content part: a text part by the tokenizer, an image by {@link IMAGE_TOKENS}, any other part
 * (`input_audio`, `file`, …) by the tokenizer over its JSON, which over-counts a base64 payload: safe, never short.
 */
export function countPart(counter: TokenCounter, part: ContentPart): number {
  if (isTextPart(part)) return counter.count(part.text);
  if (isImagePart(part)) return part.image_url.detail === 'low' ? IMAGE_TOKENS.low : IMAGE_TOKENS.high;
  return counter.count(JSON.stringify(part));
}

/** Tokens of a message's content: a string, or the sum of its parts ({@link countPart}). */
export function countContent(counter: TokenCounter, content: MessageContent | undefined): number {
  if (typeof content === 'string') return counter.count(content);
  if (!Array.isArray(content)) return 0;
  return content.reduce((sum, part) => sum + countPart(counter, part), 0);
}

const loaded = new Map<EncodingName, Promise<TokenCounter>>();

async function rankData(encoding: EncodingName): Promise<RawRanks> {
  const module: { default: RawRanks } =
    encoding === 'o200k_base'
      ? await import('gpt-tokenizer/bpeRanks/o200k_base')
      : await import('gpt-tokenizer/bpeRanks/cl100k_base');
  return module.default;
}

/**
 * The production counter for `encoding`, loaded once per process: the first time costs a fraction of a second and
 * some memory (parsing the rank data, building the tables, and a warm-up on built-in text so that V8 has optimized
 * the hot code; measured: see BENCHMARKS.md, Figures from earlier sessions).
 */
export function loadTokenCounter(encoding: EncodingName): Promise<TokenCounter> {
  let counter = loaded.get(encoding);
  if (!counter) {
    counter = rankData(encoding).then((raw) => {
      const tokenizer = new Tokenizer(raw, encoding === 'o200k_base' ? o200kPieceEnd : cl100kPieceEnd);
      tokenizer.warmUp();
      return { encoding, encode: (text) => tokenizer.encode(text), count: (text) => tokenizer.count(text) };
    });
    loaded.set(encoding, counter);
  }
  return counter;
}

/**
 * Tokens of one chat message as the model sees it: role, content (text, or parts: {@link countContent}), name, tool
 * calls (function name and arguments) and the per-message overhead; multiplied by `margin` (≥ 1) for models whose tokenizer we only approximate.
 */
export function countMessage(counter: TokenCounter, message: ChatMessage, margin = 1): number {
  let tokens = CHAT_OVERHEAD.perMessage + counter.count(message.role);
  tokens += countContent(counter, message.content);
  if (message.name) tokens += CHAT_OVERHEAD.perName + counter.count(message.name);
  for (const call of message.tool_calls ?? []) {
    tokens += counter.count(call.function.name) + counter.count(call.function.arguments) + CHAT_OVERHEAD.perMessage;
  }
  if (message.tool_call_id) tokens += counter.count(message.tool_call_id);
  return Math.ceil(tokens * margin);
}

/** Tokens the tool schemas add to every request (their JSON, as providers serialize them into the prompt). */
export function countToolSchemas(counter: TokenCounter, schemas: readonly unknown[], margin = 1): number {
  if (schemas.length === 0) return 0;
  return Math.ceil(counter.count(JSON.stringify(schemas)) * margin);
}

/** Tokens of a whole request: every message plus the reply primer and the tool schemas. */
export function countRequest(
  counter: TokenCounter,
  messages: readonly ChatMessage[],
  schemas: readonly unknown[] = [],
  margin = 1,
): number {
  const body = messages.reduce((sum, message) => sum + countMessage(counter, message, margin), 0);
  return body + CHAT_OVERHEAD.replyPrimer + countToolSchemas(counter, schemas, margin);
}
