/** The cost of a replayed session with prompt caching, and of sending everything with caching (commands/replay-cost.ts). */
import { describe, expect, it } from 'vitest';
import {
  cachedShare,
  cachedTokensOf,
  cachedTokensWithoutCompaction,
  costFloorOf,
  replayCost,
  requestsCost,
  sharedPrefixLengths,
  tokensWithoutCompaction,
} from '../../commands/replay-cost.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { priceOf } from '../../engine/pricing.ts';
import { priceFlag, UsageError } from '../../commands/cli/parse.ts';
import { costLineOf } from '../../commands/replay-report.ts';
import { costLine, formatShare, formatUsd } from '../../contract/state.ts';
import { addCall, addSummary, noSpend } from '../../engine/pricing.ts';

const sys: ChatMessage = { role: 'system', content: 'You are terse.' };
const user: ChatMessage = { role: 'user', content: 'fix the bug' };
const step = (n: number): ChatMessage[] => [
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: `c${n}`, type: 'function', function: { name: 'bash', arguments: `ls ${n}` } }],
  },
  { role: 'tool', content: `out ${n}`, tool_call_id: `c${n}` },
];
const price = priceOf({ inputPerMillion: 1, cachedInputPerMillion: 0.1, outputPerMillion: 4 });

describe('sharedPrefixLengths', () => {
  it('finds the messages a request shares with an earlier one from its start; a compaction breaks it there', () => {
    const first = [sys, user, ...step(1)];
    const second = [...first, ...step(2)];
    const summary: ChatMessage = { role: 'user', content: '[summary of steps 1-2]' };
    const compacted = [sys, user, summary, ...step(3)]; // steps 1-2 became a summary
    const after = [...compacted, ...step(4)];
    expect(sharedPrefixLengths([first, second, compacted, after])).toEqual([0, 4, 2, 5]);
  });

  it('tells a changed message apart by its content and its tool call id', () => {
    const a = [sys, user, ...step(1)];
    const b = [sys, user, { ...step(1)[0]!, content: 'thinking' }, step(1)[1]!];
    expect(sharedPrefixLengths([a, b])).toEqual([0, 2]);
  });
});

describe('cached tokens', () => {
  it("follows OpenAI's rule: nothing under 1,024 tokens of prefix, then steps of 128", () => {
    expect(cachedTokensOf([0, 1_000, 1_100, 5_000], [900, 2_000, 2_000, 4_000])).toEqual([0, 0, 1_024, 3_968]);
  });

  it('without compaction, the previous request is the prefix of the next', () => {
    expect(cachedTokensWithoutCompaction([1_500, 3_000, 3_100])).toEqual([0, 1_408, 2_944]);
  });
});

describe('the cost', () => {
  it('prices uncached input, cached input and replies, and the cached share is of all input', () => {
    const cost = requestsCost([2_000, 3_000], [0, 1_024], [100, 50], price)!;
    expect(cost).toBeCloseTo((2_000 + 100 * 4 + (3_000 - 1_024) + 1_024 * 0.1 + 50 * 4) / 1e6, 15);
    expect(requestsCost([1], [0], [0], undefined)).toBeNull();
    expect(cachedShare([2_000, 3_000], [0, 1_024])).toBeCloseTo(1_024 / 5_000, 12);
    expect(cachedShare([], [])).toBeNull();
  });

  it('compares the session as sent (plus its summaries) with sending everything with caching', () => {
    const figures = replayCost(
      {
        requestTokens: [2_000, 2_500, 1_500],
        prefixTokens: [0, 2_000, 1_200],
        fullTokens: [2_000, 2_500, 3_000],
        replyTokens: [10, 10, 10],
      },
      price,
      0.5,
    );
    expect(figures.cachedTokens).toEqual([0, 1_920, 1_152]);
    const sent = (2_000 + (2_500 - 1_920) + 1_920 * 0.1 + (1_500 - 1_152) + 1_152 * 0.1 + 30 * 4) / 1e6;
    expect(figures.cost).toBeCloseTo(sent + 0.5, 15);
    const everything = (2_000 + (2_500 - 1_920) + 1_920 * 0.1 + (3_000 - 2_432) + 2_432 * 0.1 + 30 * 4) / 1e6;
    expect(figures.costWithoutCompaction).toBeCloseTo(everything, 15);
    expect(figures.cachedInputShare).toBeCloseTo((1_920 + 1_152) / 6_000, 12);
    expect(figures.cachedInputShareWithoutCompaction).toBeCloseTo((1_920 + 2_432) / 7_500, 12);
    expect(
      replayCost({ requestTokens: [1], prefixTokens: [0], fullTokens: [1], replyTokens: [1] }, undefined, 0),
    ).toMatchObject({
      price: null,
      cost: null,
      costWithoutCompaction: null,
    });
  });
});

