/**
 * Chunking a span too large for the summary model's window: the transcript the summarizer reads, the span cut into
 * consecutive chunks that each fit a share of the window, and the fold of every chunk but the last into the summary
 * the last one carries forward.
 */
import type { ChatMessage } from '../../engine/messages.ts';
import { partLabel, textOf } from '../../engine/messages.ts';
import { resolveModelInfo } from '../../engine/models.ts';
import { headOf } from '../../engine/text.ts';
import type { TokenCounter } from '../../engine/tokens.ts';
import type { CompactionDeps } from './deps.ts';

/** Share of the summary model's window a chunk's prompt may take (the rest: instructions, ledger, the answer). */
const WINDOW_SHARE = 0.6;
const MIN_CHUNK_TOKENS = 1_000;
/** The window of a summary model the registry does not know. */
const DEFAULT_SUMMARY_WINDOW = 128_000;

/**
 * The transcript the summarizer reads: one block per message, tool calls and results named; a message of parts as
 * its text, an image as `[image]`; a message over `maxChars` cut (never inside a surrogate pair).
 */
export function transcriptOf(messages: readonly ChatMessage[], maxChars = Infinity): string {
  return messages
    .map((m) => {
      const calls = (m.tool_calls ?? []).map((c) => `\n→ calls ${c.function.name}(${c.function.arguments}) [${c.id}]`);
      const who = m.role === 'tool' ? `tool result [${m.tool_call_id}]` : m.role;
      const content = textOf(m.content, partLabel);
      const text = content.length > maxChars ? `${headOf(content, maxChars)}… [cut for the summarizer]` : content;
      return `### ${who}\n${text}${calls.join('')}`;
    })
    .join('\n\n');
}

/** Consecutive chunks of `messages`, each within `budget` tokens (a single larger message is a chunk of its own). */
export function chunkByTokens<T>(messages: readonly T[], tokensOf: (m: T) => number, budget: number): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const message of messages) {
    const tokens = tokensOf(message);
    if (current.length > 0 && size + tokens > budget) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(message);
    size += tokens;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** The summary model's window from the registry; 128,000 for a model it does not know. */
function registryWindow(model: string | undefined): number {
  try {
    return model ? resolveModelInfo(model).window : DEFAULT_SUMMARY_WINDOW;
  } catch {
    return DEFAULT_SUMMARY_WINDOW;
  }
}

/** A span in chunks, and the characters one message may keep in a chunk's transcript. */
export interface ChunkedSpan {
  chunks: ChatMessage[][];
  maxChars: number;
}

/** Chunking over the summary model's window (the one configured, or the registry's). */
export function createChunking({
  summaryModel,
  summaryWindow,
}: Pick<CompactionDeps, 'summaryModel' | 'summaryWindow'>) {
  const window = summaryWindow ?? registryWindow(summaryModel);
  /**
   * `span` in chunks whose transcripts each fit the window's share less the summary's budget (`maxTokens`); one
   * message alone is cut to fit a chunk.
   */
  return function chunkSpan(span: readonly ChatMessage[], counter: TokenCounter, maxTokens: number): ChunkedSpan {
    const budget = Math.max(MIN_CHUNK_TOKENS, Math.floor(window * WINDOW_SHARE) - maxTokens);
    const maxChars = budget * 3; // one message alone is cut to fit a chunk
    return { chunks: chunkByTokens(span, (m) => counter.count(transcriptOf([m], maxChars)), budget), maxChars };
  };
}

/**
 * Summarizes every chunk but the last in order, each folding in the summary before it (at first `previous`), and
 * returns the summary the last chunk folds in. `onChunk` hears the chunk (from 1) before its call.
 */
export async function foldChunks(
  chunks: readonly ChatMessage[][],
  previous: string,
  summarize: (chunk: readonly ChatMessage[], before: string) => Promise<string>,
  onChunk: (chunk: number) => void,
): Promise<string> {
  let before = previous;
  for (const [i, chunk] of chunks.slice(0, -1).entries()) {
    onChunk(i + 1);
    before = await summarize(chunk, before);
  }
  return before;
}
