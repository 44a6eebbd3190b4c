/** A span larger than the summary model's window is summarized in chunks, each folding in the one before. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { countRequest, loadTokenCounter } from '../../engine/tokens.ts';
import type { RecordedRequest } from '../../llm/chat-server.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const SUMMARY_WINDOW = 2_400;
const isSummary = (r: RecordedRequest) => r.body.model === 'summary-model';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    (request) =>
      isSummary(request)
        ? {
            content: JSON.stringify({
              task_overview: 'Read the notes.',
              current_state: `Folded ${request.body.messages.at(-1)!.content!.length} characters.`,
              important_discoveries: '',
              next_steps: 'Go on.',
              context_to_preserve: '',
              decisions: [],
              done: [],
              pending: [],
            }),
          }
        : { content: 'Noted.' },
    [],
    { summaryWindow: SUMMARY_WINDOW },
  );
});
afterAll(async () => {
  await h?.close();
});

describe('chunked summaries', () => {
  it('splits the span so that every summary request fits the summary model’s window', async () => {
    const agentId = newAgentId('chunked');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0, maxTokens: 200 } },
    });
    const note = 'The quarterly report lists revenue by region and the regional managers comment on each figure. ';
    for (let i = 1; i <= 10; i++) await sendMessage(h.client, agentId, `Note ${i}: ${note.repeat(12)}`);
    const before = h.model.requests.filter(isSummary).length;
    const result = await compactAgent(h.client, agentId, { strategy: 'summarize' });
    expect(result.compacted).toBe(true);
    const chunks = result.event!.summaryChunks!;
    expect(chunks).toBeGreaterThan(1);
    const asks = h.model.requests.filter(isSummary).slice(before);
    expect(asks.length).toBeGreaterThanOrEqual(chunks);
    const counter = await loadTokenCounter('o200k_base');
    for (const ask of asks.slice(0, chunks)) {
      expect(countRequest(counter, ask.body.messages)).toBeLessThanOrEqual(SUMMARY_WINDOW);
    }
    // Each chunk after the first folds in the summary so far.
    expect(asks[1]!.body.messages.at(-1)!.content).toContain('## Previous summary (fold it in)');
  });
});
