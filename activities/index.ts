/**
 * Activities: the agent's I/O. They take references (agent id, message ids, storage keys), never whole
 * transcripts, so the workflow history grows with each turn's new content only.
 *
 * Built by {@link createActivities} with their dependencies, so the worker, the tests and the demo wire real
 * clients the same way.
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import type { BlobStore } from '../storage/s3.ts';
import { messageKey, messageIdOf, agentLife, pinKey } from '../contract/keys.ts';
import { budgetNote } from '../engine/budget-note.ts';
import type { AgentLife } from '../contract/keys.ts';
import { FAILURE } from '../contract/failures.ts';
import { unkeyedRecord } from '../contract/records.ts';
import type { ContextRecord } from '../contract/records.ts';
import { resolveModelInfo } from '../engine/models.ts';
import type { ModelInfo, Counting } from '../engine/models.ts';
import { CHAT_OVERHEAD, countRequest, countToolSchemas, loadTokenCounter } from '../engine/tokens.ts';
import { pairViewOf, ToolPairError, toolPairViolations } from '../engine/tool-pairs.ts';
import type { ChatMessage, ToolCall } from '../engine/messages.ts';
import { isUserTurn, textOf } from '../engine/messages.ts';
import type { CompactionPolicy } from '../engine/policy.ts';
import { resolvePolicy } from '../engine/presets.ts';
import { gateOf } from '../engine/gates.ts';
import { gateFiresWith } from '../engine/trigger.ts';
import type {
  CallModelInput,
  CallModelPayload,
  CallModelResult,
  DescribeModelInput,
  ModelDescription,
  ModelReply,
  ReadReplyInput,
  StoreMessageInput,
  StorePinInput,
  StoredPin,
  ViolationInput,
  WholeCallModelInput,
} from '../contract/activities.ts';
import { leanModelResult, wholeModelInput } from '../contract/lean-calls.ts';
import { noteFiguresOf } from '../contract/activities.ts';
import { createCompactionActivities } from './compaction/index.ts';
import { heartbeatNow, interruptSignal, storedObjects, untilStored, withHeartbeat } from './stored.ts';
import { modelFailure } from './model-errors.ts';
import { leanReply, readModelReply } from './model-reply.ts';
import { readUsage } from './usage.ts';
import { createCompletion } from './model-stream.ts';
import type { AssembledCompletion } from './model-stream.ts';
import { createAgentStream, retrying } from './stream.ts';
import type { AgentStream } from './stream.ts';
import { PUBLISH_MAX_ITEMS } from '../contract/stream.ts';
import type { CompactionPhase, PublishStreamInput } from '../contract/stream.ts';
import { observeModelCall } from './telemetry.ts';
import { ToolRegistry } from './tools.ts';
import { budgetNoteMessage } from './request-extras.ts';
import { withPinnedBlock } from './agent-request.ts';
import { createToolRunner } from './run-tool.ts';
import type { ToolProgress } from './run-tool.ts';
import { createReportDelegation } from './delegation.ts';
import { createSearchWrites } from './search-writes.ts';

export { modelFailure } from './model-errors.ts';

export interface ActivityDeps {
  store: BlobStore;
  openai: OpenAI;
  tools?: ToolRegistry;
  /** The model that writes summaries (usually cheaper than the agent's); without one, summaries are extractive. */
  summaryModel?: string;
  /** The summary model's window, when the registry does not know it (default 128,000). */
  summaryWindow?: number;
  /** A break of the coverage invariant fails the turn or compaction instead of being recorded (tests). */
  strictInvariants?: boolean;
  /**
   * Call the agent's model with `stream: true` and publish its output to the live stream as it arrives (default
   * true). False: every call waits for the whole reply (a provider that streams badly); a provider that answers a
   * streamed request with a 400 about streaming is called without streaming anyway (docs/streaming.md).
   */
  streamModel?: boolean;
}

export type { Counting } from '../engine/models.ts';

