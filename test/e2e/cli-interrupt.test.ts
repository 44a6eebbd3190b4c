/**
 * Ctrl-C on the CLI as a terminal sends it (SIGINT to the whole process group): `send` says what became of its
 * message, with the Update's id, so nobody sends it twice; `watch` run through `npx` on the machine's own Node (here
 * older than the Node 24 the project pins: bin/longrun.js re-runs itself on it) ends with exit 0, and npm prints no
 * engine warning on the way.
 */
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, inTerminal } from '../support/longrun-cli.ts';

const REPLY_MS = 8_000; // the model takes this long: long enough to interrupt the wait

let h: Harness;
beforeAll(async () => {
  h = await startHarness(() => ({ content: 'Done thinking.', delayMs: REPLY_MS }));
});
afterAll(async () => {
  await h?.close();
});

const bin = join(PROJECT_ROOT, 'bin/longrun.js');

describe('Ctrl-C', () => {
  it('during send, once the message is out: says it was delivered, with its Update id; the turn still takes it once', async () => {
    const agentId = newAgentId('ctrlcsend');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'warm up'); // a worker seen, the first turn done
    const send = inTerminal(process.execPath, [bin, 'send', agentId, 'Plan the week.'], cliEnv(h));
    try {
      // The turn is under way once the model has the request.
      const deadline = Date.now() + 30_000;
      while (!h.model.requests.some((r) => JSON.stringify(r.body.messages).includes('Plan the week.'))) {
        if (Date.now() > deadline) throw new Error(`the message never reached the model: ${JSON.stringify(send.out)}`);
        await sleep(50);
      }
      send.ctrlC();
      expect(await send.exited).toBe(130);
      expect(send.out.stderr).toMatch(
        new RegExp(
          `longrun: interrupted; the message was delivered to ${agentId} \\(update [0-9a-f-]{36}\\) and its turn goes on: do not send it again`,
        ),
      );
    } finally {
      send.kill();
    }
    // The turn ends without the CLI, and holds the message once.
    const deadline = Date.now() + 30_000;
    let state = await agentState(h.client, agentId);
    while (state.turns < 2 && Date.now() < deadline) {
      await sleep(200);
      state = await agentState(h.client, agentId);
    }
    expect(state.turns).toBe(2);
    const last = h.model.requests.at(-1)!.body.messages as { role: string; content: unknown }[];
    expect(last.filter((m) => m.role === 'user' && m.content === 'Plan the week.')).toHaveLength(1);
  });

  it('during send, before any worker took it: says nothing was delivered', async () => {
    const agentId = newAgentId('ctrlcnone');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: `${h.taskQueue}-nobody` });
    const send = inTerminal(process.execPath, [bin, 'send', agentId, 'hello?'], cliEnv(h));
    try {
      await send.until(/waiting for a worker on task queue/, 'stderr', 20_000);
      send.ctrlC();
      expect(await send.exited).toBe(130);
      expect(send.out.stderr).toContain(
        `longrun: interrupted before the message was sent: nothing was delivered to ${agentId}`,
      );
    } finally {
      send.kill();
    }
  });

  it('ends `npx longrun watch`, and bin/longrun.js on the machine’s own Node, with exit 0 and no npm warning', async () => {
    const agentId = newAgentId('ctrlcwatch');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    // The PATH of a user's shell: not the one npm scripts give vitest (node_modules/.bin first, the pinned Node).
    const PATH = (process.env.PATH ?? '')
      .split(delimiter)
      .filter((dir) => !dir.includes('node_modules'))
      .join(delimiter);
    const ways: [string, string[]][] = [
      ['npx', ['longrun', 'watch', agentId]],
      ['node', [bin, 'watch', agentId]], // on a Node older than 22.18, bin/longrun.js runs itself again on Node 24
    ];
    for (const [command, args] of ways) {
      const watch = inTerminal(command, args, { ...cliEnv(h), PATH });
      try {
        await watch.until(new RegExp(`^watching ${agentId}`, 'm'), 'stdout');
        watch.ctrlC();
        expect(await watch.exited, `${command}: ${JSON.stringify(watch.out)}`).toBe(0);
        expect(watch.out.stderr).not.toMatch(/EBADENGINE|EBADDEVENGINES|npm warn/);
      } finally {
        watch.kill();
      }
    }
  });
});
