/**
 * What a plan reports besides its operations: the messages that left the working context (each with its original's
 * storage key and the step that removed it), and, when the target is out of reach, why.
 */
import { originalKeyOf } from '../messages.ts';
import type { ContextStats } from '../trigger.ts';
import type { Target } from '../target.ts';
import type { Board, Slot } from './board.ts';
import { REPLACED_KIND } from './types.ts';
import type { PlanStep, RemovedItem, SummarySpec } from './types.ts';

/** Every message the plan replaces or drops, in context order, then the user message the summary is prepended to. */
export function removedOf(board: Board, steps: readonly PlanStep[], summary: SummarySpec | undefined): RemovedItem[] {
  const removed: RemovedItem[] = [];
  const lastStepOf = new Map<string, PlanStep>();
  for (const step of steps) for (const id of step.ids) lastStepOf.set(id, step);
  for (const slot of board.slots) {
    if (slot.op.op === 'keep') continue;
    const step = lastStepOf.get(slot.meta.id);
    const replacedBy = slot.op.op === 'drop' ? 'summary' : REPLACED_KIND[slot.op.op];
    removed.push({
      id: slot.meta.id,
      role: slot.meta.role,
      tokens: slot.meta.tokens,
      key: originalKeyOf(slot.meta),
      // A previous summary folded into the new one is removed by the step that made the new one.
      by: step?.strategy ?? steps.find((s) => s.summary)!.strategy,
      replacedBy,
    });
  }
  if (summary?.placement.mode === 'prepend') {
    const host = board.prependTo!;
    removed.push({
      id: host.meta.id,
      role: host.meta.role,
      tokens: host.meta.tokens,
      key: originalKeyOf(host.meta),
      by: steps.find((s) => s.summary)!.strategy,
      replacedBy: 'summary',
    });
  }
  return removed;
}

/** Why the target is out of reach: what the plan leaves against it, and what the protected messages hold. */
export function shortfallOf(after: ContextStats, target: Target, slots: readonly Slot[]): string {
  const held = slots.filter((s) => s.op.op !== 'drop' && s.protect !== 'none');
  const heldTokens = held.reduce((sum, s) => sum + s.tokens, 0);
  const largest = [...held].sort((a, b) => b.tokens - a.tokens)[0];
  return (
    `expected ${after.tokens} tokens, ${after.messages} messages, ${after.turns} turns against a target of ` +
    `${target.tokens} tokens${target.messages !== undefined ? `, ${target.messages} messages` : ''}` +
    `${target.turns !== undefined ? `, ${target.turns} turns` : ''}: the protected messages (system prompt, ` +
    `summary, goal, the turn's request, the newest steps) hold ${heldTokens} tokens` +
    (largest ? `, the largest ${largest.meta.id} (${largest.meta.role}, ${largest.tokens} tokens)` : '')
  );
}
