/**
 * The scale benchmark's population (`--registered`, idle agents beside the active ones) and steers
 * (`--steers-per-minute`): their pure parts. No timing: the pool and the retry take their sleep as an argument.
 */
import { describe, expect, it } from 'vitest';
import { MetricsDiff } from '../../bench/scale/metrics.ts';
import { steadyRss } from '../../bench/scale/results.ts';
import { scaleReply } from '../../bench/scale/model.ts';
import {
  EXHAUSTED_BACKOFF_MS,
  isResourceExhausted,
  registrationLine,
  retryExhausted,
  runPool,
} from '../../bench/scale/registration.ts';
import { peakSinceReset } from '../../bench/scale/procs.ts';
import { pickInTurn, steerSummary } from '../../bench/scale/steers.ts';
import { readTag, registrationMessage, steerSchedule, steerText, userMessage } from '../../bench/scale/workload.ts';
import type { ChatMessage } from '../../engine/messages.ts';

describe('idle agents and steers in the workload', () => {
  it('the registration message is short and tagged as message 1; a steer carries no [scale …] tag', () => {
    expect(readTag(registrationMessage('a5000'))).toEqual({ agent: 'a5000', n: 1 });
    expect(registrationMessage('a5000').length).toBeLessThan(200);
    expect(readTag(steerText('a0001', 3))).toBeUndefined();
    expect(steerText('a0001', 3)).toMatch(/^\[steer a0001 #3\] /);
  });

  it('steers are due evenly, per minute, strictly inside the window; none at 0 a minute', () => {
    expect(steerSchedule(20, 0, 12_000)).toEqual([3_000, 6_000, 9_000]);
    expect(steerSchedule(20, 1_000, 10_000)).toEqual([4_000, 7_000]);
    expect(steerSchedule(20, 0, 600_000)).toHaveLength(199); // 10 minutes, the end excluded
    expect(steerSchedule(7, 0, 60_001)).toHaveLength(7);
    expect(steerSchedule(0, 0, 600_000)).toEqual([]);
  });

  it('a steer’s target is drawn among the agents in a turn, none when none is', () => {
    const inTurn = new Set([4, 9, 13]);
    expect(pickInTurn(inTurn, () => 0)).toBe(4);
    expect(pickInTurn(inTurn, () => 0.5)).toBe(9);
    expect(pickInTurn(inTurn, () => 0.9999)).toBe(13);
    expect(pickInTurn(new Set(), () => 0.5)).toBeUndefined();
  });
});

describe('the scripted model and steers', () => {
  const options = { seed: 16, latencyMs: { min: 1_000, max: 5_000 }, toolShare: 1 }; // every turn asks for the tool

  it('asks for the tool only when the tagged message is last: a steer last in the request gets text', () => {
    const opening: ChatMessage = { role: 'user', content: userMessage(16, 'a0001', 2) };
    expect(scaleReply(options, [opening], false).reply.toolCalls).toHaveLength(1);
    const steered: ChatMessage[] = [
      opening,
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'a0001-2', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'a0001-2', content: 'result' },
      { role: 'user', content: steerText('a0001', 1) },
    ];
    const reply = scaleReply(options, steered, false);
    expect(reply.reply.toolCalls).toBeUndefined();
    expect(reply.agent).toBe('a0001'); // still the turn of message 2
    // A steer that opened a turn of its own: text too.
    expect(
      scaleReply(options, [opening, { role: 'user', content: steerText('a0001', 2) }], false).reply.toolCalls,
    ).toBe(undefined);
  });
});

describe('the registration', () => {
  it('tells RESOURCE_EXHAUSTED by gRPC code or name, anywhere in the chain of causes', () => {
    expect(isResourceExhausted(Object.assign(new Error('x'), { code: 8 }))).toBe(true);
    expect(isResourceExhausted(new Error('outer', { cause: Object.assign(new Error('inner'), { code: 8 }) }))).toBe(
      true,
    );
    expect(isResourceExhausted(new Error('8 RESOURCE_EXHAUSTED: namespace rate limit exceeded'))).toBe(true);
    expect(isResourceExhausted(Object.assign(new Error('x'), { code: 14 }))).toBe(false);
    expect(isResourceExhausted(new Error('nope'))).toBe(false);
    expect(isResourceExhausted(undefined)).toBe(false);
    expect(isResourceExhausted('RESOURCE_EXHAUSTED')).toBe(false); // not an error object
  });

  it('retries on RESOURCE_EXHAUSTED after each pause, then gives up; other errors at once', async () => {
    const pauses: number[] = [];
    const pause = (ms: number) => Promise.resolve(void pauses.push(ms));
    const exhausted = () => Object.assign(new Error('busy'), { code: 8 });
    let calls = 0;
    await expect(
      retryExhausted(
        () => {
          calls++;
          return calls < 3 ? Promise.reject(exhausted()) : Promise.resolve('ok');
        },
        { pause },
      ),
    ).resolves.toBe('ok');
    expect(pauses).toEqual(EXHAUSTED_BACKOFF_MS.slice(0, 2));

    pauses.length = 0;
    let retries = 0;
    await expect(
      retryExhausted(() => Promise.reject(exhausted()), { pause, backoffMs: [1, 2], retried: () => retries++ }),
    ).rejects.toThrow('busy');
    expect(pauses).toEqual([1, 2]);
    expect(retries).toBe(2);

    pauses.length = 0;
    await expect(retryExhausted(() => Promise.reject(new Error('other')), { pause })).rejects.toThrow('other');
    expect(pauses).toEqual([]);
  });

  it('the pool runs every item once, never more than its concurrency at a time, and stops taking items on stop', async () => {
    let running = 0;
    let most = 0;
    const seen: number[] = [];
    const gates: (() => void)[] = [];
    const task = async (item: number) => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      seen.push(item);
      running--;
    };
    const items = Array.from({ length: 50 }, (_, i) => i);
    const pool = runPool(items, 7, task);
    // Release the tasks one by one as they come.
    while (seen.length < items.length) {
      await new Promise((resolve) => setImmediate(resolve));
      gates.shift()?.();
    }
    await pool;
    expect([...seen].sort((a, b) => a - b)).toEqual(items);
    expect(most).toBe(7);

    const taken: number[] = [];
    await runPool(
      items,
      3,
      (item) => Promise.resolve(void taken.push(item)),
      () => taken.length >= 10,
    );
    expect(taken.length).toBeGreaterThanOrEqual(10);
    expect(taken.length).toBeLessThan(13);
    await runPool([], 5, () => Promise.reject(new Error('never')));
  });

  it('the progress line: counts, rate and time left', () => {
    expect(registrationLine(500, 2, 9_000, 100_000)).toBe(
      '[scale] registered 500 of 9000 idle agents (2 failed) in 100 s, 5.0/s, about 28 min left',
    );
    expect(registrationLine(90, 0, 100, 10_000)).toMatch(/9\.0\/s, about 1 s left$/);
    expect(registrationLine(0, 0, 100, 0)).toMatch(/0\.0\/s$/);
  });
});

