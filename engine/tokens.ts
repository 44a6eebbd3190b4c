/**
 * Token accounting behind a small interface. Production counting uses gpt-tokenizer (the same token ids as
 * OpenAI's tiktoken, about 10× the speed of js-tiktoken, which stays the conformance reference in tests).
 * Literal special tokens such as `<|endoftext|>` in user or tool text are counted as the ordinary text they are,
 * never thrown on.
 */
import { heapMerge, LONG_PIECE_BYTES } from './bpe.ts';
import type { ChatMessage } from './messages.ts';

export type EncodingName = 'o200k_base' | 'cl100k_base';

export const ENCODINGS: readonly EncodingName[] = ['o200k_base', 'cl100k_base'];

/** Counts tokens of text in one encoding. */
export interface TokenCounter {
  readonly encoding: EncodingName;
  encode(text: string): number[];
  count(text: string): number;
}

/** OpenAI's chat format: 3 tokens per message, 1 more per name, 3 to prime the reply. */
export const CHAT_OVERHEAD = { perMessage: 3, perName: 1, replyPrimer: 3 } as const;

interface GptTokenizerModule {
  encode(text: string, options?: { disallowedSpecial?: Set<string> }): number[];
  countTokens(text: string, options?: { disallowedSpecial?: Set<string> }): number;
  default: object;
}

/** The part of gpt-tokenizer's BPE core (4.0.0, pinned) whose merge we replace for long pieces. */
interface MergeCore {
  bytePairMerge(piece: Uint8Array): number[];
  getBpeRankFromBytes(bytes: Uint8Array): number | undefined;
}

/**
 * Routes pieces of at least {@link LONG_PIECE_BYTES} to the O(n log n) merge; shorter ones keep the library's.
 * The library's own split and rank tables stay in charge, so the ids are the library's (and tiktoken's).
 */
function installLongPieceMerge(core: MergeCore | undefined): void {
  if (!core || typeof core.bytePairMerge !== 'function' || typeof core.getBpeRankFromBytes !== 'function') {
    throw new Error('gpt-tokenizer changed its internals: pin the version the engine was tested with (4.0.0)');
  }
  const shortMerge = core.bytePairMerge.bind(core);
  const rankOf = (bytes: Uint8Array) => core.getBpeRankFromBytes(bytes);
  core.bytePairMerge = (piece) => (piece.length >= LONG_PIECE_BYTES ? heapMerge(piece, rankOf) : shortMerge(piece));
}

/** Every special token is ordinary text to us: nothing is disallowed, nothing is special. */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

const loaded = new Map<EncodingName, Promise<TokenCounter>>();

/** The production counter for `encoding`, loaded once per process (about 0.2 s and 36 MB the first time). */
export function loadTokenCounter(encoding: EncodingName): Promise<TokenCounter> {
  let counter = loaded.get(encoding);
  if (!counter) {
    const module: Promise<GptTokenizerModule> =
      encoding === 'o200k_base'
        ? import('gpt-tokenizer/encoding/o200k_base')
        : import('gpt-tokenizer/encoding/cl100k_base');
    counter = module.then((api) => {
      // A private field of gpt-tokenizer's encoding object: the version is pinned and the tests guard it.
      installLongPieceMerge(
        (api.default as { bytePairEncodingCoreProcessor?: MergeCore }).bytePairEncodingCoreProcessor,
      );
      return {
        encoding,
        encode: (text) => api.encode(text, AS_TEXT),
        count: (text) => api.countTokens(text, AS_TEXT),
      };
    });
    loaded.set(encoding, counter);
  }
  return counter;
}

/**
 * Tokens of one chat message as the model sees it: role, content, name, tool calls (function name and arguments)
 * and the per-message overhead; multiplied by `margin` (≥ 1) for models whose tokenizer we only approximate.
 */
export function countMessage(counter: TokenCounter, message: ChatMessage, margin = 1): number {
  let tokens = CHAT_OVERHEAD.perMessage + counter.count(message.role);
  if (message.content) tokens += counter.count(message.content);
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
