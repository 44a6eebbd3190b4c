/**
 * Reaching an agent while it works, through the `longrun` CLI and the client library against the real stack: a steer
 * lands in a long tool loop at its next step boundary, an interrupt ends a turn during a long tool and during a slow
 * model call (the `send` gets a reply that says so), Ctrl-C in `longrun chat` interrupts the turn and a second one
 * leaves, and tool calls that wait for approval are listed, approved and denied.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools.ts';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { awaitingApproval, interruptAgent, steerAgent } from '../../client/control.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { interruptedReply } from '../../contract/results.ts';
import type { SendResult } from '../../contract/results.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, inTerminal, runLongrun, STACK_TRACE } from '../support/longrun-cli.ts';

/** How long one step of the tool loop takes (its tool's run): long enough to tell one step from the next. */
const TICK_MS = 1_000;
/** How long the slow model and the long tool would take if nothing stopped them. */
const SLOW_MS = 40_000;

let longToolStarts = 0;
const deployed: string[] = [];

const tick = defineTool({
  name: 'tick',
  description: 'One step of a long job',
  parameters: { type: 'object', properties: {} },
  run: async () => {
    await sleep(TICK_MS);
    return 'tick';
  },
});

const longTool = defineTool({
  name: 'long_tool',
  description: 'A job that takes a long time',
  parameters: { type: 'object', properties: {} },
  run: async (_args, { signal }) => {
    longToolStarts++;
    await sleep(SLOW_MS, undefined, { signal }); // an interrupt cancels it: the sleep throws
    return 'long job done';
  },
});

const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys to a target',
  parameters: { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] },
  run: ({ target }) => {
    deployed.push(String(target));
    return Promise.resolve(`deployed ${String(target)}`);
  },
});

const call = (id: string, name: string, args: unknown) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: JSON.stringify(args) },
});

/**
 * The model: the last user message says what to do. `loop …` calls `tick` step after step, for ever; `long tool …`
 * calls `long_tool` once; `slow model …` answers after {@link SLOW_MS}; `deploy …` calls `deploy` once; `STEER: …`
 * (a steer) answers that it was steered; anything else is echoed. After a tool result that ends the job, the answer
 * quotes the result.
 */
function script(request: RecordedRequest): ScriptedReply {
  const messages = request.body.messages;
  const user = textOf(messages.findLast((m) => m.role === 'user')!.content);
  const last = messages.at(-1)!;
  if (user.startsWith('STEER:')) return { content: `steered: ${user.slice(6).trim()}` };
  if (user.startsWith('loop')) return { content: null, toolCalls: [call(`tick-${messages.length}`, 'tick', {})] };
  if (user.startsWith('slow model')) return { content: 'slow answer', delayMs: SLOW_MS };
  const tool = user.startsWith('long tool') ? 'long_tool' : user.startsWith('deploy') ? 'deploy' : undefined;
  if (tool && last.role === 'user') {
    return { content: null, toolCalls: [call(`${tool}-${messages.length}`, tool, { target: 'prod' })] };
  }
  if (tool) return { content: `${tool} said: ${textOf(last.content)}` };
  return { content: `echo: ${user}` };
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(script, [tick, longTool, deploy], { modelTimeoutMs: 2 * SLOW_MS });
});
afterAll(async () => {
  await h?.close();
});

function longrun(...args: string[]) {
  return runLongrun(args, { env: cliEnv(h) });
}

/** The model's requests of a turn opened by `text` (each test's text is its own): one per step, in order. */
function requestsOf(text: string): RecordedRequest[] {
  return h.model.requests.filter((r) => r.body.messages.some((m) => m.role === 'user' && m.content === text));
}

async function until<T>(what: string, look: () => T | Promise<T>, timeoutMs = 60_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = await look();
    if (seen) return seen;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function newAgent(prefix: string, extra: { toolApproval?: { tools: string[] } } = {}): Promise<string> {
  const agentId = newAgentId(prefix);
  await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue, ...extra });
  return agentId;
}

/** Every tool call in a request is answered, and every answer follows its call. */
function toolPairsWhole(messages: ChatMessage[]): boolean {
  const calls = new Set(messages.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []));
  const answered = new Set(messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id));
  return calls.size === answered.size && [...calls].every((id) => answered.has(id));
}