describe('the steers’ summary and the metrics’ baseline', () => {
  it('counts where the steers landed and what was abandoned; p99 of the answered ones', () => {
    const records = Array.from({ length: 100 }, (_, i) => ({ latencyMs: (i + 1) * 10, opened: i % 4 === 0 }));
    const summary = steerSummary(20, { due: 120, sent: 110, skipped: 10, errors: 4 }, records);
    expect(summary).toMatchObject({ perMinute: 20, due: 120, sent: 110, answered: 100, landed: 75, opened: 25 });
    expect(summary.abandoned).toBe(6);
    expect(summary.latencyMs).toEqual({ p50: 500, p99: 990, max: 1_000 });
    expect(steerSummary(0, { due: 0, sent: 0, skipped: 0, errors: 0 }, []).latencyMs).toBeNull();
  });

  it('a baseline scrape counts in no step or total: only what happens after it', () => {
    const text = (hits: number) => `temporal_sticky_cache_hit{q="a"} ${hits}\ntemporal_sticky_cache_miss{q="a"} 1\n`;
    const diff = new MetricsDiff();
    diff.baseline(new Map([['w', text(9_000)]]));
    expect(diff.total.counters.hit).toBe(0);
    expect(diff.step(new Map([['w', text(9_040)]])).counters.hit).toBe(40);
    expect(diff.total.counters).toMatchObject({ hit: 40, miss: 0 });
  });
});

describe('the worker’s memory in the run', () => {
  it('the largest RSS sampled inside the window, each worker’s', () => {
    const at = (t: number, workerRssMb: number[]) => ({ ...base, t, workerRssMb });
    const base = { agentsStarted: 1, turnsDone: 0, turnsPerSec: 0, inFlight: 0, errors: 0, rpcs: 0 };
    const cpuPct = { machine: 0, worker: 0, temporal: 0, minio: 0, postgres: 0, driver: 0 };
    const series = [at(4, [842, 300]), at(60, [500, 310]), at(65, [560, 290]), at(130, [900, 900])].map((s) => ({
      ...s,
      cpuPct,
    }));
    expect(steadyRss(series, 60, 120)).toEqual([560, 310]);
    expect(steadyRss(series, 200, 300)).toEqual([0, 0]);
    expect(steadyRss([], 0, 1)).toEqual([]);
  });
});

describe('the worker peak after a reset', () => {
  it('VmHWM once it rose above the reset’s floor; the RSS now while it has not; VmHWM when never reset', () => {
    expect(peakSinceReset({ rssMb: 500, peakMb: 851 }, 851)).toBe(500); // not above the floor: the run's peak is lower
    expect(peakSinceReset({ rssMb: 700, peakMb: 900 }, 851)).toBe(900); // rose in the run
    expect(peakSinceReset({ rssMb: 700, peakMb: 900 }, 0)).toBe(900); // never reset
  });
});
