/**
 * A compaction's or a revert's context swapped into the agent's state in one step (no await can come between): the
 * messages and their counts, the view's manifest and tail, the event and the stats, what it cost, the cooldown, the
 * gate and the ledger. Pure: the conversation (conversation.ts) calls it; unit-testable alone.
 */
import { cooldownAfter } from '../engine/trigger.ts';
import type { CooldownState, Gate, Trigger } from '../engine/trigger.ts';
import type { TaskLedger } from '../engine/ledger.ts';
import { isUserTurn } from '../engine/messages.ts';
import { agentLife } from '../contract/keys.ts';
import { EVENTS_KEPT } from '../contract/state.ts';
import { NO_COMPACTIONS } from '../contract/results.ts';
import type { Snapshot, WorkflowState } from '../contract/state.ts';
import type { CompactionEventSummary } from '../contract/results.ts';
import type { ContextRecord } from '../contract/records.ts';
import { addSummary, cacheInvalidation, noSpend } from '../engine/pricing.ts';
import { pinnedBlockTokensOf, requestFixedTokensOf } from '../contract/pins.ts';

/** What a committed compaction hands the state. */
export interface Compacted {
  made: Snapshot;
  context: ContextRecord[];
  event: CompactionEventSummary;
  tailFromSeq: number;
  cooldown: CooldownState;
  trigger: Trigger;
  maskPass: boolean | undefined;
  gate: Gate;
  ledger: TaskLedger | undefined;
  /** Where the new context's records are stored (`compaction-refs`). */
  baseRecords?: string;
  /** Where `ledger` is stored (`compaction-refs`). */
  ledgerKey?: string;
}

/**
 * The compacted context replaces the part it was made for (`made`); the messages added since (a compaction prepared
 * in the background while the agent worked) stay after it, as they were.
 */
export function compactInto(state: WorkflowState, done: Compacted): void {
  const { context, event } = done;
  const since = state.messages.slice(done.made.messages);
  spentOn(state, event, [...context, ...since]);
  state.messages = [...context, ...since];
  recountPinnedBlock(state);
  state.contextTokens = requestFixedTokensOf(state) + state.messages.reduce((sum, m) => sum + m.tokens, 0);
  state.contextTurns = state.messages.filter(isUserTurn).length;
  state.base = event.keys.context;
  state.baseLength = context.length;
  if (done.baseRecords) state.baseRecords = done.baseRecords;
  else delete state.baseRecords;
  state.tailFromSeq = done.tailFromSeq;
  state.compactions = event.seq;
  state.callsSinceCompaction = 0;
  state.events = [...(state.events ?? []), withPins(state, event)].slice(-EVENTS_KEPT);
  const previous = state.stats ?? NO_COMPACTIONS;
  const ratio = event.tokensBefore > 0 ? event.tokensAfter / event.tokensBefore : 1;
  state.stats = {
    ...previous, // the counts other events keep (reverts)
    count: previous.count + 1,
    averageSizeRatio: (previous.averageSizeRatio * previous.count + ratio) / (previous.count + 1),
    // Net: a compaction that grew the context (asked with evenIfLarger, an overflow) takes off what it added.
    tokensSaved: previous.tokensSaved + event.tokensBefore - event.tokensAfter,
    ...(event.cost || previous.costSaved !== undefined
      ? { costSaved: (previous.costSaved ?? 0) + (event.cost?.netBenefit ?? 0) }
      : {}),
    ...(event.loopGuard || previous.ineffective !== undefined
      ? { ineffective: (previous.ineffective ?? 0) + (event.loopGuard?.ineffective ? 1 : 0) }
      : {}),
  };
  // As the apply activity computed it for the gate it returned: the loop guard's count and pause are the event's.
  state.cooldown = cooldownAfter(done.cooldown, {
    trigger: done.trigger,
    maskPass: done.maskPass,
    tokensAfter: event.tokensAfter,
    ...(event.loopGuard ? { guard: event.loopGuard } : {}),
  });
  // The user spoke while it was prepared: the cooldown starts over, as a user message makes it.
  if (since.some(isUserTurn)) state.cooldown = { ...state.cooldown, consecutive: 0 };
  state.gate = done.gate;
  if (done.ledger) {
    state.ledger = done.ledger;
    if (done.ledgerKey) state.ledgerKey = done.ledgerKey;
    else delete state.ledgerKey;
  }
}

