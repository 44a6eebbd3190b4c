/**
 * The agent workflow: one per agent, running until closed. It holds metadata and references only; message bodies
 * live in S3 and are read by activities, so the history grows with each turn's new content, not with the context.
 *
 * In the shape of Temporal's safe-message-handlers sample: the handlers (handlers.ts) validate and enqueue; the loop
 * below takes one input at a time and hands it to its kind's work (a turn, workflows/turn/run.ts; a compaction,
 * workflows/compaction.ts; a review, workflows/reviews.ts) through the inbox, which answers its Update; then it hands
 * over to a new run when the history has grown enough. The state and the message ids are the conversation's
 * (conversation.ts).
 */
import { allHandlersFinished, condition, workflowInfo } from '@temporalio/workflow';
import { readReply, STORE_OPTIONS } from './activities.ts';
import type { AgentCarry, AgentState } from '../contract/state.ts';
import { publicState } from '../contract/state.ts';
import { taskDone } from './task-mode.ts';
import type { AgentInput, CompactInput } from '../contract/inputs.ts';
import { Compactions } from './compaction.ts';
import { continueAgent, HandOver } from './hand-over.ts';
import { Conversation } from './conversation.ts';
import { setHandlers } from './handlers.ts';
import { dispatch, Inbox, pendingOf } from './inbox.ts';
import type { DispatchTable, PendingOf } from './inbox.ts';
import { checkAgentInput } from './inputs.ts';
import { configure, describeModelFor } from './configure.ts';
import { pinItem, unpinItem } from './pins.ts';
import { runTurn } from './turn/run.ts';
import { reachOf } from './turn/reach.ts';
import { StepRule } from './turn/step-rule.ts';
import { TurnControl } from './turn/control.ts';
import { showClosed, showDetails, showProgress, showStarted } from './visibility.ts';