/**
 * What a model call that runs its reply's tool calls (`runCalls`) keeps on its heartbeats: once the reply is stored,
 * its mark (a retry reads it back instead of asking the model again), and each call's progress as `runTool` keeps it.
 */
interface StepProgress {
  replyId: string;
  /** The reply is stored: its usage and the model that served it, as the call reported them. */
  reply?: Pick<ModelReply, 'usage' | 'servedBy'>;
  calls: ToolProgress[];
}

/** A reply as the model call holds it before it is made lean: its calls with their arguments. */
type FullReply = ModelReply & { toolCalls: ToolCall[] };

export function createActivities({
  store,
  openai,
  tools = new ToolRegistry(),
  summaryModel,
  summaryWindow,
  strictInvariants = false,
  streamModel = true,
}: ActivityDeps) {
  const objects = storedObjects(store);
  /** The agent's search index, written as bodies are stored (activities/search-writes.ts). */
  const search = createSearchWrites(store);
  /** The agents' live streams (docs/streaming.md); runTool publishes its call and result with `stream.toolCall/Result`. */
  const stream: AgentStream = createAgentStream(store);
  /** The record of a message of the conversation, counted once; it leaves out its own key, as the workflow holds it. */
  const measure = async (agent: AgentLife, messageId: string, message: ChatMessage, counting: Counting) =>
    unkeyedRecord(agent, await objects.measure(messageKey(agent, messageId), message, counting, { id: messageId }));
  /** Stores a message of the conversation under its idempotent key and returns its record. */
  const save = async (agent: AgentLife, messageId: string, message: ChatMessage, counting: Counting) => {
    await objects.write(messageKey(agent, messageId), message);
    return measure(agent, messageId, message, counting);
  };

  /** Tool calls: the `runTool` activity, and a reply's plain calls run in the model call (activities/run-tool.ts). */
  const runner = createToolRunner({ tools, store, save, stream, search });

  /** Loads the view (the turn's new messages from `fresh`), calls the model and stores its reply. */
  async function answer(
    input: Omit<WholeCallModelInput, 'newMessages' | 'gateCheck'>,
    fresh: Map<string, ChatMessage>,
  ): Promise<FullReply> {
    const { model, view, replyId, toolChoice, counting } = input;
    const agent = agentLife(input);
    const base = view.base ? await untilStored(() => objects.load<string[]>(view.base!)) : [];
    const keys = [
      ...base.slice(0, view.baseLength ?? base.length),
      ...Array.from({ length: Math.max(0, view.lastSeq - view.firstSeq + 1) }, (_, i) =>
        messageKey(agent, messageIdOf(view.firstSeq + i)),
      ),
    ];
    const messages = await Promise.all(
      keys.map((key) => {
        const body = fresh.get(key);
        return body ? Promise.resolve(body) : untilStored(() => objects.load<ChatMessage>(key));
      }),
    );
    // Invariant: no view reaches a model with a tool result without its call, or a call without its result.
    const violations = toolPairViolations(messages.map(pairViewOf));
    if (violations.length > 0) {
      throw ApplicationFailure.nonRetryable(new ToolPairError(violations).message, FAILURE.toolPairViolation);
    }
    // The pinned block after the system prompt, the budget note last (contract/pins.ts, activities/request-extras.ts).
    await withPinnedBlock(messages, input.pinned, (key) => untilStored(() => objects.load<ChatMessage>(key)));
    // The note written here from its figures (`budget`); a call scheduled before carries its text (`budgetNote`).
    const note =
      input.budget !== undefined ? budgetNote(noteFiguresOf(input.budget, input.window ?? 0)) : input.budgetNote;
    if (note !== undefined) messages.push(budgetNoteMessage(note));
    // Invariant: no request leaves the worker over the model's window.
    if (input.window !== undefined) {
      const counter = await loadTokenCounter(counting.encoding);
      const tokens = countRequest(counter, messages, tools.schemas(input.tools), counting.margin);
      if (tokens > input.window) {
        throw ApplicationFailure.nonRetryable(
          `the request counts ${tokens} tokens, over the model's window of ${input.window}: not sent`,
          FAILURE.contextOverflow,
        );
      }
    }
    // The call and the reading of its reply, measured (activities/telemetry.ts): a reply that cannot be kept is a
    // failed call. The call streams: its output reaches the agent's live stream as it arrives.
    const context = Context.current();
    const interrupt = interruptSignal(context);
    const output = stream.modelCall(agent, { call: replyId, attempt: context.info.attempt });
    output.start(model);
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
          throw modelFailure(error, model);
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
    await output.flush();
    const reply: ChatMessage = {
      role: 'assistant',
      content,
      ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
    };
    const record = await untilStored(() => save(agent, replyId, reply, counting));
    const at = input.turn ? { turn: input.turn.turn, step: input.turn.step } : {};
    await search.messages(agent, [{ messageId: replyId, message: reply, ...at }]);
    return {
      record,
      content: text,
      toolCalls,
      ...served,
    };
  }

  /** A reply stored by an earlier attempt of the model call (its heartbeats said so), read back, not asked again. */
  async function storedReply(input: WholeCallModelInput, served: StepProgress['reply']): Promise<FullReply> {
    const agent = agentLife(input);
    const message = await untilStored(() => objects.load<ChatMessage>(messageKey(agent, input.replyId)));
    const record = await measure(agent, input.replyId, message, input.counting);
    return { record, content: textOf(message.content), toolCalls: message.tool_calls ?? [], ...served };
  }

  /**
   * Stores the turn's new messages (waiting out a storage outage) and, unless they make compaction due, calls the
   * model; with `step` (the input's `runCalls`), then runs the reply's plain tool calls (RunCalls).
   */
  async function storeAndCall(input: WholeCallModelInput, step?: StepProgress): Promise<CallModelResult> {
    const { counting, newMessages = [] } = input;
    const agent = agentLife(input);
    await stream.announce(agent, input.announce);
    const fresh = new Map(newMessages.map((m) => [messageKey(agent, m.messageId), m.message]));
    const stored = await Promise.all(newMessages.map((m) => measure(agent, m.messageId, m.message, counting)));
    // Durable before the activity completes; meanwhile the model answers.
    const storing = Promise.all([...fresh].map(([key, message]) => untilStored(() => objects.write(key, message))));
    storing.catch(() => {}); // awaited below, on every path
    const due = input.gateCheck
      ? gateFiresWith(
          input.gateCheck,
          stored.map((record, i) => ({
            tokens: record.tokens,
            role: record.role,
            userTurn: isUserTurn({ ...record, ...(newMessages[i]?.steer ? { steer: true } : {}) }),
          })),
        )
      : undefined;
    const at = input.turn ? { turn: input.turn.turn, step: input.turn.step } : {};
    const indexing = storing.then(() =>
      search.messages(
        agent,
        newMessages.map(({ messageId, message }) => ({ messageId, message, ...at })),
      ),
    );
    indexing.catch(() => {}); // awaited below, on every path
    if (due !== undefined) {
      await indexing;
      return { stored, compactionDue: due.reason };
    }
    const [reply] = await Promise.all([step?.reply ? storedReply(input, step.reply) : answer(input, fresh), indexing]);
    if (step && !step.reply) {
      // Stored: a retry from here on (a worker killed while the tools run) reads it back.
      step.reply = {
        ...(reply.usage ? { usage: reply.usage } : {}),
        ...(reply.servedBy ? { servedBy: reply.servedBy } : {}),
      };
      heartbeatNow(step);
    }
    // The blocks of messages the reply is past: every message before it is stored (and indexed) by now.
    await search.sealBefore(agent, input.replyId);
    if (reply.toolCalls.length === 0 && input.turn) {
      const { turn, step } = input.turn;
      await stream.announce(agent, [
        {
          kind: 'turn-end',
          id: `turn-${turn}-end`,
          turn,
          steps: step,
          reply: Array.from(reply.content).slice(0, 200).join(''),
        },
      ]);
    }
    const ran =
      step && input.runCalls && reply.toolCalls.length
        ? await runner.runReplyCalls(
            agent,
            { replyId: input.replyId, counting, runCalls: input.runCalls },
            reply.toolCalls,
            step.calls,
            () => heartbeatNow(step),
            interruptSignal(Context.current()),
          )
        : {};
    return { stored, reply: leanReply(reply, input.toolChoice), ...ran };
  }
  const compaction = createCompactionActivities({
    store,
    search,
    openai,
    tools,
    ...(summaryModel ? { summaryModel } : {}),
    ...(summaryWindow ? { summaryWindow } : {}),
    strictInvariants,
  });
  /** A compaction step, its beginning and end published to the agent's live stream. */
  const phased =
    <I extends { agentId: string; life?: string; seq: number }, R>(
      phase: CompactionPhase,
      step: (input: I) => Promise<R>,
    ) =>
    async (input: I): Promise<R> => {
      const agent = agentLife(input);
      await stream.compaction(agent, input.seq, phase, 'began');
      try {
        const result = await step(input);
        await stream.compaction(agent, input.seq, phase, 'ended');
        return result;
      } catch (error) {
        await stream.compaction(agent, input.seq, phase, 'failed');
        throw error;
      }
    };
  return {
    ...compaction,
    planCompaction: phased('planning', (input: Parameters<typeof compaction.planCompaction>[0]) =>
      compaction.planCompaction(input),
    ),
    summarizeSpan: phased('summarizing', (input: Parameters<typeof compaction.summarizeSpan>[0]) =>
      compaction.summarizeSpan(input),
    ),
    applyCompaction: phased('applying', (input: Parameters<typeof compaction.applyCompaction>[0]) =>
      compaction.applyCompaction(input),
    ),

    /**
     * Publishes items only the workflow knows (a steer landed, an interrupt, an approval asked or answered, a turn
     * ended) to the agent's live stream (contract/stream.ts {@link PublishStreamInput}): a short storage write,
     * scheduled with STORE_OPTIONS. Each item's `id` keeps a retry from publishing it twice.
     */
    async publishStream(input: PublishStreamInput): Promise<void> {
      if (!Array.isArray(input.items) || input.items.length > PUBLISH_MAX_ITEMS) {
        throw ApplicationFailure.nonRetryable(
          `publishStream: items must be a list of at most ${PUBLISH_MAX_ITEMS} items`,
          FAILURE.badConfiguration,
        );
      }
      for (const [i, item] of input.items.entries()) {
        if (typeof item?.id !== 'string' || item.id === '' || typeof item.kind !== 'string') {
          throw ApplicationFailure.nonRetryable(
            `publishStream: items[${i}] needs a kind and an id (a non-empty string unique in the agent's life)`,
            FAILURE.badConfiguration,
          );
        }
      }
      await untilStored(() => stream.publish(agentLife(input), input.items, { once: retrying() }));
    },

    /**
     * A break of the coverage invariant the workflow found (scheduled only then): fails for good with
     * LONGRUN_STRICT_INVARIANTS on (tests fail loudly); otherwise logged, and the workflow records it in its state.
     */
    reportViolation(input: ViolationInput): Promise<void> {
      const message = `coverage invariant broken ${input.where}: ${input.problems.join('; ')}`;
      if (strictInvariants) throw ApplicationFailure.nonRetryable(message, FAILURE.invariantViolated);
      log.error(message, { agentId: input.agentId });
      return Promise.resolve();
    },

    /** Stores a pin's text under the pin's own key (idempotent) and counts it as a message of the request. */
    async storePin(input: StorePinInput): Promise<StoredPin> {
      const key = pinKey(agentLife(input), input.pinId);
      const record = await untilStored(() =>
        objects.save(key, { role: 'user', content: input.text }, input.counting, { id: input.pinId }),
      );
      return { key, tokens: record.tokens, preview: record.preview };
    },

    /** Stores one message under its idempotent key and returns its metadata. */
    async storeMessage(input: StoreMessageInput): Promise<ContextRecord> {
      const record = await save(agentLife(input), input.messageId, input.message, input.counting);
      await search.messages(agentLife(input), [{ messageId: input.messageId, message: input.message }]);
      await stream.announce(agentLife(input), input.announce);
      return record;
    },

    /**
     * The text of a turn's stored reply (as the turn answered it), for a `send` delivered again to a later run: its
     * result is kept without the reply (workflows/applied-updates.ts).
     */
    async readReply(input: ReadReplyInput): Promise<string> {
      const message = await untilStored(() => objects.load<ChatMessage>(messageKey(agentLife(input), input.replyId)));
      return textOf(message.content);
    },

    /**
     * The model's window and counting (the registry, with the agent's overrides), and the tokens every request
     * spends besides the messages. An unknown model fails the agent at its start with a clear error.
     */
    async describeModel({
      model,
      override,
      tools: selection,
      ...named
    }: DescribeModelInput): Promise<ModelDescription> {
      const compaction = named.compaction ?? named.compression; // (scheduled before the rename: its former name)
      let info: ModelInfo;
      let policy: CompactionPolicy;
      try {
        info = resolveModelInfo(model, override);
        policy = resolvePolicy(compaction);
      } catch (error) {
        throw ApplicationFailure.nonRetryable((error as Error).message, FAILURE.badConfiguration, error);
      }
      const counter = await loadTokenCounter(info.encoding);
      const fixedTokens = CHAT_OVERHEAD.replyPrimer + countToolSchemas(counter, tools.schemas(selection), info.margin);
      return { info, fixedTokens, policy, gate: gateOf(policy, info.window) };
    },

    /**
     * Stores and counts the turn's new messages, then (unless they make compaction due) loads the referenced
     * messages, calls the model (Chat Completions, with the tools) and stores the reply.
     */
    async callModel(lean: CallModelInput): Promise<CallModelPayload> {
      // What the input leaves out restored, what the workflow knows left out of the result (contract/lean-calls.ts).
      const input = wholeModelInput(lean);
      // Heartbeating throughout: a storage outage is waited out here (the model is not asked again because its
      // answer could not be stored yet), and a worker that dies meanwhile is still noticed within the timeout.
      if (!input.runCalls) return leanModelResult(await withHeartbeat(() => storeAndCall(input)), input);
      // Running the reply's tool calls too: the heartbeats carry the stored reply's mark and each call's result, so
      // that a retry reads the reply back and stores the results instead of asking the model and running them again.
      const { info } = Context.current();
      const earlier = info.heartbeatDetails as StepProgress | undefined;
      const step: StepProgress = earlier?.replyId === input.replyId ? earlier : { replyId: input.replyId, calls: [] };
      const key = messageKey(agentLife(input), input.replyId);
      const result = await withHeartbeat(
        async () => {
          // A retry whose attempt before died before a heartbeat said the reply was stored: a stored reply is read
          // back all the same (only its usage, which rode on that heartbeat, is lost).
          if (!step.reply && info.attempt > 1 && (await untilStored(() => store.get(key))) !== undefined) {
            step.reply = {};
          }
          return storeAndCall(input, step);
        },
        () => (step.reply ? step : undefined),
      );
      return leanModelResult(result, input);
    },

    /**
     * Runs one tool call and stores its result as a tool message (activities/run-tool.ts): heartbeating, at least
     * once, cancellable by an interrupt, and asking for approval first when the tool's rule says so.
     */
    runTool: runner.runTool,
    reportDelegation: createReportDelegation({ store, save, search, stream }),
  };
}
