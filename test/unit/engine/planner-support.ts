/** What the planner tests share: the window, an automatic plan with a summary model, contexts of an exact size. */
import { planCompaction } from '../../../engine/planner/index.ts';
import type { PlanInput } from '../../../engine/planner/index.ts';
import type { PolicyOverrides } from '../../../engine/policy.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import { NO_COOLDOWN } from '../../../engine/trigger.ts';
import { callsOf, context } from '../../support/contexts.ts';
import type { ContextBuilder } from '../../support/contexts.ts';

export const WINDOW = 64_000;

/**
 * The plan for `c` under the policy `overrides` give: automatic, no cooldown, the first user message the goal, the
 * pace of a first compaction (one call per assistant message).
 */
export function plan(
  c: ContextBuilder,
  overrides: PolicyOverrides & { preset?: string } = {},
  extra: Partial<PlanInput> = {},
) {
  const firstUser = c.messages.find((m) => m.role === 'user');
  return planCompaction({
    context: c.messages,
    policy: resolvePolicy(overrides),
    window: WINDOW,
    fixedTokens: 0,
    trigger: 'auto',
    cooldown: NO_COOLDOWN,
    summarizer: 'available',
    ...(firstUser ? { goalId: firstUser.id } : {}),
    callsSinceCompaction: callsOf(c),
    ...extra,
  });
}

/** A context of exactly `tokens` tokens: system 100, goal 100, one tool call, a 100-token reply. */
export function sized(tokens: number) {
  const c = context().system(100).user(100);
  return c.tools(tokens - c.tokens - 30 - 100).reply(100);
}

/** The strategies of the steps a plan made, in order. */
export const strategiesOf = (p: ReturnType<typeof plan>) => p.steps.map((s) => s.strategy);
