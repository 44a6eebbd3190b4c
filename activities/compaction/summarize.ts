/**
 * The summarize step: the span read from its stored bodies, summarized by the summary model (in chunks when it does
 * not fit the model's window, heartbeating the chunk it is on), judged by its must-keep facts, then composed and
 * stored with the task ledger. Without a summary model, or after it failed, the extractive summarizer quotes the
 * span instead.
 */
import { ApplicationFailure } from '@temporalio/common';
import { agentLife, compactionKey } from '../../contract/keys.ts';
import type {
  SummarizeInput,
  SummarizeProgress,
  SummarizeRequest,
  SummaryOutcome,
  SummaryPayload,
} from '../../contract/activities.ts';
import { leanSummary } from '../../contract/lean-calls.ts';
import { registryPrice } from '../../engine/models.ts';
import { costOf } from '../../engine/pricing.ts';
import { modelFailure } from '../model-errors.ts';
import { heartbeatNow, withHeartbeat } from '../stored.ts';
import { createAsking, readSummary } from './ask.ts';
import type { Conversation } from './ask.ts';
import { createConversationRequests } from './conversation.ts';
import { createChunking, foldChunks } from './chunk.ts';
import { createComposing } from './compose.ts';
import { judgedReply } from './judge.ts';
import { summarizeInputOf } from './plan.ts';
import type { CompactionShared } from './deps.ts';
import type { StoredPlan } from './stored-objects.ts';
import { summarySpecsOf } from '../../engine/planner/index.ts';
import { createSpanReading } from './span-reading.ts';
import { extractiveJudged } from './written-sizes.ts';

/** The `llm.model` of an event whose summary was extractive. */
export const EXTRACTIVE_MODEL = 'extractive (no summary model)';

