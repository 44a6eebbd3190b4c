/**
 * Each seed system's trigger down to the comparison (issue 31): "exceeds" is `>`, "reaches" is `≥`, and a ratio's
 * threshold is never rounded down before comparing. The quotes are the documents' rules as ../shared/PRIOR-ART.md
 * summarizes them.
 */
import { describe, expect, it } from 'vitest';
import { gateOf, leastExceeding, leastReaching } from '../../../engine/gates.ts';
import { resolvePolicy } from '../../../engine/presets.ts';
import { countedMessages, gateFiresWith } from '../../../engine/trigger.ts';
import { context } from '../../support/contexts.ts';
import { plan, sized } from './planner-support.ts';

/** What fires at `tokens` (few messages and turns) on the preset's gate for `window`, before any compaction. */
const firesAt = (preset: string, window: number, tokens: number) =>
  gateFiresWith({
    gate: gateOf(resolvePolicy({ preset, mask: { fromRatio: null } }), window),
    stats: { tokens, messages: 3, turns: 1 },
    consecutive: 0,
  })?.reason;

/** A chat of exactly `tokens` tokens, in replies small enough to cut nothing. */
function chat(tokens: number) {
  const c = context().system(100).user(100);
  while (c.tokens + 4_000 < tokens) c.user(100).reply(3_900);
  c.user(100);
  return c.reply(tokens - c.tokens);
}

describe('thresholds: reached is ≥, exceeded is >, never rounded down', () => {
  it('finds the least whole count that reaches or exceeds a threshold, floating point aside', () => {
    expect(leastReaching(0.82 * 1_001)).toBe(821); // 820.82
    expect(leastExceeding(0.82 * 1_001)).toBe(821);
    expect(leastReaching(50_000)).toBe(50_000);
    expect(leastExceeding(50_000)).toBe(50_001);
    expect(50_000 * 1.1).not.toBe(55_000); // 55000.00000000001
    expect(leastReaching(50_000 * 1.1)).toBe(55_000);
    expect(leastExceeding(50_000 * 1.1)).toBe(55_001);
    expect(0.57 * 100).not.toBe(57); // 56.99999999999999
    expect(leastReaching(0.57 * 100)).toBe(57);
    expect(leastExceeding(0.57 * 100)).toBe(58);
  });

  it('AstrBot "82% of the model\'s window": 820 tokens of a 1,001-token window have not reached 82%', () => {
    expect(firesAt('astrbot', 1_001, 820)).toBeUndefined();
    expect(firesAt('astrbot', 1_001, 821)).toBe('tokens 821 ≥ 821');
    // Where 82% is a whole count, reaching it is enough.
    expect(firesAt('astrbot', 100_000, 82_000)).toBe('tokens 82000 ≥ 82000');
    expect(firesAt('astrbot', 100_000, 81_999)).toBeUndefined();
  });

  it('chatgpt-on-wechat "tokens > budget (50k)": 50,000 tokens do not exceed the budget, 50,001 do', () => {
    expect(firesAt('chatgpt-on-wechat', 1_000_000, 50_000)).toBeUndefined();
    expect(firesAt('chatgpt-on-wechat', 1_000_000, 50_001)).toBe('tokens 50001 > 50000');
    // The planner decides alike.
    const at = (tokens: number) => plan(chat(tokens), { preset: 'chatgpt-on-wechat' }, { window: 1_000_000 });
    expect(at(50_000).reason).toMatch(/^below the trigger/);
    expect(at(50_001).reason).toBe('tokens 50001 > 50000');
  });

  it('chatgpt-on-wechat "turns > max turns (20)": 20 turns do not exceed it, 21 do', () => {
    const gate = gateOf(resolvePolicy({ preset: 'chatgpt-on-wechat' }), 1_000_000);
    const at = (turns: number) => gateFiresWith({ gate, stats: { tokens: 100, messages: 50, turns }, consecutive: 0 });
    expect(at(20)).toBeUndefined();
    expect(at(21)?.reason).toBe('turns 21 > 20');
  });

  it('AgentScope "tokens … > trigger_ratio × window": exactly 80% of the window does not trigger', () => {
    expect(firesAt('agentscope', 64_000, 51_200)).toBeUndefined();
    expect(firesAt('agentscope', 64_000, 51_201)).toBe('tokens 51201 > 51200');
    // Not a whole count: 0.8 × 1,001 = 800.8, exceeded at 801.
    expect(firesAt('agentscope', 1_001, 800)).toBeUndefined();
    expect(firesAt('agentscope', 1_001, 801)).toBe('tokens 801 > 800.8');
    const at = (tokens: number) => plan(sized(tokens), { preset: 'agentscope' });
    expect(at(51_200).reason).toMatch(/^below the trigger/);
    expect(at(51_201).reason).toBe('tokens 51201 > 51200');
  });

  it('AgentScope Java "tokens ≥ maxToken × tokenRatio (0.75)": reached at exactly 75%, never rounded down', () => {
    expect(firesAt('agentscope-java', 100_000, 75_000)).toBe('tokens 75000 ≥ 75000');
    expect(firesAt('agentscope-java', 100_000, 74_999)).toBeUndefined();
    expect(firesAt('agentscope-java', 1_001, 750)).toBeUndefined(); // 750.75
    expect(firesAt('agentscope-java', 1_001, 751)).toBe('tokens 751 ≥ 751');
  });

  it('the default preset reaches its 80% without rounding down either (0.8 × 1,001 = 800.8)', () => {
    expect(firesAt('default', 1_001, 800)).toBeUndefined();
    expect(firesAt('default', 1_001, 801)).toBe('tokens 801 ≥ 801');
  });
});

