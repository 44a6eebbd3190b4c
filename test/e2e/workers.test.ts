/**
 * Two worker processes on one task queue serve the same agents (this is how users outgrow one machine); a kill -9
 * of the worker in the middle of a model call loses nothing: the call is retried on the other worker once the
 * heartbeat timeout notices the dead one, and the turn completes.
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentState, closeAgent, connectClient, sendMessage, startAgent } from '../../client/agents.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { localTemporalTarget } from '../../config/temporal.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { newAgentId } from '../support/harness.ts';

let model: ChatServer;
let releaseHeld: () => void = () => {};
let heldWorker: Promise<string>;
let onHeld: (worker: string) => void = () => {};
const workers: ChildProcessWithoutNullStreams[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'longrun-workers-'));
const taskQueue = `workers-${Date.now()}`;

function startWorker(): Promise<ChildProcessWithoutNullStreams> {
  const stack = inject('stack');
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'worker/main.ts'), '--no-demo'], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_NAMESPACE: stack.namespace,
      AWS_ENDPOINT_URL_S3: stack.s3.endpoint,
      AWS_ACCESS_KEY_ID: stack.s3.credentials!.accessKeyId,
      AWS_SECRET_ACCESS_KEY: stack.s3.credentials!.secretAccessKey,
      LONGRUN_S3_BUCKET: stack.s3.bucket,
      LONGRUN_TASK_QUEUE: taskQueue,
      LONGRUN_DATA_DIR: dataDir,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: model.baseURL,
      LONGRUN_MODEL_HEADERS: '{"x-team":"agents"}',
    },
  });
  workers.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('[worker] polling')) resolve(child);
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`worker exited with ${code}:\n${output}`)));
  });
}

beforeAll(async () => {
  heldWorker = new Promise((resolve) => (onHeld = resolve));
  let held = false;
  model = await startChatServer(async (request) => {
    const text = request.body.messages.findLast((m) => m.role === 'user')?.content ?? '';
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
});
