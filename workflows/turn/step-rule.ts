/**
 * A turn's budget, step by step: what its next step may do (go on, stop at the budget, or the old step cap's forced
 * text answer for histories recorded before turn budgets), and what a model call spent toward the budget.
 */
import { patched } from '@temporalio/workflow';
import type { ModelReply } from '../../contract/activities.ts';
import { turnBudgetOf } from '../../contract/inputs.ts';
import type { AgentInput, TurnBudget, TurnStop } from '../../contract/inputs.ts';

/**
 * Before turn budgets, a turn made at most `maxSteps` (default 8) model calls that could call tools, then one more
 * with tool_choice 'none'. A history recorded so replays that way: where the two rules first part in a run, the
 * workflow asks this patch (see {@link StepRule}). Release 0.1.0 (docs/changing-workflows.md).
 */
const TURN_BUDGET_PATCH = 'turn-budget';
const LEGACY_DEFAULT_MAX_STEPS = 8;

/** What a turn's next step may do: `stop` (the budget is reached), a `forceText` call (the old cap), or go on. */
export class StepRule {
  readonly budget: TurnBudget & { steps: number };
  /**
   * Whether this run follows the step cap of before turn budgets (its history was recorded under it): decided once
   * per run, by the patch marker, at the first point where the two rules part; undefined until then.
   */
  private legacyCap: boolean | undefined;

  private readonly input: AgentInput;

  constructor(input: AgentInput) {
    this.input = input;
    this.budget = turnBudgetOf(input);
  }

  next(step: number, stop: TurnStop | undefined): 'stop' | 'forceText' | 'go' {
    const oldCap = this.input.maxSteps ?? LEGACY_DEFAULT_MAX_STEPS;
    if (this.legacyCap === undefined && (stop !== undefined || step > oldCap)) {
      this.legacyCap = !patched(TURN_BUDGET_PATCH);
    }
    if (this.legacyCap) return step > oldCap ? 'forceText' : 'go';
    return stop ? 'stop' : 'go';
  }
}

/**
 * Tokens a model call spent: the provider's reported usage (prompt + completion), or, when it reports none (or a
 * zero prompt, which no real request has), the request as longrun counted it and the stored reply.
 */
export function spentTokens(reply: ModelReply, requestTokens: number): number {
  if (reply.usage && reply.usage.promptTokens > 0) return reply.usage.promptTokens + reply.usage.completionTokens;
  return requestTokens + reply.record.tokens;
}

/** The first budget the turn has reached (steps, then tokens, then time), if any. */
export function budgetReached(
  budget: TurnBudget & { steps: number },
  used: { steps: number; tokens: number; ms: number },
): TurnStop | undefined {
  if (used.steps >= budget.steps) return { by: 'steps', limit: budget.steps, used: used.steps };
  if (budget.tokens !== undefined && used.tokens >= budget.tokens) {
    return { by: 'tokens', limit: budget.tokens, used: used.tokens };
  }
  const seconds = Math.floor(used.ms / 1000);
  if (budget.seconds !== undefined && seconds >= budget.seconds) {
    return { by: 'seconds', limit: budget.seconds, used: seconds };
  }
  return undefined;
}
