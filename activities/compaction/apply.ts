/**
 * The apply step: carries a stored plan out. Stores what replaces each message, writes the removed messages (their
 * original bodies) as JSONL, the new context manifest and the event, in that order, under keys derived from the agent
 * and the compaction's sequence number; judges the compaction for the loop guard and the cooldown (the event itself:
 * event.ts). Once the workflow has committed it, adds what it cost (`spent`) to the stored event.
 */
import { ApplicationFailure } from '@temporalio/common';
import { applyPlan, replacementBody } from '../../engine/apply.ts';
import { compactionCoverage } from '../../engine/coverage.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { originalKeyOf } from '../../engine/messages.ts';
import { REPLACED_KIND } from '../../engine/planner/index.ts';
import { loadTokenCounter } from '../../engine/tokens.ts';
import { cooldownAfter, holdGrowth } from '../../engine/trigger.ts';
import { gateAfterSkip, gateOf } from '../../engine/gates.ts';
import { FAILURE } from '../../contract/failures.ts';
import { deltaOf } from '../../contract/context-delta.ts';
import { agentLife, compactionKey, replacedKey } from '../../contract/keys.ts';
import { unkeyedRecord } from '../../contract/records.ts';
import type { MessageRecord } from '../../contract/records.ts';
import { summaryOfEvent } from '../../contract/results.ts';
import type { CompactionEvent } from '../../contract/results.ts';
import type {
  ApplyCompactionInput,
  ApplyOutcome,
  NoGainOutcome,
  RecordSpentInput,
  SummaryOutcome,
} from '../../contract/compaction-activities.ts';
import { recordCompaction } from '../telemetry.ts';
import { withHeartbeat } from '../stored.ts';
import type { CompactionShared } from './deps.ts';
import { compactionEventOf } from './event.ts';
import { eventKeys, tokensOf } from './stored-objects.ts';
import type { StoredPlan } from './stored-objects.ts';

