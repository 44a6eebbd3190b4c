/**
 * Protection levels, strongest first: `fixed` (system prompt, task ledger, summaries, the goal, the request of the
 * turn in progress, pinned messages and their steps) is never touched by a regular strategy; `newest` (the newest step) only by truncating tool
 * results; `recent` (the newest N steps, the last N messages, the reserve, the user's words and final answers of the
 * last N turns) only by truncation, offloading and supersession (a newer result of the same call is in the context);
 * `none` by everything.
 */
import { kindOf } from '../messages.ts';
import type { MessageMeta } from '../messages.ts';
import type { CompactionPolicy } from '../policy.ts';
import { layoutSteps } from '../turns.ts';
import type { StepLayout } from '../turns.ts';

/** The newest steps protected when a stored policy predates `keepSteps`. */
const DEFAULT_KEEP_STEPS = 4;

export type Protection = 'none' | 'recent' | 'newest' | 'fixed';

/** The order of the levels: a strategy allowed at a level may touch every message at or below it. */
export const RANK: Record<Protection, number> = { none: 0, recent: 1, newest: 2, fixed: 3 };

/** The protection of each message of `context` under `policy`. */
export function protectionOf(
  context: readonly MessageMeta[],
  policy: CompactionPolicy,
  window: number,
  goalId?: string,
  layout: StepLayout = layoutSteps(context),
  pinnedIds: readonly string[] = [],
): Protection[] {
  const { steps, turns } = layout;
  const protect: Protection[] = context.map(() => 'none');
  const raise = (i: number, level: Protection) => {
    if (RANK[level] > RANK[protect[i]!]) protect[i] = level;
  };
  const raiseStep = (s: number, level: Protection) => {
    for (let i = steps[s]!.start; i < steps[s]!.end; i++) raise(i, level);
  };
  context.forEach((m, i) => {
    const kind = kindOf(m);
    // (A user message a summary was prepended to is the user's turn, compactable like any: `userTurn`.)
    const summary = kind === 'summary' && m.userTurn !== true;
    if (m.role === 'system' || kind === 'ledger' || summary || m.id === goalId) raise(i, 'fixed');
  });
  // A pinned message is kept verbatim with its whole step: a tool call and its results stay together.
  if (pinnedIds.length > 0) {
    const pinned = new Set(pinnedIds);
    steps.forEach((step, s) => {
      for (let i = step.start; i < step.end; i++) if (pinned.has(context[i]!.id)) raiseStep(s, 'fixed');
    });
    context.forEach((m, i) => {
      if (pinned.has(m.id)) raise(i, 'fixed');
    });
  }
  const current = turns.at(-1);
  if (current) raise(current.start, 'fixed'); // the user's request of the turn in progress stays verbatim
  if (steps.length > 0) raiseStep(steps.length - 1, 'newest');
  // The newest N steps and the last N messages (widened to whole steps), as long as they hold at most half the
  // target: in a small window a few large tool results would otherwise protect more than compaction may leave.
  // And the reserve: the newest steps within its share of the window.
  const keepSteps = policy.keepSteps ?? DEFAULT_KEEP_STEPS;
  const firstByCount = Math.max(0, context.length - policy.keepMessages);
  const byCountCap = (policy.targetRatio * window) / 2;
  const reserve = policy.reserveRatio * window;
  let held = 0;
  for (let s = steps.length - 1; s >= 0; s--) {
    const step = steps[s]!;
    for (let i = step.start; i < step.end; i++) held += context[i]!.tokens;
    const byCount = (s >= steps.length - keepSteps || step.end > firstByCount) && held <= byCountCap;
    if (byCount || held <= reserve) raiseStep(s, 'recent');
    else break;
  }
  // The conversation of the last N turns before the one in progress: the user's words and the final answer.
  for (const turn of turns.slice(Math.max(0, turns.length - 1 - policy.keepTurns), -1)) {
    raise(turn.start, 'recent');
    for (let i = turn.end - 1; i > turn.start; i--) {
      const m = context[i]!;
      if (m.role === 'assistant' && !(m.toolCallIds?.length ?? 0)) {
        raise(i, 'recent');
        break;
      }
    }
  }
  return protect;
}
