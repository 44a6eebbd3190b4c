/**
 * The astrbot preset on a real agent (issue 31): "does not compress during tool invocations". A tool loop that grows
 * past 82% of the window (below the hard limit's 95%) runs to its answer without a compaction; the next message's
 * first call compacts, at 82%.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionEvents } from '../../client/reads.ts';
import { defineTool } from '../../activities/tools.ts';
import { textOf } from '../../engine/messages.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
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
    { summaryModel: null },
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
  });
});
