/**
 * Live phases end to end: `longrun watch` (a child process, its output read line by line) follows a turn and a
 * compaction whose summary takes several slow chunks; meanwhile `AgentStatus` is `compacting`, the progress query
 * (client library and temporal CLI) shows the step, and the summarizeSpan activity's heartbeat details its chunk.
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHandle, approveDraft, closeAgent, compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { agentProgress } from '../../client/reads.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import type { AgentProgress } from '../../contract/progress.ts';
import { SEARCH_ATTRIBUTES } from '../../contract/search-attributes.ts';
import { agentWithNotes, isSummaryRequest, newAgentId, startHarness, summaryReply } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import { temporalCli } from '../support/temporal-cli.ts';

const SUMMARY_WINDOW = 2_400; // small: the span is summarized in several chunks
const CHUNK_MS = 2_500; // each summary call takes this long
const NOTES = 24; // turns of notes: their summary takes 5 chunks

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    (request) =>
      isSummaryRequest(request)
        ? {
            content: summaryReply('Folded the notes so far.'),
            delayMs: CHUNK_MS,
          }
        : { content: `Noted (${request.body.messages.length} messages).` },
    [],
    { summaryWindow: SUMMARY_WINDOW },
  );
});
afterAll(async () => {
  await h?.close();
});

/** `longrun watch` as a child process, its stdout split into lines as they come. */
class Watch {
  readonly lines: string[] = [];
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(args: string[]) {
    this.child = spawn(process.execPath, [join(PROJECT_ROOT, 'bin/longrun.js'), 'watch', ...args], {
      env: cliEnv(h),
    });
    let partial = '';
    this.child.stdout.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop()!;
      this.lines.push(...parts);
    });
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  /** Waits for a line matching `pattern` (from line `from` on); returns its index. */
  async line(pattern: RegExp, from = 0, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const at = this.lines.findIndex((line, i) => i >= from && pattern.test(line));
      if (at !== -1) return at;
      if (Date.now() > deadline) {
        throw new Error(`no line ${String(pattern)} in:\n${this.lines.join('\n')}\nstderr:\n${this.stderr}`);
      }
      await sleep(50);
    }
  }
}