/** The activities applyCompaction and recordEventSpent. */
export function createApplyActivities({ store, strictInvariants, load, save, putJson }: CompactionShared) {
  /**
   * Carries the stored plan out: stores and counts each replacement, writes the removed messages (their original
   * bodies) as JSONL, the new context manifest and the event. Returns the new context and the event's summary
   * (the removed items stay in S3, so the result's size does not grow with what left).
   */
  async function apply(input: ApplyCompactionInput): Promise<ApplyOutcome | NoGainOutcome> {
    const { seq } = input;
    const agent = agentLife(input);
    const stored = await load<StoredPlan>(input.planKey);
    const { plan, context, policy, trigger, cooldown } = stored;
    // The summarizer's outcome: inline (applies scheduled before `compaction-refs`) or by its key.
    const summary = input.summary ?? (input.summaryKey ? await load<SummaryOutcome>(input.summaryKey) : undefined);
    // Each original is read once, for its replacement and for the removed segment.
    const originals = new Map<string, Promise<ChatMessage>>();
    const original = (key: string) => {
      if (!originals.has(key)) originals.set(key, load<ChatMessage>(key));
      return originals.get(key)!;
    };
    const byId = new Map(context.map((m) => [m.id, m]));
    // A truncation with a token budget is cut by counting, in the agent's encoding and with its margin.
    const counting = { counter: await loadTokenCounter(input.counting.encoding), margin: input.counting.margin };
    const replacements: Record<string, MessageRecord> = {};
    for (const op of plan.operations) {
      if (op.op === 'keep' || op.op === 'drop') continue;
      const meta = byId.get(op.id)!;
      const ref = originalKeyOf(meta);
      const body = replacementBody(await original(ref), meta, op, policy.toolResults.marker, counting);
      replacements[op.id] = await save(replacedKey(agent, seq, op.id), body, input.counting, {
        id: op.id,
        kind: REPLACED_KIND[op.op],
        ref,
      });
    }
    // A summary of one span in its place (a run of tool calls, a round) adds no task ledger message.
    const ledger = plan.summary?.form ? undefined : summary?.ledgerRecord;
    const next = applyPlan(context, plan, replacements, summary?.record, ledger, summary?.parts) as MessageRecord[];
    // The coverage invariant: each message of the context it was made for is kept or removed, exactly once.
    const violations = compactionCoverage(context, next, plan.removed);
    if (violations.length > 0 && strictInvariants) {
      throw ApplicationFailure.nonRetryable(
        `coverage invariant broken by compaction ${seq}: ${violations.join('; ')}`,
        FAILURE.invariantViolated,
      );
    }
    const tokensAfter = tokensOf(input.fixedTokens, next);
    const limitsMet =
      (plan.target.messages !== undefined || plan.target.turns !== undefined) && next.length < plan.before.messages;
    if (tokensAfter >= plan.before.tokens && !limitsMet && trigger !== 'overflow' && !input.evenIfLarger) {
      // Written, the summary and the ledger came to more than what leaves: nothing is committed (what was stored
      // stays, unreferenced), and the gate holds until the context grows, as after a plan that skipped.
      const held = cooldown ?? { consecutive: input.consecutive, lastTokensAfter: 0 };
      return {
        noGain: { tokensBefore: plan.before.tokens, tokensAfter },
        reason: noGainWritten(trigger, plan.before.tokens, tokensAfter),
        gate: gateAfterSkip(policy, input.window, plan.before.tokens, holdGrowth(policy), held),
      };
    }
    const removedLines = await Promise.all(
      plan.removed.map(async (item) => JSON.stringify({ ...item, message: await original(item.key) })),
    );
    const keys = eventKeys(agent, seq);
    const removedSegment = removedLines.join('\n') + (removedLines.length ? '\n' : '');
    await store.put(keys.removed, removedSegment, 'application/x-ndjson');
    await putJson(
      keys.context,
      next.map((m) => m.key),
    );
    // The new context's records, as the workflow holds them: the next plan reads them here (`compaction-refs`).
    const held = next.map((record) => unkeyedRecord(agent, record));
    const recordsKey = compactionKey(agent, seq, 'records.json');
    await putJson(recordsKey, held);
    const { event, verdict } = compactionEventOf({ input, stored, next, tokensAfter, violations, summary, keys });
    await putJson(keys.event, event);
    recordCompaction(event, Buffer.byteLength(removedSegment)); // the metrics (activities/telemetry.ts)
    // The cooldown counts from the tokens this compaction actually left, as the workflow's state does
    // (cooldownAfter, with the loop guard's verdict): a masking pass moves only its own floor.
    const after = cooldown
      ? cooldownAfter(cooldown, { trigger, maskPass: plan.maskPass, tokensAfter, guard: verdict })
      : { consecutive: input.consecutive, lastTokensAfter: tokensAfter };
    const gate = gateOf(policy, input.window, after);
    const changed = input.delta
      ? { delta: deltaOf(context, next, (record) => unkeyedRecord(agent, record)), baseRecords: recordsKey }
      : { context: held };
    return { ...changed, event: summaryOfEvent(event), gate, ...(violations.length ? { violations } : {}) };
  }

  /**
   * Adds what the compaction cost (`spent`: the workflow prices it as it commits the compaction, after apply wrote
   * the event) to the stored event, so `keys.event` carries what the state's copy does. Idempotent: a retry writes
   * the same object again.
   */
  async function recordSpent(input: RecordSpentInput): Promise<void> {
    const key = eventKeys(agentLife(input), input.seq).event;
    const event = await load<CompactionEvent>(key);
    await putJson(key, { ...event, spent: input.spent });
  }

  return {
    // Applying heartbeats too: a worker that dies in the middle is noticed within the heartbeat timeout.
    applyCompaction: (input: ApplyCompactionInput) => withHeartbeat(() => apply(input)),
    // A local activity (workflows/compaction-pipeline.ts): no heartbeats.
    recordEventSpent: recordSpent,
  };
}

/** Why a compaction that, as written, would not shrink the context was not committed. */
export function noGainWritten(trigger: string, before: number, after: number): string {
  return trigger === 'forced'
    ? `nothing to gain (${before} → ${after} tokens): the summary and the task ledger, as written, came to more than ` +
        'what leaves; not compacted'
    : `would not shrink the context: ${before} tokens, ${after} once the summary and the ledger were written; not committed`;
}
