/**
 * `npm run chaos` in its short mode, on every `npm test`: two agents, worker kills, a frozen worker, the Temporal
 * server and MinIO killed, model faults, a burst of messages to a third agent; then two agents in streaming turns,
 * steered while the worker is killed mid-output (F9); every invariant must hold (the full run, ≥ 100 kills and 20
 * mid-stream: RELIABILITY.md).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BURST, chaosTable, DRIVER_INVARIANT, runChaos, SHORT } from '../../bench/chaos/run.ts';
import type { ChaosResult } from '../../bench/chaos/run.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { onCluster } from '../support/stack-kind.ts';

// Skipped under `npm run test:cluster`: the chaos run brings its own Temporal dev server (SQLite on disk), which it
// kills and starts again; it has no cluster mode, so there it would repeat what `npm test` runs. The cluster's own
// server crash: crashes.test.ts.
describe.skipIf(onCluster)('the chaos run, short', () => {
  it('keeps every invariant under worker kills, a freeze, server and storage kills, model faults, a burst of Updates, and kills mid-stream with steers', async () => {
    const lines: string[] = [];
    const result = await runChaos({ ...SHORT, log: (line) => lines.push(line) });
    const table = chaosTable(result);
    expect(result.invariants, table).toEqual(Object.fromEntries(Object.keys(result.invariants).map((k) => [k, true])));
    expect(Object.keys(result.invariants)).toHaveLength(9);
    expect(result.invariants[DRIVER_INVARIANT]).toBe(true);
    expect(result.errors).toEqual([]);
    expect(result.kills).toBe(SHORT.kills);
    expect(result).toMatchObject({ lost: 0, duplicated: 0 });
    expect(result.turns).toBe(SHORT.agents * SHORT.tasks + BURST);
    for (const fault of result.faults) expect(fault.passed, `${fault.name}\n${table}`).toBe(true);
    expect(result.compactions).toBeGreaterThan(0);
    expect(result.runsCrossed).toBeGreaterThan(0);
    // F9: every kill landed mid-output (an attempt superseded each time), the streams whole, every steer once.
    expect(result.stream.kills, table).toBe(SHORT.stream.kills);
    expect(result.stream).toMatchObject({ gaps: 0, duplicates: 0 });
    expect(result.stream.supersededAttempts, table).toBeGreaterThanOrEqual(SHORT.stream.kills);
    expect(result.stream.items).toBeGreaterThan(0);
    const { steers } = result.stream;
    expect(steers.sent, table).toBeGreaterThanOrEqual(2 * SHORT.stream.agents);
    expect(steers, table).toMatchObject({ answered: steers.sent, applied: steers.sent, lost: 0, duplicated: 0 });
    expect(steers.resent, table).toBeGreaterThan(0);
  }, 360_000);

  // In a Node process of its own: the test runner would take the uncaught error as its own.
  it('reports an uncaught error of the driver as a failed run with its stack, and stops the run', async () => {
    const script = `
      import { runChaos, SHORT } from ${JSON.stringify(join(PROJECT_ROOT, 'bench/chaos/run.ts'))};
      const result = await runChaos({
        ...SHORT, agents: 1, tasks: 2, kills: 2,
        log: (line) => console.error(line),
        onPhase: (phase) => {
          if (phase !== 'faulty') return;
          setTimeout(() => { throw new Error('injected into the faulty run'); }, 1_500);
          setTimeout(() => void Promise.reject(new Error('injected rejection')), 1_600);
        },
      });
      console.log(JSON.stringify(result));
      process.exit(0);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let [stdout, stderr] = ['', ''];
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, stderr).toBe(0);
    const result = JSON.parse(stdout) as ChaosResult;
    expect(result.invariants[DRIVER_INVARIANT], stderr).toBe(false);
    expect(result.errors[0]).toMatch(/^uncaught exception: Error: injected into the faulty run\n\s+at /);
    expect(result.errors.some((e) => e.startsWith('unhandled rejection: Error: injected rejection\n'))).toBe(true);
    expect(result.violations[DRIVER_INVARIANT]).toContain('uncaught exception: Error: injected into the faulty run');
    expect(chaosTable(result)).toContain(`BROKEN ${DRIVER_INVARIANT}`);
    expect(stderr).toContain('[chaos] the driver failed, stopping the run: uncaught exception: Error: injected');
  }, 240_000);
});
