/**
 * The loop guard end to end: an agent whose summaries save nothing (the summary model repeats what it is given)
 * compacts twice with its policy, once by offloading the largest items, and then stops compacting automatically
 * until its context has grown; the events and stats say so, and the temporal CLI reads the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionEvents, compactionStats } from '../../client/reads.ts';
import { textOf } from '../../engine/messages.ts';
import { countRequest, loadTokenCounter } from '../../engine/tokens.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import type { CompactionStats } from '../../contract/results.ts';
import { isSummaryRequest, newAgentId, startHarness, summaryReply } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import { temporalCli } from '../support/temporal-cli.ts';

const WINDOW = 16_384; // trigger 13,107 (0.8), hard limit 15,564 (0.95)
/** About 12 tokens; plain words, so no must-keep fact is at stake. */
const SENTENCE = 'The river bends slowly past the old mill and the quiet meadow. ';

let h: Harness;

beforeAll(async () => {
  h = await startHarness((request) => {
    if (isSummaryRequest(request)) {
      // A summary that saves nothing: it repeats everything it was given (the earlier summary and the transcript).
      const given = textOf(request.body.messages.at(-1)!.content);
      return { content: summaryReply(given, 'Keep going.') };
    }
    return { content: SENTENCE.repeat(75) }; // each reply about 900 tokens
  });
});

afterAll(async () => {
  await h?.close();
});

/** An agent whose compactions can only save a small share: a large system prompt, replies of ~1,000 tokens. */
function startLooping(agentId: string, guard: { loopGuard?: null } = {}) {
  return startAgent(h.client, {
    agentId,
    model: 'gpt-4o-mini',
    // A system prompt of about 12,600 tokens: fixed, so every compaction works on a small share of the context.
    systemPrompt: SENTENCE.repeat(900),
    modelOverride: { window: WINDOW },
    taskQueue: h.taskQueue,
    compaction: {
      strategies: ['summarize'],
      keepSteps: 1,
      keepTurns: 0,
      keepMessages: 0,
      reserveRatio: 0,
      backgroundRatio: null,
      mask: { fromRatio: null },
      summary: { keepUserTokens: 0, maxTokens: 2_000 },
      ...guard,
    },
  });
}

