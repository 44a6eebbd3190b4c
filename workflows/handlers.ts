/**
 * The agent's Signal, Update and Query handlers, set from one ordered table. The handlers check and queue; the
 * agent's loop (agent.ts) takes the queued inputs one at a time and answers their Updates (inbox.ts). Queries only
 * read the state.
 */
import { condition, setHandler } from '@temporalio/workflow';
import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';
import * as api from '../contract/agent.ts';
import { EMPTY_LEDGER } from '../engine/ledger.ts';
import { publicState, statsOf } from '../contract/state.ts';
import { validateEventsQuery } from '../contract/input-checks.ts';
import type { Conversation } from './conversation.ts';
import { pendingOf } from './inbox.ts';
import type { Inbox, InputOf, Kind, ResultOf } from './inbox.ts';
import { checkToolDecision } from './inputs.ts';
import { progressOf } from './progress.ts';
import type { TurnControl } from './turn/control.ts';
import { inputRulesOf } from './input-rules.ts';
import type { RenewInput, ToolDecisionInput } from '../contract/inputs.ts';
import type { ToolDecisionResult } from '../contract/results.ts';

/** The Signals that queue an input, by its kind: their names, for the count of those dropped. */
const SIGNAL_OF = { send: 'message', compact: 'compact', steer: 'steer', interrupt: 'interrupt' } as const;

/**
 * Sets the agent's handlers, in the order of the releases before: a Signal or Update that arrives before its handler
 * is set is buffered and delivered when the handler is set, so the order is part of recorded histories
 * (docs/changing-workflows.md). Keep it; a new handler goes last.
 */
