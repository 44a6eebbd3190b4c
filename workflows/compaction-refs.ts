/**
 * The compaction pipeline's references (`compaction-refs`, compaction-pipeline.ts): the working context as the plan
 * step takes it, by reference, and the masking pass the workflow can tell would find nothing, so it is not planned.
 * Pure: no Temporal API, no I/O, so it is unit-tested alone (test/unit/compaction-refs.test.ts).
 */
import type { ContextRef } from '../contract/activities.ts';
import { recordsDigest } from '../contract/context-delta.ts';
import { seqOf } from '../contract/keys.ts';
import type { WorkflowState } from '../contract/state.ts';
import { gateAfterMaskSkip, gateOf } from '../engine/gates.ts';
import { compactionDue, gateFiresWith as dueWith, holdGrowth } from '../engine/trigger.ts';
import type { Conversation } from './conversation.ts';
import type { Skipped } from './compaction-pipeline.ts';

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
 * A masking pass below the trigger that the plan would skip, told without planning: it is due only as the masking
 * pass, and the tool results it could mask (normal, at least the policy's `mask.minTokens`, not a reloaded page,
 * not of the newest step, which the model has not seen) hold fewer tokens than it must save. Then the gate moves as
 * after the plan's skip. Undefined when a plan might find something.
 */
export function nothingToMask(conversation: Conversation): Skipped | undefined {
  const { state } = conversation;
  const check = conversation.gateCheck();
  if (!check || !state.policy || dueWith(check, [], state.messages)?.kind !== 'mask') return undefined;
  // As the plan decides it: on the policy's gate under the cooldown, over the context's own counts.
  const cooldown = state.cooldown ?? { consecutive: 0, lastTokensAfter: 0 };
  const gate = gateOf(state.policy, conversation.window, cooldown);
  const stats = { tokens: state.contextTokens, messages: state.messages.length, turns: state.contextTurns ?? 0 };
  const due = compactionDue(gate, stats, cooldown.consecutive === 0, state.messages);
  const atLeast = gate.mask?.atLeast;
  if (due?.kind !== 'mask' || atLeast === undefined) return undefined;
  const newest = state.messages.findLastIndex((m) => m.role === 'assistant');
  const minTokens = state.policy.mask.minTokens;
  const maskable = state.messages
    .slice(0, Math.max(0, newest))
    .filter((m) => m.role === 'tool' && (m.kind ?? 'normal') === 'normal' && m.reload !== true && m.tokens >= minTokens)
    .reduce((sum, m) => sum + m.tokens, 0);
  if (maskable >= atLeast) return undefined;
  const held = gateAfterMaskSkip(
    state.policy,
    conversation.window,
    cooldown,
    state.contextTokens,
    holdGrowth(state.policy),
  );
  return { skipped: `${due.reason}: masking could save at most ${maskable} tokens, less than ${atLeast}`, gate: held };
}