describe('AgentScope Java "message count ≥ msgThreshold (100)", counted in its working memory', () => {
  // 100 messages of the conversation: the goal, 24 turns of 4, a user message and a reply (rounds worth summarizing:
  // the count alone halves nothing, `halveOnCountLimit`).
  const conversation = () => context().user().turns(24, 500).user().tools(10);

  it('triggers at 100 messages of the working memory: not counting the system prompt nor the task ledger', () => {
    const bare = conversation();
    expect(bare.messages).toHaveLength(100);
    expect(plan(bare, { preset: 'agentscope-java' }, { window: 1_000_000 }).reason).toBe(
      'messages in working memory 100 ≥ 100',
    );
    // With the system prompt and longrun's ledger: 102 messages in the context, still 100 in its working memory.
    const withBoth = context().system().ledger();
    withBoth.messages.push(...conversation().messages.map((m, i) => ({ ...m, id: `w${i}` })));
    expect(plan(withBoth, { preset: 'agentscope-java' }, { window: 1_000_000 }).reason).toBe(
      'messages in working memory 100 ≥ 100',
    );
    // 99 of the conversation with the system prompt and the ledger (101 messages): not yet.
    const short = context().system().ledger().user().turns(24, 10).user().reply();
    expect(short.messages).toHaveLength(101);
    expect(plan(short, { preset: 'agentscope-java' }, { window: 1_000_000 }).reason).toMatch(/^below the trigger/);
  });

  it("the workflow's gate counts the same messages, the system prompt it adds with the first turn aside", () => {
    const gate = gateOf(resolvePolicy({ preset: 'agentscope-java' }), 1_000_000);
    expect(gate.countMessages).toBe('working-memory');
    const records = context().system().ledger().user().turns(24, 10).user().reply().messages; // 99 of them
    const stats = { tokens: 1_000, messages: countedMessages(gate, records), turns: 26 };
    expect(stats.messages).toBe(99);
    expect(gateFiresWith({ gate, stats, consecutive: 0 })).toBeUndefined();
    expect(gateFiresWith({ gate, stats, consecutive: 0 }, [{ tokens: 10, userTurn: false, role: 'system' }])).toBe(
      undefined,
    );
    expect(
      gateFiresWith({ gate, stats, consecutive: 0 }, [{ tokens: 10, userTurn: false, role: 'assistant' }]),
    ).toEqual({ kind: 'trigger', reason: 'messages in working memory 100 ≥ 100' });
    // Other presets count every message of the context (their limit bounds the workflow's state).
    expect(countedMessages(gateOf(resolvePolicy(), 1_000_000), records)).toBe(records.length);
  });
});

describe('Octomind "exponential cooldown (10%, 20%, 40%, 80–100% growth required between consecutive compressions)"', () => {
  it('each step is reached at exactly its growth, floating point aside', () => {
    const policy = resolvePolicy({ preset: 'octomind' });
    for (const [consecutive, growth] of [
      [1, 0.1],
      [2, 0.2],
      [3, 0.4],
      [4, 0.8],
      [5, 1],
    ] as const) {
      for (const lastTokensAfter of [110, 1_000, 50_000, 61_234, 100_000]) {
        const gate = gateOf(policy, 400_000, { consecutive, lastTokensAfter });
        const exact = (lastTokensAfter * Math.round((1 + growth) * 10)) / 10; // whole here, or its ceiling below
        expect(gate.floorWithoutUser, `+${growth * 100}% of ${lastTokensAfter}`).toBe(Math.ceil(exact));
      }
    }
    // +10% of 100,000 is 110,000: reached there, not at 110,001 (100,000 × 1.1 is 110000.00000000001 in floating
    // point).
    const gate = gateOf(policy, 400_000, { consecutive: 1, lastTokensAfter: 100_000 });
    expect(gate.floorWithoutUser).toBe(110_000);
  });

  it('a compaction held back by the cooldown runs at exactly +10%, +20%, +40%, +80% and +100%', () => {
    for (const [consecutive, growth] of [
      [1, 0.1],
      [2, 0.2],
      [3, 0.4],
      [4, 0.8],
      [5, 1],
    ] as const) {
      // Over the first pressure level (60k), the last compaction left 100,000 tokens; now exactly the growth more.
      const lastTokensAfter = 100_000;
      const tokens = Math.round(lastTokensAfter * (1 + growth));
      const at = (n: number) =>
        plan(
          sized(n),
          { preset: 'octomind', cost: null },
          { window: 400_000, cooldown: { consecutive, lastTokensAfter } },
        );
      expect(at(tokens).action, `+${growth * 100}%`).toBe('compact');
      expect(at(tokens - 1).action, `+${growth * 100}% less one token`).toBe('skip');
    }
  });
});
