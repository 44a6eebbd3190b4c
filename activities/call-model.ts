/**
 * The `callModel` activity: stores and counts the turn's new messages, re-checks the compaction gate over them (the
 * model is not asked when they make compaction due), then has the model answer (activities/model-answer.ts) and, when
 * the input asks it (`runCalls`), runs the reply's plain tool calls in the same activity (activities/run-tool.ts).
 * Its heartbeats carry what a retry needs not to ask the model, or run a tool, again.
 */
import { Context } from '@temporalio/activity';
import { agentLife, messageKey } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { CallModelInput, CallModelPayload, CallModelResult, WholeCallModelInput } from '../contract/activities.ts';
import { leanModelResult, wholeModelInput } from '../contract/lean-calls.ts';
import type { ContextRecord } from '../contract/records.ts';
import { isUserTurn } from '../engine/messages.ts';
import { gateFiresWith } from '../engine/trigger.ts';
import type { BlobStore } from '../storage/s3.ts';
import { createAnswering } from './model-answer.ts';
import type { AnsweringDeps, FullReply, ServedBy } from './model-answer.ts';
import { leanReply } from './model-reply.ts';
import type { ToolRunner } from './run-tool.ts';
import { heartbeatNow, interruptSignal, untilStored, withHeartbeat } from './stored.ts';
import { retrying, userMessageItems } from './stream.ts';
import type { ToolProgress } from './tool-execution.ts';

/**
 * What a model call that runs its reply's tool calls (`runCalls`) keeps on its heartbeats: once the reply is stored,
 * its mark (a retry reads it back instead of asking the model again), and each call's progress as `runTool` keeps it.
 */
interface StepProgress {
  replyId: string;
  /** The reply is stored: its usage and the model that served it, as the call reported them. */
  reply?: ServedBy;
  calls: ToolProgress[];
}

/**
 * The compaction gate re-checked over the turn's new messages as stored (`input.gateCheck`, the gate the workflow
 * scheduled the call under): why compaction is due now, or undefined (no gate to check, or it does not fire).
 */
function compactionDueOnStoring(input: WholeCallModelInput, stored: readonly ContextRecord[]) {
  const { newMessages = [] } = input;
  return input.gateCheck
    ? gateFiresWith(
        input.gateCheck,
        stored.map((record, i) => ({
          tokens: record.tokens,
          role: record.role,
          userTurn: isUserTurn({ ...record, ...(newMessages[i]?.steer ? { steer: true } : {}) }),
        })),
      )
    : undefined;
}

/** What the model call takes: what answering takes, the store, and the tool runner for the reply's calls. */
export type ModelCallDeps = AnsweringDeps & { store: BlobStore; runner: ToolRunner };

/** The activity callModel. */
export function createModelCall(deps: ModelCallDeps) {
  const { store, objects, measure, search, stream, runner } = deps;
  const { answer, storedReply } = createAnswering(deps);

  /**
   * Stores the turn's new messages (waiting out a storage outage) and, unless they make compaction due, calls the
   * model; with `step` (the input's `runCalls`), then runs the reply's plain tool calls (RunCalls).
   */
  async function storeAndCall(input: WholeCallModelInput, step?: StepProgress): Promise<CallModelResult> {
    const { counting, newMessages = [] } = input;
    const agent = agentLife(input);
    // The turn's opening message first, then what the workflow announces (the steers that land in this step).
    const opening = [...userMessageItems(newMessages, input.turn?.turn), ...(input.announce ?? [])];
    const fresh = new Map(newMessages.map((m) => [messageKey(agent, m.messageId), m.message]));
    const stored = await Promise.all(newMessages.map((m) => measure(agent, m.messageId, m.message, counting)));
    // Durable before the activity completes; meanwhile the model answers.
    const storing = Promise.all([...fresh].map(([key, message]) => untilStored(() => objects.write(key, message))));
    storing.catch(() => {}); // awaited below, on every path
    const due = compactionDueOnStoring(input, stored);
    // A first attempt that asks the model writes them in its output's first write (a retry looks for them in the log
    // first: alone, before anything else of the call). Awaited at the end either way.
    const leading = due === undefined && !step?.reply && !retrying();
    const announced = leading ? Promise.resolve() : stream.announce(agent, opening);
    const at = input.turn ? { turn: input.turn.turn, step: input.turn.step } : {};
    const indexing = storing.then(() =>
      search.messages(
        agent,
        newMessages.map(({ messageId, message }) => ({ messageId, message, ...at })),
      ),
    );
    indexing.catch(() => {}); // awaited below, on every path
    if (due !== undefined) {
      await Promise.all([indexing, announced]);
      return { stored, compactionDue: due.reason };
    }
    const [{ indexed, ...reply }] = await Promise.all([
      step?.reply ? storedReply(input, step.reply) : answer(input, fresh, leading ? opening : []),
      indexing,
    ]);
    if (step && !step.reply) {
      // Stored: a retry from here on (a worker killed while the tools run) reads it back.
      step.reply = {
        ...(reply.usage ? { usage: reply.usage } : {}),
        ...(reply.servedBy ? { servedBy: reply.servedBy } : {}),
      };
      heartbeatNow(step);
    }
    // The blocks of messages the reply is past: every message before it is stored (and indexed) by now.
    await Promise.all([search.sealBefore(agent, input.replyId), announced]);
    try {
      return await afterReply(agent, input, step, reply, stored);
    } finally {
      await indexed; // before the activity completes, on every path (it never rejects)
    }
  }

  /** The turn's end on the stream, or the reply's plain tool calls run (RunCalls). */
  async function afterReply(
    agent: AgentLife,
    input: WholeCallModelInput,
    step: StepProgress | undefined,
    reply: FullReply,
    stored: ContextRecord[],
  ): Promise<CallModelResult> {
    const { counting } = input;
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

  return {
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
  };
}
