/**
 * The strategies that replace a message in place, each with a reloadable reference to its original: superseded tool
 * results replaced by a marker naming the newer one, tool results cut to head and tail, old tool results masked, large messages offloaded to a preview, and the loop guard's offloading of
 * the largest items. Nothing leaves the context's order; the step layout stays as it was.
 */
import { kindOf } from '../messages.ts';
import type { MessageMeta } from '../messages.ts';
import type { CompactionPolicy, ToolLimits } from '../policy.ts';
import type { Planning, Slot, StepResult } from './board.ts';
import { RANK } from './protection.ts';
import type { Protection } from './protection.ts';
import { latestAnswerIndex } from './removing.ts';
import { MASK_TOKENS, STUB_TOKENS, SUPERSEDED_TOKENS } from './sizes.ts';

/**
 * A tool result's limits: the policy's for its tool (`tools`), over what its definition set when it arrived (kept on
 * the record: `neverMask`, `resultPreview`).
 */
export function toolLimitsOf(policy: CompactionPolicy, meta: MessageMeta): ToolLimits {
  const own = meta.tool !== undefined ? policy.tools?.[meta.tool] : undefined;
  const preview = own?.preview ?? meta.resultPreview;
  return {
    ...(own?.maxResultTokens !== undefined ? { maxResultTokens: own.maxResultTokens } : {}),
    ...(preview !== undefined ? { preview } : {}),
    neverMask: own?.neverMask ?? meta.neverMask === true,
  };
}

/**
 * The tool results older than a newer result of the same tool with the same arguments (the same `resource`: a file
 * read again, a status checked again), each replaced by a marker that names the newer one and the stored original;
 * all of them at once (the compaction rewrites the context once). Never a result of the newest step, a fixed one, or
 * one of a tool whose results are never masked; the call keeps its result (the marker is the result).
 */
export function supersedeToolResults({ board, input }: Planning): StepResult {
  const newest = new Map<string, Slot>();
  for (const slot of board.slots) {
    if (slot.op.op !== 'drop' && slot.meta.role === 'tool' && slot.meta.resource !== undefined) {
      newest.set(slot.meta.resource, slot);
    }
  }
  const ids: string[] = [];
  for (const slot of board.slots) {
    const m = slot.meta;
    if (m.role !== 'tool' || m.resource === undefined || slot.op.op !== 'keep') continue;
    const newer = newest.get(m.resource);
    if (newer === undefined || newer === slot || RANK[slot.protect] > RANK.recent) continue;
    const kind = kindOf(m);
    if ((kind !== 'normal' && kind !== 'truncated') || m.reload || toolLimitsOf(input.policy, m).neverMask) continue;
    if (slot.tokens <= SUPERSEDED_TOKENS) continue;
    board.replace(slot, { op: 'mask', id: m.id, supersededBy: newer.meta.id }, SUPERSEDED_TOKENS);
    ids.push(m.id);
  }
  return { ids };
}

/**
 * The tool results over the policy's limit (tokens or characters, or the tool's own `maxResultTokens`) cut to head
 * and tail, the newest step's included unless the policy cuts older results only.
 */
export function truncateToolResults({ board, input }: Planning): StepResult {
  const { maxTokens, maxChars, headChars, tailChars, olderTurnsOnly } = input.policy.toolResults;
  const limit: Protection = olderTurnsOnly ? 'recent' : 'newest';
  // Older turns only: the results of the turns before the one in progress (all of them, when the last turn ended
  // with its answer: the next decision loop is the next message's).
  const last = board.slots.at(-1)?.meta;
  const ended = last?.role === 'assistant' && !(last.toolCallIds?.length ?? 0);
  const earlier = (slot: Slot) => slot.turn < board.currentTurn || (ended && slot.turn === board.currentTurn);
  const ids: string[] = [];
  for (const slot of board.slots) {
    if (slot.op.op === 'drop') continue;
    const m = slot.meta;
    if (m.role !== 'tool' || slot.op.op !== 'keep' || kindOf(m) !== 'normal') continue;
    if (olderTurnsOnly && !earlier(slot)) continue;
    const own = toolLimitsOf(input.policy, m);
    const limitTokens = Math.min(maxTokens, own.maxResultTokens ?? Infinity);
    if (RANK[slot.protect] > RANK[limit] || (m.chars <= maxChars && slot.tokens <= limitTokens)) continue;
    // A reloaded page is cut only once the model has seen it (a cut would point back to itself).
    if (m.reload && RANK[slot.protect] > RANK.none) continue;
    // What the cut may keep: the per-result limit, or the tool's preview and the marker.
    const keepTokens = own.preview !== undefined ? Math.min(limitTokens, own.preview + STUB_TOKENS) : limitTokens;
    // Keep head + tail: at most the characters the policy allows and the tokens of the per-result limit.
    const budget = Math.min(keepTokens, Math.ceil((slot.tokens * (headChars + tailChars)) / Math.max(1, m.chars)));
    const tokens = Math.min(keepTokens, budget + STUB_TOKENS);
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
    const own = toolLimitsOf(input.policy, slot.meta);
    if (own.neverMask) continue;
    // The tool's preview: the stub keeps that much of the result's head.
    const tokens = MASK_TOKENS + (own.preview ?? 0);
    if (slot.tokens <= tokens) continue;
    board.replace(
      slot,
      { op: 'mask', id: slot.meta.id, ...(own.preview ? { previewTokens: own.preview } : {}) },
      tokens,
    );
    ids.push(slot.meta.id);
  }
  return { ids };
}

/**
 * The messages over the policy's size offloaded to a preview, oldest first, until the target is met: the unprotected
 * ones, then (policy `offload.includeProtected`) the recent ones; with `offload.beforeLatestAnswer`, only those before
 * the latest final answer.
 */
export function offloadLarge({ board, input, met }: Planning): StepResult {
  const { minChars, previewChars, includeProtected, beforeLatestAnswer } = input.policy.offload;
  const ids: string[] = [];
  // AgentScope Java: never the latest final answer or anything after it; without one, nothing past the protected.
  const latest = beforeLatestAnswer ? latestAnswerIndex(board) : -1;
  const endOf = (level: Protection) =>
    !beforeLatestAnswer ? Infinity : latest !== -1 ? latest : level === 'none' ? Infinity : 0;
  const pass = (level: Protection) => {
    const end = endOf(level);
    for (const slot of board.slots) {
      if (slot.op.op === 'drop') continue;
      if (met() || slot.index >= end) break;
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
