/**
 * `longrun replay` against the real stack: a recorded session through a real agent, its report (--json and text,
 * under a policy of the user's own), a recording it cannot follow in full. A file of its own: each replay waits for
 * its deleted agent to leave the namespace's list (about 20 s on an idle dev server), time the other CLI tests need
 * not wait behind.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReplayReport } from '../../commands/replay-report.ts';
import { registryPrice } from '../../engine/models.ts';
import { startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import type { CliRun } from '../support/longrun-cli.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(() => ({ content: 'unused: the replay runs its own model' }));
});
afterAll(async () => {
  await h?.close();
});

/**
 * `longrun replay` on the harness's server: after the replay it waits, up to 60 s, for Temporal to drop its agent's
 * deleted runs from the namespace's list, so it gets more than the default 60 s.
 */
function longrunReplay(...args: string[]): Promise<CliRun> {
  return runLongrun(['replay', ...args], { env: cliEnv(h), timeoutMs: 150_000 });
}

describe('longrun replay', () => {
  it('replay runs a recorded session through a real agent and reports what compaction did', async () => {
    const lines: unknown[] = [{ role: 'system', content: 'You read logs.' }];
    for (let page = 1; page <= 24; page++) {
      const id = `call_${page}`;
      lines.push({ role: 'user', content: `Read page ${page} of the log.` });
      lines.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'fetch_log', arguments: `{"page":${page}}` } }],
      });
      const log = Array.from({ length: 30 }, (_, i) => `line ${page}.${i}: GET /api/items/${page * 100 + i} 200`).join(
        '\n',
      );
      lines.push({ role: 'tool', tool_call_id: id, content: log });
      lines.push({ role: 'assistant', content: `Page ${page} read: all requests answered 200.` });
    }
    // An agent loop: 30 tool steps under one user message (more than the old cap of 8 model calls a turn), whose
    // provider numbers calls per reply: every step's call is `call_0`, each with its own result.
    lines.push({ role: 'user', content: 'Check the 30 archives one by one.' });
    for (let archive = 1; archive <= 30; archive++) {
      const id = 'call_0';
      const args = `{"archive":${archive}}`;
      lines.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'check', arguments: args } }],
      });
      lines.push({ role: 'tool', tool_call_id: id, content: `archive ${archive}: intact` });
    }
    lines.push({ role: 'assistant', content: 'All 30 archives are intact.' });
    const dir = await mkdtemp(join(tmpdir(), 'replay-'));
    const file = join(dir, 'session.jsonl');
    await writeFile(file, lines.map((line) => JSON.stringify(line)).join('\n'));

    const run = await longrunReplay(file, '--window', '4096', '--json');
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as ReplayReport;
    expect(report).toMatchObject({ messages: 159, turns: 25, modelCalls: 79, window: 4096, toolPairViolations: 0 });
    expect(report).toMatchObject({ recordedSteps: 79, replayedSteps: 79, stepBudget: 41, cutShort: [] });
    // Which recorded step answered each request: each assistant message of the recording once, in order.
    const recordedAt = lines.flatMap((line, i) => ((line as { role: string }).role === 'assistant' ? [i + 1] : []));
    expect(report.answeredWith.map((a) => a?.message)).toEqual(recordedAt);
    expect(report.answeredWith.at(-2)).toEqual({ turn: 25, step: 30, message: 157, placedBy: 'tool-calls' });
    expect(report.agentId).toMatch(/^replay-/);
    expect(report.deletion).toMatchObject({ workflowId: `agent-${report.agentId}`, gone: true, stillListed: [] });
    expect(report.storagePrefix).toMatch(new RegExp(`^agents/${report.agentId}/[^/]+/$`));
    expect(report.compactions.length).toBeGreaterThanOrEqual(2);
    for (const compaction of report.compactions) {
      expect(compaction.tokensAfter).toBeLessThan(compaction.tokensBefore);
      expect(compaction.offloaded.length).toBeGreaterThan(0);
      expect(compaction.offloaded.every((o) => o.reloadIdentical)).toBe(true);
      expect(compaction.removedCount).toBe(compaction.offloaded.length);
      for (const key of Object.values(compaction.keys)) expect(key.startsWith(report.storagePrefix)).toBe(true);
      expect(compaction.keys.event).toMatch(new RegExp(`/compactions/0*${compaction.seq}/event\\.json$`));
    }
    expect(report.maxRequestTokens).toBeLessThanOrEqual(4096);
    expect(report.tokensSent).toBeLessThan(report.tokensSentWithoutCompaction);
    // Cost with prompt caching (commands/replay-cost.ts), at gpt-4o-mini's list price: each request's cached tokens
    // beside its tokens, against sending everything with caching.
    expect(report.price).toEqual(registryPrice('gpt-4o-mini'));
    expect(report.cachedTokens).toHaveLength(report.requestTokens.length);
    report.cachedTokens.forEach((cached, i) => expect(cached).toBeLessThanOrEqual(report.requestTokens[i]!));
    expect(report.cachedTokens.filter((cached) => cached >= 1_024).length).toBeGreaterThan(10);
    expect(report.cachedInputShare).toBeGreaterThan(0);
    expect(report.cachedInputShare).toBeLessThan(1);
    expect(report.cost).toBeGreaterThan(0);
    expect(report.cost).toBeLessThan(report.costWithoutCompaction!);
    // The floor of any compaction that sends each message whole: at or below what this replay (which does) cost.
    expect(report.costFloor).toBeGreaterThan(0);
    expect(report.costFloor).toBeLessThanOrEqual(report.cost!);
    // The agent's own account, from the usage the replay's model server reported with its prompt cache.
    expect(report.agentCost?.cachedInputShare).toBeGreaterThan(0);
    expect(report.agentCost?.total).toBeGreaterThan(0);
    expect(report.historyBytes).toBeGreaterThan(0);
    expect(report.finalView.at(-1)).toMatchObject({
      role: 'tool',
      tool_call_id: 'call_0',
      content: 'archive 30: intact',
    });

    const bad = await longrunReplay(file, '--preset', 'nope');
    expect(bad.code).toBe(2);
    // The text report, under a policy of the user's own on top of the preset (--policy FILE): summaries only, where
    // the default's compactions above masked tool results too.
    const policy = join(dir, 'policy.json');
    await writeFile(policy, JSON.stringify({ strategies: ['summarize', 'halve'] }));
    expect(report.compactions.some((c) => c.strategies.includes('mask-tool-results'))).toBe(true);
    const table = await longrunReplay(file, '--window', '4096', '--price', '0.15,,0.6', '--policy', policy);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(
      /^.*session\.jsonl: 159 messages, 25 turns, 79 model calls \(preset default with strategies \["summarize","halve"\], window 4096\)\nreplayed all 79 recorded steps.*\nrequests answered with a recorded step: 79 of 79 \(79 distinct, 0 again\); 0 with none\n/,
    );
    const strategies = [...table.stdout.matchAll(/\ncompaction \d+ \(\w+\): \d+ → \d+ tokens; ([^;]+);/g)].map(
      (m) => m[1],
    );
    expect(strategies.length).toBeGreaterThan(0);
    for (const used of strategies)
      expect(
        used!.split(', ').every((s) => s === 'summarize' || s === 'halve'),
        used,
      ).toBe(true);
    expect(table.stdout).toMatch(
      /\ncost \$0\.\d+ vs \$0\.\d+ sending everything with caching \(0\.\d\d×\), floor \$0\.\d+ \(0\.\d\d×\); cached input \d+% vs \d+% \(USD per 1M tokens: input 0\.15, cached 0\.015, output 0\.6\)\n/,
    );
    expect(table.stdout).toMatch(
      /\nreplay agent deleted: \d+ run\(s\) of workflow agent-replay-\S+, none listed in namespace /,
    );

    // A recording the agent cannot follow in full: a text reply, then more replies with no user message between.
    const odd = join(dir, 'odd.jsonl');
    const oddLines = [
      { role: 'user', content: 'Say two things.' },
      { role: 'assistant', content: 'One.' },
      { role: 'assistant', content: 'Two.' },
    ];
    await writeFile(odd, oddLines.map((line) => JSON.stringify(line)).join('\n'));
    // With LONGRUN_METRICS_ADDRESS exported for a worker that serves it (here, a listener holding the address), the
    // replay runs: it serves no metrics of its own.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    const short = await runLongrun(['replay', odd], {
      env: cliEnv(h, { LONGRUN_METRICS_ADDRESS: `127.0.0.1:${port}` }),
      timeoutMs: 150_000,
    }).finally(() => holder.close());
    expect(short.code, short.stderr).toBe(0);
    expect(short.stdout).toContain('CUT SHORT: replayed 1 of 2 recorded steps (assistant messages); step budget 12');
    expect(short.stdout).toContain(
      "turn 1: 1 of 2 steps replayed: recorded reply 1 of 2 has no tool calls, so the agent's turn ended there",
    );
    // Three replays, each waiting for its deleted agent to leave the namespace's list (up to 60 s each).
  }, 300_000);
});