describe('the loop guard', () => {
  const agentId = newAgentId('loop');
  let turnsToPause = 0;

  it('stops compacting automatically after 3 ineffective compactions, with an event that says so', async () => {
    await startLooping(agentId);
    let turn = 0;
    const send = async () => sendMessage(h.client, agentId, `Turn ${++turn}: go on.`);
    // Until the third compaction, or far past it: 200 compactions would be the loop this guards against.
    while ((await agentState(h.client, agentId)).compactions! < 3 && turn < 20) await send();
    turnsToPause = turn;
    const events = await compactionEvents(h.client, agentId);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
    for (const event of events) {
      expect(event.trigger).toBe('auto');
      expect(event.loopGuard?.ineffective).toBe(true);
      expect(event.tokensBefore - event.tokensAfter).toBeLessThan(0.1 * event.tokensBefore);
      expect(event.notes.some((note) => note.startsWith('loop guard: ineffective, '))).toBe(true);
    }
    expect(events.map((e) => e.loopGuard!.inARow)).toEqual([1, 2, 3]);
    // Twice the policy's summary, then the largest items offloaded instead.
    expect(events.map((e) => e.strategies)).toEqual([['summarize'], ['summarize'], ['offload-largest']]);
    expect(events[1]!.notes.join('\n')).toContain('the next automatic compaction offloads the largest items instead');
    const pause = events[2]!;
    expect(pause.loopGuard!.paused).toBe(true);
    const until = pause.loopGuard!.pausedUntil!;
    expect(until).toBe(Math.ceil(pause.tokensAfter * 1.1 - 1e-9)); // the cooldown's first step: 10% growth
    expect(pause.notes.join('\n')).toContain(
      `3 ineffective automatic compactions in a row: automatic compaction paused until the context reaches ${until} tokens`,
    );
    // Two summaries asked for (a re-prompt for lost facts at most once each), not one per model call.
    const summaries = h.model.requests.filter(isSummaryRequest).length;
    expect(summaries).toBeGreaterThanOrEqual(2);
    expect(summaries).toBeLessThanOrEqual(4);

    const stats = await compactionStats(h.client, agentId);
    expect(stats).toMatchObject({ count: 3, ineffective: 3, pausedUntil: until });
    // The longrun CLI: each event's note, and the totals.
    const listed = await runLongrun(['events', agentId], { env: cliEnv(h) });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(
      `3 ineffective (loop guard); automatic compaction paused until the context reaches ${until} tokens`,
    );

    // Over the trigger and under the pause's end: turns go on without compacting.
    let state = await agentState(h.client, agentId);
    expect(state.contextTokens).toBeGreaterThanOrEqual(state.gate!.tokens);
    while (state.contextTokens < until) {
      await send();
      const now = await agentState(h.client, agentId);
      if (now.contextTokens < until) expect(now.compactions).toBe(3);
      state = now;
    }
    expect(state.compactions).toBe(3);

    // The temporal CLI reads the same numbers by the documented names.
    const temporal = await temporalCli(h);
    const stdout = await temporal('workflow', 'query', '--workflow-id', agentWorkflowId(agentId), '--type', 'stats');
    const answer = (JSON.parse(stdout) as { queryResult: CompactionStats[] }).queryResult[0]!;
    expect(answer).toMatchObject({ count: 3, ineffective: 3 });
  });

  it('resumes once the context has grown past the pause, starting the count over', async () => {
    const before = await agentState(h.client, agentId);
    expect(before.contextTokens).toBeGreaterThanOrEqual(before.cooldown!.pausedUntil!);
    await sendMessage(h.client, agentId, 'One more turn: go on.');
    const events = await compactionEvents(h.client, agentId);
    // The summaries still save nothing: the count starts over (1, 2, …), not at 4, and pauses again at 3.
    const resumed = events.slice(3);
    expect(resumed.length).toBeGreaterThan(0);
    expect(resumed.map((e) => e.loopGuard!.inARow)).toEqual([1, 2, 3].slice(0, resumed.length));
    expect(resumed[0]!.strategies).toEqual(['summarize']);
    // Every request the agent sent fitted the window, the paused stretch included.
    const counter = await loadTokenCounter('o200k_base');
    const requests = h.model.requests.filter((r) => !isSummaryRequest(r));
    expect(requests.length).toBeGreaterThan(events.length);
    for (const request of requests) expect(countRequest(counter, request.body.messages)).toBeLessThanOrEqual(WINDOW);
  });

  it('is what stops it: without the guard the same session keeps compacting, with no end in sight', async () => {
    const unguarded = newAgentId('noguard');
    await startLooping(unguarded, { loopGuard: null });
    const counts: number[] = []; // compactions after each turn
    for (let turn = 1; turn <= turnsToPause + 4; turn++) {
      await sendMessage(h.client, unguarded, `Turn ${turn}: go on.`);
      counts.push((await agentState(h.client, unguarded)).compactions!);
    }
    expect((await compactionEvents(h.client, unguarded)).every((e) => e.loopGuard === undefined)).toBe(true);
    const first = counts.findIndex((n) => n > 0);
    expect(first).toBeGreaterThanOrEqual(0);
    // At least once in every two turns (a compaction that does not pay waits for the hard limit, which the next
    // turn's reply reaches), and past the 3 where the guard stops.
    for (let i = first + 2; i < counts.length; i++) {
      expect(counts[i]!, `turns ${i} and ${i + 1}: ${counts.join(', ')}`).toBeGreaterThan(counts[i - 2]!);
    }
    expect(counts.at(-1)!).toBeGreaterThan(3);
  });
});
