/**
 * History per compaction does not grow with the context (issue 29, item 5): the compaction activities take
 * references and return deltas, so one forced compaction of a 600-message context records as many history bytes as
 * one of a 20-message context, within 10%. Before, the plan's input carried every record of the context and apply
 * returned the whole new context (about 30 times as many bytes at 2,000 messages: BENCHMARKS.md). Bounded: 310
 * sends to a zero-latency scripted model. And the final state is recorded once, as the workflow's result: the
 * `close` Update answers who closed and how far it got.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import protos from '@temporalio/proto';
import { historyBytesPerCompaction } from '../../bench/compaction-history.ts';
import { agentHandle, closeAgentAndWait, sendMessage, startAgent } from '../../client/agents.ts';
import { isSummaryRequest, newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

let harness: Harness;

beforeAll(async () => {
  const summary = JSON.stringify({
    task_overview: 'Keep notes on the queue consumer.',
    current_state: 'Notes read.',
    important_discoveries: 'The queue consumer retries.',
    next_steps: 'Go on.',
    context_to_preserve: 'queue consumer',
  });
  harness = await startHarness((request) => (isSummaryRequest(request) ? { content: summary } : { content: 'ok' }));
});

afterAll(async () => {
  await harness?.close();
});

describe('history per compaction', () => {
  it('is the same at 20 and at 600 messages in the context, within 10%', { timeout: 240_000 }, async () => {
    const small = await historyBytesPerCompaction(harness.client, harness.taskQueue, 20);
    const large = await historyBytesPerCompaction(harness.client, harness.taskQueue, 600);
    const sizes = `at 20 messages: ${small.historyBytes} B, at 600: ${large.historyBytes} B`;
    expect(small.historyBytes, sizes).toBeGreaterThan(0);
    expect(large.historyBytes, sizes).not.toBeNull(); // no continue-as-new across the compaction
    expect(large.historyBytes!, sizes).toBeLessThanOrEqual(small.historyBytes! * 1.1);
    expect(large.historyBytes!, sizes).toBeGreaterThanOrEqual(small.historyBytes! * 0.9);
  });
});

describe('the final state', () => {
  it("is recorded once, in the workflow's result; the close Update answers a few fields", async () => {
    const agentId = newAgentId('final-state');
    await startAgent(harness.client, { agentId, model: 'gpt-4o-mini', taskQueue: harness.taskQueue });
    for (let i = 0; i < 30; i++) await sendMessage(harness.client, agentId, `note ${i}: the queue consumer retries`);
    const final = await closeAgentAndWait(harness.client, agentId);
    expect(final).toMatchObject({ agentId, status: 'closed', turns: 30 });
    expect(final.messages).toHaveLength(60);
    const events = (await agentHandle(harness.client, agentId).fetchHistory()).events ?? [];
    const size = (e: (typeof events)[number]) =>
      protos.temporal.api.history.v1.HistoryEvent.encode(
        protos.temporal.api.history.v1.HistoryEvent.fromObject(e),
      ).finish().length;
    const accepted = events.find(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'close',
    )!;
    const updateId = accepted.workflowExecutionUpdateAcceptedEventAttributes!.protocolInstanceId;
    const answered = events.find(
      (e) => e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId === updateId,
    )!;
    const completed = events.find((e) => e.workflowExecutionCompletedEventAttributes)!;
    const stateBytes = JSON.stringify(final).length;
    expect(size(completed)).toBeGreaterThan(stateBytes * 0.9); // the final state, once
    expect(size(answered)).toBeLessThan(600); // not again
  });
});