describe('live phases', () => {
  it('longrun watch follows a turn and a compaction step by step, chunk by chunk, until the agent closes', async () => {
    const agentId = await agentWithNotes(h, 'watch', NOTES);
    const watch = new Watch([agentId, '--interval', '200']);
    try {
      await watch.line(new RegExp(`^watching ${agentId}: ${NOTES} turns, context [\\d,]+ of 128,000 tokens`));
      await sendMessage(h.client, agentId, 'One more note.');
      const turn = await watch.line(
        new RegExp(`^turn ${NOTES + 1} done · context [\\d,]+ of 128,000 tokens \\(\\d+%\\) · reply: "Noted \\(`),
      );

      // A compaction whose summary takes several slow chunks: watched from outside while it runs.
      const compaction = compactAgent(h.client, agentId, { strategy: 'summarize' });
      const statuses = new Set<string>();
      const seen: AgentProgress[] = [];
      let cliProgress: AgentProgress | undefined;
      let heartbeat: unknown;
      const temporal = await temporalCli(h);
      let done = false;
      void compaction.finally(() => (done = true));
      while (!done) {
        const status = (await agentHandle(h.client, agentId).describe()).typedSearchAttributes.get(
          SEARCH_ATTRIBUTES.status,
        );
        if (status) statuses.add(status);
        const progress = await agentProgress(h.client, agentId);
        seen.push(progress);
        if (progress.compaction?.chunk !== undefined && cliProgress === undefined) {
          // The same from the temporal CLI: the query by its name, the chunk in the pending activity's details.
          const queried = JSON.parse(
            await temporal('workflow', 'query', '--workflow-id', agentWorkflowId(agentId), '--type', 'progress'),
          ) as { queryResult: AgentProgress[] };
          cliProgress = queried.queryResult[0];
          const described = JSON.parse(
            await temporal('workflow', 'describe', '--workflow-id', agentWorkflowId(agentId)),
          ) as { pendingActivities?: { activityType?: { name?: string }; heartbeatDetails?: unknown }[] };
          heartbeat = described.pendingActivities?.find(
            (a) => a.activityType?.name === 'summarizeSpan',
          )?.heartbeatDetails;
        }
        await sleep(300);
      }
      const result = await compaction;
      expect(result.compacted).toBe(true);
      const chunks = result.event!.summaryChunks!;
      expect(chunks).toBeGreaterThanOrEqual(3);

      // AgentStatus: compacting while it ran, running again after.
      expect(statuses).toContain('compacting');
      const after = (await agentHandle(h.client, agentId).describe()).typedSearchAttributes;
      expect(after.get(SEARCH_ATTRIBUTES.status)).toBe('running');
      // The progress query saw its steps, and the summary's chunks from the heartbeats.
      const steps = seen.flatMap((p) => (p.compaction ? [p.compaction.step] : []));
      expect(steps).toContain('summarizing');
      const chunked = seen.flatMap((p) => (p.compaction?.chunk !== undefined ? [p.compaction] : []));
      expect(chunked.length).toBeGreaterThan(0);
      for (const c of chunked) {
        expect(c).toMatchObject({ seq: result.event!.seq, trigger: 'forced', step: 'summarizing', chunks });
        expect(c.chunk).toBeGreaterThanOrEqual(1);
        expect(c.chunk).toBeLessThanOrEqual(chunks);
      }
      expect(cliProgress).toMatchObject({ agentId, compaction: { seq: result.event!.seq, step: 'summarizing' } });
      expect(JSON.stringify(heartbeat)).toMatch(new RegExp(`"chunks":${chunks}`));

      // And longrun watch printed it: summarizing chunk k of n with a bar, then what it did. Planning and applying
      // take a moment only: a poll may fall between them, but what is printed comes in order.
      const seq = result.event!.seq;
      const phase = (step: string) => new RegExp(`^compaction ${seq} \\(forced\\): ${step}`);
      const chunk = await watch.line(
        new RegExp(
          `^compaction ${seq} \\(forced\\): summarizing \\d+ messages: chunk \\d of ${chunks} \\[[█░]{20}\\]$`,
        ),
        turn,
      );
      const finished = await watch.line(
        new RegExp(`^compaction ${seq} \\(forced\\): [\\d,]+ → [\\d,]+ tokens \\(summarize\\) in \\d+\\.\\d s$`),
        chunk,
      );
      const printed = watch.lines.slice(turn + 1, finished).filter((line) => phase('').test(line));
      const order = ['planning', 'summarizing', 'applying'];
      const ranks = printed.map((line) => order.findIndex((step) => phase(step).test(line)));
      expect(ranks).not.toContain(-1);
      expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
      // Chunk by chunk: the chunks printed never go back.
      const numbers = printed.flatMap((line) => /chunk (\d) of/.exec(line)?.[1] ?? []).map(Number);
      expect(numbers).toEqual([...numbers].sort((a, b) => a - b));

      await closeAgent(h.client, agentId);
      await watch.line(new RegExp(`^agent ${agentId} closed after ${NOTES + 1} turns$`));
      expect(await watch.exited).toBe(0);
    } finally {
      watch.child.kill();
    }
  });

  it('--json prints one object per change; Ctrl-C ends the watch (exit 0)', async () => {
    const agentId = await agentWithNotes(h, 'watchjson', NOTES);
    const watch = new Watch([agentId, '--json', '--interval', '200']);
    try {
      await watch.line(/^\{"type":"watching"/);
      await sendMessage(h.client, agentId, 'One more note.');
      const at = await watch.line(/^\{"type":"turn"/);
      expect(JSON.parse(watch.lines[at]!)).toMatchObject({ type: 'turn', turn: NOTES + 1, window: 128_000 });
      watch.child.kill('SIGINT');
      expect(await watch.exited).toBe(0);
    } finally {
      watch.child.kill();
    }
  });

  it('refuses an unknown agent (exit 3), a closed one (exit 4) and a bad interval (exit 2)', async () => {
    const unknown = await runLongrun(['watch', newAgentId('nobody')], { env: cliEnv(h) });
    expect(unknown.code, unknown.stderr).toBe(3);
    const agentId = newAgentId('closedwatch');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'hello');
    await closeAgent(h.client, agentId);
    await sleep(500);
    const closed = await runLongrun(['watch', agentId], { env: cliEnv(h) });
    expect(closed.code, closed.stderr).toBe(4);
    expect(closed.stdout).toContain(`agent ${agentId} closed after 1 turns`);
    const bad = await runLongrun(['watch', agentId, '--interval', '5'], { env: cliEnv(h) });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--interval: must be an integer from 100 to 60000 (got "5")');
  });

  it('a compaction for review shows compacting while it prepares its draft, running once the draft waits', async () => {
    const agentId = await agentWithNotes(h, 'reviewstatus', 6);
    const status = async () =>
      (await agentHandle(h.client, agentId).describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.status);
    const review = compactAgent(h.client, agentId, { strategy: 'summarize', review: true });
    let seen: string | undefined;
    for (let i = 0; i < 40 && seen !== 'compacting'; i++) {
      seen = await status();
      await sleep(100);
    }
    expect(seen).toBe('compacting'); // each summary call takes 2.5 s
    const { draft } = await review;
    expect(draft).toBeDefined();
    expect(await status()).toBe('running');
    expect((await agentProgress(h.client, agentId)).compaction).toBeUndefined();
    const approved = await approveDraft(h.client, agentId, draft!.id);
    expect(approved.compacted).toBe(true);
    expect(await status()).toBe('running');
  });
});
