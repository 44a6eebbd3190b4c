/**
 * The step's model call, made to fit the window: the turn's new messages stored in the same activity, compaction
 * first when they make it due, again when the provider says the request overflows; in reachable turns the reply's
 * plain tool calls run in the same activity (`runCalls`).
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { callModel, MODEL_AND_TOOLS_OPTIONS, MODEL_OPTIONS, UNTIL_CANCELLED } from '../activities.ts';
import type { CallModelResult, ModelReply, NewMessage, NoteFigures, RunCalls } from '../../contract/activities.ts';
import { leanModelInput, wholeModelResult } from '../../contract/lean-calls.ts';
import type { StreamAnnouncement } from '../../contract/stream.ts';
import { seqOf } from '../../contract/keys.ts';
import type { ViewRef } from '../../contract/records.ts';
import { FAILURE } from '../../contract/failures.ts';
import type { Compactions } from '../compaction.ts';
import type { Conversation } from '../conversation.ts';
import { noteFor } from '../context-tools.ts';
import type { TurnUsage } from '../context-tools.ts';
import { pinnedBlockOf, pinnedRefsOf } from '../../contract/pins.ts';
import type { ToolSelection } from '../../contract/inputs.ts';
import type { PinnedRef } from '../../contract/pins.ts';
import type { TurnReach } from './reach.ts';
import { steered, storeNew } from './store.ts';

/** The model was not called: an interrupt came first (at the step boundary, or after a compaction the call needed). */
export class InterruptedBeforeCall extends Error {}

/** Compactions after a context overflow before the turn fails (each aims at half the previous target). */
const MAX_OVERFLOW_ATTEMPTS = 3;

/** What the model call's activity answered of its reply's tool calls (`runCalls`), as its result says. */
export type Ran = Pick<CallModelResult, 'toolResults' | 'toolErrors' | 'toolFailed'>;

/** What the model call's activity needs to answer the reply's plain tool calls itself (contract/activities.ts). */
export function runCallsOf(conversation: Conversation, reach: TurnReach): RunCalls {
  const limits = conversation.state.policy?.tools;
  return {
    ...(reach.approval.tools.size ? { approval: [...reach.approval.tools] } : {}),
    ...(limits && Object.keys(limits).length ? { limits } : {}),
  };
}

/**
 * Calls the model, first storing the turn's new messages (`fresh`) in the same activity. When they make compaction
 * due, the activity does not call the model: the workflow compacts and calls again. When the provider says the
 * context is over its window (our count was short, e.g. a model of another vendor), compacts with the overflow
 * trigger and calls again, each attempt aiming lower, at most {@link MAX_OVERFLOW_ATTEMPTS} times: never a loop.
 */
export async function callModelFitting(
  conversation: Conversation,
  compactions: Compactions,
  model: string,
  call: {
    view: ViewRef;
    replyId: string;
    forceText: boolean;
    fresh: NewMessage[];
    steerIds: ReadonlySet<string>;
    /** The turn and step (the reply that ends the turn publishes it), and what the call publishes first. */
    at: { turn: number; step: number };
    announce: StreamAnnouncement[];
    /** The turn's budget and use, for the budget note. */
    usage: () => TurnUsage;
    tools?: ToolSelection | undefined;
    /** The reply's plain tool calls run in the activity too (reachable turns). */
    runCalls?: RunCalls | undefined;
  },
  reach?: TurnReach,
): Promise<{ reply: ModelReply; ran?: Ran }> {
  const { state } = conversation;
  const { replyId, forceText } = call;
  let view = call.view;
  let unstored = call.fresh;
  let announce = call.announce; // (published by the first attempt only)
  /** The tail after a compaction starts at the reply, whose id is already taken. */
  const replySeq = seqOf(replyId);
  for (let attempt = 1; ;) {
    await compactions.checkBeforeCall(replyId);
    let result: CallModelResult;
    // The pinned block and the budget note as the context is now (after any compaction this call needed).
    const extras = requestExtras(conversation, call.usage);
    const calling = () =>
      callModel.executeWithOptions(
        {
          ...(call.runCalls ? MODEL_AND_TOOLS_OPTIONS : MODEL_OPTIONS),
          ...(reach ? UNTIL_CANCELLED : {}),
          summary:
            `${model}: ${state.messages.length + unstored.length} msgs → reply ${replyId}` +
            (call.runCalls ? ' + tools' : '') +
            (unstored.length ? ` (stores ${unstored.map((m) => m.messageId).join(', ')})` : ''),
        },
        [
          // What the activity can tell itself left out of the history (contract/lean-calls.ts).
          leanModelInput({
            ...conversation.life,
            model,
            view,
            replyId,
            counting: conversation.counting,
            ...(state.modelInfo?.price ? { price: state.modelInfo.price } : {}),
            window: conversation.window,
            ...(forceText ? { toolChoice: 'none' as const } : {}),
            ...(unstored.length ? { newMessages: unstored, gateCheck: conversation.gateCheck() } : {}),
            turn: call.at,
            ...(announce.length ? { announce } : {}),
            ...extras,
            ...(call.tools ? { tools: call.tools } : {}),
            ...(call.runCalls ? { runCalls: call.runCalls } : {}),
          }),
        ],
      );
    try {
      // (A reachable turn: an interrupt that came while the call was being made to fit stops it here.)
      if (reach?.inbox.interruptQueued) throw new InterruptedBeforeCall();
      // The result whole again: a lean one's defaults restored (contract/lean-calls.ts).
      result = wholeModelResult(await (reach ? reach.control.run(calling) : calling()), { model, replyId });
      announce = [];
    } catch (error) {
      announce = [];
      // The user's message stays in the context whatever happened to the call: stored on its own now.
      if (unstored.length) conversation.append(...steered(await storeNew(conversation, unstored), call.steerIds));
      unstored = [];
      const overflow =
        error instanceof ActivityFailure &&
        error.cause instanceof ApplicationFailure &&
        error.cause.type === FAILURE.contextOverflow;
      if (!overflow || attempt > MAX_OVERFLOW_ATTEMPTS) throw error;
      await compactions.compact('overflow', replySeq, {}, attempt++);
      view = conversation.view(replyId);
      continue;
    }
    conversation.append(...steered(result.stored, call.steerIds));
    unstored = [];
    if (result.reply) {
      if (extras.budget !== undefined) conversation.noted();
      conversation.called(result.reply);
      const { toolResults, toolErrors, toolFailed } = result;
      return {
        reply: result.reply,
        ...(call.runCalls
          ? {
              ran: {
                ...(toolResults ? { toolResults } : {}),
                ...(toolErrors ? { toolErrors } : {}),
                ...(toolFailed ? { toolFailed } : {}),
              },
            }
          : {}),
      };
    }
    // The new messages made compaction due: compact, then call with them in the compacted context.
    await compactions.compact('auto', replySeq);
    view = conversation.view(replyId);
  }
}

/** What a model call adds to its view: the pinned block's pins, the budget note (nothing, for agents without). */
function requestExtras(
  conversation: Conversation,
  usage: () => TurnUsage,
): { pinned?: PinnedRef[]; budget?: NoteFigures } {
  const { state } = conversation;
  const block = pinnedBlockOf(conversation.life, state.pins, state.messages);
  const note = noteFor(conversation, usage());
  return {
    ...(block.length ? { pinned: pinnedRefsOf(block) } : {}),
    ...(note !== undefined ? { budget: note } : {}),
  };
}