describe('the cost floor', () => {
  it('pays each token of the transcript once uncached, the first request cached in each later one, the same replies', () => {
    // The transcript grows 3,000 → 3,500 → 5,000 tokens; the first request (3,000) is what every request keeps.
    const floor = costFloorOf([3_000, 3_500, 5_000], [10, 20, 30], price)!;
    const first = 3_000 + 10 * 4;
    const second = 500 + (3_000 - 2_944) + 2_944 * 0.1 + 20 * 4; // 3,000 cached in 128-token steps from 1,024: 2,944
    const third = 1_500 + (3_000 - 2_944) + 2_944 * 0.1 + 30 * 4;
    expect(floor).toBeCloseTo((first + second + third) / 1e6, 15);
    // A transcript that shrank (a request that carried less: a retried call) adds nothing new.
    expect(costFloorOf([3_000, 2_000], [0, 0], price)).toBeCloseTo((3_000 + 56 + 294.4) / 1e6, 15);
    expect(costFloorOf([3_000], [0], undefined)).toBeNull();
  });

  it('is never above sending everything with caching, nor above the session as any compaction sent it', () => {
    const full = [2_000, 2_600, 3_900, 4_100, 6_000, 6_500];
    const replies = [50, 40, 30, 20, 10, 5];
    const floor = costFloorOf(full, replies, price)!;
    const everything = requestsCost(full, cachedTokensWithoutCompaction(full), replies, price)!;
    expect(floor).toBeLessThanOrEqual(everything);
    // A compaction after the third request: the context falls back to the first request plus a 700-token summary.
    const sent = [2_000, 2_600, 3_900, 2_000 + 700 + 200, 2_000 + 700 + 200 + 1_900, 2_000 + 700 + 200 + 2_400];
    const prefixes = [0, 2_000, 2_600, 2_000, 2_900, 4_800];
    expect(floor).toBeLessThanOrEqual(requestsCost(sent, cachedTokensOf(prefixes, sent), replies, price)!);
  });
});

describe('--price', () => {
  it('reads IN,CACHED,OUT (CACHED may be empty) and names the flag for anything else', () => {
    expect(priceFlag('0.15,0.075,0.6')).toEqual({
      inputPerMillion: 0.15,
      cachedInputPerMillion: 0.075,
      outputPerMillion: 0.6,
    });
    expect(priceFlag('3,,15')).toEqual({ inputPerMillion: 3, outputPerMillion: 15 });
    expect(priceFlag(undefined)).toBeUndefined();
    for (const bad of ['1,2', '1,2,x', '-1,0,1', '1,,', '1,2,3,4']) {
      expect(() => priceFlag(bad)).toThrow(UsageError);
      expect(() => priceFlag(bad)).toThrow(/--price: must be IN,CACHED,OUT/);
    }
  });
});