export function createSummarizeActivities(shared: CompactionShared) {
  const { summaryModel, load, putJson } = shared;
  const readSpan = createSpanReading(shared);
  const chunkSpan = createChunking(shared);
  const askerFor = createAsking(shared);
  const summaryRequestOf = createConversationRequests(shared);
  const storeComposed = createComposing(shared);

  return {
    /**
     * Summarizes the span with the summary model: structured output (JSON schema) first; a provider that rejects
     * it gets the plain prompt, whose reply is parsed by headings. Stores the summary message and counts it.
     */
    async summarizeSpan(request: SummarizeRequest): Promise<SummaryPayload> {
      const started = Date.now();
      // The stored plan, read once: the span, the parts and the conversation-mode request all come from it.
      const plan = request.planKey ? await load<StoredPlan>(request.planKey) : undefined;
      const input = resolve(request, plan);
      // Summaries in their places (a plan's parts): each written on its own, then one outcome.
      const outcomes: SummaryOutcome[] = [];
      for (const one of partsOf(input, plan)) outcomes.push(await summarize(one, Date.now(), plan?.context));
      const outcome = outcomes.length === 1 ? outcomes[0]! : combined(outcomes, started);
      if (!request.planKey || request.spanKeys) return outcome;
      // By reference (`compaction-refs`): the outcome is stored for the apply step, the ledger for the next plan.
      const agent = agentLife(input);
      const summaryKey = compactionKey(agent, input.seq, 'summary-outcome.json');
      const ledgerKey = compactionKey(agent, input.seq, 'task-ledger.json');
      await putJson(ledgerKey, outcome.ledger);
      const stored = { ...outcome, summaryKey, ledgerKey };
      await putJson(summaryKey, stored);
      // The ledger as a change of the one its plan was made with, which the workflow holds (contract/lean-calls.ts).
      return leanSummary(stored, input.ledger);
    },
  };

  /**
   * The inputs of each summary the stored plan asks for in their places (its parts); else `input` as it is. Only a
   * plan by reference has parts (`compaction-refs`).
   */
  function partsOf(input: SummarizeInput, stored: StoredPlan | undefined): SummarizeInput[] {
    if (!stored || !input.form) return [input];
    const spec = stored.plan.summary!;
    if (!spec.parts) return [input];
    const { agentId, life, seq } = input;
    return summarySpecsOf(spec).map((one, part) => ({
      ...input,
      ...summarizeInputOf(
        { agentId, ...(life !== undefined ? { life } : {}), seq, ...(stored.ledger ? { ledger: stored.ledger } : {}) },
        one,
        stored.context,
        input.counting,
      ),
      part,
    }));
  }

  /** The summaries of a plan's parts as one outcome: the first's record, the others', and what they add up to. */
  function combined(outcomes: readonly SummaryOutcome[], started: number): SummaryOutcome {
    const [first] = outcomes;
    const last = outcomes.at(-1)!;
    const sum = (of: (o: SummaryOutcome) => number) => outcomes.reduce((total, o) => total + of(o), 0);
    const costs = outcomes.map((o) => o.llm.cost);
    return {
      ...first!,
      parts: outcomes.slice(1).map((o) => o.record),
      chunks: sum((o) => o.chunks ?? 1),
      facts: {
        found: sum((o) => o.facts.found),
        missing: sum((o) => o.facts.missing),
        reprompted: outcomes.some((o) => o.facts.reprompted),
        pinned: outcomes.flatMap((o) => o.facts.pinned),
      },
      ledger: last.ledger,
      ledgerRecord: last.ledgerRecord,
      llm: {
        model: first!.llm.model,
        promptTokens: sum((o) => o.llm.promptTokens),
        ...(outcomes.some((o) => o.llm.cachedTokens !== undefined)
          ? { cachedTokens: sum((o) => o.llm.cachedTokens ?? 0) }
          : {}),
        completionTokens: sum((o) => o.llm.completionTokens),
        durationMs: Date.now() - started,
        cost: costs.some((c) => c === null) ? null : costs.reduce<number>((total, c) => total + (c ?? 0), 0),
        // Conversation mode when every part was asked so; the first reason a part was not.
        ...(first!.llm.request
          ? { request: outcomes.every((o) => o.llm.request === 'conversation') ? 'conversation' : 'transcript' }
          : {}),
        ...(outcomes.find((o) => o.llm.transcriptBecause)
          ? { transcriptBecause: outcomes.find((o) => o.llm.transcriptBecause)!.llm.transcriptBecause! }
          : {}),
      },
    };
  }

  /**
   * The summarize step's input, its span from the stored plan (`stored`, read from `request.planKey`) when the request
   * names only the plan (`compaction-refs`).
   */
  function resolve(request: SummarizeRequest, stored: StoredPlan | undefined): SummarizeInput {
    if (request.spanKeys) return request as SummarizeInput;
    if (!request.planKey || !stored) {
      throw ApplicationFailure.nonRetryable('summarizeSpan: neither spanKeys nor planKey given');
    }
    const spec = stored.plan.summary;
    if (!spec) throw ApplicationFailure.nonRetryable(`the plan at ${request.planKey} summarizes nothing`);
    const { agentId, life, seq } = request;
    const fromPlan = summarizeInputOf(
      { agentId, ...(life !== undefined ? { life } : {}), seq, ...(stored.ledger ? { ledger: stored.ledger } : {}) },
      spec,
      stored.context,
      request.counting,
    );
    return {
      ...fromPlan,
      planKey: request.planKey,
      maxTokens: request.maxTokens,
      ...(request.writer ? { writer: request.writer } : {}),
      ...(request.instructions ? { instructions: request.instructions } : {}),
      ...(request.goalKey ? { goalKey: request.goalKey } : {}),
      ...(request.conversation ? { conversation: request.conversation } : {}),
    };
  }

  /** `context`: the stored plan's context, when the step read one (conversation mode rebuilds the request from it). */
  async function summarize(
    input: SummarizeInput,
    started: number,
    context: StoredPlan['context'] | undefined,
  ): Promise<SummaryOutcome> {
    {
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
      const asker = askerFor(
        summaryModel,
        input,
        maxChars,
        request.mode === 'conversation' ? request.tools : undefined,
      );
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
        throw modelFailure(error, summaryModel);
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
  }
}
