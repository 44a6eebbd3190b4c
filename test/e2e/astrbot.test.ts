/**
 * The astrbot preset on a real agent (issue 31): "does not compress during tool invocations". A tool loop that grows
 * past 82% of the window (below the hard limit's 95%) runs to its answer without a compaction; the next message's
 * first call compacts, at 82%, halving the long round (one of the 4 rounds it keeps whole: nothing to summarize).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionEvents } from '../../client/reads.ts';
import { defineTool } from '../../activities/tools.ts';
import { textOf } from '../../engine/messages.ts';
import { isSummaryRequest, newAgentId, startHarness, summaryReply } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const WINDOW = 4_000;
const STEPS = 10;

/** A result of a few hundred tokens. */
const RESULT = Array.from({ length: 40 }, (_, i) => `row ${i}: reading ${(i * 7919) % 1000}`).join('\n');

const readRow = defineTool({
  name: 'read_rows',
  description: 'Read rows',
  parameters: { type: 'object', properties: {} },
  run: () => Promise.resolve(RESULT),
});

let h: Harness;
let calls = 0;
let loopCalls = 0;

beforeAll(async () => {
  h = await startHarness(
    (request) => {
      if (isSummaryRequest(request)) return { content: summaryReply('Rows read so far.', 'Read the rows.') };
      const last = request.body.messages.at(-1)!;
      // A loop of STEPS tool calls under the first message (counted by calls: a compaction cannot shorten it), then
      // the answer; a plain answer to the next message.
      if (last.role === 'user' && textOf(last.content).startsWith('Thanks')) return { content: 'You are welcome.' };
      if (last.role === 'user') loopCalls = 0;
      if (loopCalls < STEPS) {
        loopCalls++;
        return {
          content: null,
          toolCalls: [
            { id: `call_${++calls}`, type: 'function' as const, function: { name: 'read_rows', arguments: '{}' } },
          ],
        };
      }
      return { content: 'All rows read.' };
    },
    [readRow],
  );
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('astrbot', () => {
  it('"does not compress during tool invocations": past 82% inside a tool loop, only the hard limit would compact', async () => {
    const agentId = newAgentId('astrbot-loop');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      modelOverride: { window: WINDOW },
      compaction: { preset: 'astrbot' },
    });
    const result = await sendMessage(h.client, agentId, 'Read the rows, please.');
    expect(result.toolCalls).toBe(STEPS);
    const state = await agentState(h.client, agentId);
    // The loop went past the trigger (82%) and stayed under the hard limit (95%)…
    expect(state.contextTokens).toBeGreaterThanOrEqual(0.82 * WINDOW);
    expect(state.contextTokens).toBeLessThan(0.95 * WINDOW);
    // …without a compaction inside it.
    expect(await compactionEvents(h.client, agentId)).toEqual([]);
    // The next message opens a round: the trigger applies before its first call.
    await sendMessage(h.client, agentId, 'Thanks.');
    const events = await compactionEvents(h.client, agentId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ trigger: 'auto' });
    expect(events[0]!.reason).toMatch(/^tokens \d+ ≥ 3280$/);
    // The long round is one of the 4 rounds kept whole: nothing to summarize, so it is halved by tool calls with
    // their results, its request kept (#6196), not folded whole into a summary.
    expect(events[0]!.strategies).toEqual(['halve']);
    const after = await agentState(h.client, agentId);
    const kept = after.messages.filter((m) => m.kind === undefined || m.kind === 'normal');
    expect(kept[0]).toMatchObject({ role: 'user', preview: 'Read the rows, please.' });
    const results = kept.filter((m) => m.role === 'tool').length;
    expect(results).toBeGreaterThan(0);
    expect(results).toBeLessThan(STEPS);
    const calls = kept.filter((m) => m.role === 'assistant' && m.preview.startsWith('→ read_rows')).length;
    expect(calls).toBe(results); // each call with its result
  });
});