export async function agentWorkflow(input: AgentInput, carry?: AgentCarry): Promise<AgentState> {
  if (!carry) checkAgentInput(input); // a new agent's input is checked before anything happens
  const conversation = Conversation.begin(input, carry, workflowInfo().runId);
  const { state } = conversation;
  const inbox = new Inbox(
    carry?.applied,
    (replyId) =>
      readReply.executeWithOptions({ ...STORE_OPTIONS, summary: `read reply ${replyId}` }, [
        { ...conversation.life, replyId },
      ]),
    carry?.inFlight, // a turn the last run handed over inside: queued first, to go on
  );
  const compactions = new Compactions(conversation, inbox);
  const { background, reviews } = compactions;
  /** When this run hands over to a new one: between inputs (below), or inside a turn at a step boundary. */
  const handOver = new HandOver(input, conversation, inbox, background);
  // (The state's model: a reopened agent's as `configure` left it, a new agent's its input's.)
  if (!carry || carry.reopened) showStarted(state.model);
  else showDetails(state); // a run after continue-as-new shows what the last one did (current details are per run)
  // A draft of an automatic compaction carried over still waits for review: this run shows it (AgentStatus too).
  if (state.draft?.info.waits) showProgress(state, conversation.progress);
  const control = new TurnControl();
  setHandlers(conversation, inbox, control, (renew) => handOver.renew(renew));

  // The model's window and counting, resolved once by an activity (so a registry change never breaks replay).
  if (!state.modelInfo) {
    conversation.describedAs(await describeModelFor(input));
  }

  const rule = new StepRule(input);

  // A turn or compaction that cannot finish (a rejected API key, an unknown model, retries exhausted) fails its
  // Update, not the agent: the stored messages stay, and the next input can succeed once the cause is fixed.
  const turnFailed = (why: string) => {
    conversation.turnFailed(why);
    conversation.progress.turnEnded();
    showDetails(state, conversation.progress);
  };
  // (A compaction can fail inside a turn, taken at a step boundary: the turn goes on.)
  const compactionFailed = (why: string) => {
    conversation.compactionFailed(why);
    showDetails(state, conversation.progress);
  };
  /** A `compact`: a draft for review, or one now (`force: false`: if the automatic trigger fires now, cooldown too). */
  const compact = (request: CompactInput) =>
    request.review
      ? reviews.review(request)
      : compactions.compact(request.force === false ? 'auto' : 'forced', conversation.tailSeq, request);
  /** What reaches a turn while it works: the inputs it takes at its step boundaries, through the inbox. */
  const reach = reachOf(input, inbox, control);
  /**
   * A message's turn (a child agent's task: then it closes, its outcome kept: workflows/task-mode.ts), or the turn the
   * last run handed over inside (`resume`), going on.
   */
  const send = (pending: PendingOf<'send'>) =>
    inbox.run(
      pending,
      () =>
        runTurn(
          conversation,
          compactions,
          input,
          rule,
          pending.input,
          { ...reach, handOver: handOver.inTurn(pending) },
          pending.resume,
        ),
      turnFailed,
    );
  /** What the loop does with each kind of input, under the trace of the handler that queued it (inbox.run). */
  const work: DispatchTable = {
    send: input.task ? (pending) => send(pending).then((result) => taskDone(state, inbox, input.task!, result)) : send,
    // A steer to an idle agent opens a turn with its text (answered where it landed, the turn's first step).
    steer: (pending) =>
      inbox.run(
        pending,
        async () => {
          const turnReach = { ...reach, opener: pending, handOver: handOver.inTurn(undefined) };
          await runTurn(conversation, compactions, input, rule, pending.input, turnReach);
          return pending.result!;
        },
        turnFailed,
      ),
    // An interrupt with no turn in progress: nothing to stop; its text opens the next turn.
    interrupt: (pending) =>
      inbox.runNow(
        pending,
        () => {
          const text = pending.input?.text;
          const opens = text !== undefined ? inbox.openNext(text, state.turns) : undefined;
          return {
            interrupted: false,
            reason: 'no turn in progress',
            ...(opens !== undefined ? { opens } : {}),
          };
        },
        compactionFailed,
      ),
    compact: (pending) => inbox.run(pending, () => compact(pending.input), compactionFailed),
    revert: (pending) => inbox.run(pending, () => compactions.revert(pending.input.toEvent), compactionFailed),
    approve: (pending) => inbox.run(pending, () => reviews.approve(pending.input), compactionFailed),
    discard: (pending) => inbox.runNow(pending, () => reviews.discard(pending.input), compactionFailed),
    configure: (pending) =>
      inbox.run(pending, () => configure(conversation, compactions, input, pending.input), compactionFailed),
    pin: (pending) => inbox.run(pending, () => pinItem(conversation, pending.input, 'person'), compactionFailed),
    unpin: (pending) => inbox.runNow(pending, () => unpinItem(conversation, pending.input), compactionFailed),
  };
  inbox.serve(work);
  // A child agent's task is its first message (task mode: it closes once the task's turn is done).
  if (input.task && !carry) inbox.push(pendingOf('send', { text: input.task.text }));
  // One predicate for the whole run, made outside the loop: the SDK keeps every condition's predicate until the run
  // ends, and one made in the loop's body would keep that iteration's input (its message) with it.
  const wake = () => inbox.waiting || inbox.closing || background.finished || handOver.reason() !== undefined;
  for (;;) {
    // A draft of an automatic compaction waiting for review (policy `review.automatic`) wakes the loop at its timeout.
    const reviewLeft = reviews.leftMs();
    if (reviewLeft === undefined) await condition(wake);
    else if (reviewLeft > 0) await condition(wake, reviewLeft);
    await background.commitIfFinished(); // one that ended in the background while the agent was idle
    await reviews.settleWaiting(false); // its approve or discard (taken before the inputs queued ahead), timeout
    const pending = inbox.take();
    if (pending) {
      await dispatch(work, pending);
      continue;
    }
    if (!inbox.closing && handOver.reason() === undefined) continue; // woken by a background compaction that ended
    // A compaction in the background ends in this run: its activities are this run's.
    await background.settle();
    if (inbox.closing) break;
    // The server suggests continue-as-new: only once every Update has been answered. An input that arrives
    // meanwhile is processed first (its handler cannot finish before the loop answers it).
    await condition(() => allHandlersFinished() || inbox.waiting || inbox.closing);
    if (!inbox.waiting && !inbox.closing) {
      conversation.handedOver(handOver.reason());
      await continueAgent(input, conversation.carry(inbox.carried()));
    }
  }

  conversation.closed();
  showClosed(state);
  await condition(allHandlersFinished);
  return publicState(state);
}
