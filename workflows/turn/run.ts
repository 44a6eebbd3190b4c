/**
 * A turn: the user's message, then model → tools → model … until a text answer, or until the turn's budget is
 * reached. Each model call is made to fit first (compaction before it when due, again when the provider says the
 * request overflows its window).
 */
import type { ModelReply } from '../../contract/activities.ts';
import { interruptedReply } from '../../contract/results.ts';
import type { PendingOf } from '../inbox.ts';
import { endedByInterrupt } from './control.ts';
import { turnStoppedReply } from '../../contract/inputs.ts';
import type { AgentInput, SendInput, TurnStop } from '../../contract/inputs.ts';
import type { TurnCarry } from '../../contract/state.ts';
import type { SendResult } from '../../contract/results.ts';
import type { Compactions } from '../compaction.ts';
import type { Conversation } from '../conversation.ts';
import { showProgress, showTurn } from '../visibility.ts';
import type { TurnUsage } from '../context-tools.ts';
import { toolSelectionOf } from '../../contract/inputs.ts';
import type { TurnReach } from './reach.ts';
import { steered, storeNew } from './store.ts';
import { budgetReached, spentTokens } from './step-rule.ts';
import type { StepRule } from './step-rule.ts';
import { callModelFitting, InterruptedBeforeCall, runCallsOf } from './model-call.ts';
import type { Ran } from './model-call.ts';
import { answerCalls } from './tool-calls.ts';
import { runToolsAsRecorded } from './as-recorded.ts';
import { newMessages } from './new-messages.ts';

/**
 * Runs one turn of `conversation` for the user's message `send`. The context stays a valid conversation to continue
 * whatever the budget cuts: every tool call is answered before the turn ends.
 */
