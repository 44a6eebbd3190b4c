/**
 * The main job (npm start) stopping (issue 12), on free ports and a data folder of its own: it says what its stop
 * waits for, stops at once on a second Ctrl-C, and a `send` waiting meanwhile gets its real reply after a restart.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { freePorts } from '../../stack/ports.ts';
import { SAME_PRESS_MS } from '../../worker/stopping.ts';
import { newAgentId } from '../support/harness.ts';
import { heldReplies } from '../support/held-replies.ts';
import { runLongrun, STACK_TRACE } from '../support/longrun-cli.ts';
import { onCluster } from '../support/stack-kind.ts';

const replies = heldReplies();
const dirs: string[] = [];
afterAll(() => {
  replies.releaseAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function processesMentioning(needle: string): string[] {
  const result = spawnSync('pgrep', ['-af', needle], { encoding: 'utf8' });
  return result.stdout.split('\n').filter((line) => line.trim() !== '' && !line.includes('pgrep'));
}

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(100);
  }
  return check();
}

function startMainJob(env: NodeJS.ProcessEnv): {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  exit: Promise<number | null>;
} {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'worker/main.ts'), '--no-demo'], {
    env,
    cwd: PROJECT_ROOT,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exit = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  );
  return { child, output: () => output, exit };
}

// Skipped under `npm run test:cluster`: the job here starts the embedded stack of `npm start` (covered by `npm test`);
// the cluster job's Ctrl-C is in cluster-mode.test.ts.
describe.skipIf(onCluster)('the main job stopping', () => {
  it('says what it waits for; a second Ctrl-C stops at once, leaves nothing behind, and a waiting send gets its real reply after a restart', async () => {
    const model = await startChatServer(replies.respond);
    const dataDir = mkdtempSync(join(tmpdir(), 'longrun-stop-'));
    dirs.push(dataDir);
    const [temporalPort, uiPort, minioPort, consolePort] = (await freePorts(4)) as [number, number, number, number];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      LONGRUN_DATA_DIR: dataDir,
      LONGRUN_TEMPORAL_PORT: String(temporalPort),
      LONGRUN_TEMPORAL_UI_PORT: String(uiPort),
      LONGRUN_MINIO_PORT: String(minioPort),
      LONGRUN_MINIO_CONSOLE_PORT: String(consolePort),
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: model.baseURL,
      LONGRUN_MODEL: 'gpt-4o-mini',
    };
    for (const name of ['TEMPORAL_ADDRESS', 'AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL', 'TEMPORAL_PROFILE'])
      delete env[name];
    const cli = { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}` };
    let job = startMainJob(env);
    try {
      expect(await waitFor(() => job.output().includes('Ctrl-C to stop'), 60_000), job.output()).toBe(true);
      const agentId = newAgentId('stop');
      expect((await runLongrun(['start', agentId], { env: cli })).code).toBe(0);
      const text = `held ${agentId}`;
      const { atModel } = replies.hold(text);
      const sending = runLongrun(['send', agentId, text], { env: cli, timeoutMs: 120_000 });
      await atModel;

      job.child.kill('SIGINT');
      expect(await waitFor(() => job.output().includes('Ctrl-C again to stop at once'), 10_000), job.output()).toBe(
        true,
      );
      expect(job.output()).toMatch(
        new RegExp(
          `\\[worker\\] stopping: waiting for 1 activity \\(callModel for agent-${agentId}, attempt 1, running \\d+ s\\) to finish`,
        ),
      );
      await sleep(SAME_PRESS_MS); // pressed again (a copy of the first within SAME_PRESS_MS is the same press)
      job.child.kill('SIGINT');
      const stoppedAt = Date.now();
      expect(await job.exit).toBe(130);
      expect(Date.now() - stoppedAt).toBeLessThan(15_000);
      expect(job.output()).toMatch(/\[worker\] stopping at once: abandoning 1 activity \(callModel/);
      expect(await waitFor(() => processesMentioning(dataDir).length === 0, 10_000)).toBe(true);

      // The same job again, on the same data: the abandoned model call runs again and `send` reports its reply.
      replies.release(text);
      job = startMainJob(env);
      const sent = await sending;
      expect(sent.code, sent.stderr).toBe(0);
      expect(sent.stdout).toBe(`re: ${text}\n`);
      expect(sent.stderr).toMatch(new RegExp(`^longrun: send to ${agentId}, \\d+ s: `, 'm')); // never silent
      expect(sent.stderr).not.toMatch(STACK_TRACE);

      job.child.kill('SIGINT');
      expect(await job.exit).toBe(0);
      expect(job.output()).toContain('[worker] stopping (no work in flight). Ctrl-C again to stop at once.');
      expect(await waitFor(() => processesMentioning(dataDir).length === 0, 10_000)).toBe(true);
    } finally {
      if (job.child.exitCode === null) job.child.kill('SIGKILL');
      await model.close();
    }
  }, 180_000);
});
