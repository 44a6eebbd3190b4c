/** Without a summary model, compaction summarizes extractively (the offline demo's path), labelled as such. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXTRACTIVE_MODEL } from '../../activities/compaction/index.ts';
import { agentState, compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { EXTRACTIVE_LABEL } from '../../engine/extractive.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness((request) => ({ content: `Noted (${request.body.messages.length} messages).` }), [], {
    summaryModel: null,
  });
});
afterAll(async () => {
  await h?.close();
});

describe('no summary model', () => {
  it('summarizes by quoting, never calls a model for it, and says so in the summary and the event', async () => {
    const agentId = newAgentId('extractive');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
    });
    await sendMessage(h.client, agentId, 'Plan the migration of the orders table.');
    await sendMessage(
      h.client,
      agentId,
      `The dump is at /backups/orders-2026-11-20.sql and must stay untouched. ${'Keep the old table until the new one is verified. '.repeat(6)}`,
    );
    const detail = 'Compare the index definitions with the schema file and list every difference you find. '.repeat(6);
    for (let i = 1; i <= 3; i++) await sendMessage(h.client, agentId, `Step ${i}: check the indexes. ${detail}`);
    const requestsBefore = h.model.requests.length;
    const result = await compactAgent(h.client, agentId, { strategy: 'summarize', evenIfLarger: true });
    expect(h.model.requests.length).toBe(requestsBefore); // no model call for the summary
    expect(result.event).toMatchObject({
      strategies: ['summarize'],
      summaryParsedAs: 'extractive',
      responseFormat: 'none',
      llm: { model: EXTRACTIVE_MODEL },
      facts: { missing: 0, pinned: [] },
    });
    const state = await agentState(h.client, agentId);
    const summary = state.messages.find((m) => m.kind === 'summary')!;
    const body = JSON.parse((await h.store.get(summary.key))!) as ChatMessage;
    expect(body.content).toContain(EXTRACTIVE_LABEL);
    expect(body.content).toContain('/backups/orders-2026-11-20.sql');
    // The agent goes on with the summary in its view.
    expect((await sendMessage(h.client, agentId, 'Continue.')).reply).toMatch(/^Noted/);
  });
});
