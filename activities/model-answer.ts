/**
 * The model's answer to a model call: its request loaded (activities/model-request.ts), the call made (streamed to the
 * agent's live stream as it arrives, heartbeating, measured: activities/telemetry.ts), and the reply stored, counted
 * and indexed; or, for a retry whose earlier attempt stored the reply, that reply read back instead of asked again.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import { agentLife, messageKey } from '../contract/keys.ts';
import { FAILURE } from '../contract/failures.ts';
import type { ModelReply, WholeCallModelInput } from '../contract/activities.ts';
import type { ChatMessage, ToolCall } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { modelFailure } from './model-errors.ts';
import { readModelReply } from './model-reply.ts';
import { createRequestLoading } from './model-request.ts';
import type { AnswerInput } from './model-request.ts';
import { createCompletion } from './model-stream.ts';
import type { AssembledCompletion } from './model-stream.ts';
import type { MessageStore } from './messages.ts';
import type { SearchWrites } from './search-writes.ts';
import { interruptSignal, untilStored, withHeartbeat } from './stored.ts';
import type { AgentStream } from './stream.ts';
import type { StreamAnnouncement } from '../contract/stream.ts';
import { observeModelCall } from './telemetry.ts';
import type { ToolRegistry } from './tools.ts';
import { readUsage } from './usage.ts';

/**
 * A reply as the model call holds it before it is made lean: its calls with their arguments; and, answered now, its
 * indexing under way (`indexed`: never rejects; the activity awaits it before it completes, not before the tools run).
 */
export type FullReply = ModelReply & { toolCalls: ToolCall[]; indexed?: Promise<void> };

/** What a stored reply's call reported: its usage and the model that served it. */
export type ServedBy = Pick<ModelReply, 'usage' | 'servedBy'>;

/** What answering takes: the message store, the model's client and the worker's tools, the index and the stream. */
export type AnsweringDeps = MessageStore & {
  openai: OpenAI;
  tools: ToolRegistry;
  search: SearchWrites;
  stream: AgentStream;
  /** Call the model with `stream: true` (ActivityDeps `streamModel`). */
  streamModel: boolean;
};

/** The model's reply to a model call: `answer` asks the model, `storedReply` reads back a reply already stored. */
export function createAnswering(deps: AnsweringDeps) {
  const { openai, tools, objects, measure, save, search, stream, streamModel } = deps;
  const loadRequest = createRequestLoading(deps);

  /**
   * Loads the view (the turn's new messages from `fresh`), calls the model and stores its reply; `lead` goes to the
   * stream before the call's own output, in its first write.
   */
  async function answer(
    input: AnswerInput,
    fresh: Map<string, ChatMessage>,
    lead: readonly StreamAnnouncement[] = [],
  ): Promise<FullReply> {
    const { model, replyId, toolChoice, counting } = input;
    const agent = agentLife(input);
    const messages = await loadRequest(input, fresh);
    // The call and the reading of its reply, measured (activities/telemetry.ts): a reply that cannot be kept is a
    // failed call. The call streams: its output reaches the agent's live stream as it arrives.
    const context = Context.current();
    const interrupt = interruptSignal(context);
    const output = stream.modelCall(agent, { call: replyId, attempt: context.info.attempt });
    output.start(model, lead);
    const { completion, content, text, toolCalls } = await observeModelCall(
      'turn',
      model,
      async () => {
        let completion: AssembledCompletion;
        // Heartbeats while the request is out: a worker that dies mid-call is noticed within the heartbeat timeout,
        // and the call is retried on another worker, instead of waiting out the whole start-to-close timeout. An
        // activity cancelled (an interrupt) aborts the request.
        try {
          ({ completion } = await withHeartbeat(() =>
            createCompletion(
              openai,
              {
                model,
                messages: messages as OpenAI.Chat.Completions.ChatCompletionMessageParam[],
                tools: tools.schemas(input.tools),
                ...(toolChoice ? { tool_choice: toolChoice } : {}),
              },
              { stream: streamModel, signal: interrupt, onDelta: (delta) => output.delta(delta) },
            ),
          ));
        } catch (error) {
          const cancelled = interrupt.aborted;
          output.interrupted(cancelled ? 'cancelled' : `the call failed: ${String((error as Error).message ?? error)}`);
          await output.flush();
          if (cancelled) throw interrupt.reason ?? error;
          throw modelFailure(error, model, openai.baseURL);
        }
        const choice = completion.choices[0];
        if (!choice)
          throw ApplicationFailure.create({ message: `model ${model} returned no choices`, type: FAILURE.emptyReply });
        // What cannot be kept and sent back is refused here, before it is stored (BadReply, not retried).
        return { completion, ...readModelReply(choice.message, model) };
      },
      ({ completion }) => ({ usage: completion.usage ?? undefined, model: completion.model }),
      input.price,
    );
    // What the stream's model-end and the reply both say of the call: its usage and the model that served it.
    const usage = readUsage(completion.usage);
    const served = {
      ...(usage ? { usage } : {}),
      ...(completion.model ? { servedBy: completion.model } : {}),
    };
    output.end({ toolCalls: toolCalls.length, ...served });
    const reply: ChatMessage = {
      role: 'assistant',
      content,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    };
    const at = input.turn ? { turn: input.turn.turn, step: input.turn.step } : {};
    // The stream's last items first: a stored reply has its model-end in the stream (a retry reads a stored reply back
    // and asks no model, so nothing would write it then). Then indexed (the index names stored bodies only) while the
    // turn goes on.
    await output.flush();
    const record = await untilStored(() => save(agent, replyId, reply, counting));
    const indexed = search.messages(agent, [{ messageId: replyId, message: reply, ...at }]);
    return { record, content: text, toolCalls, ...served, indexed };
  }

  /** A reply stored by an earlier attempt of the model call (its heartbeats said so), read back, not asked again. */
  async function storedReply(input: WholeCallModelInput, served: ServedBy | undefined): Promise<FullReply> {
    const agent = agentLife(input);
    const message = await untilStored(() => objects.load<ChatMessage>(messageKey(agent, input.replyId)));
    const record = await measure(agent, input.replyId, message, input.counting);
    return { record, content: textOf(message.content), toolCalls: message.tool_calls ?? [], ...served };
  }

  return { answer, storedReply };
}
