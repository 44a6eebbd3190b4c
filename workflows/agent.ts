/**
 * The agent workflow: one per agent, running until closed. It holds metadata and references only; message bodies
 * live in S3 and are read by activities, so the history grows with each turn's new content, not with the context.
 *
 * In the shape of Temporal's safe-message-handlers sample: the handlers validate and enqueue; the loop below takes
 * one input at a time (a turn, workflows/turn.ts, or a compaction, workflows/compaction.ts) and hands over to a new
 * run when the history has grown enough. The state and the message ids are the conversation's (conversation.ts).
 */
import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type * as activities from '../activities/index.ts';
import { EMPTY_LEDGER } from '../engine/ledger.ts';
import * as api from '../contract/agent.ts';
import { publicState, statsOf } from '../contract/state.ts';
import type { AgentCarry, AgentState } from '../contract/state.ts';
import { compactionPolicyOf, validateEventsQuery } from '../contract/inputs.ts';
import type { CompactResult, DiscardResult, RevertResult, SendResult } from '../contract/results.ts';
import type {
  AgentInput,
  ApproveInput,
  CompactInput,
  DiscardInput,
  RevertInput,
  SendInput,
} from '../contract/inputs.ts';
import { FAILURE } from '../contract/failures.ts';
import { Compactions, DraftRefused } from './compaction.ts';
import { continueAsNewReason } from './continue-as-new.ts';
import { Conversation } from './conversation.ts';
import { failureMessage, Inbox, inTraceOf } from './inbox.ts';
import { progressOf } from './progress.ts';
import { checkAgentInput, checkCompact, checkDraft, checkRevert, checkSend } from './inputs.ts';
import { runTurn, StepRule, STORE_OPTIONS } from './turn.ts';
import { showClosed, showDetails, showProgress, showStarted } from './visibility.ts';

const { describeModel, readReply } = proxyActivities<ReturnType<typeof activities.createActivities>>(STORE_OPTIONS);