export function setHandlers(
  conversation: Conversation,
  inbox: Inbox,
  control: TurnControl,
  renew: (input: RenewInput | undefined) => void,
): void {
  const { state } = conversation;
  const about = api.HANDLER_DESCRIPTIONS;
  const rules = inputRulesOf(conversation, inbox, control);
  const inputOf = <K extends Kind>(kind: K, input: InputOf<K> | undefined): InputOf<K> => {
    const empty = rules[kind].empty;
    return input === undefined && empty ? empty() : input!;
  };

  /** A Signal that queues its input: a Signal cannot be rejected, so invalid input is dropped, and counted. */
  const queued =
    <K extends keyof typeof SIGNAL_OF>(definition: SignalDefinition<[InputOf<K>]>, kind: K, description: string) =>
    () =>
      setHandler(
        definition,
        (given?: InputOf<K>) => {
          const input = inputOf(kind, given);
          if (!accepts(() => rules[kind].check(input))) return conversation.dropped(SIGNAL_OF[kind]);
          inbox.push(pendingOf(kind, input));
          rules[kind].queued?.();
        },
        { description },
      );
  /**
   * An Update that queues its input and waits for the loop's answer. Delivered again to the next run after
   * continue-as-new, it is answered from the results kept (`applied`) whatever the state now, not applied twice; one
   * the last run answered `handedOver` (it handed over inside a turn) waits for the input it carried.
   */
  const applied =
    <K extends Kind>(definition: UpdateDefinition<ResultOf<K>, [InputOf<K>]>, kind: K, description: string) =>
    () =>
      setHandler(
        definition,
        // (applyOnce queues the input before it first waits, unless the Update was applied already or carried over
        // from the last run; `queued` is done only for an input queued now.)
        (given: InputOf<K>) =>
          inbox.applyOnce<ResultOf<K>>(
            pendingOf(kind, inputOf(kind, given)),
            rules[kind].failureType,
            rules[kind].queued,
          ),
        {
          description,
          // An Update applied already, or carried over from the last run, was checked when it first came.
          validator: (given: InputOf<K>) => {
            if (inbox.appliedResult() === undefined && !inbox.carriesCurrent()) rules[kind].check(inputOf(kind, given));
          },
        },
      );
  const query =
    <R, A extends unknown[]>(definition: QueryDefinition<R, A>, handler: (...args: A) => R, description: string) =>
    () =>
      setHandler(definition, handler, { description });

  const eventsAfter = (query?: { since?: number; limit?: number } | null) => {
    validateEventsQuery(query); // a query cannot change the agent: bad input is answered with its error
    const since = query?.since ?? 0; // the temporal CLI and the UI send `null` for no input
    const events = (state.events ?? []).filter((event) => event.seq > since);
    return query?.limit != null ? events.slice(0, query.limit) : events;
  };
  /** `approveTool` / `denyTool`: answers a call waiting for approval at once (the turn waits on it). */
  const decideTool =
    (definition: UpdateDefinition<ToolDecisionResult, [ToolDecisionInput]>, approved: boolean, description: string) =>
    () =>
      setHandler(
        definition,
        (request: ToolDecisionInput) => {
          inbox.updatesThisRun++;
          const call = control.waiting.get(request.callId)!;
          call.decision = { approved, by: 'person', ...(request.reason ? { reason: request.reason } : {}) };
          const result: ToolDecisionResult = {
            callId: call.callId,
            tool: call.tool,
            decision: approved ? 'approved' : 'denied',
          };
          return Promise.resolve(result);
        },
        {
          description,
          validator: (request: ToolDecisionInput) =>
            checkToolDecision(
              request,
              state,
              control.awaiting().map((call) => call.callId),
            ),
        },
      );

  const close = async () => {
    inbox.updatesThisRun++;
    inbox.closing = true;
    control.closeDelegations();
    await condition(() => state.status === 'closed');
    // The final state is the workflow's result: recorded there once, not in this answer too.
    return {
      agentId: state.agentId,
      ...(state.life !== undefined ? { life: state.life } : {}),
      status: 'closed' as const,
      turns: state.turns,
      messageCount: state.messages.length,
    };
  };

  const table: (() => void)[] = [
    query(
      api.stateQuery,
      () => publicState(state, conversation.progress.compaction !== undefined, conversation.progress.awaitingApproval),
      about.state,
    ),
    () =>
      setHandler(
        api.closeSignal,
        () => {
          inbox.closing = true;
          control.closeDelegations();
        },
        { description: about.closeSignal },
      ),
    () => setHandler(api.closeUpdate, close, { description: about.closeUpdate }),
    queued(api.messageSignal, 'send', about.message),
    queued(api.compactSignal, 'compact', about.compactSignal),
    applied(api.compactUpdate, 'compact', about.compactUpdate),
    query(api.compactionEventsQuery, eventsAfter, about.compactionEvents),
    query(api.compressionEventsQuery, eventsAfter, about.compressionEvents),
    query(api.statsQuery, () => statsOf(state), about.stats),
    query(api.contextQuery, () => publicState(state).messages, about.context),
    query(api.ledgerQuery, () => state.ledger ?? EMPTY_LEDGER, about.ledger),
    query(api.progressQuery, () => progressOf(state, conversation.progress, inbox.queued), about.progress),
    applied(api.sendUpdate, 'send', about.send),
    applied(api.revertUpdate, 'revert', about.revert),
    applied(api.approveUpdate, 'approve', about.approve),
    applied(api.discardUpdate, 'discard', about.discard),
    applied(api.configureUpdate, 'configure', about.configure),
    applied(api.steerUpdate, 'steer', about.steer),
    queued(api.steerSignal, 'steer', about.steerSignal),
    applied(api.interruptUpdate, 'interrupt', about.interrupt),
    queued(api.interruptSignal, 'interrupt', about.interruptSignal),
    decideTool(api.approveToolUpdate, true, about.approveTool),
    decideTool(api.denyToolUpdate, false, about.denyTool),
    applied(api.pinUpdate, 'pin', about.pin),
    applied(api.unpinUpdate, 'unpin', about.unpin),
    () => setHandler(api.renewSignal, renew, { description: about.renew }),
  ];
  for (const set of table) set();
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
