/**
 * The revert step: the context as it was before an earlier event, from the records that event stored, then every
 * message stored since, raw. Stores the revert's own record (plan.json, so that a revert can be reverted), the
 * manifest of the restored part, an empty removed segment and the event, in that order.
 */
import type { ChatMessage } from '../../engine/messages.ts';
import { gateOf } from '../../engine/gates.ts';
import type { CooldownState } from '../../engine/trigger.ts';
import { agentLife, compactionKey, messageIdOf, messageKey, seqOf } from '../../contract/keys.ts';
import { keyedRecord, unkeyedRecord } from '../../contract/records.ts';
import { summaryOfEvent } from '../../contract/results.ts';
import type { CompactionEvent } from '../../contract/results.ts';
import type { RevertContextInput, RevertOutcome } from '../../contract/compaction-activities.ts';
import { withHeartbeat } from '../stored.ts';
import type { CompactionShared } from './deps.ts';
import { eventKeys, tokensOf } from './stored-objects.ts';
import type { StoredBefore } from './stored-objects.ts';

export function createRevertActivities({ store, load, measure, putJson }: CompactionShared) {
  /**
   * A revert: the context as it was before event `toEvent` (the records its plan, or an earlier revert's record,
   * stored: the same keys, so the model gets the same bytes), then every message stored since, raw, from the
   * messages' own objects, in order. Stores this revert's record (the context and ledger now, for a revert of it),
   * the manifest of the restored part and the event. The ledger comes back with it when it was stored.
   */
  async function revert(input: RevertContextInput): Promise<RevertOutcome> {
    const { seq, toEvent } = input;
    const agent = agentLife(input);
    const before = await load<StoredBefore>(compactionKey(agent, toEvent, 'plan.json'));
    const restored = before.context;
    const messageSeqs = restored.filter((m) => /^m\d+$/.test(m.id)).map((m) => seqOf(m.id));
    const tailFromSeq = before.tailFromSeq ?? Math.max(0, ...messageSeqs) + 1;
    // Every message stored since that context, as stored (a later compaction may have summarized it).
    const ids = Array.from({ length: Math.max(0, input.lastSeq - tailFromSeq + 1) }, (_, i) =>
      messageIdOf(tailFromSeq + i),
    );
    const since = await Promise.all(
      ids.map(async (id) => {
        const key = messageKey(agent, id);
        return measure(key, await load<ChatMessage>(key), input.counting, { id });
      }),
    );
    const now = input.context.map((record) => keyedRecord(agent, record));
    const record: StoredBefore = {
      context: now,
      ...(input.ledger ? { ledger: input.ledger } : {}),
      tailFromSeq: input.tailFromSeq,
      revertedTo: toEvent,
    };
    const keys = eventKeys(agent, seq);
    await putJson(compactionKey(agent, seq, 'plan.json'), record);
    await putJson(
      keys.context,
      restored.map((m) => m.key),
    );
    await store.put(keys.removed, '', 'application/x-ndjson'); // a revert removes no message
    const next = [...restored, ...since];
    const tokensAfter = tokensOf(input.fixedTokens, next);
    const restoredIds = new Set(next.map((m) => m.key));
    const left = now.filter((m) => !restoredIds.has(m.key)).map((m) => m.id);
    const event: CompactionEvent = {
      seq,
      trigger: 'revert',
      reason: `revert to before event ${toEvent}`,
      at: input.at,
      strategies: ['revert'],
      notes: [
        `restored the ${restored.length} records of the context before event ${toEvent}, then ${since.length} ` +
          `message${since.length === 1 ? '' : 's'} stored since (m${tailFromSeq}…), raw`,
        ...(left.length
          ? [`left the context (kept in storage, back with a revert to before ${seq}): ${left.join(', ')}`]
          : []),
        before.ledger
          ? `task ledger restored as it was before event ${toEvent}`
          : `task ledger kept as it was: event ${toEvent} was stored before ledgers were kept with events`,
      ],
      tokensBefore: tokensOf(input.fixedTokens, now),
      tokensAfter,
      messagesBefore: now.length,
      messagesAfter: next.length,
      targetTokens: tokensAfter,
      reachedTarget: true,
      removedCount: 0,
      removed: [],
      durationMs: Date.parse(input.at) - input.startedAt,
      keys,
    };
    await putJson(keys.event, event);
    // The cooldown's first step, from the restored size: the agent's own steps do not compact it again at once
    // (a user message re-arms the trigger, as after any compaction; the hard limit always holds).
    const cooldown: CooldownState = { consecutive: 1, lastTokensAfter: tokensAfter };
    return {
      context: next.map((m) => unkeyedRecord(agent, m)),
      baseLength: restored.length,
      tailFromSeq,
      ...(before.ledger ? { ledger: before.ledger } : {}),
      event: summaryOfEvent(event),
      gate: gateOf(input.policy, input.window, cooldown),
      cooldown,
    };
  }

  return {
    // Reverting heartbeats too: a worker that dies in the middle is noticed within the heartbeat timeout.
    revertContext: (input: RevertContextInput) => withHeartbeat(() => revert(input)),
  };
}