describe('steer', () => {
  it('longrun steer during a long tool loop: lands at a step boundary, after the tool results; the turn answers it', async () => {
    const agentId = await newAgent('steercli');
    const task = `loop ${agentId}`;
    const sending = sendMessage(h.client, agentId, task);
    await until('three steps of the loop', () => requestsOf(task).length >= 3);
    const steer = `STEER: wrap up ${agentId}`;
    const run = await longrun('steer', agentId, steer);
    expect(run.stderr).not.toMatch(STACK_TRACE);
    expect(run.code, run.stderr).toBe(0);
    const landed = /^steer landed in turn 1 at step (\d+) \(message (m\d+)\)$/.exec(run.stdout.trim());
    expect(landed, run.stdout).not.toBeNull();
    const step = Number(landed![1]);
    const result = await sending;
    expect(result.reply).toBe(`steered: wrap up ${agentId}`);
    expect(result.interrupted).toBeUndefined();
    // The step it names is the first model call that carries it, as a user message right after the step's tool
    // results; that call answered, so the turn ended there.
    const requests = requestsOf(task);
    const carrying = requests.map((r) => r.body.messages.some((m) => m.role === 'user' && m.content === steer));
    expect(carrying.indexOf(true) + 1).toBe(step);
    expect(requests).toHaveLength(step);
    const messages = requests[step - 1]!.body.messages;
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: steer });
    expect(messages.at(-2)!.role).toBe('tool');
    expect(toolPairsWhole(messages)).toBe(true);
    const state = await agentState(h.client, agentId);
    expect(state.messages.find((m) => m.id === landed![2])).toMatchObject({ role: 'user', steer: true });
    expect((await longrun('context', agentId)).stdout).toMatch(new RegExp(`^${landed![2]} +user \\(steer\\) `, 'm'));
  });

  it('steerAgent: the step it lands at is the next one after the step in flight when it was sent', async () => {
    const agentId = await newAgent('steerlib');
    const task = `loop ${agentId}`;
    const sending = sendMessage(h.client, agentId, task);
    await until('two steps of the loop', () => requestsOf(task).length >= 2);
    let inFlight = 0;
    const steered = await steerAgent(h.client, agentId, `STEER: now ${agentId}`, {
      onSent: () => (inFlight = requestsOf(task).length),
    });
    expect(steered.opened).toBe(false);
    expect(steered.turn).toBe(1);
    // The step in flight ends (its tool runs TICK_MS), then the next model call carries the steer; one more only when
    // that boundary passed while the Update was on its way.
    expect(steered.step).toBeGreaterThanOrEqual(inFlight + 1);
    expect(steered.step).toBeLessThanOrEqual(inFlight + 2);
    expect((await sending).reply).toBe(`steered: now ${agentId}`);
  });

  it('on an idle agent a steer opens a turn; --no-wait sends it as a Signal', async () => {
    const agentId = await newAgent('steeridle');
    const opened = await steerAgent(h.client, agentId, 'STEER: hello');
    expect(opened).toMatchObject({ opened: true, turn: 1, step: 1 });
    await until('turn 1 to end', async () => (await agentState(h.client, agentId)).turns === 1);
    const run = await longrun('steer', agentId, 'STEER: again', '--no-wait');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`steer sent to ${agentId}`);
    await until('the signalled steer to open turn 2', async () => (await agentState(h.client, agentId)).turns === 2);
    expect(requestsOf('STEER: again')).toHaveLength(1);
  });
});

