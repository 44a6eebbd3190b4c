/**
 * Two worker processes on one task queue serve the same agents (this is how users outgrow one machine); a kill -9
 * of the worker in the middle of a model call loses nothing: the call is retried on the other worker once the
 * heartbeat timeout notices the dead one, and the turn completes. The same holds in the middle of a compaction's
 * summary call: one event, one summary, nothing removed twice.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentState, closeAgent, compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionHistory } from '../../client/reads.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { asksForSummary, startChatServer } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import { newAgentId, spawnWorker } from '../support/harness.ts';

let model: ChatServer;
let releaseHeld: () => void = () => {};
let heldWorker: Promise<string>;
let onHeld: (worker: string) => void = () => {};
let holdSummary = false;
let releaseSummary: () => void = () => {};
let onSummaryHeld: (worker: string) => void = () => {};
const SUMMARY = JSON.stringify({
  task_overview: 'Count the turns.',
  current_state: 'Six turns read.',
  important_discoveries: 'Nothing failed.',
  next_steps: 'Go on.',
  context_to_preserve: 'turn numbers',
});
const workers: ChildProcessWithoutNullStreams[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'longrun-workers-'));
const taskQueue = `workers-${Date.now()}`;

async function startWorker(): Promise<ChildProcessWithoutNullStreams> {
  const child = await spawnWorker(
    'worker/main.ts',
    {
      LONGRUN_TASK_QUEUE: taskQueue,
      LONGRUN_DATA_DIR: dataDir,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: model.baseURL,
      LONGRUN_MODEL_HEADERS: '{"x-team":"agents"}',
    },
    ['--no-demo'],
  );
  workers.push(child);
  return child;
}

beforeAll(async () => {
  heldWorker = new Promise((resolve) => (onHeld = resolve));
  let held = false;
  model = await startChatServer(async (request) => {
    if (asksForSummary(request.body)) {
      // A summary request (structured output); the first one while holdSummary is set never returns.
      if (holdSummary) {
        holdSummary = false;
        onSummaryHeld(String(request.headers['x-longrun-worker'] ?? ''));
        await new Promise<void>((resolve) => (releaseSummary = resolve));
      }
      return { content: SUMMARY, usage: { prompt_tokens: 500, completion_tokens: 60 } };
    }
    const text = textOf(request.body.messages.findLast((m) => m.role === 'user')?.content);
    const worker = String(request.headers['x-longrun-worker'] ?? '');
    if (text === 'hold me' && !held) {
      held = true;
      onHeld(worker);
      await new Promise<void>((resolve) => (releaseHeld = resolve));
      return { content: 'answered by a dead worker' };
    }
    return { content: `${text} (served by ${worker.split('@')[0]})` };
  });
  await Promise.all([startWorker(), startWorker()]);
}, 120_000);

afterAll(async () => {
  releaseHeld();
  releaseSummary();
  const running = workers.filter((w) => w.exitCode === null && w.signalCode === null);
  const exits = running.map((w) => new Promise((resolve) => w.on('exit', resolve)));
  for (const worker of running) worker.kill('SIGTERM');
  await Promise.all(exits);
  await model?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('two workers on one task queue', () => {
  it('serve the same agents, and a kill -9 mid-turn loses nothing', async () => {
    const stack = inject('stack');
    const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
    try {
      const agentId = newAgentId('two');
      await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
      for (let i = 1; i <= 4; i++) expect((await sendMessage(client, agentId, `turn ${i}`)).reply).toMatch(/^turn \d/);

      const pending = sendMessage(client, agentId, 'hold me');
      const worker = await heldWorker; // the model call is out, on this worker
      const pid = Number(/longrun-worker-(\d+)@/.exec(worker)?.[1]);
      expect(workers.map((w) => w.pid)).toContain(pid);
      process.kill(pid, 'SIGKILL');
      const started = Date.now();
      const result = await pending;
      const survivor = workers.find((w) => w.pid !== pid)!.pid;
      expect(result.reply).toBe(`hold me (served by longrun-worker-${survivor})`);
      expect(Date.now() - started).toBeLessThan(45_000);

      // Every model request carried the configured gateway header and the worker's identity.
      expect(model.requests.every((r) => r.headers['x-team'] === 'agents')).toBe(true);
      expect(model.requests.every((r) => String(r.headers['x-longrun-worker']).startsWith('longrun-worker-'))).toBe(
        true,
      );

      const state = await agentState(client, agentId);
      expect(state.turns).toBe(5);
      expect(state.messages.filter((m) => m.role === 'user').map((m) => m.preview)).toEqual([
        'turn 1',
        'turn 2',
        'turn 3',
        'turn 4',
        'hold me',
      ]);
      expect(state.messages.filter((m) => m.role === 'assistant')).toHaveLength(5);
      await closeAgent(client, agentId);
    } finally {
      await client.connection.close();
    }
  });

  it('a kill -9 in the middle of a compaction loses nothing: one event, the summary from the survivor', async () => {
    await startWorker(); // two workers again
    const stack = inject('stack');
    const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
    try {
      const agentId = newAgentId('twoc');
      await startAgent(client, {
        agentId,
        model: 'gpt-4o-mini',
        taskQueue,
        compaction: { reserveRatio: 0, keepTurns: 1 },
      });
      for (let i = 1; i <= 6; i++)
        await sendMessage(client, agentId, `turn ${i}: ${'the log says all is well. '.repeat(20)}`);
      const held = new Promise<string>((resolve) => (onSummaryHeld = resolve));
      holdSummary = true;
      const pending = compactAgent(client, agentId, { strategy: 'summarize' });
      const pid = Number(/longrun-worker-(\d+)@/.exec(await held)?.[1]);
      expect(workers.filter((w) => w.exitCode === null && w.signalCode === null).map((w) => w.pid)).toContain(pid);
      process.kill(pid, 'SIGKILL');
      const result = await pending;
      expect(result.compacted).toBe(true);
      expect(result.event).toMatchObject({ seq: 1, trigger: 'forced', strategies: ['summarize'] });
      // The held summary call died with its worker; the retry ran on the survivor.
      const summaries = model.requests.filter((r) => asksForSummary(r.body));
      expect(String(summaries.at(-1)!.headers['x-longrun-worker'])).not.toContain(`longrun-worker-${pid}@`);
      const state = await agentState(client, agentId);
      expect(state.compactions).toBe(1);
      expect(state.events!.map((e) => e.seq)).toEqual([1]);
      expect(state.messages.filter((m) => m.kind === 'summary')).toHaveLength(1);
      // Every removed message left once (the full event, from S3), and the goal (turn 1) and the last turn stayed.
      const { events } = await compactionHistory(client, new S3BlobStore(inject('stack').s3), agentId);
      expect(events.map((e) => e.seq)).toEqual([1]);
      const removed = events[0]!.removed.map((item) => item.id);
      expect(removed).toHaveLength(result.event!.removedCount);
      expect(new Set(removed).size).toBe(removed.length);
      expect(state.messages.some((m) => removed.includes(m.id))).toBe(false);
      const previews = state.messages.map((m) => m.preview.slice(0, 6));
      expect(previews).toContain('turn 1');
      expect(previews).toContain('turn 6');
      expect(await sendMessage(client, agentId, 'turn 7')).toMatchObject({ turn: 7 });
      await closeAgent(client, agentId);
    } finally {
      await client.connection.close();
    }
  });
});
