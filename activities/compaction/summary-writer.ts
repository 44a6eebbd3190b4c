/**
 * One summary written over its span (summarize.ts runs one a part): by the summary model (in chunks when the span does
 * not fit its window, the chunk it is on in the heartbeats; in conversation mode, the agent's own request first),
 * judged by its must-keep facts; or, without a summary model or after it failed, by the extractive summarizer. Then
 * composed and stored with the task ledger (compose.ts).
 */
import type { SummarizeInput, SummarizeProgress, SummaryOutcome } from '../../contract/compaction-activities.ts';
import { registryPrice } from '../../engine/models.ts';
import { costOf } from '../../engine/pricing.ts';
import { modelFailure } from '../model-errors.ts';
import { heartbeatNow, withHeartbeat } from '../stored.ts';
import { createAsking, readSummary } from './ask.ts';
import type { Conversation } from './ask.ts';
import { createChunking, foldChunks } from './chunk.ts';
import { createComposing } from './compose.ts';
import { createConversationRequests } from './conversation.ts';
import type { CompactionShared } from './deps.ts';
import { judgedReply } from './judge.ts';
import { createSpanReading } from './span-reading.ts';
import type { StoredPlan } from './stored-objects.ts';
import { extractiveJudged } from './written-sizes.ts';

/** The `llm.model` of an event whose summary was extractive. */
export const EXTRACTIVE_MODEL = 'extractive (no summary model)';

/** Writing one summary (`summarize`) with the summary model of `shared`, or extractively. */
export function createSummaryWriting(shared: CompactionShared) {
  const { summaryModel } = shared;
  const readSpan = createSpanReading(shared);
  const chunkSpan = createChunking(shared);
  const askerFor = createAsking(shared);
  const summaryRequestOf = createConversationRequests(shared);
  const storeComposed = createComposing(shared);

  /** `context`: the stored plan's context, when the step read one (conversation mode rebuilds the request from it). */
  async function summarize(
    input: SummarizeInput,
    started: number,
    context: StoredPlan['context'] | undefined,
  ): Promise<SummaryOutcome> {
    const { frame, previousText, judge } = await readSpan(input);
    const { rest, counter } = frame;

    if (!summaryModel || input.writer === 'extractive') {
      // No summary model, or it failed: the extractive summarizer quotes the span instead (labelled as such).
      // Within the summary's budget (about 3 characters a token, less the frame), the facts that fit listed.
      return storeComposed(frame, extractiveJudged(rest, previousText, input.maxTokens, judge, input.form), {
        parsedAs: 'extractive',
        responseFormat: 'none',
        reprompted: false,
        llm: {
          model: EXTRACTIVE_MODEL,
          promptTokens: 0,
          completionTokens: 0,
          durationMs: Date.now() - started,
          cost: 0, // no call made
        },
      });
    }

    // A span too large for the summary model's window is summarized in chunks, each folding in the one before.
    const { chunks, maxChars } = chunkSpan(rest, counter, input.maxTokens);
    // Conversation mode (policy `summary.request`): the agent's own request, then the instruction (conversation.ts).
    const request = await summaryRequestOf(input, chunks.length, counter, context);
    const asker = askerFor(summaryModel, input, maxChars, request.mode === 'conversation' ? request.tools : undefined);
    const read = (reply: string) => {
      const { rendered, parsedAs, update } = readSummary(reply);
      return { ...judge(rendered, update), parsedAs };
    };
    // The chunk the model is on, in the heartbeats: what `longrun watch` shows as "chunk k of n".
    const progress: SummarizeProgress = { chunk: 0, chunks: Math.max(1, chunks.length) };
    const onChunk = (chunk: number) => {
      progress.chunk = chunk;
      heartbeatNow(progress);
    };
    const summarize = async () => {
      if (request.mode === 'conversation') {
        onChunk(1);
        return judgedReply(
          request.messages as Conversation,
          await asker.ask(request.messages as Conversation),
          read,
          asker.ask,
        );
      }
      const before = await foldChunks(
        chunks,
        previousText,
        async (chunk, before) => readSummary(await asker.ask(asker.promptFor(chunk, before))).rendered,
        onChunk,
      );
      onChunk(progress.chunks);
      const messages = asker.promptFor(chunks.at(-1) ?? [], before);
      return judgedReply(messages, await asker.askFallingBack(messages), read, asker.ask);
    };
    let summary: Awaited<ReturnType<typeof summarize>>;
    try {
      summary = await withHeartbeat(summarize, () => progress);
    } catch (error) {
      throw modelFailure(error, summaryModel, shared.openai.baseURL);
    }
    return storeComposed(frame, summary, {
      parsedAs: summary.parsedAs,
      responseFormat: asker.responseFormat(),
      reprompted: summary.reprompted,
      chunks: chunks.length,
      // Priced at the summary model's list price (engine/models.ts); null when the registry has none.
      llm: {
        model: summaryModel,
        ...asker.usage,
        durationMs: Date.now() - started,
        cost: costOf(asker.usage, registryPrice(summaryModel)),
        request: request.mode,
        ...(request.mode === 'transcript' && request.because ? { transcriptBecause: request.because } : {}),
      },
    });
  }

  return summarize;
}
