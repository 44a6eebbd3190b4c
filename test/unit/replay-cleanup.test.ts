/**
 * `longrun replay`'s deletion of its agent, the pure part (commands/replay-cleanup.ts): after deleting the runs it
 * watches the namespace's list until it shows none of them (a fake list and clock here), says on the log what it
 * waits for past a few seconds, stops at the bound, and reports what is still listed then rather than calling the
 * agent gone. The e2e side: test/e2e/no-worker-reads.test.ts `longrun replay`.
 */
import { describe, expect, it } from 'vitest';
import { renderDeletion, UNLISTED_BOUND_MS, waitUntilUnlisted } from '../../commands/replay-cleanup.ts';
import type { AgentDeletion } from '../../commands/replay-cleanup.ts';

/** A clock that moves only when the wait sleeps, and a list that empties at `goneAt` ms (never if undefined). */
function fakeNamespace(runs: string[], goneAt?: number) {
  let t = 0;
  const lines: string[] = [];
  const deletedAgain: string[][] = [];
  const listedAt: number[] = [];
  return {
    lines,
    deletedAgain,
    listedAt,
    wait: {
      list: () => {
        listedAt.push(t);
        return Promise.resolve(goneAt !== undefined && t >= goneAt ? [] : [...runs]);
      },
      deleteAgain: (listed: string[]) => {
        deletedAgain.push(listed);
        return Promise.resolve();
      },
      what: 'workflow agent-replay-x in namespace default',
      log: (line: string) => lines.push(line),
      now: () => t,
      sleep: (ms: number) => {
        t += ms;
        return Promise.resolve();
      },
    },
  };
}

describe('waitUntilUnlisted', () => {
  it('returns at once, saying nothing, when the list shows none of the runs', async () => {
    const ns = fakeNamespace(['r1'], 0);
    expect(await waitUntilUnlisted(ns.wait)).toEqual({ stillListed: [], waitedMs: 0 });
    expect(ns.lines).toEqual([]);
    expect(ns.deletedAgain).toEqual([]);
  });

  it('waits until the list drops the runs, deleting again what it shows, and says so past 3 s', async () => {
    const ns = fakeNamespace(['r1', 'r2'], 5_000);
    const result = await waitUntilUnlisted(ns.wait);
    expect(result).toEqual({ stillListed: [], waitedMs: 5_000 });
    expect(ns.listedAt.at(-1)).toBe(5_000);
    expect(ns.deletedAgain.length).toBe(ns.listedAt.length - 1);
    expect(ns.deletedAgain.every((runs) => runs.join() === 'r1,r2')).toBe(true);
    // Quiet for the first 3 s, then one line (the next would come at 8 s).
    expect(ns.lines).toEqual([
      "[replay] deleted workflow agent-replay-x in namespace default; waiting for the namespace's list to drop its " +
        '2 run(s) (Temporal updates it asynchronously): 3.0 s of at most 60.0 s',
    ]);
  });

  it('stops at the bound with the runs still listed, having said so every 5 s', async () => {
    const ns = fakeNamespace(['r1'], undefined);
    const result = await waitUntilUnlisted(ns.wait);
    expect(result).toEqual({ stillListed: ['r1'], waitedMs: UNLISTED_BOUND_MS });
    expect(ns.listedAt.at(-1)).toBe(UNLISTED_BOUND_MS); // a last look at the bound, and nothing after it
    expect(ns.lines.map((line) => /: ([\d.]+) s of at most 60\.0 s$/.exec(line)?.[1])).toEqual([
      '3.0',
      '8.0',
      '13.0',
      '18.0',
      '23.0',
      '28.0',
      '33.0',
      '38.0',
      '43.0',
      '48.0',
      '53.0',
      '58.0',
    ]);
  });

  it('takes a shorter bound and poll', async () => {
    const ns = fakeNamespace(['r1'], undefined);
    const result = await waitUntilUnlisted({ ...ns.wait, boundMs: 1_000, pollMs: 400 });
    expect(result).toEqual({ stillListed: ['r1'], waitedMs: 1_000 });
    expect(ns.listedAt).toEqual([0, 400, 800, 1_000]);
    expect(ns.lines).toEqual([]);
  });
});

describe('renderDeletion', () => {
  const base: AgentDeletion = {
    namespace: 'default',
    workflowId: 'agent-replay-x',
    gone: true,
    deletedRuns: 2,
    stillListed: [],
    waitedMs: 4_200,
  };

  it('calls the agent gone only when nothing is listed', () => {
    expect(renderDeletion(base)).toBe(
      'replay agent deleted: 2 run(s) of workflow agent-replay-x, none listed in namespace default (after 4.2 s)',
    );
  });

  it('says what is still listed at the bound', () => {
    const line = renderDeletion({ ...base, gone: false, stillListed: ['r1'], waitedMs: 60_000 });
    expect(line).toBe(
      'replay agent NOT GONE: namespace default still lists 1 run(s) of workflow agent-replay-x 60.0 s after ' +
        'deleting them (Temporal may still drop them; else delete workflow agent-replay-x yourself)',
    );
    expect(line).not.toContain('deleted:');
  });

  it('says why when the deletion failed', () => {
    expect(renderDeletion({ ...base, gone: false, deletedRuns: 0, error: 'connection refused' })).toBe(
      'replay agent NOT DELETED: could not delete workflow agent-replay-x from namespace default ' +
        '(connection refused): delete it yourself',
    );
  });
});
