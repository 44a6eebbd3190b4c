/**
 * The strategies that remove messages: whole steps (never a tool call without its result) dropped into the one
 * summary, which names what it covers. The summary of the unprotected span, of the turn in progress, of the older
 * turns down to their words and answers, the oldest rounds, and the emergency halving.
 */
import { isUserTurn } from '../messages.ts';
import { opensTurn } from '../turns.ts';
import type { Planning, Slot, StepResult } from './board.ts';
import type { Protection } from './protection.ts';

/**
 * The policy's summary of the unprotected steps (its oldest half, with `summary.span: 'oldest-half'`); without a
 * summary model, when the policy says so, or once the model failed, its fallback instead.
 */
export function summarize(p: Planning): StepResult {
  const { input } = p;
  const { policy } = input;
  const noModel =
    input.summarizer === 'failed' || (input.summarizer === 'none' && policy.summary.withoutModel === 'fallback');
  if (noModel) {
    const why = input.summarizer === 'failed' ? 'the summary model failed' : 'no summary model is configured';
    const fallback = policy.summary.fallback;
    const ids = fallback === 'halve' ? halve(p) : truncateRounds(p);
    return { ids, note: `${why}: ${fallback} instead, with an extractive summary of what it removed` };
  }
  return { ids: summarizeSpan(p, 'none', { half: policy.summary.span === 'oldest-half' }) };
}

/** AgentScope Java's last strategy: the turn in progress as a whole, down to its newest step. */
export function summarizeCurrentTurn(p: Planning): StepResult {
  const ids = summarizeSpan(p, 'recent', { toTarget: true });
  return { ids };
}

/** Keeps only the user's text and the final reply of each completed, unprotected turn. */
export function compactTurns({ board }: Planning): StepResult {
  const ids: string[] = [];
  for (const [turn, found] of board.removableTurns('none')) {
    const inTurn = found.flatMap((s) => board.stepSlots[s]!).filter((x) => x.op.op !== 'drop');
    const finalReply = inTurn.findLast((x) => x.meta.role === 'assistant' && !(x.meta.toolCallIds?.length ?? 0));
    for (const slot of inTurn) {
      if (slot.protect === 'fixed' || slot === finalReply || opensTurn(slot.meta) || slot.turn !== turn) continue;
      board.summarize(slot);
      ids.push(slot.meta.id);
    }
  }
  return { ids };
}

/**
 * Summarizes the steps removable at `level`, oldest first; `half`: only the oldest half of them; `toTarget`: stops
 * once the target is met, and summarizes even a span the summary would not halve.
 */
function summarizeSpan(
  { board, input, met }: Planning,
  level: Protection,
  options: { half?: boolean; toTarget?: boolean } = {},
): string[] {
  let found = board.removableSteps(level);
  if (options.half) found = found.slice(0, Math.ceil(found.length / 2));
  const candidates = found.flatMap((s) =>
    board.stepSlots[s]!.filter((x) => x.op.op !== 'drop' && x.protect !== 'fixed'),
  );
  if (candidates.length < 2) return [];
  const spanTokens = candidates.reduce((sum, x) => sum + x.tokens, 0);
  // Worth a summary only if it at most halves what it replaces (a forced compaction asked for it anyway).
  const estimate = board.summaryTokensFor(spanTokens);
  if (!options.toTarget && input.trigger !== 'forced' && spanTokens < 2 * estimate) return [];
  // The user's own words, newest first, up to the budget: they stay verbatim beside the summary.
  let budget = input.policy.summary.keepUserTokens;
  const keptUser = new Set<Slot>();
  for (const slot of [...candidates].reverse()) {
    if (!isUserTurn(slot.meta) || slot.tokens > budget) continue;
    keptUser.add(slot);
    budget -= slot.tokens;
  }
  const ids: string[] = [];
  for (const s of found) {
    if (options.toTarget && met()) break;
    for (const slot of board.stepSlots[s]!) {
      if (slot.op.op === 'drop' || slot.protect === 'fixed' || keptUser.has(slot)) continue;
      board.summarize(slot);
      ids.push(slot.meta.id);
    }
  }
  return ids;
}

/**
 * Drops the oldest rounds into the summary, `perStep` at a time, until the target is met: whole completed turns
 * first, then the unprotected steps of the turn in progress (inside a long agent loop, a round is a step).
 */
export function truncateRounds({ board, input, met }: Planning): string[] {
  const { perStep } = input.policy.truncateRounds;
  const ids: string[] = [];
  // Protection does not change while planning: the rounds removable now stay so until dropped.
  const rounds = [
    ...board.removableTurns('none').map(([, found]) => found),
    ...board.removableSteps('none', (s) => board.layout.steps[s]!.turn === board.currentTurn).map((s) => [s]),
  ];
  for (let r = 0; r < rounds.length && !met(); r += perStep) {
    ids.push(...board.summarizeSteps(rounds.slice(r, r + perStep).flat()));
  }
  return ids;
}

/**
 * Emergency: drops the oldest steps holding about half the tokens of the removable ones (recent ones included;
 * never the newest step or a fixed message) into the summary, and again until the target is met.
 */
export function halve({ board, met }: Planning): string[] {
  const ids: string[] = [];
  for (;;) {
    if (met()) break;
    const found = board.removableSteps('recent');
    if (found.length === 0) break;
    const total = found.reduce((sum, s) => sum + board.stepTokens(s), 0);
    let dropped = 0;
    const half: number[] = [];
    for (const s of found) {
      if (half.length > 0 && dropped >= total / 2) break;
      half.push(s);
      dropped += board.stepTokens(s);
    }
    ids.push(...board.summarizeSteps(half));
  }
  return ids;
}
