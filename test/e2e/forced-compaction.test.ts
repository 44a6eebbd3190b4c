/**
 * Forced compaction end to end: by Update (its event returned, its instructions in the summary prompt, answered
 * once across runs) and by Signal; the summarizer failing; force: false; the cost estimate; the history read from
 * S3 beyond what the workflow keeps; bad strategies and policies refused. Automatic compaction: compaction.test.ts.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  agentHandle,
  agentState,
  compactAgent,
  requestCompaction,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import { compactionEvents, compactionHistory, compactionStats } from '../../client/reads.ts';
import { EXTRACTIVE_MODEL } from '../../activities/compaction/index.ts';
import { textOf } from '../../engine/messages.ts';
import { estimateCost } from '../../engine/compaction-value.ts';
import { compactUpdate } from '../../contract/agent.ts';
import { agentWithCompactions, isSummaryRequest, newAgentId } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { startLogHarness } from '../support/log-session.ts';

let summaryFails = false;

let h: Harness;

beforeAll(async () => {
  h = await startLogHarness({ summaryFails: () => summaryFails });
});

afterAll(async () => {
  await h?.close();
});

describe('forced compaction', () => {
  /** An agent in a 64,000-token window, recent turns barely protected, after reading `pages` pages of the log. */
  async function agentAfterPages(prefix: string, pages: number): Promise<string> {
    const agentId = newAgentId(prefix);
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      modelOverride: { window: 64_000 },
      compaction: { reserveRatio: 0, keepTurns: 2 },
    });
    for (let page = 1; page <= pages; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    return agentId;
  }

  it('by Update returns the event; its instructions reach the summary prompt', async () => {
    const agentId = await agentAfterPages('forced', 8);
    const before = await agentState(h.client, agentId);
    expect(before.compactions).toBe(0);
    const result = await compactAgent(h.client, agentId, {
      instructions: 'Keep the item ids of page 2',
      strategy: 'summarize',
    });
    expect(result.compacted).toBe(true);
    expect(result.event).toMatchObject({ seq: 1, trigger: 'forced', strategies: ['summarize'] });
    expect(result.event!.instructions).toBe('Keep the item ids of page 2');
    expect(result.event!.tokensAfter).toBeLessThan(result.event!.tokensBefore);
    const summaryCalls = h.model.requests.filter(
      (r) => isSummaryRequest(r) && textOf(r.body.messages.at(-1)!.content).includes('Keep the item ids of page 2'),
    );
    expect(summaryCalls).toHaveLength(1);
    expect(summaryCalls[0]!.body.response_format).toMatchObject({ type: 'json_schema' });
    const after = await agentState(h.client, agentId);
    expect(after.compactions).toBe(1);
    expect(after.messages.some((m) => m.kind === 'summary')).toBe(true);
    // The agent goes on after it, with the summary in its view.
    const next = await sendMessage(h.client, agentId, 'Read page 9 of the log.');
    expect(next.turn).toBe(9);
  });

  // AgentScope Java's AutoContextMemory, strategy 4: "Summarizes each round (user + tools + assistant)", "Replaces
  // original conversation rounds with summary messages": each round on its own, one summary call each.
  it('agentscope-java: each round before the latest answer summarized in its place, one summary call each', async () => {
    const agentId = newAgentId('java-rounds');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      modelOverride: { window: 64_000 },
      compaction: { preset: 'agentscope-java' },
    });
    for (let page = 1; page <= 6; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    const summariesBefore = h.model.requests.filter(isSummaryRequest).length;
    const result = await compactAgent(h.client, agentId, { strategy: 'summarize-rounds' });
    expect(result.event).toMatchObject({ trigger: 'forced', strategies: ['summarize-rounds'] });
    // Each summary call reads one round: its request, and no other round's (the ledger beside it names the goal).
    const prompts = h.model.requests
      .filter(isSummaryRequest)
      .slice(summariesBefore)
      .map((r) => r.body.messages.map((m) => textOf(m.content)).find((t) => t.includes('## Messages to summarize'))!)
      .map((prompt) => prompt.split('## Messages to summarize')[1]!.split('\n## ')[0]!);
    const rounds = prompts.map((prompt) =>
      [1, 2, 3, 4, 5, 6].filter((page) => prompt.includes(`Read page ${page} of the log.`)),
    );
    expect(rounds.every((pages) => pages.length === 1)).toBe(true);
    expect([...new Set(rounds.flat())].sort()).toEqual([1, 2, 3, 4, 5]);
    const after = await agentState(h.client, agentId);
    const shape = after.messages
      .filter((m) => m.role !== 'system')
      .map((m) => (m.kind === 'summary' ? 'summary' : m.role));
    // user1-summary, …, user5-summary, then the sixth round whole (its answer is the latest).
    expect(shape.slice(0, 10)).toEqual(Array.from({ length: 5 }, () => ['user', 'summary']).flat());
    expect(shape.slice(10)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(after.messages.filter((m) => m.kind === 'summary').every((m) => m.role === 'assistant')).toBe(true);
    expect(after.messages.some((m) => m.kind === 'ledger')).toBe(false);
    // The agent goes on after it.
    const next = await sendMessage(h.client, agentId, 'Read page 7 of the log.');
    expect(next.turn).toBe(7);
  });

  // AgentScope Java's AutoContextMemory, "Compress Current Round": "Finds the latest user message and merges all
  // messages after it (typically tool calls and results)"; strategies 2 and 3 never touch "the latest assistant message
  // that is a final response ... and all messages after it", and no strategy of its folds earlier rounds into one.
  it('agentscope-java: a long round in progress summarized in its place after its request; the answer before it stays', async () => {
    const agentId = newAgentId('java-round');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      modelOverride: { window: 8_192 }, // 75%: about 8 pages of the log
      compaction: { preset: 'agentscope-java' },
    });
    const first = await sendMessage(h.client, agentId, 'Read page 1 of the log.');
    const summariesBefore = h.model.requests.filter(isSummaryRequest).length;
    const long = await sendMessage(h.client, agentId, 'Read pages 2 to 12 of the log.');
    expect(long.reply).toMatch(/^Page read/);
    const events = await compactionEvents(h.client, agentId);
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.trigger === 'auto' && e.strategies.join() === 'summarize-current-turn')).toBe(true);
    // Each summary call reads the round in progress with its request, never the first round (the goal beside it).
    const prompts = h.model.requests
      .filter(isSummaryRequest)
      .slice(summariesBefore)
      .map((r) => r.body.messages.map((m) => textOf(m.content)).find((t) => t.includes('## Messages to summarize'))!);
    expect(prompts.length).toBeGreaterThan(0);
    for (const prompt of prompts) {
      expect(prompt).toContain('the steps of the request in progress so far');
      const span = prompt.split('## Messages to summarize')[1]!.split('\n## ')[0]!;
      expect(span).toContain('Read pages 2 to 12 of the log.');
      expect(span).not.toContain('Read page 1 of the log.');
    }
    const after = await agentState(h.client, agentId);
    const shape = after.messages
      .filter((m) => m.role !== 'system')
      .map((m) => (m.kind === 'summary' ? 'summary' : m.role));
    // The first round whole, its answer included; the request; one summary in its place (a later one folds the
    // earlier); the steps since, then the answer.
    expect(shape.slice(0, 6)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'summary']);
    const since = shape.slice(6);
    expect(since.at(-1)).toBe('assistant');
    expect(since.slice(0, -1)).toEqual(
      Array.from({ length: (since.length - 1) / 2 }, () => ['assistant', 'tool']).flat(),
    );
    const answer = after.messages.filter((m) => m.role !== 'system')[3]!;
    expect(answer.preview).toBe(first.reply);
    expect(after.messages.filter((m) => m.kind === 'summary').every((m) => m.role === 'assistant')).toBe(true);
    expect(after.messages.some((m) => m.kind === 'ledger')).toBe(false);
  });

  it('an Update compact delivered again to a later run is answered with its result, not run twice', async () => {
    const agentId = await agentAfterPages('once', 6);
    const first = await agentHandle(h.client, agentId).executeUpdate(compactUpdate, {
      args: [{ strategy: 'truncate-rounds' }],
      updateId: 'compact-once',
    });
    expect(first.compacted).toBe(true);
    const runBefore = (await agentHandle(h.client, agentId).describe()).runId;
    await sleep(2_100); // a run lives at least 2 s before it continues as new
    for (let page = 7; page <= 12; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    expect((await agentHandle(h.client, agentId).describe()).runId).not.toBe(runBefore);
    const again = await agentHandle(h.client, agentId).executeUpdate(compactUpdate, {
      args: [{ strategy: 'truncate-rounds' }],
      updateId: 'compact-once',
    });
    expect(again).toEqual(first);
    expect((await agentState(h.client, agentId)).compactions).toBe(1);
  });

  it('by Signal runs after the queued input', async () => {
    const agentId = await agentAfterPages('signal', 6);
    await requestCompaction(h.client, agentId, {});
    await expect.poll(async () => (await agentState(h.client, agentId)).compactions, { timeout: 20_000 }).toBe(1);
  });

  it('falls back to dropping rounds when the summarizer fails, summarized extractively, and the event says so', async () => {
    const agentId = await agentAfterPages('fallback', 8);
    summaryFails = true;
    try {
      const result = await compactAgent(h.client, agentId, { strategy: 'summarize' });
      expect(result.compacted).toBe(true);
      expect(result.event!.notes).toEqual([
        'summarize: the summary model failed: truncate-rounds instead, with an extractive summary of what it removed',
      ]);
      // Nothing leaves without a trace: the dropped rounds are in an extractive summary, its facts checked.
      expect(result.event!.summaryTokens).toBeGreaterThan(0);
      expect(result.event!.responseFormat).toBe('none');
      expect(result.event!.llm!.model).toBe(EXTRACTIVE_MODEL);
      expect(result.event!.facts).toBeDefined();
    } finally {
      summaryFails = false;
    }
  });

  it('with force: false compacts only when the automatic trigger fires', async () => {
    const agentId = await agentAfterPages('ifdue', 5);
    const before = await agentState(h.client, agentId);
    const skipped = await compactAgent(h.client, agentId, { force: false });
    expect(skipped.compacted).toBe(false);
    expect(skipped.reason).toMatch(/^below the trigger \(\d+ tokens, \d+ messages, 5 turns\)$/);
    const after = await agentState(h.client, agentId);
    expect(after.compactions).toBe(0);
    expect(after.messages).toEqual(before.messages);
    expect(after.contextTokens).toBe(before.contextTokens);
    const error = await compactAgent(h.client, agentId, { force: 'yes' as never }).catch((e: unknown) => e);
    expect(String((error as Error).cause)).toContain('force: must be true or false (got "yes")');
    expect((await compactAgent(h.client, agentId, { force: true, strategy: 'truncate-rounds' })).compacted).toBe(true);
  });

  it('with prices in the policy, each event estimates its cost and the stats add up what was saved', async () => {
    const agentId = newAgentId('cost');
    const cost = {
      inputPerMillion: 3,
      summaryOutputPerMillion: 15,
      expectedRemainingTurns: 50,
    };
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      modelOverride: { window: 64_000 },
      compaction: { reserveRatio: 0, keepTurns: 2, cost },
    });
    for (let page = 1; page <= 8; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    const { event } = await compactAgent(h.client, agentId, { strategy: 'summarize' });
    // Priced with the prompt cache (cached input at 0.1× by default): the tool schemas and the goal stay a cached
    // prefix; what earlier requests carried from the first change on is read at the full price at the next call.
    const { cachedPrefixTokens, unsentTokens } = event!.cost!;
    expect(cachedPrefixTokens).toBeGreaterThan(0);
    expect(cachedPrefixTokens).toBeLessThan(event!.tokensAfter);
    const expected = estimateCost(
      cost,
      event!.tokensBefore,
      event!.tokensAfter,
      event!.llm!.promptTokens,
      event!.llm!.completionTokens,
      undefined,
      { cachedPrefixTokens, unsentTokens },
    );
    expect(event!.cost).toEqual(expected);
    expect(expected.invalidatedTokens).toBe(event!.tokensBefore - unsentTokens! - cachedPrefixTokens!);
    expect(expected.netBenefit).toBeGreaterThan(0);
    expect((await compactionStats(h.client, agentId)).costSaved).toBeCloseTo(expected.netBenefit, 10);
  });

  it('events beyond the ones the workflow keeps are read from S3: the history is complete', async () => {
    const { agentId, attempts } = await agentWithCompactions(h, 'history', 12);
    expect(attempts).toBe(12); // every compaction compacted (seq 1, 2, … 12)
    const kept = await compactionEvents(h.client, agentId);
    expect(kept.map((e) => e.seq)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const { events: all, stats } = await compactionHistory(h.client, h.store, agentId);
    expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(stats.count).toBe(12);
    for (const event of all) expect(event).toEqual(JSON.parse((await h.store.get(event.keys.event))!));
    // The stored copy carries what each compaction cost, as the state's copy does (priced as it was committed).
    for (const event of all) expect(event.spent, `event ${event.seq}`).toBeDefined();
    for (const event of kept) expect(all.find((e) => e.seq === event.seq)!.spent).toEqual(event.spent);
    const seqs = async (query: { since?: number; limit?: number }) =>
      (await compactionHistory(h.client, h.store, agentId, query)).events.map((e) => e.seq);
    expect(await seqs({ limit: 3 })).toEqual([1, 2, 3]);
    expect(await seqs({ since: 1, limit: 3 })).toEqual([2, 3, 4]);
    expect(await seqs({ since: 12 })).toEqual([]);
  });

  it('rejects an unknown strategy with a clear error and leaves the state unchanged', async () => {
    const agentId = newAgentId('bad');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'Read page 1 of the log.');
    const before = await agentState(h.client, agentId);
    const error = await compactAgent(h.client, agentId, { strategy: 'fold' as never }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((error as Error).cause)).toContain(
      'strategy: "fold" is not one of supersede-tool-results, truncate-tool-results',
    );
    expect(await agentState(h.client, agentId)).toEqual(before);
  });

  it('rejects a bad compaction policy at start, naming the field', async () => {
    await expect(
      startAgent(h.client, {
        agentId: newAgentId('policy'),
        model: 'gpt-4o-mini',
        taskQueue: h.taskQueue,
        compaction: { triggerRatio: 1.5 },
      }),
    ).rejects.toThrow('triggerRatio: 1.5 is not allowed (a number > 0 and ≤ 0.9)');
  });
});