describe('how the reports show it', () => {
  it('USD to the cent above $1, else to a single call; unknown, never $0, without a price', () => {
    expect([formatUsd(12.345), formatUsd(0.0214), formatUsd(0.000153), formatUsd(0), formatUsd(null)]).toEqual([
      '$12.35',
      '$0.0214',
      '$0.000153',
      '$0.000000',
      'unknown',
    ]);
    expect([formatShare(0.834), formatShare(null)]).toEqual(['83%', '–']);
  });

  it("the state's cost line and the replay's, against sending everything with caching", () => {
    const spend = addSummary(
      addCall(
        noSpend(price),
        { promptTokens: 10_000, cachedTokens: 8_192, completionTokens: 100 },
        { promptTokens: 0, completionTokens: 0 },
        price,
      ),
      0.001,
    );
    expect(costLine(spend)).toBe('cost: $0.004027 (summaries $0.001000) · cached input 82%');
    const unknown = addCall(noSpend(undefined), undefined, { promptTokens: 10, completionTokens: 1 }, undefined);
    expect(costLine(unknown)).toBe('cost: unknown · cached input 0%');
    const report = {
      price,
      cost: 0.0312,
      costWithoutCompaction: 0.08,
      costFloor: 0.02,
      cachedInputShare: 0.71,
      cachedInputShareWithoutCompaction: 0.95,
    };
    expect(costLineOf(report)).toBe(
      'cost $0.0312 vs $0.0800 sending everything with caching (0.39×), floor $0.0200 (0.25×); cached input 71% vs 95% ' +
        '(USD per 1M tokens: input 1, cached 0.1, output 4)',
    );
    expect(costLineOf({ ...report, price: null, cost: null, costWithoutCompaction: null, costFloor: null })).toBe(
      'cost unknown (no price for the model: give one with --price); cached input 71%',
    );
  });
});

describe('tokens without compaction (the replay report)', () => {
  const tokensOf = (m: ChatMessage) => textOf(m.content).length;
  /** What the report counted before: each request's whole prefix of the recording summed again. */
  function naive(requests: ChatMessage[][], session: ChatMessage[], fixed: number): number[] {
    let position = 0;
    return requests.map((request) => {
      const last = request.at(-1)!;
      const at = session.findIndex(
        (m, i) =>
          i >= position && m.role === last.role && m.content === last.content && m.tool_call_id === last.tool_call_id,
      );
      if (at !== -1) position = at;
      const system = request[0]?.role === 'system' && session[0]?.role !== 'system' ? [request[0]] : [];
      return fixed + [...system, ...session.slice(0, position + 1)].reduce((sum, m) => sum + tokensOf(m), 0);
    });
  }
  const ok = (n: number): ChatMessage => ({ role: 'tool', content: 'ok', tool_call_id: `c${n}` });

  it("counts the recording up to each request's last message, the system prompt added, a text it lacks counted where the walk is", () => {
    const session: ChatMessage[] = [
      { role: 'user', content: 'task one' },
      { role: 'assistant', content: 'looking' },
      { role: 'user', content: 'go on' },
      { role: 'assistant', content: 'done with it' },
      { role: 'user', content: 'go on now' },
      { role: 'assistant', content: 'finished' },
    ];
    const requests: ChatMessage[][] = [
      [sys, session[0]!],
      [sys, { role: 'user', content: '[summary]' }, session[2]!],
      [sys, { role: 'user', content: '[summary]' }, session[4]!],
      [sys, { role: 'user', content: 'not in the recording' }],
    ];
    const got = tokensWithoutCompaction(requests, session, tokensOf, 7);
    expect(got).toEqual(naive(requests, session, 7));
    expect(got).toEqual([7 + 14 + 8, 7 + 14 + 8 + 7 + 5, 7 + 14 + 8 + 7 + 5 + 12 + 9, 7 + 14 + 8 + 7 + 5 + 12 + 9]);
  });

  it('counts each message of a long recording once, however many requests (linear, not quadratic)', () => {
    const session: ChatMessage[] = Array.from({ length: 20_000 }, (_, i) =>
      i % 2 ? ok(i) : { role: 'assistant', content: `step ${i}` },
    );
    const requests = Array.from({ length: 10_000 }, (_, i) => [session[2 * i + 1]!]);
    let counted = 0;
    const got = tokensWithoutCompaction(requests, session, (m) => (counted++, tokensOf(m)), 0);
    expect(counted).toBe(session.length);
    expect(got.slice(0, 3)).toEqual(naive(requests.slice(0, 3), session, 0));
    expect(got.at(-1)).toBe(session.reduce((sum, m) => sum + tokensOf(m), 0));
  });
});
