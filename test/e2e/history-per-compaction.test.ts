/**
 * History per compaction does not grow with the context (issue 29, item 5): the compaction activities take
 * references and return deltas, so one forced compaction of a 600-message context records as many history bytes as
 * one of a 20-message context, within 10%. Before, the plan's input carried every record of the context and apply
 * returned the whole new context (about 30 times as many bytes at 2,000 messages: BENCHMARKS.md). Bounded: 310
 * sends to a zero-latency scripted model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historyBytesPerCompaction } from '../../bench/compaction-history.ts';
import { isSummaryRequest, startHarness } from '../support/harness.ts';
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
