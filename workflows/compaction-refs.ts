/**
 * The compaction pipeline's references (`compaction-refs`, compaction-pipeline.ts): the working context as the plan
 * step takes it, by reference, and the masking pass the workflow can tell would find nothing, so it is not planned.
 * Pure: no Temporal API, no I/O, so it is unit-tested alone (test/unit/compaction-refs.test.ts).
 */
import { pinnedIdsOf } from '../contract/pins.ts';
import type { ContextRef } from '../contract/activities.ts';
import { recordsDigest } from '../contract/context-delta.ts';
import { seqOf } from '../contract/keys.ts';
import type { WorkflowState } from '../contract/state.ts';
import { estimateCost, tokensPerCallOf } from '../engine/compaction-value.ts';
import { gateAfterMaskSkip, gateAfterSkippedPlan, gateOf } from '../engine/gates.ts';
import { protectionOf } from '../engine/planner/protection.ts';
import { MASK_TOKENS } from '../engine/planner/sizes.ts';
import { compactionDue, countedMessages, gateFiresWith as dueWith, holdGrowth } from '../engine/trigger.ts';
import { keyedRecord } from '../contract/records.ts';
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
 * A masking pass below the trigger that the plan would skip, told without planning: it is due as the masking pass
 * (on the workflow's gate, and on the policy's gate under the cooldown, as the plan decides it), and what masking
 * every tool result it may mask would save is less than the pass must save. What it may mask and what that saves are
 * the planner's (engine/planner/replacing.ts `maskToolResults`: an unprotected tool result, normal or truncated, of
 * at least `mask.minTokens` and more than a stub, becomes a stub of `MASK_TOKENS`), over the same protection
 * (`protectionOf`): a change to either changes which plans are scheduled, and goes behind a patch of its own. Then
 * the gate moves as after the plan's skip. Undefined when a plan might find something.
 */
export function nothingToMask(conversation: Conversation, priced = false): Skipped | undefined {
  const { state } = conversation;
  const check = conversation.gateCheck();
  const policy = state.policy;
  if (!check || !policy || dueWith(check, [], state.messages)?.kind !== 'mask') return undefined;
  const cooldown = state.cooldown ?? { consecutive: 0, lastTokensAfter: 0 };
  const gate = gateOf(policy, conversation.window, cooldown);
  const messages = countedMessages(gate, state.messages);
  const stats = { tokens: state.contextTokens, messages, turns: state.contextTurns ?? 0 };
  const due = compactionDue(gate, stats, cooldown.consecutive === 0, state.messages);
  const atLeast = gate.mask?.atLeast;
  if (due?.kind !== 'mask' || atLeast === undefined) return undefined;
  const context = state.messages.map((record) => keyedRecord(conversation.life, record));
  const pinned = pinnedIdsOf(conversation.life, state.pins, state.messages);
  const protect = protectionOf(context, policy, conversation.window, state.goalId, undefined, pinned);
  let saves = 0;
  let first = -1;
  context.forEach((m, i) => {
    const kind = m.kind ?? 'normal';
    if (m.role !== 'tool' || protect[i] !== 'none' || (kind !== 'normal' && kind !== 'truncated')) return;
    if (m.tokens < policy.mask.minTokens || m.tokens <= MASK_TOKENS) return;
    saves += m.tokens - MASK_TOKENS;
    if (first < 0) first = i;
  });
  if (saves < atLeast) {
    const held = gateAfterMaskSkip(policy, conversation.window, cooldown, state.contextTokens, holdGrowth(policy));
    return { skipped: `${due.reason}: masking would save ${saves} tokens, less than ${atLeast}`, gate: held };
  }
  if (!priced || !policy.cost) return undefined;
  // Since `mask-pass-priced`: the pass's price against the prompt cache, as the plan prices it (engine/planner/plan.ts:
  // the tool schemas and the messages before the first one masked stay cached; what the last reply brought was never
  // sent), at the session's pace.
  const tokens = state.contextTokens;
  const cachedPrefixTokens = (state.fixedTokens ?? 0) + sumTokens(context.slice(0, first));
  const lastReply = context.findLastIndex((m) => m.role === 'assistant');
  const unsentTokens = sumTokens(context.slice(Math.max(0, lastReply)));
  const tokensPerCall = tokensPerCallOf(tokens, cooldown.lastTokensAfter, state.callsSinceCompaction);
  const cost = estimateCost(policy.cost, tokens, tokens - saves, 0, 0, state.callsSinceCompaction, {
    cachedPrefixTokens,
    unsentTokens,
    tokensPerCall,
  });
  if (cost.netBenefit >= 0) return undefined;
  // Held as the plan's own skip would hold it (engine/gates.ts).
  const skipped = { maskPass: true as const, tokens, cost };
  return {
    skipped:
      `${due.reason}: not worth it, masking would save ${saves} tokens over ${cost.remainingTurns} calls and put ` +
      `${cost.invalidatedTokens} out of the prompt cache`,
    gate: gateAfterSkippedPlan(policy, conversation.window, cooldown, skipped, 'auto', state.callsSinceCompaction),
  };
}

function sumTokens(records: readonly { tokens: number }[]): number {
  return records.reduce((sum, m) => sum + m.tokens, 0);
}

/** A plan that found nothing to do (or a compaction that, written, would not shrink the context): why, the gate. */
export interface Skipped {
  skipped: string;
  gate?: Gate;
  /** It would not shrink the context: the tokens before and after (`estimated`: as the plan expected them). */
  noGain?: { tokensBefore: number; tokensAfter: number; estimated: boolean };
}
