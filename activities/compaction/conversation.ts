/**
 * A summary in conversation mode (policy `summary.request`, input `conversation`): the agent's own request up to the
 * end of the span (the same tool schemas, the same messages in the same order: the system prompt, the pinned block
 * where the model call puts it, an earlier summary, the span's messages as they were last sent), then one user
 * message with the summary instruction (engine/summary.ts `conversationSummaryPrompt`), asked with
 * `tool_choice: 'none'` and no `response_format`. Its beginning is a request the agent has sent, so the provider
 * serves it from its prompt cache: what an LLM compaction pays at the full input price is the instruction and what
 * the cache lost, not the whole span. Anthropic's and OpenAI's own compaction ask the same way.
 *
 * Asked as a transcript instead (and why, for the event) when the summary model is not the agent's model, when the
 * span is summarized in chunks, when the plan names no context to rebuild the request from, or when the request, the
 * instruction and the summary's budget would not fit the agent's window.
 */
import type { SummarizeInput } from '../../contract/compaction-activities.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { renderLedger } from '../../engine/ledger.ts';
import { conversationSummaryPrompt } from '../../engine/summary.ts';
import { countRequest } from '../../engine/tokens.ts';
import type { TokenCounter } from '../../engine/tokens.ts';
import { withPinnedBlock } from '../agent-request.ts';
import type { ToolSchema } from '../tools.ts';
import type { CompactionShared } from './deps.ts';
import type { StoredPlan } from './stored-objects.ts';

/** How a summary is asked: the agent's request and the instruction, or a transcript (with why, when asked otherwise). */
export type SummaryRequest =
  { mode: 'conversation'; messages: ChatMessage[]; tools: ToolSchema[] } | { mode: 'transcript'; because?: string };

/** Building a summary's request in conversation mode over the stored plan, bodies and the worker's tools. */
export function createConversationRequests({
  load,
  summaryModel,
  tools,
}: Pick<CompactionShared, 'load' | 'summaryModel' | 'tools'>) {
  /**
   * The request for `input`'s summary in conversation mode, or why it is asked as a transcript: `chunks` is how many
   * calls the transcript would take (more than 1: a transcript), `counter` counts as the agent does; `planContext`
   * is the stored plan's context when the caller has read it (else read here from `input.planKey`).
   */
  return async function summaryRequestOf(
    input: SummarizeInput,
    chunks: number,
    counter: TokenCounter,
    planContext?: StoredPlan['context'],
  ): Promise<SummaryRequest> {
    const agent = input.conversation;
    if (!agent) return { mode: 'transcript' };
    if (summaryModel !== agent.model) {
      return { mode: 'transcript', because: `the summary model ${summaryModel} is not the agent's ${agent.model}` };
    }
    if (chunks > 1) return { mode: 'transcript', because: `the span is summarized in ${chunks} chunks` };
    const first = input.spanKeys[0];
    const last = input.spanKeys.at(-1);
    const context = planContext ?? (input.planKey ? (await load<StoredPlan>(input.planKey)).context : []);
    const end = context.findIndex((record) => record.key === last);
    const start = context.findIndex((record) => record.key === first);
    if (first === undefined || end < 0 || start < 0) {
      return { mode: 'transcript', because: "the plan's stored context does not hold the span" };
    }
    // The messages as the agent's model call sent them last: the bodies the context's keys name (this compaction
    // has changed none of them yet), the pinned block after the leading system messages.
    const bodies = await Promise.all(context.slice(0, end + 1).map((record) => load<ChatMessage>(record.key)));
    const [from, to] = [bodies[start]!, bodies[end]!];
    const messages = await withPinnedBlock([...bodies], agent.pinned, (key) => load<ChatMessage>(key));
    const kept = new Set(input.keptKeys ?? []);
    const instruction: ChatMessage = {
      role: 'user',
      content: conversationSummaryPrompt({
        span: {
          from: messages.indexOf(from) + 1,
          to: messages.indexOf(to) + 1,
          kept: input.spanKeys.filter((key) => kept.has(key)).length,
          foldsSummary: context.slice(start, end + 1).some((record) => record.kind === 'summary'),
        },
        ...(input.ledger ? { ledger: renderLedger(input.ledger) } : {}),
        ...(input.instructions ? { instructions: input.instructions } : {}),
        ...(input.coverage?.currentTurn ? { stepsInProgress: input.coverage.currentTurn.steps } : {}),
        ...(input.form ? { form: input.form } : {}),
      }),
    };
    const schemas = tools?.schemas(agent.tools) ?? [];
    const request = [...messages, instruction];
    const tokens = countRequest(counter, request, schemas, input.counting.margin);
    if (tokens + input.maxTokens > agent.window) {
      return {
        mode: 'transcript',
        because:
          `the agent's request up to the span's end and the instruction count ${tokens} tokens, with the summary's ` +
          `${input.maxTokens} over the window of ${agent.window}`,
      };
    }
    return { mode: 'conversation', messages: request, tools: schemas };
  };
}