export async function agentWorkflow(input: AgentInput, carry?: AgentCarry): Promise<AgentState> {
  if (!carry) checkAgentInput(input); // a new agent's input is checked before anything happens
  const conversation = Conversation.begin(input, carry, workflowInfo().runId);
  const { state } = conversation;
  const inbox = new Inbox(carry?.applied, (replyId) =>
    readReply.executeWithOptions({ ...STORE_OPTIONS, summary: `read reply ${replyId}` }, [
      { ...conversation.life, replyId },
    ]),
  );
  const compactions = new Compactions(conversation, inbox);
  const nextTurn = () => inbox.nextTurn(state.turns);
  if (!carry || carry.reopened) showStarted(input.model);
  else showDetails(state); // a run after continue-as-new shows what the last one did (current details are per run)
  // A draft of an automatic compaction carried over still waits for review: this run shows it (AgentStatus too).
  if (state.draft?.info.waits) showProgress(state, conversation.progress);

  const { HANDLER_DESCRIPTIONS: about } = api;
  // Registered in the order of the releases before (a Signal or Update buffered before its handler is delivered
  // when the handler is set: the order is part of recorded histories).
  setHandler(api.stateQuery, () => publicState(state), { description: about.state });
  setHandler(api.closeSignal, () => void (inbox.closing = true), { description: about.closeSignal });
  setHandler(
    api.closeUpdate,
    async () => {
      inbox.updatesThisRun++;
      inbox.closing = true;
      await condition(() => state.status === 'closed');
      return publicState(state);
    },
    { description: about.closeUpdate },
  );
  setHandler(
    api.messageSignal,
    (send: SendInput) => {
      // A signal cannot be rejected: invalid input is dropped here, and counted, rather than failing the agent.
      if (!accepts(() => checkSend(send, state, inbox.closing, nextTurn()))) return conversation.dropped('message');
      inbox.push({ kind: 'send', input: send });
    },
    { description: about.message },
  );
  setHandler(
    api.compactSignal,
    (request: CompactInput = {}) => {
      if (!accepts(() => checkCompact(request, state, inbox.closing))) return conversation.dropped('compact');
      inbox.push({ kind: 'compact', input: request });
    },
    { description: about.compactSignal },
  );
  setHandler(
    api.compactUpdate,
    (request: CompactInput = {}) =>
      // Delivered again to the next run after continue-as-new: answered with its result, not compacted twice.
      inbox.applyOnce<CompactResult>({ kind: 'compact', input: request }, FAILURE.compactionFailed),
    {
      description: about.compactUpdate,
      validator: (request: CompactInput = {}) =>
        void (inbox.appliedResult() ?? checkCompact(request, state, inbox.closing)),
    },
  );

  const eventsAfter = (query?: { since?: number; limit?: number } | null) => {
    validateEventsQuery(query); // a query cannot change the agent: bad input is answered with its error
    const since = query?.since ?? 0; // the temporal CLI and the UI send `null` for no input
    const events = (state.events ?? []).filter((event) => event.seq > since);
    return query?.limit != null ? events.slice(0, query.limit) : events;
  };
  setHandler(api.compactionEventsQuery, eventsAfter, { description: about.compactionEvents });
  setHandler(api.compressionEventsQuery, eventsAfter, { description: about.compressionEvents });
  setHandler(api.statsQuery, () => statsOf(state), { description: about.stats });
  setHandler(api.contextQuery, () => publicState(state).messages, { description: about.context });
  setHandler(api.ledgerQuery, () => state.ledger ?? EMPTY_LEDGER, { description: about.ledger });
  setHandler(api.progressQuery, () => progressOf(state, conversation.progress, inbox.queued), {
    description: about.progress,
  });
  setHandler(
    api.sendUpdate,
    (send: SendInput) => inbox.applyOnce<SendResult>({ kind: 'send', input: send }, FAILURE.turnFailed),
    {
      description: about.send,
      // Delivered again after continue-as-new: already applied, answered from `applied` whatever the state now.
      validator: (send: SendInput) => void (inbox.appliedResult() ?? checkSend(send, state, inbox.closing, nextTurn())),
    },
  );

  setHandler(
    api.revertUpdate,
    (request: RevertInput) =>
      inbox.applyOnce<RevertResult>({ kind: 'revert', input: request }, FAILURE.compactionFailed),
    {
      description: about.revert,
      validator: (request: RevertInput) => void (inbox.appliedResult() ?? checkRevert(request, state, inbox.closing)),
    },
  );

  /** Why the pending draft cannot be applied any more (its context has changed), if so. */
  const draftStale = () => (state.draft ? conversation.staleFor(state.draft.prepared.made) : undefined);
  setHandler(
    api.approveUpdate,
    (request: ApproveInput) =>
      inbox.applyOnce<CompactResult>({ kind: 'approve', input: request }, FAILURE.compactionFailed),
    {
      description: about.approve,
      validator: (request: ApproveInput) =>
        void (inbox.appliedResult() ?? checkDraft(request, state, inbox.closing, true, draftStale())),
    },
  );
  setHandler(
    api.discardUpdate,
    (request: DiscardInput) =>
      inbox.applyOnce<DiscardResult>({ kind: 'discard', input: request }, FAILURE.invalidInput),
    {
      description: about.discard,
      validator: (request: DiscardInput) =>
        void (inbox.appliedResult() ?? checkDraft(request, state, inbox.closing, false, undefined)),
    },
  );

  // The model's window and counting, resolved once by an activity (so a registry change never breaks replay).
  if (!state.modelInfo) {
    const policy = compactionPolicyOf(input);
    const describe = {
      model: input.model,
      ...(input.modelOverride ? { override: input.modelOverride } : {}),
      ...(policy ? { compaction: policy } : {}),
    };
    conversation.describedAs(
      await describeModel.executeWithOptions({ ...STORE_OPTIONS, summary: `describe model ${input.model}` }, [
        describe,
      ]),
    );
  }

  /** Why this run should hand over to a new one now (continue-as-new), if it should. */
  const handOver = () => {
    const info = workflowInfo();
    return continueAsNewReason({
      suggested: info.continueAsNewSuggested,
      historyLength: info.historyLength,
      historySize: info.historySize,
      updates: inbox.updatesThisRun,
      runAgeMs: Date.now() - info.runStartTime.getTime(),
    });
  };
  const rule = new StepRule(input);

  // One predicate for the whole run, made outside the loop: the SDK keeps every condition's predicate until the run
  // ends, and one made in the loop's body would keep that iteration's input (its message) with it.
  const wake = () => inbox.waiting || inbox.closing || compactions.finished || handOver() !== undefined;
  for (;;) {
    // A draft of an automatic compaction waiting for review (policy `review.automatic`) wakes the loop at its timeout.
    const reviewLeft = compactions.reviewLeftMs();
    if (reviewLeft === undefined) await condition(wake);
    else if (reviewLeft > 0) await condition(wake, reviewLeft);
    await compactions.commitIfFinished(); // one that ended in the background while the agent was idle
    await compactions.settleReview(false); // its approve or discard (taken before the inputs queued ahead), timeout
    const pending = inbox.take();
    if (pending) {
      try {
        // Under the trace of the handler that queued it (with traces on): a message's turn is under its `send`.
        await inTraceOf(pending, async () => {
          if (pending.kind === 'compact' && pending.input.review) {
            pending.result = await compactions.review(pending.input);
          } else if (pending.kind === 'compact') {
            // `force: false` asks for a compaction only if the automatic trigger fires now (cooldown included).
            const trigger = pending.input.force === false ? 'auto' : 'forced';
            pending.result = await compactions.compact(trigger, conversation.tailSeq, pending.input);
          } else if (pending.kind === 'approve') {
            pending.result = await compactions.approve(pending.input);
          } else if (pending.kind === 'discard') {
            pending.result = compactions.discard(pending.input);
          } else if (pending.kind === 'revert') {
            pending.result = await compactions.revert(pending.input.toEvent);
          } else {
            pending.result = await runTurn(conversation, compactions, input, rule, pending.input);
          }
        });
      } catch (error) {
        if (error instanceof DraftRefused) {
          // A draft that is not pending, or stale since it was validated: the Update is refused, the agent goes on.
          pending.failure = error.message;
          pending.failureType = FAILURE.invalidInput;
          continue;
        }
        // A turn or compaction that cannot finish (a rejected API key, an unknown model, retries exhausted) fails
        // its Update, not the agent: the stored messages stay, and the next input can succeed once the cause is fixed.
        if (!(error instanceof ActivityFailure)) throw error;
        pending.failure = failureMessage(error);
        pending.cause = error;
        if (pending.kind === 'send') conversation.turnFailed(pending.failure);
        else conversation.compactionFailed(pending.failure);
        conversation.progress.turnEnded();
        showDetails(state, conversation.progress);
      } finally {
        inbox.done(pending);
      }
      continue;
    }
    if (!inbox.closing && handOver() === undefined) continue; // woken by a background compaction that ended
    // A compaction in the background ends in this run: its activities are this run's.
    await compactions.settle();
    if (inbox.closing) break;
    // The server suggests continue-as-new: only once every Update has been answered. An input that arrives
    // meanwhile is processed first (its handler cannot finish before the loop answers it).
    await condition(() => allHandlersFinished() || inbox.waiting || inbox.closing);
    if (!inbox.waiting && !inbox.closing) {
      conversation.handedOver(handOver());
      await continueAsNew<typeof agentWorkflow>(input, conversation.carry(inbox.carried()));
    }
  }

  conversation.closed();
  showClosed(state);
  await condition(allHandlersFinished);
  return publicState(state);
}

/** Whether a check passes (a Signal's input: what it rejects is dropped and counted, not thrown). */
function accepts(check: () => void): boolean {
  try {
    check();
    return true;
  } catch {
    return false;
  }
}