/** Two records are the same message as the cache sees it: the same body (key), id, kind and count. */
const sameRecord = (a: ContextRecord, b: ContextRecord) =>
  a.id === b.id && a.key === b.key && a.kind === b.kind && a.tokens === b.tokens && a.ref === b.ref;

/**
 * What a compaction cost, added to its event (`spent`: what the summary call cost, and the prompt cache it
 * invalidated: the context before it, `state.messages`, against the one it leaves, `after`) and to the agent's spend.
 */
function spentOn(state: WorkflowState, event: CompactionEventSummary, after: readonly ContextRecord[]): void {
  const price = state.modelInfo?.price;
  const llm = event.llm;
  // No summary call, or the extractive summarizer: nothing spent. A summary call recorded before prices: unknown.
  const summary = !llm || llm.promptTokens + llm.completionTokens === 0 ? 0 : (llm.cost ?? null);
  event.spent = {
    summary,
    cache: cacheInvalidation(state.messages, after, requestFixedTokensOf(state), sameRecord, price),
  };
  if (llm && llm.promptTokens + llm.completionTokens > 0)
    state.spend = addSummary(state.spend ?? noSpend(price), summary);
}

/**
 * The context as a revert restored it (workflows/compaction.ts `revert`): the records of the context before an
 * earlier event, whose manifest is `event.keys.context` (`baseLength` records), then the messages from `tailFromSeq`
 * on, raw; the ledger of then (when it was stored), the revert's gate and cooldown.
 */
export interface Reverted {
  context: ContextRecord[];
  baseLength: number;
  tailFromSeq: number;
  ledger: TaskLedger | undefined;
  event: CompactionEventSummary;
  gate: Gate;
  cooldown: CooldownState;
}

/**
 * Swaps a restored context in, in one step (as {@link Conversation.compacted} does): the messages, their counts,
 * the view's manifest and tail, the event (counted as a revert, not a compaction, in the stats), the gate, the
 * cooldown and the ledger. Pure, so it is unit-tested alone.
 */
export function revertInto(state: WorkflowState, done: Reverted): void {
  const { context, event } = done;
  state.messages = [...context];
  recountPinnedBlock(state);
  state.contextTokens = requestFixedTokensOf(state) + context.reduce((sum, m) => sum + m.tokens, 0);
  state.contextTurns = context.filter(isUserTurn).length;
  state.base = event.keys.context;
  state.baseLength = done.baseLength;
  delete state.baseRecords; // a revert stores no records of its context: the next plan gets them inline
  state.tailFromSeq = done.tailFromSeq;
  state.compactions = event.seq;
  state.callsSinceCompaction = 0;
  state.events = [...(state.events ?? []), withPins(state, event)].slice(-EVENTS_KEPT);
  const stats = state.stats ?? NO_COMPACTIONS;
  state.stats = {
    ...stats,
    reverts: (stats.reverts ?? 0) + 1,
    // What the compactions it undid had saved (a revert to before a revert can take some off again).
    tokensRestored: (stats.tokensRestored ?? 0) + event.tokensAfter - event.tokensBefore,
  };
  state.gate = done.gate;
  state.cooldown = done.cooldown;
  if (done.ledger) {
    state.ledger = done.ledger;
    delete state.ledgerKey; // the ledger of then, inline
  }
}

/**
 * Counts the pinned block again after the context changed (a pinned message that left it moves into the block) and
 * keeps `contextTokens` in step. Without pins nothing changes (states of before have none).
 */
export function recountPinnedBlock(state: WorkflowState): void {
  if (!state.pins?.length && state.pinnedBlockTokens === undefined) return;
  const tokens = pinnedBlockTokensOf(agentLife(state), state.pins, state.messages);
  state.contextTokens += tokens - (state.pinnedBlockTokens ?? 0);
  if (tokens > 0 || state.pins?.length) state.pinnedBlockTokens = tokens;
  else delete state.pinnedBlockTokens;
}

/** A compaction event as the state keeps it: with the pins it kept verbatim, when there are any. */
function withPins(state: WorkflowState, event: CompactionEventSummary): CompactionEventSummary {
  return state.pins?.length ? { ...event, pinned: state.pins.map((pin) => pin.id) } : event;
}