describe('interrupt', () => {
  it('longrun interrupt during a long tool: the turn ends at once, the send gets the interrupted reply, the call is answered', async () => {
    const agentId = await newAgent('intrtool');
    const task = `long tool ${agentId}`;
    const starts = longToolStarts;
    const sending = longrun('send', agentId, task, '--json'); // the CLI's send, waiting for the turn's reply
    await until('the long tool to start', () => longToolStarts > starts);
    const run = await longrun('interrupt', agentId);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('turn 1 interrupted at step 1');
    expect(run.ms).toBeLessThan(SLOW_MS / 2);
    const sent = await sending;
    expect(sent.code, sent.stderr).toBe(0);
    const result = JSON.parse(sent.stdout) as SendResult;
    expect(result.interrupted).toEqual({ step: 1 });
    expect(result.reply).toBe(interruptedReply(1, 1));
    expect(sent.stderr).toContain('longrun: turn 1 was interrupted at step 1 (longrun interrupt, or Ctrl-C');
    // The next turn's request holds the long tool's call answered (as interrupted), the pair whole.
    expect((await sendMessage(h.client, agentId, `after ${agentId}`)).reply).toBe(`echo: after ${agentId}`);
    const next = requestsOf(`after ${agentId}`)[0]!.body.messages;
    expect(toolPairsWhole(next)).toBe(true);
    const answer = next.find((m) => m.role === 'tool' && m.tool_call_id?.startsWith('long_tool-'));
    expect(textOf(answer?.content)).toMatch(/interrupted/i);
  });

  it('longrun interrupt with text during a slow model call: ends the turn at step 1 and opens the next with the text', async () => {
    const agentId = await newAgent('intrmodel');
    const task = `slow model ${agentId}`;
    const sending = sendMessage(h.client, agentId, task);
    await until('the slow model call', () => requestsOf(task).length === 1);
    const run = await longrun('interrupt', agentId, 'instead,', agentId);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('turn 1 interrupted at step 1; turn 2 opens with the text');
    expect(run.ms).toBeLessThan(SLOW_MS / 2);
    const result = await sending;
    expect(result).toMatchObject({ turn: 1, interrupted: { step: 1 }, reply: interruptedReply(1, 1) });
    await until('turn 2 to end', async () => (await agentState(h.client, agentId)).turns === 2);
    expect(requestsOf(`instead, ${agentId}`)).toHaveLength(1);
  });

  it('on an idle agent nothing is interrupted (exit 0, saying so); interruptAgent says the same', async () => {
    const agentId = await newAgent('intridle');
    const run = await longrun('interrupt', agentId, '--json');
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ interrupted: false, reason: 'no turn in progress' });
    expect((await longrun('interrupt', agentId)).stdout.trim()).toBe('nothing to interrupt: no turn in progress');
    expect(await interruptAgent(h.client, agentId)).toMatchObject({ interrupted: false });
  });
});

