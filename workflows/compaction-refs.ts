/**
 * The compaction pipeline's references (`compaction-refs`, compaction-pipeline.ts): the working context as the plan
 * step takes it, by reference, and the masking pass the workflow can tell would find nothing, so it is not planned.
 * Pure: no Temporal API, no I/O, so it is unit-tested alone (test/unit/compaction-refs.test.ts).
 */
import { pinnedIdsOf } from '../contract/pins.ts';
import type { ContextRef } from '../contract/compaction-activities.ts';
import { recordsDigest } from '../contract/context-delta.ts';
import { seqOf } from '../contract/keys.ts';
import type { WorkflowState } from '../contract/state.ts';
import { gateFiresWith as dueWith } from '../engine/trigger.ts';
import { keyedRecord } from '../contract/records.ts';
import { preflight } from '../engine/planner/preflight.ts';
import { priceBound } from '../engine/planner/price-bound.ts';
import type { CompactionPolicy } from '../engine/policy.ts';
import type { Conversation } from './conversation.ts';
import type { Gate } from '../engine/trigger.ts';

/**
 * The working context by reference (contract/activities.ts `ContextRef`): the records of the last compaction's context
 * by their key (inline, once, when that compaction stored none), then the messages since by their sequence numbers,
 * with the digest of the records held for them.
 */
export function contextRefOf(state: WorkflowState): ContextRef {
  const baseLength = state.baseLength ?? 0;
  const tail = state.messages.slice(baseLength);
  const firstSeq = state.tailFromSeq ?? 1;
  const steerIds = tail.filter((m) => m.steer === true).map((m) => m.id);
  return {
    ...(baseLength > 0
      ? state.baseRecords
        ? { baseRecords: state.baseRecords }
        : { base: state.messages.slice(0, baseLength) }
      : {}),
    baseLength,
    firstSeq,
    lastSeq: tail.length > 0 ? seqOf(tail.at(-1)!.id) : firstSeq - 1,
    ...(steerIds.length ? { steerIds } : {}),
    tailDigest: recordsDigest(tail),
  };
}

/**
 * A masking pass below the trigger that the plan would skip, told without planning (engine/planner/preflight.ts, the
 * one decision the planner makes first too): it is due as the masking pass on the workflow's gate, and the preflight
 * over the context as the workflow holds it skips it. Undefined when a plan might find something. Priced since
 * `mask-pass-priced`; until the pace is known, over the context's calls since `pace-from-context` (`contextPace`,
 * else 1 call).
 */
export function nothingToMask(conversation: Conversation, priced = false, contextPace = true): Skipped | undefined {
  const { state } = conversation;
  const check = conversation.gateCheck();
  const policy = state.policy;
  if (!check || !policy || dueWith(check, [], state.messages)?.kind !== 'mask') return undefined;
  const skip = preflight({ ...preflightInputOf(conversation, policy), contextPace, priced });
  return skip && { skipped: skip.skipped, gate: skip.gate };
}

/**
 * An automatic plan that no compaction could make pay (engine/planner/price-bound.ts: the best any could do, priced
 * as the plan prices it), told without planning. Undefined when one might, or the policy has no cost decision. Since
 * `plan-pays-first`.
 */
export function cannotPay(conversation: Conversation, trigger: 'auto' | 'background'): Skipped | undefined {
  const policy = conversation.state.policy;
  if (!policy?.cost) return undefined;
  const skip = priceBound({ ...preflightInputOf(conversation, policy), trigger });
  return skip && { skipped: skip.skipped, gate: skip.gate };
}

/** What the preflights read of the conversation: its context's records, window, cooldown, counts and pace. */
function preflightInputOf(conversation: Conversation, policy: CompactionPolicy) {
  const { state } = conversation;
  return {
    context: state.messages.map((record) => keyedRecord(conversation.life, record)),
    policy,
    window: conversation.window,
    cooldown: state.cooldown ?? { consecutive: 0, lastTokensAfter: 0 },
    stats: { tokens: state.contextTokens, turns: state.contextTurns ?? 0 },
    fixedTokens: state.fixedTokens ?? 0,
    goalId: state.goalId,
    pinnedIds: pinnedIdsOf(conversation.life, state.pins, state.messages),
    callsSinceCompaction: state.callsSinceCompaction,
  };
}

/** A plan that found nothing to do (or a compaction that, written, would not shrink the context): why, the gate. */
export interface Skipped {
  skipped: string;
  gate?: Gate;
  /** It would not shrink the context: the tokens before and after (`estimated`: as the plan expected them). */
  noGain?: { tokensBefore: number; tokensAfter: number; estimated: boolean };
}
