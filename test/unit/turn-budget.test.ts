/** The turn budget in the contract: its validation (shared by the client, the CLI and the workflow), defaults, stop text. */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TURN_STEPS,
  InvalidInputError,
  TURN_BUDGET_MAX,
  turnBudgetOf,
  turnStoppedReply,
} from '../../contract/inputs.ts';
import { validateAgentInput } from '../../contract/input-checks.ts';
import type { AgentInput } from '../../contract/inputs.ts';

const agent = (extra: Partial<AgentInput>): AgentInput => ({ agentId: 'a', model: 'gpt-4o-mini', ...extra });

/** The message of the InvalidInputError the input raises. */
function rejection(input: AgentInput): string {
  try {
    validateAgentInput(input);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(input)}`);
}

describe('validateAgentInput', () => {
  it('accepts no budget, each budget alone, all of them, and the largest values', () => {
    for (const input of [
      agent({}),
      agent({ turnBudget: {} }),
      agent({ turnBudget: { steps: 1 } }),
      agent({ turnBudget: { tokens: 50_000 } }),
      agent({ turnBudget: { seconds: 600 } }),
      agent({ turnBudget: { ...TURN_BUDGET_MAX } }),
      agent({ maxSteps: 8 }),
      agent({ maxSteps: 3, turnBudget: { steps: 250 } }),
    ]) {
      expect(() => validateAgentInput(input), JSON.stringify(input)).not.toThrow();
    }
  });

  it('rejects values that are not positive integers up to the limit, naming the field and the limit', () => {
    expect(rejection(agent({ turnBudget: { steps: 0 } }))).toBe(
      'turnBudget.steps: 0 is not allowed (an integer from 1 to 1,000,000)',
    );
    expect(rejection(agent({ turnBudget: { steps: 1_000_001 } }))).toBe(
      'turnBudget.steps: 1000001 is not allowed (an integer from 1 to 1,000,000)',
    );
    expect(rejection(agent({ turnBudget: { tokens: 2.5 } }))).toBe(
      'turnBudget.tokens: 2.5 is not allowed (an integer from 1 to 1,000,000,000)',
    );
    expect(rejection(agent({ turnBudget: { seconds: -1 } }))).toBe(
      'turnBudget.seconds: -1 is not allowed (an integer from 1 to 2,592,000)',
    );
    expect(rejection(agent({ turnBudget: { seconds: '60' as unknown as number } }))).toBe(
      'turnBudget.seconds: "60" is not allowed (an integer from 1 to 2,592,000)',
    );
    expect(rejection(agent({ turnBudget: { steps: Number.NaN } }))).toContain('turnBudget.steps: null is not allowed');
    expect(rejection(agent({ maxSteps: 0 }))).toBe('maxSteps: 0 is not allowed (an integer from 1 to 1,000,000)');
  });

  it('rejects a budget that is not an object, and a budget it does not know', () => {
    expect(rejection(agent({ turnBudget: 5 as unknown as AgentInput['turnBudget'] }))).toBe(
      'turnBudget: must be an object {steps?, tokens?, seconds?}',
    );
    expect(rejection(agent({ turnBudget: null as unknown as AgentInput['turnBudget'] }))).toContain('turnBudget:');
    expect(rejection(agent({ turnBudget: { minutes: 5 } as AgentInput['turnBudget'] }))).toBe(
      'turnBudget.minutes: not a budget (one of steps, tokens, seconds)',
    );
  });
});

describe('turnBudgetOf', () => {
  it('defaults to 500 steps and no token or time limit; maxSteps of older agents reads as the step budget', () => {
    expect(DEFAULT_TURN_STEPS).toBe(500);
    expect(turnBudgetOf({})).toEqual({ steps: 500 });
    expect(turnBudgetOf({ maxSteps: 8 })).toEqual({ steps: 8 });
    expect(turnBudgetOf({ maxSteps: 8, turnBudget: { steps: 40 } })).toEqual({ steps: 40 });
    expect(turnBudgetOf({ turnBudget: { tokens: 9_000, seconds: 30 } })).toEqual({
      steps: 500,
      tokens: 9_000,
      seconds: 30,
    });
  });
});

describe('turnStoppedReply', () => {
  it('says the turn stopped at its budget, what was reached, and that another message continues', () => {
    const steps = turnStoppedReply({ by: 'steps', limit: 5, used: 5 });
    expect(steps).toMatch(/^\[turn stopped at its budget\] This turn reached its step budget: 5 model calls used of 5/);
    expect(steps).toContain('Send another message');
    expect(turnStoppedReply({ by: 'tokens', limit: 10_000, used: 12_345 })).toContain(
      'token budget: 12,345 tokens used of 10,000 tokens allowed',
    );
    expect(turnStoppedReply({ by: 'seconds', limit: 60, used: 61 })).toContain(
      'time budget: 61 s used of 60 s allowed',
    );
    expect(turnStoppedReply({ by: 'steps', limit: 1, used: 1 })).toContain('1 model call used of 1 model call allowed');
  });
});