describe('longrun chat', () => {
  it('Ctrl-C during a turn interrupts it and the chat goes on; a second Ctrl-C leaves (130)', async () => {
    const agentId = await newAgent('chatctrlc');
    // Its own process group, as a shell runs it: Ctrl-C goes to the group.
    const chat = inTerminal(process.execPath, [join(PROJECT_ROOT, 'bin/longrun.js'), 'chat', agentId], cliEnv(h));
    const { child, out, exited, ctrlC } = chat;
    try {
      const task = `slow model ${agentId}`;
      child.stdin.write(`${task}\n`);
      await until('the slow model call', () => requestsOf(task).length === 1);
      const pressed = Date.now();
      ctrlC();
      await until('the interrupted turn in the chat', () => /\(turn 1 interrupted at step 1, /.test(out.stdout));
      expect(Date.now() - pressed).toBeLessThan(SLOW_MS / 2);
      expect(out.stderr).toContain('longrun: interrupting the turn in progress (Ctrl-C again leaves the chat)');
      expect(out.stdout).toContain(`longrun > ${interruptedReply(1, 1)}`);
      // The chat goes on: the next line is a turn of its own.
      child.stdin.write(`go on ${agentId}\n`);
      await until('the next reply', () => out.stdout.includes(`agent > echo: go on ${agentId}`));
      await sleep(300);
      ctrlC();
      expect(await exited).toBe(130);
      expect(out.stderr).not.toMatch(STACK_TRACE);
    } finally {
      child.kill('SIGKILL');
    }
    expect((await agentState(h.client, agentId)).turns).toBe(2);
  });
});

describe('tool approval', () => {
  /** Starts a turn whose deploy call waits for approval; resolves with the send and the call waiting. */
  async function waitingDeploy(prefix: string, startWith?: string[]) {
    let agentId: string;
    if (startWith) {
      agentId = newAgentId(prefix);
      const started = await longrun('start', agentId, '--model', 'gpt-4o-mini', ...startWith);
      expect(started.code, started.stderr).toBe(0);
    } else {
      agentId = await newAgent(prefix, { toolApproval: { tools: ['deploy'] } });
    }
    const sending = sendMessage(h.client, agentId, `deploy ${agentId}`);
    await until('the model to ask for the deploy', () => requestsOf(`deploy ${agentId}`).length === 1);
    const [waiting] = await until('the deploy call to wait', () =>
      awaitingApproval(h.client, agentId).then((calls) => (calls.length > 0 ? calls : undefined)),
    );
    if (startWith?.includes('--approval-timeout')) {
      const seconds = Number(startWith[startWith.indexOf('--approval-timeout') + 1]);
      expect(Date.parse(waiting!.until) - Date.parse(waiting!.since)).toBe(seconds * 1000);
    }
    return { agentId, sending, callId: waiting!.callId };
  }

  it('longrun start --approve-tools; longrun tools lists the call and how to answer; state shows awaiting-approval; approve-tool lets it run', async () => {
    const { agentId, sending, callId } = await waitingDeploy('approvecli', [
      '--approve-tools',
      'deploy,rollback',
      '--approval-timeout',
      '600',
    ]);
    const runs = deployed.length;
    const tools = await longrun('tools', agentId);
    expect(tools.code, tools.stderr).toBe(0);
    expect(tools.stdout).toContain(`${callId}  tool deploy, waiting since `);
    expect(tools.stdout).toContain('  arguments: {"target":"prod"}');
    expect(tools.stdout).toMatch(/ left: at \S+ it is denied \(the model sees it was not approved\)/);
    expect(tools.stdout).toContain(`  approve: longrun approve-tool ${agentId} ${callId}`);
    expect(tools.stdout).toContain(`  deny:    longrun deny-tool ${agentId} ${callId} [reason]`);
    const json = JSON.parse((await longrun('tools', agentId, '--json')).stdout) as { callId: string }[];
    expect(json.map((c) => c.callId)).toEqual([callId]);
    const state = await longrun('state', agentId);
    expect(state.stdout).toContain('status   awaiting-approval');
    expect(state.stdout).toContain(`approval ${callId}: tool deploy({"target":"prod"}) waits: `);
    expect(deployed).toHaveLength(runs); // nothing ran while it waited
    // longrun watch, in a pipe: the step in progress names the call, its time left and the commands.
    const watch = inTerminal(process.execPath, [join(PROJECT_ROOT, 'bin/longrun.js'), 'watch', agentId], cliEnv(h));
    try {
      await until('watch to show the call', () => watch.out.stdout.includes('awaits approval'));
      expect(watch.out.stdout).toMatch(
        new RegExp(
          `tool deploy \\(${callId}\\) awaits approval \\(\\d+ min \\d+ s left, then denied\\): ` +
            `longrun approve-tool ${agentId} ${callId} \\| longrun deny-tool ${agentId} ${callId} \\[reason\\]`,
        ),
      );
    } finally {
      watch.kill();
    }

    const approved = await longrun('approve-tool', agentId, callId);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout.trim()).toBe(`approved ${callId} (tool deploy): it runs now`);
    expect((await sending).reply).toBe('deploy said: deployed prod');
    expect(deployed).toHaveLength(runs + 1);
    // Answered: nothing waits; answering again is refused by the workflow (exit 1).
    expect((await longrun('tools', agentId)).stdout.trim()).toBe(`no tool call of ${agentId} awaits approval`);
    const again = await longrun('approve-tool', agentId, callId);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^longrun: rejected: /);
  });

  it('longrun deny-tool with a reason: the tool does not run, the model sees the reason, the waiting send says why it waits', async () => {
    const agentId = await newAgent('denycli', { toolApproval: { tools: ['deploy'] } });
    const runs = deployed.length;
    // `longrun send` waits for the reply: its progress line says what the turn waits for, and how to answer.
    const send = inTerminal(
      process.execPath,
      [join(PROJECT_ROOT, 'bin/longrun.js'), 'send', agentId, `deploy ${agentId}`],
      cliEnv(h),
    );
    const { out, exited } = send;
    try {
      await until('the progress line of the waiting send', () => out.stderr.includes('waits for approval'), 30_000);
      expect(out.stderr).toMatch(
        new RegExp(
          `longrun: send to ${agentId}, \\d+ s: the agent waits for approval of a tool call: approve or deny it ` +
            `\\(longrun tools ${agentId} lists the calls and the commands that answer them\\)`,
        ),
      );
      const [waiting] = await awaitingApproval(h.client, agentId);
      const denied = await longrun('deny-tool', agentId, waiting!.callId, 'not during the freeze');
      expect(denied.code, denied.stderr).toBe(0);
      expect(denied.stdout.trim()).toBe(
        `denied ${waiting!.callId} (tool deploy): the model sees that it was denied, with the reason ` +
          '"not during the freeze"',
      );
      expect(await exited).toBe(0);
      expect(out.stdout).toMatch(/^deploy said: .*not during the freeze/);
    } finally {
      send.kill();
    }
    expect(deployed).toHaveLength(runs);
  });
});
