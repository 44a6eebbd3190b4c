/** A span larger than the summary model's window is summarized in chunks, each folding in the one before. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactAgent } from '../../client/agents.ts';
import { countRequest, loadTokenCounter } from '../../engine/tokens.ts';
import { agentWithNotes, isSummaryRequest, startHarness, summaryReply } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const SUMMARY_WINDOW = 2_400;

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    (request) =>
      isSummaryRequest(request)
        ? {
            content: summaryReply(`Folded ${request.body.messages.at(-1)!.content!.length} characters.`),
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
    const agentId = await agentWithNotes(h, 'chunked', 10);
    const before = h.model.requests.filter(isSummaryRequest).length;
    const result = await compactAgent(h.client, agentId, { strategy: 'summarize' });
    expect(result.compacted).toBe(true);
    const chunks = result.event!.summaryChunks!;
    expect(chunks).toBeGreaterThan(1);
    const asks = h.model.requests.filter(isSummaryRequest).slice(before);
    expect(asks.length).toBeGreaterThanOrEqual(chunks);
    const counter = await loadTokenCounter('o200k_base');
    for (const ask of asks.slice(0, chunks)) {
      expect(countRequest(counter, ask.body.messages)).toBeLessThanOrEqual(SUMMARY_WINDOW);
    }
    // Each chunk after the first folds in the summary so far.
    expect(asks[1]!.body.messages.at(-1)!.content).toContain('## Previous summary (fold it in)');
  });
});
