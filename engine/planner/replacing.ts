/**
 * The strategies that replace a message in place, each with a reloadable reference to its original: tool results cut
 * to head and tail, old tool results masked, large messages offloaded to a preview, and the loop guard's offloading of
 * the largest items. Nothing leaves the context's order; the step layout stays as it was.
 */
import { kindOf } from '../messages.ts';
import type { Planning, StepResult } from './board.ts';
import { RANK } from './protection.ts';
import type { Protection } from './protection.ts';
import { MASK_TOKENS, STUB_TOKENS } from './sizes.ts';

/**
 * The tool results over the policy's limit (tokens or characters) cut to head and tail, the newest step's included
 * unless the policy cuts older results only.
 */
export function truncateToolResults({ board, input }: Planning): StepResult {
  const { maxTokens, maxChars, headChars, tailChars, olderTurnsOnly } = input.policy.toolResults;
  const limit: Protection = olderTurnsOnly ? 'none' : 'newest';
  const ids: string[] = [];
  for (const slot of board.slots) {
    if (slot.op.op === 'drop') continue;
    const m = slot.meta;
    if (m.role !== 'tool' || slot.op.op !== 'keep' || kindOf(m) !== 'normal') continue;
    if (RANK[slot.protect] > RANK[limit] || (m.chars <= maxChars && slot.tokens <= maxTokens)) continue;
    // A reloaded page is cut only once the model has seen it (a cut would point back to itself).
    if (m.reload && RANK[slot.protect] > RANK.none) continue;
    // Keep head + tail: at most the characters the policy allows and the tokens of the per-result limit.
    const budget = Math.min(maxTokens, Math.ceil((slot.tokens * (headChars + tailChars)) / Math.max(1, m.chars)));
    const tokens = Math.min(maxTokens, budget + STUB_TOKENS);
    if (tokens >= slot.tokens) continue;
    const keepChars = Math.min(headChars + tailChars, Math.floor((m.chars * budget) / Math.max(1, slot.tokens)));
    const head = Math.round((keepChars * headChars) / Math.max(1, headChars + tailChars));
    board.replace(
      slot,
      { op: 'truncate', id: m.id, headChars: head, tailChars: keepChars - head, maxTokens: tokens },
      tokens,
    );
    ids.push(m.id);
  }
  return { ids };
}

/** The unprotected tool results masked to a stub, oldest first, until the target is met (a mask pass: all of them). */
export function maskToolResults({ board, input, maskPass, met }: Planning): StepResult {
  const ids: string[] = [];
  // Oldest first, stopping at the target: every masked result is one the model can no longer read directly. A
  // mask pass below the trigger masks every old result: it changes the context once, not once per result.
  for (const slot of board.slots) {
    if (slot.op.op === 'drop') continue;
    if (!maskPass && met()) break;
    const kind = kindOf(slot.meta);
    if (slot.meta.role !== 'tool' || slot.protect !== 'none' || (kind !== 'normal' && kind !== 'truncated')) continue;
    if (slot.op.op === 'mask' || slot.op.op === 'offload' || slot.tokens < input.policy.mask.minTokens) continue;
    if (slot.tokens <= MASK_TOKENS) continue;
    board.replace(slot, { op: 'mask', id: slot.meta.id }, MASK_TOKENS);
    ids.push(slot.meta.id);
  }
  return { ids };
}

/**
 * The messages over the policy's size offloaded to a preview, oldest first, until the target is met: the unprotected
 * ones, then (policy `offload.includeProtected`) the recent ones.
 */
export function offloadLarge({ board, input, met }: Planning): StepResult {
  const { minChars, previewChars, includeProtected } = input.policy.offload;
  const ids: string[] = [];
  const pass = (level: Protection) => {
    for (const slot of board.slots) {
      if (slot.op.op === 'drop') continue;
      if (met()) break;
      const m = slot.meta;
      if (m.role === 'system' || slot.op.op !== 'keep' || kindOf(m) !== 'normal' || m.chars <= minChars) continue;
      if (RANK[slot.protect] > RANK[level]) continue;
      const tokens = Math.ceil((slot.tokens * previewChars) / Math.max(1, m.chars)) + STUB_TOKENS;
      if (tokens >= slot.tokens) continue;
      board.replace(slot, { op: 'offload', id: m.id, previewChars }, tokens);
      ids.push(m.id);
    }
  };
  pass('none');
  if (includeProtected && !met()) pass('recent');
  return { ids };
}

/**
 * The loop guard's attempt: the largest messages (unprotected or recent, never the newest step or a fixed one)
 * offloaded to a preview with the reference to the original, largest first, until the target is met.
 */
export function offloadLargest({ board, input, met }: Planning): StepResult & { note: string } {
  const { previewChars } = input.policy.offload;
  const ids: string[] = [];
  const candidates = board.slots
    .filter((slot) => slot.op.op === 'keep' && slot.meta.role !== 'system' && RANK[slot.protect] <= RANK.recent)
    .filter(
      (slot) => ['normal', 'truncated'].includes(kindOf(slot.meta)) && !(slot.meta.reload && slot.protect !== 'none'),
    )
    .sort((a, b) => b.tokens - a.tokens || a.index - b.index);
  for (const slot of candidates) {
    if (met()) break;
    const tokens = Math.ceil((slot.tokens * previewChars) / Math.max(1, slot.meta.chars)) + STUB_TOKENS;
    if (tokens >= slot.tokens) continue;
    board.replace(slot, { op: 'offload', id: slot.meta.id, previewChars }, tokens);
    ids.push(slot.meta.id);
  }
  const inARow = input.cooldown.ineffective ?? 0;
  return {
    ids,
    note: `loop guard: ${inARow} ineffective compactions in a row, so the largest items are offloaded instead of the policy's strategies`,
  };
}
