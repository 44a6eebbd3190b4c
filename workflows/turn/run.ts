/**
 * A turn: the user's message, then model → tools → model … until a text answer, or until the turn's budget is
 * reached. Each model call is made to fit first (compaction before it when due, again when the provider says the
 * request overflows its window).
 */
import { runTool, TOOL_OPTIONS } from '../activities.ts';
import type { ModelReply, NewMessage } from '../../contract/activities.ts';
import type { StreamAnnouncement } from '../../contract/stream.ts';
import { interruptedReply } from '../../contract/results.ts';
import type { ContextRecord } from '../../contract/records.ts';
import type { PendingOf } from '../inbox.ts';
import { wasCancelled } from './control.ts';
import { turnStoppedReply } from '../../contract/inputs.ts';
import type { AgentInput, SendInput, TurnStop } from '../../contract/inputs.ts';
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
import { answerCalls, callIn, toolLimits } from './tool-calls.ts';

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
): Promise<SendResult> {
  const { state } = conversation;
  const turn = state.turns + 1;
  const began = Date.now(); // workflow time
  // Runs recorded before reachable turns go on as they were recorded (workflows/turn-control.ts).
  const reachable = reach.control.reachableTurns;
  let reply: ModelReply | undefined;
  let messageId = '';
  let toolCalls = 0;
  let steps = 0;
  let tokens = 0;
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
  for (let step = 1; ; step++) {
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
    // Make it fit: the gate is a comparison of counters; the plan and its steps run as activities. The first
    // call checks it again once the turn's new messages are counted. Past the soft threshold, a compaction starts
    // in the background instead, and the agent goes on.
    if (conversation.compactionDue() !== undefined) await compactions.compact('auto', conversation.tailSeq);
    else compactions.startIfDue();
    // What was sent to the agent meanwhile: forced compactions, reviews and reverts are done now, steers join the
    // step's request, an interrupt ends the turn here.
    const steers: PendingOf<'steer'>[] = [];
    if (reachable && reach.boundaryQueued()) {
      const taken = await reach.atBoundary();
      steers.push(...taken.steers);
      if (taken.interrupt) interrupt = { pending: taken.interrupt, step };
    }
    // The turn's new messages, stored and counted by its first model call: the system prompt on the agent's
    // first turn, then the user's message; then the steers that came since the last step.
    const fresh: NewMessage[] = [];
    if (step === 1) {
      // (`state.systemPrompt` is the start's unless `configure` set one; a set one waits for this turn.)
      const prompt = state.systemPrompt ?? input.systemPrompt;
      if ((state.messages.length === 0 || state.systemPromptPending) && prompt) {
        fresh.push({
          messageId: conversation.newMessageId(),
          message: { role: 'system', content: prompt },
        });
        if (state.systemPromptPending) conversation.systemPromptSent();
      }
      messageId = conversation.newMessageId();
      fresh.push({ messageId, message: { role: 'user', content: send.text } });
      conversation.startGoal(send.text);
      if (reach.opener) reach.answer(reach.opener, { turn, step, messageId, opened: true });
    }
    const steerIds = new Set<string>();
    const announce: StreamAnnouncement[] = [];
    for (const steer of steers) {
      const id = conversation.newMessageId();
      steerIds.add(id);
      fresh.push({ messageId: id, message: { role: 'user', content: steer.input.text }, steer: true });
      announce.push({ kind: 'steer', id: `steer-${id}`, text: steer.input.text, turn, step });
      reach.answer(steer, { turn, step, messageId: id, opened: false });
    }
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
        if (!wasCancelled(error) && !(error instanceof InterruptedBeforeCall)) throw error;
        const pending = reach.takeInterrupt();
        if (pending === undefined && !(error instanceof InterruptedBeforeCall)) throw error; // the workflow's own
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
      const results = await Promise.all(
        reply.toolCalls.map((call) => {
          const resultId = conversation.newMessageId();
          return runTool.executeWithOptions(
            { ...TOOL_OPTIONS, summary: `tool ${call.function.name} (${call.id}) → ${resultId}` },
            [
              {
                ...conversation.life,
                call,
                ...callIn(call, reply!.record.id),
                resultId,
                counting: conversation.counting,
                ...toolLimits(conversation, call),
              },
            ],
          );
        }),
      );
      conversation.append(...(results as ContextRecord[]));
    } else {
      const answers = await answerCalls(conversation, reach, reply.toolCalls, reply.record.id, step, usage, ran);
      conversation.append(...answers);
      if (reach.interruptQueued()) {
        interrupt = { pending: reach.takeInterrupt(), step };
        break;
      }
    }
    if (forceText) break; // a provider that ignores tool_choice 'none': the calls are answered, the turn ends
  }
  conversation.turnDone(turn);
  conversation.progress.turnEnded();
  showTurn(state, conversation.progress);
  if (interrupt?.pending) {
    const text = interrupt.pending.input?.text;
    const opens = text !== undefined ? reach.openNext(text) : undefined;
    reach.answer(interrupt.pending, {
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
    messageId,
    replyId: reply?.record.id ?? '',
    toolCalls,
    steps,
    ...(stopped ? { stopped } : {}),
    ...(interrupt ? { interrupted: { step: interrupt.step } } : {}),
    ...(reply?.servedBy ? { servedBy: reply.servedBy } : {}),
  };
}
