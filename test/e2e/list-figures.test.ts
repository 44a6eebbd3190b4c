/**
 * `longrun list` shows the figures `longrun state` shows: the turns and the context's tokens while a tool call waits
 * for approval in the agent's first turn (it showed `?` for both), and the context's tokens after a turn that moved
 * them by less than 2% of the window (it showed the figure of an earlier turn).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools.ts';
import { agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { approveTool, awaitingApproval } from '../../client/control.ts';
import { textOf } from '../../engine/messages.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';

const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys to a target',
  parameters: { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] },
  run: ({ target }) => Promise.resolve(`deployed ${String(target)}`),
});

/** `deploy …` calls the deploy tool once, then quotes its result; anything else is echoed. */
function script(request: RecordedRequest): ScriptedReply {
  const messages = request.body.messages;
  const last = messages.at(-1)!;
  const user = textOf(messages.findLast((m) => m.role === 'user')!.content);
  if (user.startsWith('deploy') && last.role === 'user') {
    const args = JSON.stringify({ target: 'prod' });
    return {
      content: null,
      toolCalls: [{ id: 'deploy-1', type: 'function', function: { name: 'deploy', arguments: args } }],
    };
  }
  if (last.role === 'tool') return { content: `done: ${textOf(last.content)}` };
  return { content: `echo: ${user}` };
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(script, [deploy]);
});
afterAll(async () => {
  await h?.close();
});

/** The agent's row of `longrun list`: its TURNS and CONTEXT cells as printed. */
async function listed(agentId: string): Promise<{ turns: string; context: string }> {
  const run = await runLongrun(['list'], { env: cliEnv(h) });
  expect(run.code, run.stderr).toBe(0);
  const row = run.stdout.split('\n').find((line) => line.startsWith(`${agentId} `));
  expect(row, run.stdout).toBeDefined();
  const [, , , turns, context] = row!.split(/ {2,}/);
  return { turns: turns!, context: context! };
}

/**
 * `list`'s row once it shows `turns` and `context` (visibility is written after the workflow task: a moment later),
 * or as it was after 10 s.
 */
async function listedAs(agentId: string, turns: number, context: number): Promise<{ turns: string; context: string }> {
  const wanted = { turns: String(turns), context: String(context) };
  const deadline = Date.now() + 10_000;
  for (;;) {
    const row = await listed(agentId);
    if ((row.turns === wanted.turns && row.context === wanted.context) || Date.now() > deadline) return row;
    await sleep(250);
  }
}

describe('longrun list', () => {
  it("shows the turns and the context's tokens as `state` does: while a tool call waits for approval, and after each turn", async () => {
    const agentId = newAgentId('listed');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      toolApproval: { tools: ['deploy'] },
    });
    const sending = sendMessage(h.client, agentId, 'deploy the site');
    const deadline = Date.now() + 30_000;
    let waiting = await awaitingApproval(h.client, agentId);
    while (waiting.length === 0) {
      if (Date.now() > deadline) throw new Error('the deploy call never waited for approval');
      await sleep(100);
      waiting = await awaitingApproval(h.client, agentId);
    }
    // The first turn, waiting: the state's figures, not `?`.
    const waitingState = await agentState(h.client, agentId);
    expect(waitingState.shownStatus).toBe('awaiting-approval');
    expect(await listedAs(agentId, waitingState.turns, waitingState.contextTokens)).toEqual({
      turns: String(waitingState.turns),
      context: String(waitingState.contextTokens),
    });

    await approveTool(h.client, agentId, waiting[0]!.callId);
    expect((await sending).reply).toBe('done: deployed prod');
    const first = await agentState(h.client, agentId);
    expect(await listedAs(agentId, 1, first.contextTokens)).toEqual({
      turns: '1',
      context: String(first.contextTokens),
    });

    // A short turn moves the context by far less than 2% of the window (128,000): shown all the same.
    await sendMessage(h.client, agentId, 'thanks');
    const second = await agentState(h.client, agentId);
    expect(second.contextTokens - first.contextTokens).toBeLessThan(0.02 * 128_000);
    expect(await listedAs(agentId, 2, second.contextTokens)).toEqual({
      turns: '2',
      context: String(second.contextTokens),
    });
    await closeAgent(h.client, agentId);
  });
});