export async function runTurn(
  conversation: Conversation,
  compactions: Compactions,
  input: AgentInput,
  rule: StepRule,
  send: SendInput,
  reach: TurnReach,
  resume?: TurnCarry,
): Promise<SendResult> {
  const { state } = conversation;
  // A turn the last run handed over inside goes on at its next step, with what it had used (workflows/hand-over.ts).
  const turn = resume?.turn ?? state.turns + 1;
  const began = resume?.began ?? Date.now(); // workflow time
  const firstStep = resume?.step ?? 1;
  // Runs recorded before reachable turns go on as they were recorded (workflows/turn/control.ts).
  const reachable = reach.control.reachableTurns;
  let reply: ModelReply | undefined;
  let messageId = resume?.messageId ?? '';
  let toolCalls = resume?.toolCalls ?? 0;
  let steps = resume?.steps ?? 0;
  let tokens = resume?.tokens ?? 0;
  let stopped: TurnStop | undefined;
  let interrupt: { pending: PendingOf<'interrupt'> | undefined; step: number } | undefined;
  conversation.progress.turnBegan(turn, new Date(began).toISOString());
  /** The tool schemas the model sees (the agent's `delegation`, `tools`). */
  const tools = toolSelectionOf(input);
  /** The turn's budget and what it has used, for the budget note and `context_budget`. */
  const usage = (): TurnUsage => ({
    steps: { used: steps, limit: rule.budget.steps },
    turnTokens: { used: tokens, ...(rule.budget.tokens !== undefined ? { limit: rule.budget.tokens } : {}) },
  });
  for (let step = firstStep; ; step++) {
    let forceText = false;
    if (step > 1) {
      const reached = budgetReached(rule.budget, { steps, tokens, ms: Date.now() - began });
      const next = rule.next(step, reached);
      if (next === 'stop') {
        stopped = reached;
        break;
      }
      forceText = next === 'forceText';
      conversation.progress.turnStep(step);
    }
    showProgress(state, conversation.progress); // the current details: this turn's model call
    // A step boundary (every tool call answered): a compaction that ended in the background is committed here.
    await compactions.background.commitIfFinished();
    // A draft of an automatic compaction waiting for review meanwhile (policy `review.automatic`): decided or timed out.
    await compactions.reviews.settleWaiting(false);
    // Past the run's history budget, the next run goes on from here (not on the step this run began with).
    if (reachable && step > firstStep && !forceText) {
      const at = { text: send.text, turn, step, steps, toolCalls, tokens, began, messageId };
      const handingOver = reach.handOver?.atBoundary(at);
      if (handingOver) await handingOver;
    }
    // Make it fit: the gate is a comparison of counters; the plan and its steps run as activities. The first
    // call checks it again once the turn's new messages are counted. Past the soft threshold, a compaction starts
    // in the background instead, and the agent goes on.
    if (conversation.compactionDue() !== undefined) await compactions.compact('auto', conversation.tailSeq);
    else compactions.startIfDue();
    // What was sent to the agent meanwhile: forced compactions, reviews and reverts are done now, steers join the
    // step's request, an interrupt ends the turn here.
    const steers: PendingOf<'steer'>[] = [];
    if (reachable && reach.inbox.boundaryQueued) {
      const taken = await reach.inbox.atBoundary();
      steers.push(...taken.steers);
      if (taken.interrupt) interrupt = { pending: taken.interrupt, step };
    }
    const { fresh, steerIds, announce, userMessageId } = newMessages(conversation, input, reach, send, steers, {
      turn,
      step,
    });
    if (userMessageId !== undefined) messageId = userMessageId;
    if (interrupt) {
      if (fresh.length) conversation.append(...steered(await storeNew(conversation, fresh), steerIds));
      break;
    }
    const view = conversation.view(); // the context so far, with the new messages, before the reply's id is taken
    const replyId = conversation.newMessageId();
    // The model as the agent has it now: the start's, or the last `configure`'s.
    const call = { view, replyId, forceText, fresh, steerIds, at: { turn, step }, announce, usage, tools };
    /** What the model call's activity answered of the reply's tool calls itself (reachable turns). */
    let ran: Ran | undefined;
    if (!reachable) ({ reply } = await callModelFitting(conversation, compactions, state.model, call));
    else {
      try {
        // The reply's plain tool calls run in the model call's activity (a forced text answer calls none).
        const runCalls = forceText ? undefined : runCallsOf(conversation, reach);
        ({ reply, ran } = await callModelFitting(conversation, compactions, state.model, { ...call, runCalls }, reach));
      } catch (error) {
        // A cancellation with no interrupt queued is the workflow's own.
        const interrupted = reach.inbox.interruptQueued;
        if (!(error instanceof InterruptedBeforeCall) && !endedByInterrupt(error, interrupted)) throw error;
        const pending = reach.inbox.takeInterrupt();
        conversation.replyNotStored(replyId);
        interrupt = { pending, step };
        break;
      }
    }
    steps = step;
    // The request as sent is the context now (the new messages appended, any compaction applied).
    tokens += spentTokens(reply, state.contextTokens);
    conversation.append(reply.record);
    if (reply.toolCalls.length === 0) break;
    toolCalls += reply.toolCalls.length;
    if (!reachable) {
      conversation.append(...(await runToolsAsRecorded(conversation, reply)));
    } else {
      const answers = await answerCalls(conversation, reach, reply.toolCalls, reply.record.id, step, usage, ran);
      conversation.append(...answers);
      if (reach.inbox.interruptQueued) {
        interrupt = { pending: reach.inbox.takeInterrupt(), step };
        break;
      }
    }
    if (forceText) break; // a provider that ignores tool_choice 'none': the calls are answered, the turn ends
  }
  conversation.turnDone(turn);
  conversation.progress.turnEnded();
  showTurn(state, conversation.progress);
  return turnResult(reach, { turn, messageId, toolCalls, steps, reply, stopped, interrupt });
}

/**
 * What the turn's `send` answers: the reply, or why the turn ended without one (its budget, an interrupt, which is
 * answered now, its text queued as the next turn's message).
 */
function turnResult(
  { inbox }: TurnReach,
  ended: {
    turn: number;
    messageId: string;
    toolCalls: number;
    steps: number;
    reply: ModelReply | undefined;
    stopped: TurnStop | undefined;
    interrupt: { pending: PendingOf<'interrupt'> | undefined; step: number } | undefined;
  },
): SendResult {
  const { turn, reply, stopped, interrupt } = ended;
  if (interrupt?.pending) {
    const text = interrupt.pending.input?.text;
    const opens = text !== undefined ? inbox.openNext(text, turn) : undefined;
    inbox.answer(interrupt.pending, {
      interrupted: true,
      turn,
      step: interrupt.step,
      reason: `turn ${turn} interrupted at step ${interrupt.step}`,
      ...(opens !== undefined ? { opens } : {}),
    });
  }
  return {
    turn,
    reply: interrupt ? interruptedReply(turn, interrupt.step) : stopped ? turnStoppedReply(stopped) : reply!.content,
    messageId: ended.messageId,
    replyId: reply?.record.id ?? '',
    toolCalls: ended.toolCalls,
    steps: ended.steps,
    ...(stopped ? { stopped } : {}),
    ...(interrupt ? { interrupted: { step: interrupt.step } } : {}),
    ...(reply?.servedBy ? { servedBy: reply.servedBy } : {}),
  };
}
