/**
 * The bench's history step refuses a context size its agent cannot reach (before anything starts), instead of
 * growing the context forever while compaction keeps it below the size.
 */
import { describe, expect, it } from 'vitest';
import {
  AGENT_FULL,
  AGENT_SHORT,
  benchAgent,
  checkHistoryTargets,
  compactsFrom,
  UnreachableTargetError,
} from '../../bench/agent.ts';

describe("the bench's history step", () => {
  it('knows where the default policy starts acting for a model', () => {
    // gpt-4o-mini, 128,000 tokens: masking from 50%, background compaction from 70%, the trigger at 80%.
    expect(compactsFrom('gpt-4o-mini')).toEqual({ tokens: 64_000, what: 'the masking pass', window: 128_000 });
  });

  it('refuses 100,000 tokens on gpt-4o-mini, naming the size, the model and where it compacts', () => {
    expect(() => checkHistoryTargets('gpt-4o-mini', [10_000, 100_000])).toThrow(
      new UnreachableTargetError(
        "history per turn at 100000 tokens: unreachable on gpt-4o-mini (window 128000): its agent's context " +
          'compacts from 64000 tokens (the masking pass), so a target must be a whole number from 1 to 57600 (90% ' +
          'of that); pick a model with a larger window or a smaller target',
      ),
    );
  });

  it('accepts the sizes of the full and the short runs', () => {
    expect(() => checkHistoryTargets(AGENT_FULL.history.model, AGENT_FULL.history.tokens)).not.toThrow();
    expect(() => checkHistoryTargets(AGENT_SHORT.history.model, AGENT_SHORT.history.tokens)).not.toThrow();
  });

  it('fails at once, before starting a server, when a size is unreachable', async () => {
    const started = performance.now();
    const lines: string[] = [];
    await expect(
      benchAgent((line) => lines.push(line), { ...AGENT_SHORT, history: { model: 'gpt-4o-mini', tokens: [100_000] } }),
    ).rejects.toThrow(UnreachableTargetError);
    expect(lines).toEqual([]);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
