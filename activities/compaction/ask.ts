/**
 * Asking the summary model: the prompt for a part of the span, the call (structured output first; a provider that
 * rejects it gets the plain prompt, whose reply is parsed by headings; in conversation mode the agent's own request
 * and tools, plain text: conversation.ts), the reply read into the summary and the ledger update, and the tokens the
 * calls used (cached input apart).
 */
import type OpenAI from 'openai';
import { nextActionOf, parseLedgerUpdate, renderLedger } from '../../engine/ledger.ts';
import type { LedgerUpdate } from '../../engine/ledger.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import {
  DEFAULT_SUMMARY_SYSTEM_PROMPT,
  parseSummary,
  renderSummary,
  SUMMARY_JSON_SCHEMA,
  summaryPrompt,
} from '../../engine/summary.ts';
import type { SummarizeInput } from '../../contract/compaction-activities.ts';
import { registryPrice } from '../../engine/models.ts';
import type { TokenUsage } from '../../engine/pricing.ts';
import { readUsage } from '../usage.ts';
import { observeModelCall } from '../telemetry.ts';
import { transcriptOf } from './chunk.ts';
import type { CompactionDeps } from './deps.ts';
import type { ToolSchema } from '../tools.ts';

export type Conversation = OpenAI.Chat.Completions.ChatCompletionMessageParam[];

/** The summary reply read (JSON, headings or text) and rendered into the context message. */
export function readSummary(reply: string): { rendered: string; parsedAs: string; update: LedgerUpdate } {
  const { summary, parsedAs } = parseSummary(reply);
  return {
    rendered: renderSummary(summary),
    parsedAs,
    update: { ...parseLedgerUpdate(reply), nextAction: nextActionOf(summary.next_steps) },
  };
}

/** Asking over the client the summaries are written with. */
export function createAsking({ openai }: Pick<CompactionDeps, 'openai'>) {
  /**
   * The calls of one summary by `model`, for `input`, each message of a transcript cut at `maxChars`: they share
   * the response format (structured output until the provider rejects it) and add up the tokens they used.
   */
  return function askerFor(model: string, input: SummarizeInput, maxChars: number, agentTools?: ToolSchema[]) {
    // Cached input kept apart, as the model-call activity keeps it (activities/usage.ts), so it is priced apart;
    // absent until a call reports it.
    const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
    // In conversation mode (`agentTools`: the schemas the agent's model sees) the request is the agent's own, then
    // the instruction: its tools, no tool call, no response format (a schema would come before the whole prefix).
    let responseFormat: 'json_schema' | 'text' = agentTools ? 'text' : 'json_schema';
    const asked = agentTools
      ? agentTools.length > 0
        ? { tools: agentTools as OpenAI.Chat.Completions.ChatCompletionTool[], tool_choice: 'none' as const }
        : {}
      : undefined;

    /** The model's reply to `conversation`, in the response format the summary is on. */
    async function ask(conversation: Conversation): Promise<string> {
      const completion = await observeModelCall(
        'summary',
        model,
        () =>
          openai.chat.completions.create({
            model,
            messages: conversation,
            max_tokens: input.maxTokens,
            ...asked,
            ...(responseFormat === 'json_schema'
              ? { response_format: { type: 'json_schema' as const, json_schema: SUMMARY_JSON_SCHEMA } }
              : {}),
          }),
        (completion) => ({ usage: completion.usage, model: completion.model }),
        registryPrice(model),
      );
      const used = readUsage(completion.usage);
      usage.promptTokens += used?.promptTokens ?? 0;
      usage.completionTokens += used?.completionTokens ?? 0;
      if (used?.cachedTokens !== undefined) usage.cachedTokens = (usage.cachedTokens ?? 0) + used.cachedTokens;
      return completion.choices[0]?.message.content ?? '';
    }

    return {
      /** The tokens the calls used so far (of the prompt's, `cachedTokens` served from the provider's cache). */
      usage,
      /** Structured output, or plain text once the provider rejected it. */
      responseFormat: () => responseFormat,
      ask,

      /** The prompt for `part` of the span, folding in the summary `before` it (the previous one, or a chunk's). */
      promptFor(part: readonly ChatMessage[], before: string): Conversation {
        return [
          { role: 'system', content: DEFAULT_SUMMARY_SYSTEM_PROMPT },
          {
            role: 'user',
            content: summaryPrompt({
              transcript: transcriptOf(part, maxChars),
              ...(before ? { previousSummary: before } : {}),
              ...(input.ledger ? { ledger: renderLedger(input.ledger) } : {}),
              ...(input.instructions ? { instructions: input.instructions } : {}),
              ...(input.coverage?.currentTurn ? { stepsInProgress: input.coverage.currentTurn.steps } : {}),
              ...(input.form ? { form: input.form } : {}),
            }),
          },
        ];
      },

      /** The reply to `messages`; a provider without structured output answers 400 and is asked again in plain text. */
      async askFallingBack(messages: Conversation): Promise<string> {
        if (agentTools) return ask(messages); // conversation mode: plain text already
        try {
          return await ask(messages);
        } catch (error) {
          if ((error as { status?: number }).status !== 400) throw error;
          responseFormat = 'text';
          return ask(messages);
        }
      },
    };
  };
}

export type Asker = ReturnType<ReturnType<typeof createAsking>>;
