/**
 * A model endpoint that stops in the middle of a `send` reads as what it is, not as a missing worker: the progress
 * line says the model call waits to retry after a failure that names the model and the endpoint's URL, `longrun
 * state` shows the call failing, and once the endpoint is back on its port the turn completes.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, closeAgent, startAgent } from '../../client/agents.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, inTerminal, runLongrun } from '../support/longrun-cli.ts';

let h: Harness;
let back: ChatServer | undefined;
beforeAll(async () => {
  // The first request is held until the endpoint stops under it.
  h = await startHarness(() => new Promise(() => {}));
});
afterAll(async () => {
  await back?.close();
  await h?.close();
});

/** Waits until `check` holds, polling; fails with `what` after `timeoutMs`. */
async function until(check: () => boolean, what: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(what());
    await sleep(50);
  }
}

describe('a model endpoint that stops during a send', () => {
  it('is named in the progress line and in `state` as a failing model call; the turn completes once it is back', async () => {
    const agentId = newAgentId('down');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const endpoint = h.model.baseURL; // http://127.0.0.1:PORT/v1
    const port = Number(new URL(endpoint).port);
    const send = inTerminal(
      process.execPath,
      [join(PROJECT_ROOT, 'bin/longrun.js'), 'send', agentId, 'Plan the week.'],
      cliEnv(h),
    );
    const { out, exited } = send;
    try {
      await until(
        () => h.model.requests.length > 0,
        () => `the request never reached the model: ${JSON.stringify(out)}`,
      );
      await h.model.close(); // the endpoint stops under the call in flight

      // The progress line: the model call waits to retry, and the failure names the model and the endpoint.
      await until(
        // (A look that falls within an attempt says it runs; the next line, 15 s on, says it waits to retry.)
        () => /callModel \(attempt \d+, retrying/.test(out.stderr),
        () => `no progress line naming callModel retrying: ${JSON.stringify(out)}`,
        45_000,
      );
      const line = out.stderr.split('\n').find((l) => /callModel \(attempt \d+, retrying/.test(l))!;
      expect(line).toMatch(
        new RegExp(
          `the agent is working: callModel \\(attempt \\d+, retrying (in \\d+ s|now) after a failure, ` +
            `last failure: model gpt-4o-mini at ${endpoint.replace(/[.]/g, '\\.')}: Connection error\\.\\)`,
        ),
      );
      expect(out.stderr).not.toContain('waiting for a worker');

      // `state` shows the call failing, with the endpoint, while the status stays running.
      const state = await runLongrun(['state', agentId], { env: cliEnv(h) });
      expect(state.code, state.stderr).toBe(0);
      expect(state.stdout).toMatch(
        new RegExp(
          `^failing  callModel failed (once|\\d+ times), (retrying (in \\d+ s|now)|attempt \\d+ of 8 running)` +
            `.*: model gpt-4o-mini at ${endpoint.replace(/[.]/g, '\\.')}: Connection error\\.$`,
          'm',
        ),
      );
      expect(state.stdout).not.toContain('waiting for a worker');

      // The endpoint back on its port: the next attempt is answered and the turn completes.
      back = await startChatServer(() => ({ content: 'Back again: Monday first.' }), { port });
      expect(await exited, JSON.stringify(out)).toBe(0);
      expect(out.stdout).toContain('Back again: Monday first.');
      expect((await agentState(h.client, agentId)).turns).toBe(1);
    } finally {
      send.kill();
    }
    await closeAgent(h.client, agentId);
  }, 120_000);
});
