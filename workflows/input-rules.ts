/**
 * How an input of each kind is checked where it enters the agent (its Update's validator, its Signal's handler,
 * handlers.ts), what its Update fails as, and what is done at once when it is queued.
 */
import { FAILURE } from '../contract/failures.ts';
import type { Conversation } from './conversation.ts';
import type { Inbox, InputOf, Kind } from './inbox.ts';
import {
  checkCompact,
  checkConfigure,
  checkDraft,
  checkInterrupt,
  checkRevert,
  checkSend,
  checkSteer,
} from './inputs.ts';
import { checkPin, checkUnpin } from './pins.ts';
import type { TurnControl } from './turn/control.ts';

/** How an input of each kind is checked (its Update's validator, its Signal's handler); what its Update fails as. */
export interface InputRule<K extends Kind> {
  check: (input: InputOf<K>) => void;
  failureType: string;
  /** The input of a call without one. */
  empty?: () => InputOf<K>;
  /** Done at once when the input is queued (an interrupt cancels the step in flight). */
  queued?: () => void;
}
export type InputRules = { [K in Kind]: InputRule<K> };

/** The rules of an agent's inputs, checked against its state as it is when each arrives. */
export function inputRulesOf(conversation: Conversation, inbox: Inbox, control: TurnControl): InputRules {
  const { state } = conversation;
  /** Why the pending draft cannot be applied any more (its context has changed), if so. */
  const draftStale = () => (state.draft ? conversation.staleFor(state.draft.prepared.made) : undefined);
  return {
    send: {
      check: (send) => checkSend(send, state, inbox.closing, inbox.nextTurn(state.turns)),
      failureType: FAILURE.turnFailed,
    },
    // A `compact` without input asks for a forced compaction (the temporal CLI sends none).
    compact: {
      check: (request) => checkCompact(request, state, inbox.closing),
      failureType: FAILURE.compactionFailed,
      empty: () => ({}),
    },
    revert: { check: (request) => checkRevert(request, state, inbox.closing), failureType: FAILURE.compactionFailed },
    approve: {
      check: (request) => checkDraft(request, state, inbox.closing, true, draftStale()),
      failureType: FAILURE.compactionFailed,
    },
    discard: {
      check: (request) => checkDraft(request, state, inbox.closing, false, undefined),
      failureType: FAILURE.invalidInput,
    },
    // What fails a `configure` once accepted is the compaction a smaller window needs first.
    configure: {
      check: (request) => checkConfigure(request, state, inbox.closing),
      failureType: FAILURE.compactionFailed,
    },
    steer: { check: (request) => checkSteer(request, state, inbox.closing), failureType: FAILURE.turnFailed },
    // An interrupt without input stops the turn (the temporal CLI sends none); queued, it cancels what is in flight.
    interrupt: {
      check: (request) => checkInterrupt(request, state, inbox.closing),
      failureType: FAILURE.turnFailed,
      empty: () => ({}),
      queued: () => {
        if (inbox.interruptQueued) control.cancelInFlight();
      },
    },
    pin: { check: (request) => checkPin(request, state, inbox.closing), failureType: FAILURE.invalidInput },
    unpin: { check: (request) => checkUnpin(request, state, inbox.closing), failureType: FAILURE.invalidInput },
  };
}
