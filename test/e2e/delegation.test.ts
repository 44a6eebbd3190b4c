/**
 * Sub-agents (issue 30, item 4), end to end on the real stack: a parent's model calls `delegate` (or a team's
 * `delegateTo` tool); the parent's workflow starts a child agent workflow in task mode and answers the call with the
 * child's final answer and a manifest, bounded however much the child read; an interrupt of the parent while it waits
 * cancels the child; closing or terminating the parent closes its child; `longrun list` shows the child under its
 * parent; bad delegation input is refused naming the field; a steer while the parent waits lands at the next step.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { delegateTo, defineTool } from '../../activities/tools.ts';
import { agentHandle, agentState, closeAgent, compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { interruptAgent, steerAgent } from '../../client/control.ts';
import { listAgents } from '../../client/reads.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { DELEGATION_RESULT_TOKENS } from '../../contract/delegation.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import type { Responder } from '../../llm/chat-server.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import { eventsOfAllRuns, plansOf } from '../support/planned.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';

const PARENT = 'parent: you delegate.';
const CHILD = 'child: you read pages.';
/** Pages the child reads before it answers (each about 2,000 tokens). */
const PAGES = 12;
const PAGE = (n: number) =>
  `Page ${n} of the manual. ${'The valve settings are listed by pressure and flow. '.repeat(200)}`;
/** The child's answer: long (about 6,000 tokens), so the parent gets it cut, the whole named for context_reload. */
const LONG_ANSWER = `FINDING: valve 7 is set to 40 bar. ${'Further detail on each valve and each reading. '.repeat(600)}END`;

let released = false;
let holdStarted = 0;

const readPage = defineTool({
  name: 'read_page',
  description: 'Reads a page of the manual',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  run: ({ path }) => Promise.resolve(PAGE(Number(String(path).replace('doc-', '')))),
});

/** Waits until released (or its call is cancelled). */
const hold = defineTool({
  name: 'hold',
  description: 'Waits',
  parameters: { type: 'object', properties: {} },
  run: async (_args, { signal }) => {
    holdStarted++;
    while (!released && !signal?.aborted) await sleep(50);
    return 'held';
  },
});

const researcher = delegateTo({
  name: 'research',
  description: 'A researcher sub-agent',
  systemPrompt: `${CHILD} (research)`,
  turnBudget: { steps: 5 },
  tools: ['read_page'],
});

const call = (id: string, name: string, args: unknown) => ({
  content: null,
  toolCalls: [{ id, type: 'function' as const, function: { name, arguments: JSON.stringify(args) } }],
});

/**
 * The parent: "DELEGATE <task>" calls delegate, "RESEARCH <task>" calls research; after the result, a short answer.
 * The child: reads PAGES pages then answers LONG_ANSWER; a task "HOLD" calls hold first; the researcher answers short.
 */
const responder: Responder = (request, index) => {
  const messages = request.body.messages;
  const system = textOf(messages[0]?.content);
  const last = messages.at(-1)!;
  if (system.startsWith(PARENT)) {
    if (last.role === 'tool') return { content: `Parent done: ${textOf(last.content).slice(0, 300)}` };
    const text = textOf(last.content);
    if (text.startsWith('DELEGATE ')) return call(`call_p${index}`, 'delegate', { task: text.slice(9) });
    if (text.startsWith('RESEARCH ')) return call(`call_p${index}`, 'research', { task: text.slice(9) });
    if (text.startsWith('BADSTEPS ')) return call(`call_p${index}`, 'delegate', { task: 'x', max_steps: 10_000 });
    return { content: `re: ${text}` };
  }
  const task = textOf(messages.find((m) => m.role === 'user')?.content);
  const reads = messages.filter((m) => m.role === 'tool').length;
  if (system.endsWith('(research)')) {
    return reads === 0 ? call(`call_c${index}`, 'read_page', { path: 'doc-1' }) : { content: 'Researched: 40 bar.' };
  }
  if (task === 'HOLD') return reads === 0 ? call(`call_h${index}`, 'hold', {}) : { content: 'held and done' };
  if (reads < PAGES) return call(`call_c${index}`, 'read_page', { path: `doc-${reads + 1}` });
  return { content: LONG_ANSWER };
};

let h: Harness;

beforeAll(async () => {
  h = await startHarness(responder, [readPage, hold, researcher]);
});

afterAll(async () => {
  released = true;
  await h?.close();
});

async function parentAgent(prefix: string): Promise<string> {
  const agentId = newAgentId(prefix);
  await startAgent(h.client, {
    agentId,
    model: 'gpt-4o-mini',
    taskQueue: h.taskQueue,
    systemPrompt: PARENT,
    delegation: { systemPrompt: CHILD, turnBudget: { steps: 20 }, tools: ['read_page', 'hold'] },
  });
  return agentId;
}

/** The status of a workflow as Temporal describes it (RUNNING, COMPLETED, CANCELLED, TERMINATED…). */
async function workflowStatus(agentId: string): Promise<string> {
  return (await agentHandle(h.client, agentId).describe()).status.name;
}

