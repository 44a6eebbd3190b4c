/**
 * The budget the model sees: the figures of its context and its turn's budget, as the budget note at the
 * end of each request (policy `budgetNote`) and as the `context_budget` tool's answer. Pure, unit-tested.
 */

/** A compaction the note tells of: its seq, what fired it, its strategies and its sizes. */
export interface NotedCompaction {
  seq: number;
  trigger: string;
  strategies: readonly string[];
  tokensBefore: number;
  tokensAfter: number;
}

export interface BudgetFigures {
  /** Tokens of the request as counted (context, tool schemas, pinned block) and the model's window. */
  tokens: number;
  window: number;
  /** Share of the window at which compaction fires. */
  triggerRatio?: number;
  /** The turn's budget: steps used of the limit; tokens used, and the limit when it has one. */
  steps: { used: number; limit: number };
  turnTokens: { used: number; limit?: number };
  /** The pins: how many, their tokens, the pin budget. */
  pins?: { count: number; tokens: number; budget: number };
  /** Compactions since the last note (oldest first). */
  compacted: readonly NotedCompaction[];
}

const n = (value: number) => value.toLocaleString('en-US');

/** The figures as one short paragraph, the same words every time (only the numbers change). */
export function budgetText(figures: BudgetFigures): string {
  const { tokens, window, steps, turnTokens } = figures;
  const share = Math.round((tokens / Math.max(1, window)) * 100);
  const trigger =
    figures.triggerRatio !== undefined ? `; compaction at ${Math.round(figures.triggerRatio * 100)}%` : '';
  const lines = [`Context: ${n(tokens)} of ${n(window)} tokens in use (${share}%${trigger}).`];
  const stepsLeft = Math.max(0, steps.limit - steps.used);
  const tokensLeft =
    turnTokens.limit !== undefined
      ? `, ${n(Math.max(0, turnTokens.limit - turnTokens.used))} tokens left of ${n(turnTokens.limit)}`
      : '';
  lines.push(
    `Turn: ${n(stepsLeft)} of ${n(steps.limit)} steps left${tokensLeft} (${n(turnTokens.used)} tokens spent).`,
  );
  if (figures.pins && figures.pins.count > 0) {
    lines.push(`Pins: ${figures.pins.count} (${n(figures.pins.tokens)} of ${n(figures.pins.budget)} tokens).`);
  }
  if (figures.compacted.length > 0) {
    const done = figures.compacted.map(
      (c) =>
        `#${c.seq} ${c.trigger} (${c.strategies.join('+') || 'none'}): ${n(c.tokensBefore)} → ${n(c.tokensAfter)} tokens`,
    );
    lines.push(`Compacted since the last note: ${done.join('; ')}.`);
  }
  return lines.join(' ');
}

/** What every budget note starts with: it says what the note is (not the user's words). */
export const BUDGET_NOTE_TAG = '[context budget: a note from longrun, not from the user]';

/** The budget note: the figures under {@link BUDGET_NOTE_TAG}. */
export function budgetNote(figures: BudgetFigures): string {
  return `${BUDGET_NOTE_TAG} ${budgetText(figures)}`;
}

/** Whether a request's message is a budget note (a user message that starts with the tag). */
export function isBudgetNote(message: { role: string; content?: unknown }): boolean {
  return message.role === 'user' && typeof message.content === 'string' && message.content.startsWith(BUDGET_NOTE_TAG);
}
