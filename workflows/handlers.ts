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
import { validateEventsQuery } from '../contract/inputs.ts';
import type { CompactInput } from '../contract/inputs.ts';
import { FAILURE } from '../contract/failures.ts';
import type { Conversation } from './conversation.ts';
import { pendingOf } from './inbox.ts';
import type { Inbox, InputOf, Kind, ResultOf } from './inbox.ts';
import { checkCompact, checkDraft, checkRevert, checkSend } from './inputs.ts';
import { progressOf } from './progress.ts';

/**
 * Sets the agent's handlers, in the order of the releases before: a Signal or Update that arrives before its handler
 * is set is buffered and delivered when the handler is set, so the order is part of recorded histories
 * (docs/changing-workflows.md). Keep it; a new handler goes last.
 */
export function setHandlers(conversation: Conversation, inbox: Inbox): void {
  const { state } = conversation;
  const about = api.HANDLER_DESCRIPTIONS;
  const nextTurn = () => inbox.nextTurn(state.turns);
  /** Why the pending draft cannot be applied any more (its context has changed), if so. */
  const draftStale = () => (state.draft ? conversation.staleFor(state.draft.prepared.made) : undefined);
  const checkMessage = (send: InputOf<'send'>) => checkSend(send, state, inbox.closing, nextTurn());
  const checkCompaction = (request: CompactInput) => checkCompact(request, state, inbox.closing);
  /** A `compact` without input asks for a forced compaction (the temporal CLI sends none). */
  const noRequest = (): CompactInput => ({});

  /** A Signal that queues its input: a Signal cannot be rejected, so invalid input is dropped, and counted. */
  const queued =
    <K extends 'send' | 'compact'>(
      definition: SignalDefinition<[InputOf<K>]>,
      kind: K,
      check: (input: InputOf<K>) => void,
      description: string,
      empty?: () => InputOf<K>,
    ) =>
    () =>
      setHandler(
        definition,
        (input: InputOf<K> = empty?.() as InputOf<K>) => {
          if (!accepts(() => check(input))) return conversation.dropped(kind === 'send' ? 'message' : 'compact');
          inbox.push(pendingOf(kind, input));
        },
        { description },
      );
  /**
   * An Update that queues its input and waits for the loop's answer. Delivered again to the next run after
   * continue-as-new, it is answered from the results kept (`applied`) whatever the state now, not applied twice.
   */
  const applied =
    <K extends Kind>(
      definition: UpdateDefinition<ResultOf<K>, [InputOf<K>]>,
      kind: K,
      failureType: string,
      check: (input: InputOf<K>) => void,
      description: string,
      empty?: () => InputOf<K>,
    ) =>
    () =>
      setHandler(
        definition,
        (input: InputOf<K> = empty?.() as InputOf<K>) =>
          inbox.applyOnce<ResultOf<K>>(pendingOf(kind, input), failureType),
        {
          description,
          validator: (input: InputOf<K> = empty?.() as InputOf<K>) => void (inbox.appliedResult() ?? check(input)),
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
  const close = async () => {
    inbox.updatesThisRun++;
    inbox.closing = true;
    await condition(() => state.status === 'closed');
    return publicState(state);
  };

  const table: (() => void)[] = [
    query(api.stateQuery, () => publicState(state), about.state),
    () => setHandler(api.closeSignal, () => void (inbox.closing = true), { description: about.closeSignal }),
    () => setHandler(api.closeUpdate, close, { description: about.closeUpdate }),
    queued(api.messageSignal, 'send', checkMessage, about.message),
    queued(api.compactSignal, 'compact', checkCompaction, about.compactSignal, noRequest),
    applied(api.compactUpdate, 'compact', FAILURE.compactionFailed, checkCompaction, about.compactUpdate, noRequest),
    query(api.compactionEventsQuery, eventsAfter, about.compactionEvents),
    query(api.compressionEventsQuery, eventsAfter, about.compressionEvents),
    query(api.statsQuery, () => statsOf(state), about.stats),
    query(api.contextQuery, () => publicState(state).messages, about.context),
    query(api.ledgerQuery, () => state.ledger ?? EMPTY_LEDGER, about.ledger),
    query(api.progressQuery, () => progressOf(state, conversation.progress, inbox.queued), about.progress),
    applied(api.sendUpdate, 'send', FAILURE.turnFailed, checkMessage, about.send),
    applied(
      api.revertUpdate,
      'revert',
      FAILURE.compactionFailed,
      (request) => checkRevert(request, state, inbox.closing),
      about.revert,
    ),
    applied(
      api.approveUpdate,
      'approve',
      FAILURE.compactionFailed,
      (request) => checkDraft(request, state, inbox.closing, true, draftStale()),
      about.approve,
    ),
    applied(
      api.discardUpdate,
      'discard',
      FAILURE.invalidInput,
      (request) => checkDraft(request, state, inbox.closing, false, undefined),
      about.discard,
    ),
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