async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('delegate', () => {
  it('a delegated task: the child reads far more than the parent grows by; the answer and manifest come back; list shows the child', async () => {
    const parentId = await parentAgent('deleg');
    await sendMessage(h.client, parentId, 'hello'); // the system prompt and a first turn: growth below is the task's
    const before = (await agentState(h.client, parentId)).contextTokens;
    const result = await sendMessage(h.client, parentId, 'DELEGATE Find the valve settings in the manual.');
    const childId = `${parentId}.d2-1-1`;
    expect(result.reply).toContain(`Parent done: [delegated to sub-agent ${childId}: done]`);

    const parent = await agentState(h.client, parentId);
    const growth = parent.contextTokens - before;
    const child = await agentState(h.client, childId);
    // The child read PAGES pages of ~2,000 tokens and answered ~6,000: its context holds far more than 2,000 tokens.
    expect(child.status).toBe('closed');
    expect(child.task).toMatchObject({ parent: parentId, steps: PAGES + 1, toolCalls: PAGES });
    expect(child.contextTokens).toBeGreaterThan(20_000);
    // The parent's context grew by the task, the call, its bounded result and the answer: at most 2,000 tokens.
    expect(growth).toBeLessThanOrEqual(2_000);
    console.log(`delegation: child context ${child.contextTokens} tokens, parent growth ${growth} tokens`);

    const resultRecord = parent.messages.find((m) => m.role === 'tool')!;
    expect(resultRecord.tokens).toBeLessThanOrEqual(DELEGATION_RESULT_TOKENS);
    expect(resultRecord.kind).toBe('truncated');
    const stored = JSON.parse((await h.store.get(resultRecord.key))!) as ChatMessage;
    const content = textOf(stored.content);
    expect(content).toContain(`[delegated to sub-agent ${childId}: done] ${PAGES + 1} step(s), ${PAGES} tool call(s)`);
    expect(content).toContain('- read_page doc-1 ×1');
    expect(content).toContain('FINDING: valve 7 is set to 40 bar.');
    expect(content).toContain(`context_reload("${resultRecord.ref}")`);
    // The whole answer is stored under the reference the cut names.
    const whole = textOf((JSON.parse((await h.store.get(resultRecord.ref!))!) as ChatMessage).content);
    expect(whole).toContain(LONG_ANSWER);

    // The child is a child workflow of the parent's, and `longrun list` shows it right under its parent.
    const description = await agentHandle(h.client, childId).describe();
    expect(description.raw.workflowExecutionInfo?.parentExecution?.workflowId).toBe(agentWorkflowId(parentId));
    const listed = await listAgents(h.client);
    expect(listed.find((a) => a.agentId === childId)).toMatchObject({ parent: parentId, status: 'closed' });
    const cli = await runLongrun(['list'], { env: cliEnv(h) });
    expect(cli.code, cli.stderr).toBe(0);
    const lines = cli.stdout.split('\n');
    const shown = await runLongrun(['state', childId], { env: cliEnv(h) });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(
      `task     sub-agent of ${parentId}: done (${PAGES + 1} step(s), ${PAGES} tool call(s)`,
    );
    const at = lines.findIndex((line) => line.startsWith(`${parentId} `));
    expect(at).toBeGreaterThan(-1);
    expect(lines[at + 1]).toMatch(new RegExp(`^\\s+└ ${childId.replaceAll('.', '\\.')}\\s+closed`));

    // A compaction asked for after it plans by reference (whether or not it finds anything to remove): what
    // reportDelegation stored beside the result (the tool, the cut and its original) lets the plan derive the record
    // the parent holds, so the plan does not answer "records differ" and the workflow sends nothing again.
    await compactAgent(h.client, parentId, { strategy: 'truncate-rounds', evenIfLarger: true });
    const plans = plansOf(await eventsOfAllRuns(h.client, agentWorkflowId(parentId)));
    expect(plans.length).toBeGreaterThan(0);
    expect(plans.map((p) => p.outcome?.reason)).not.toContain('records differ');
    expect(plans.every((p) => p.contextRef !== undefined && p.contextRef.tail === undefined)).toBe(true);
  }, 120_000);

  it("a team's delegateTo tool starts its configured child: its own prompt, tools and budget", async () => {
    const parentId = newAgentId('team');
    await startAgent(h.client, {
      agentId: parentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      systemPrompt: PARENT,
    });
    const result = await sendMessage(h.client, parentId, 'RESEARCH the valve pressure');
    const childId = `${parentId}.d1-1-1`;
    expect(result.reply).toContain(`[delegated to sub-agent ${childId}: done]`);
    const child = await agentState(h.client, childId);
    expect(child.systemPrompt).toBe(`${CHILD} (research)`);
    // Only its own tools (and the built-in context tools) went to the child's model; no delegate.
    const childRequest = h.model.requests.find((r) => textOf(r.body.messages[0]?.content) === `${CHILD} (research)`)!;
    const names = (childRequest.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(names).toContain('read_page');
    expect(names).not.toContain('hold');
    expect(names).not.toContain('delegate');
    const parentState = await agentState(h.client, parentId);
    const key = parentState.messages.find((m) => m.role === 'tool')!.key;
    const stored = JSON.parse((await h.store.get(key))!) as ChatMessage;
    expect(textOf(stored.content)).toContain('Researched: 40 bar.');
  }, 60_000);

  it('an interrupt while the parent waits cancels the child and answers the call as interrupted', async () => {
    const parentId = await parentAgent('deleg-int');
    const startedBefore = holdStarted;
    const turn = sendMessage(h.client, parentId, 'DELEGATE HOLD');
    await until('the child to run its tool', () => holdStarted > startedBefore);
    const childId = `${parentId}.d1-1-1`;
    expect(await workflowStatus(childId)).toBe('RUNNING');
    const interrupted = await interruptAgent(h.client, parentId);
    expect(interrupted).toMatchObject({ interrupted: true, turn: 1, step: 1 });
    expect((await turn).interrupted).toEqual({ step: 1 });
    expect(
      await until('the child to end', async () => {
        const status = await workflowStatus(childId);
        return status === 'RUNNING' ? undefined : status;
      }),
    ).toBe('CANCELLED');
    const parent = await agentState(h.client, parentId);
    const record = parent.messages.find((m) => m.role === 'tool')!;
    expect(record.preview).toContain(`[interrupted] The sub-agent ${childId} was cancelled before it answered`);
  }, 60_000);

  it('closing the parent cancels its waiting child; terminating it terminates the child (parent close policy)', async () => {
    const closed = await parentAgent('deleg-close');
    const terminated = await parentAgent('deleg-term');
    const startedBefore = holdStarted;
    void sendMessage(h.client, closed, 'DELEGATE HOLD').catch(() => undefined);
    void sendMessage(h.client, terminated, 'DELEGATE HOLD').catch(() => undefined);
    await until('both children to run their tool', () => holdStarted >= startedBefore + 2);
    await closeAgent(h.client, closed);
    await agentHandle(h.client, terminated).terminate('test: the parent is terminated');
    const ended = async (id: string) =>
      until(`${id} to end`, async () => {
        const status = await workflowStatus(id);
        return status === 'RUNNING' ? undefined : status;
      });
    // Cancelled by the close, or, when the parent's workflow completes before the child confirmed it, terminated by
    // the parent close policy: either way it is not left running.
    expect(['CANCELLED', 'TERMINATED']).toContain(await ended(`${closed}.d1-1-1`));
    expect(await ended(closed)).toBe('COMPLETED'); // (closed: its workflow completed)
    expect(await ended(`${terminated}.d1-1-1`)).toBe('TERMINATED');
    const parent = await agentState(h.client, closed);
    expect(parent.status).toBe('closed');
    expect(parent.messages.find((m) => m.role === 'tool')!.preview).toContain(
      'cancelled before it answered: the agent was closed',
    );
  }, 60_000);

  it('bad delegation input is refused naming the field; a call over the step limit is refused to the model', async () => {
    const bad = (delegation: unknown) =>
      startAgent(h.client, {
        agentId: newAgentId('deleg-bad'),
        model: 'gpt-4o-mini',
        taskQueue: h.taskQueue,
        delegation: delegation as never,
      });
    await expect(bad({ turnBudget: { steps: 0 } })).rejects.toThrow(
      'delegation.turnBudget.steps: 0 is not allowed (an integer from 1 to 1,000,000)',
    );
    await expect(bad({ tools: ['delegate'] })).rejects.toThrow('delegation.tools: a child cannot delegate');
    await expect(bad({ modle: 'x' })).rejects.toThrow('delegation.modle: unknown field');
    expect(() => delegateTo({ name: 'r', description: 'd', turnBudget: { steps: -1 } })).toThrow(
      'delegateTo("r").turnBudget.steps: -1 is not allowed',
    );
    const parentId = await parentAgent('deleg-steps');
    const result = await sendMessage(h.client, parentId, 'BADSTEPS now');
    expect(result.reply).toContain(
      '[refused] delegate: max_steps: 10000 is not allowed (an integer from 1 to 20, this agent',
    );
  }, 60_000);

  // (Last: it releases every held tool.)
  it('a steer while the parent waits is taken at the next step, after the delegated answer', async () => {
    const parentId = await parentAgent('deleg-steer');
    const startedBefore = holdStarted;
    const turn = sendMessage(h.client, parentId, 'DELEGATE HOLD');
    await until('the child to run its tool', () => holdStarted > startedBefore);
    const steer = steerAgent(h.client, parentId, 'also check the pumps');
    await sleep(500);
    released = true;
    expect(await steer).toMatchObject({ turn: 1, step: 2, opened: false });
    const result = await turn;
    expect(result).toMatchObject({ reply: 're: also check the pumps', steps: 2 });
    const parent = await agentState(h.client, parentId);
    const roles = parent.messages.map((m) => m.role);
    expect(roles.slice(-4)).toEqual(['assistant', 'tool', 'user', 'assistant']);
    expect(parent.messages.at(-3)!.preview).toContain(`[delegated to sub-agent ${parentId}.d1-1-1: done]`);
  }, 60_000);
});
