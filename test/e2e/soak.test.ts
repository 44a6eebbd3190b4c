/**
 * `npm run soak` in its short mode, on every `npm test`: one agent through 120 tool steps under two messages and a
 * resume, with worker kills, MinIO down, steers and an interrupt; every invariant must hold and every figure the full
 * soak reports must be read (the full run, 10,000 steps: BENCHMARKS.md).
 */
import { describe, expect, it } from 'vitest';
import { soakResults, soakTable } from '../../bench/soak/report.ts';
import { runSoak, SHORT } from '../../bench/soak/run.ts';
import { onCluster } from '../support/stack-kind.ts';

// Skipped under `npm run test:cluster`: like the chaos run, the soak brings its own dev server and MinIO.
describe.skipIf(onCluster)('the soak, short', () => {
  it('keeps one agent whole through its steps under kills, storage down, steers and an interrupt, and reads every figure', async () => {
    const lines: string[] = [];
    const raw = await runSoak({ ...SHORT, log: (line) => lines.push(line) });
    const results = soakResults(raw);
    const table = `${soakTable(results)}\n${lines.join('\n')}`;
    expect(results.invariants, table).toEqual(
      Object.fromEntries(Object.keys(results.invariants).map((name) => [name, true])),
    );
    expect(Object.keys(results.invariants)).toHaveLength(8);
    expect(results.steps, table).toBe(SHORT.tasks * SHORT.stepsPerTask);
    expect(results, table).toMatchObject({
      lost: 0,
      duplicated: 0,
      streamGaps: 0,
      steersOutOfOrder: 0,
      invalidRequests: 0,
    });
    expect(results.kills, table).toBe(2);
    expect(results.storageDowns).toBe(1);
    expect(results.interrupts, table).toBeGreaterThanOrEqual(1);
    expect(results.resumes).toBe(results.interrupts);
    expect(results.steersSent, table).toBeGreaterThanOrEqual(2);
    // Each call's effect once, however often a kill made it run.
    expect(results.toolEffects).toBe(results.toolCalls);
    expect(results.compactions, table).toBeGreaterThan(0);
    // Every figure of the full soak's report is read in the short one too.
    for (const figure of [
      'overheadRatio',
      'rssRatio',
      'planRatio',
      'searchP99MsEnd',
      'maxRunHistoryBytes',
      'maxRunEvents',
      's3BytesPerStepRatio',
    ] as const) {
      expect(results[figure], `${figure}\n${table}`).toBeGreaterThan(0);
    }
    expect(raw.samples.length, table).toBeGreaterThanOrEqual(
      (SHORT.tasks * SHORT.stepsPerTask) / SHORT.sampleEvery - 1,
    );
  }, 420_000);
});
