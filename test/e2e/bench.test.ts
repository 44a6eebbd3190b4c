/**
 * `npm run bench` in its short mode, on every `npm test`: every step runs to its end on the real stack and measures
 * its figures (a broken measurement turns the suite red); SIGTERM stops it at once with its servers.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { BENCH_SHORT, runBench } from '../../bench/run.ts';
import { PRESET_NAMES } from '../../engine/presets.ts';

/** Whether something accepts TCP connections at host:port. */
function listening(address: string): Promise<boolean> {
  const url = new URL(address.includes('://') ? address : `tcp://${address}`);
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('the bench, short', () => {
  it('runs every step and measures every figure, history per turn and step latency beside a compaction included', async () => {
    const lines: string[] = [];
    const { counting, decision, planning, agent, stream, control } = await runBench(BENCH_SHORT, (line) =>
      lines.push(line),
    );
    const log = lines.join('\n');
    expect(counting.ratios.productionVsJsTiktoken, log).toBeGreaterThan(0);
    expect(decision.usAt2000, log).toBeGreaterThan(0);
    // Every preset planned the large contexts (the figure against its target is the bench's to report, not timed here).
    expect(Object.keys(planning.perPresetMs).sort(), log).toEqual([...PRESET_NAMES].sort());
    expect(planning.messages, log).toBe(BENCH_SHORT.planningMessages);
    expect(agent.turnOverheadMsP50, log).toBeGreaterThan(0);
    expect(agent.compactionCycleMsP50, log).toBeGreaterThan(0);
    expect(stream.firstTokenP50Ms, log).toBeGreaterThan(0);
    // The search step: bodies stored and indexed, searches run, the index measured against the bodies.
    expect(agent.search, log).toMatchObject({
      bodies: BENCH_SHORT.search.bodies,
      searches: BENCH_SHORT.search.searches,
    });
    expect(agent.search.indexRatio as number, log).toBeGreaterThan(0);
    for (const tokens of BENCH_SHORT.agent.history.tokens) {
      const key = `at${tokens / 1000}k`;
      expect(agent.historyBytesPerTurn[key], `${key}\n${log}`).toBeGreaterThan(0);
      // One turn's history against the transcript the agent holds (what passing it whole would record).
      expect(agent.historyBytesPerTurn[key]!, `${key}\n${log}`).toBeLessThan(agent.transcriptBytes[key]!);
    }
    expect(agent.stepLatency.background.compactions, log).toBeGreaterThan(0);
    expect(agent.stepLatency.background.stepsDuringCompaction, log).toBeGreaterThan(0);
    expect(agent.stepLatencyDuringCompactionP99Ms, log).toBeGreaterThan(0);
    expect(agent.stepLatencyBlockingCompactionP99Ms, log).toBeGreaterThan(0);
    // Reaching the agent while it works: every send measured, each compaction carried by a step after the send.
    expect(control.forcedCompactions, log).toHaveLength(BENCH_SHORT.control.compaction.at.length);
    for (const send of control.forcedCompactions) {
      expect(send.appliedAtStep, log).toBeGreaterThan(send.sentAtStep);
    }
    expect(control.forcedCompactionSteps, log).toBeGreaterThanOrEqual(0);
    expect(control.steers, log).toBe(BENCH_SHORT.control.steer.steers);
    expect(control.steerLatencyP99Ms, log).toBeGreaterThan(0);
    expect(control.stepP99Ms, log).toBeGreaterThan(0);
    expect(control.interrupts, log).toBe(BENCH_SHORT.control.interrupt.tool);
    expect(control.interruptsSeenByTool, log).toBe(control.interrupts); // the tool's cancellation reached it each time
    expect(control.interruptLatencyP99Ms, log).toBeGreaterThan(0);
    expect(control.interruptModelCallMs, log).toHaveLength(BENCH_SHORT.control.interrupt.model);
  }, 180_000);

  it('stops at once on SIGTERM in the middle of its agent step, and its servers with it', async () => {
    const child = spawn(process.execPath, [join(PROJECT_ROOT, 'bench/run.ts'), '--short'], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // The agent step's workers are running once the first figure of the step is printed.
    const servers = await new Promise<string[]>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const stack = /stack: Temporal (\S+), MinIO (\S+)/.exec(output);
        if (stack && output.includes('turn overhead')) resolve([stack[1]!, stack[2]!]);
      });
      void exited.then(() => reject(new Error(`the bench ended before its agent step:\n${output}`)));
    });
    for (const address of servers) expect(await listening(address), address).toBe(true);
    const signalled = performance.now();
    child.kill('SIGTERM');
    const end = await exited;
    expect(performance.now() - signalled, output).toBeLessThan(20_000);
    expect(end, output).toEqual({ code: 143, signal: null });
    expect(output).toContain('SIGTERM: stopping');
    for (const address of servers) expect(await listening(address), address).toBe(false);
  }, 120_000);
});
