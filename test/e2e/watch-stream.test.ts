/**
 * `longrun watch` shows the model's output as it is written (the agent's live stream, docs/streaming.md): part of a
 * reply is on its output while the turn still runs, then the whole reply on one line, then the turn's line.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv } from '../support/longrun-cli.ts';

const REPLY = 'The ferry to the islands leaves at nine and at half past three; the last one back is at six.';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(() => ({ content: REPLY, chunkDelayMs: 120 }));
});
afterAll(async () => {
  await h?.close();
});

describe('longrun watch and the live stream', () => {
  it('prints the reply as it is written, before the turn ends, then the turn', async () => {
    const agentId = newAgentId('watchtokens');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const child = spawn(
      process.execPath,
      [join(PROJECT_ROOT, 'bin/longrun.js'), 'watch', agentId, '--interval', '200'],
      {
        env: cliEnv(h),
      },
    );
    let out = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      while (!out.includes(`watching ${agentId}`)) await sleep(50);
      await sleep(300); // the stream has found the end of the agent's log
      let done = false;
      const turn = sendMessage(h.client, agentId, 'When does the ferry leave?').then((result) => {
        done = true;
        return result;
      });
      const deadline = Date.now() + 30_000;
      while (!/» The ferry to/.test(out) && Date.now() < deadline) await sleep(20);
      const partial = out.slice(out.indexOf('» '));
      expect(done, `${out}\n${stderr}`).toBe(false);
      expect(partial.length).toBeLessThan(`» ${REPLY}`.length);
      expect((await turn).reply).toBe(REPLY);
      while (!/^turn 1 done/m.test(out) && Date.now() < deadline) await sleep(50);
      const lines = out.split('\n');
      const text = lines.indexOf(`» ${REPLY}`);
      expect(text, out).toBeGreaterThan(-1);
      expect(lines.findIndex((line) => line.startsWith('turn 1 done'))).toBeGreaterThan(text);
    } finally {
      child.kill('SIGINT');
      await exited;
    }
    await closeAgent(h.client, agentId);
  });
});
