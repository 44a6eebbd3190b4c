/**
 * The representative agents whose histories each release records (test/support/record-histories.ts): turns with
 * tools, failed turns, a turn budget, compactions of each kind (automatic, forced by Update and by Signal, skipped,
 * with the summarizer failing), a context overflow, continue-as-new, close and reopen; and agents reached while they
 * work (issue 28): forced compactions and steers taken mid-turn, interrupts, tool approval (approved, denied, timed
 * out, across a worker restart) and continue-as-new after them. Each drives one agent through the client library (the
 * reached ones through the workflow's raw Updates and Signals) against a scripted model, checks that the agent did
 * what the scenario is named for, and says which run its recording starts from.
 */
import { WorkflowUpdateStage } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool } from '../../activities/tools.ts';
import {
  agentHandle,
  agentState,
  closeAgent,
  closeAgentAndWait,
  compactAgent,
  queueMessage,
  requestCompaction,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import { reopenAgent } from '../../client/agent-reopen.ts';
import type { StartAgentOptions } from '../../client/agents.ts';
import { AgentUpdateError } from '../../client/update-errors.ts';
import * as api from '../../contract/agent.ts';
import type { AgentProgress } from '../../contract/progress.ts';
import { interruptedReply } from '../../contract/results.ts';
import { textOf } from '../../engine/messages.ts';
import type { RecordedRequest, Responder, ScriptedReply } from '../../llm/chat-server.ts';
import type { S3BlobStore } from '../../storage/s3.ts';

export const AGENT_MODEL = 'gpt-4o-mini';
export const SUMMARY_MODEL = 'summary-model';

/** The agent whose provider refuses a request of more than {@link OVERFLOW_AFTER_MESSAGES} messages. */
const OVERFLOW_PROMPT = 'You read logs; your provider’s window is smaller than it says.';
const OVERFLOW_AFTER_MESSAGES = 8;

/** A page of a server log: deterministic, about 450 tokens (kept in S3, not in the history), different per page. */
export function logPage(page: number): string {
  return Array.from({ length: 30 }, (_, i) => `${page}.${i} GET /items/${page * 10 + i} 200 ${i * 7} ms`).join('\n');
}

export const TOOLS = [
  defineTool({
    name: 'echo',
    description: 'Echoes its text',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    run: ({ text }) => Promise.resolve(String(text)),
  }),
  defineTool({
    name: 'add',
    description: 'Adds two numbers',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    run: ({ a, b }) => Promise.resolve(String(Number(a) + Number(b))),
  }),
  defineTool({
    name: 'fetch_log',
    description: 'Fetches a page of the server log',
    parameters: { type: 'object', properties: { page: { type: 'integer' } }, required: ['page'] },
    run: ({ page }) => Promise.resolve(logPage(Number(page))),
  }),
  defineTool({
    name: 'broken',
    description: 'Always fails (a bug, not the model’s input)',
    parameters: { type: 'object', properties: {} },
    run: () => Promise.reject(new Error('disk on fire')),
  }),
];

/** The `hold` calls in progress, by agent (one at a time): each waits until its scenario lets it go. */
const holding = new Map<string, () => void>();
/** The agents whose `hold` call saw its cancellation (an interrupt cancelled it). */
const holdsCancelled = new Set<string>();

/**
 * The tools of the agents reached while they work, served by a worker of their own (the recorder's second task
 * queue), so that the agents above count the tool schemas they always did. `hold` reads a page of the log and
 * returns only when its scenario lets it go (a step that is in flight for as long as the scenario needs), or when
 * its call is cancelled: it honours its signal. `deploy` always waits for a person's approval.
 */
export const REACH_TOOLS = [
  defineTool({
    name: 'hold',
    description: 'Reads a page of the server log, slowly',
    parameters: {
      type: 'object',
      properties: { page: { type: 'integer' }, of: { type: 'integer' } },
      required: ['page', 'of'],
    },
    run: ({ page }, { agentId, signal }) =>
      new Promise((resolve, reject) => {
        const cancelled = () => {
          holding.delete(agentId);
          holdsCancelled.add(agentId);
          reject(new Error('cancelled'));
        };
        if (signal?.aborted) return cancelled();
        signal?.addEventListener('abort', cancelled, { once: true });
        holding.set(agentId, () => {
          holding.delete(agentId);
          signal?.removeEventListener('abort', cancelled);
          resolve(logPage(Number(page)));
        });
      }),
  }),
  defineTool({
    name: 'deploy',
    description: 'Deploys to a target',
    parameters: { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] },
    approval: 'always',
    run: ({ target }) => Promise.resolve(`deployed ${String(target)}`),
  }),
];

/** What the script is told between scenarios (they run one after the other), and what it tells them. */
export interface ScriptSwitches {
  summarizerDown: boolean;
  /** `[slow]` requests the model has received (each answered a minute later, unless cancelled before). */
  slowRequests: number;
}

const call = (id: string, name: string, args: unknown) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: JSON.stringify(args) },
});

/**
 * The model: the summary model answers a five-field summary (or HTTP 400 while the summarizer is down); the agent's
 * model acts on the command that opens the user's message: `[tools]` two tools at once, `[steps N]` N tool steps,
 * `[loop]` tools forever, `[page N]` the log's page N, `[broken]` the failing tool, `[401]` a rejected key; then,
 * or for any other message, a short answer. For the agents reached while they work: `[hold N]` N steps of `hold`
 * (the step rides in the call's arguments, so it holds whatever a compaction left of the turn), `[deploy T]` the
 * `deploy` tool, then its result as the answer, `[slow]` an answer a minute late. A steer (a user message after a
 * tool result) is answered at once.
 */
export function scriptedModel(switches: ScriptSwitches): Responder {
  return (request: RecordedRequest, index: number): ScriptedReply => {
    const { messages } = request.body;
    if (request.body.model === SUMMARY_MODEL) {
      if (switches.summarizerDown) return { status: 400, error: 'the summary model is switched off' };
      return {
        content: JSON.stringify({
          task_overview: 'Read the server log page by page.',
          current_state: 'Some pages read.',
          important_discoveries: 'Every request answered 200.',
          next_steps: 'Read the next page.',
          context_to_preserve: '/items',
          decisions: ['Read the pages in order'],
          done: ['The pages so far'],
          pending: ['The remaining pages'],
        }),
      };
    }
    if (messages[0]?.content === OVERFLOW_PROMPT && messages.length > OVERFLOW_AFTER_MESSAGES) {
      return { status: 400, error: "This model's maximum context length is 2048 tokens. Please reduce the length." };
    }
    const userAt = messages.findLastIndex((m) => m.role === 'user');
    const user = textOf(messages[userAt]?.content);
    const toolSteps = messages.slice(userAt + 1).filter((m) => m.role === 'assistant').length;
    const id = (n = 0) => `call_${index}_${n}`;
    const answer: ScriptedReply = { content: `Done (${messages.length} messages in view).` };
    if (user.startsWith('[401]')) return { status: 401, error: 'Incorrect API key provided' };
    if (user.startsWith('[loop]')) return { content: null, toolCalls: [call(id(), 'echo', { text: 'again' })] };
    const reached = reachedReply(messages, user, toolSteps, id(), switches);
    if (reached) return reached;
    if (toolSteps > 0 && !user.startsWith('[steps')) return answer;
    if (user.startsWith('[tools]')) {
      return { content: null, toolCalls: [call(id(0), 'echo', { text: 'hi' }), call(id(1), 'add', { a: 2, b: 3 })] };
    }
    const steps = Number(/^\[steps (\d+)\]/.exec(user)?.[1] ?? 0);
    if (toolSteps < steps) return { content: null, toolCalls: [call(id(), 'echo', { text: `step ${toolSteps + 1}` })] };
    const page = /^\[page (\d+)\]/.exec(user)?.[1];
    if (page && toolSteps === 0) return { content: null, toolCalls: [call(id(), 'fetch_log', { page: Number(page) })] };
    if (user.startsWith('[broken]')) return { content: null, toolCalls: [call(id(), 'broken', {})] };
    return answer;
  };
}

/** The replies to the commands of the agents reached while they work (see {@link scriptedModel}), if it is one. */
function reachedReply(
  messages: RecordedRequest['body']['messages'],
  user: string,
  toolSteps: number,
  callId: string,
  switches: ScriptSwitches,
): ScriptedReply | undefined {
  const last = messages.at(-1);
  const lastCall = messages.findLast((m) => m.tool_calls?.length)?.tool_calls?.[0];
  if (last?.role === 'tool' && lastCall?.function.name === 'hold') {
    const { page, of } = JSON.parse(lastCall.function.arguments) as { page: number; of: number };
    if (page < of) return { content: null, toolCalls: [call(callId, 'hold', { page: page + 1, of })] };
    return { content: `Read ${of} pages.` };
  }
  const hold = /^\[hold (\d+)\]/.exec(user)?.[1];
  if (hold && toolSteps === 0)
    return { content: null, toolCalls: [call(callId, 'hold', { page: 1, of: Number(hold) })] };
  const target = /^\[deploy (\S+)\]/.exec(user)?.[1];
  if (target && toolSteps === 0) return { content: null, toolCalls: [call(callId, 'deploy', { target })] };
  if (target) return { content: `Result: ${textOf(last?.content)}` };
  if (user.startsWith('[slow]')) {
    switches.slowRequests++;
    return { content: 'Too late.', delayMs: 60_000 };
  }
  return undefined;
}

export interface ScenarioContext {
  client: Client;
  store: S3BlobStore;
  taskQueue: string;
  switches: ScriptSwitches;
  /** The task queue of the worker with {@link REACH_TOOLS}, for the agents reached while they work. */
  reachTaskQueue: string;
  /** Stops that worker (after its tasks in flight) and starts a new one on its task queue. */
  restartReachWorker: () => Promise<void>;
}

export interface Scenario {
  /** The fixture's name (`<name>.json`, later runs of its chain `<name>.run2.json`, …). */
  name: string;
  /** What the history holds. */
  about: string;
  /** At least this many runs must be recorded (a continue-as-new crossed). */
  minRuns?: number;
  /** Drives agent `agentId`; resolves to the run id the recording starts from. Throws if the agent went astray. */
  run(context: ScenarioContext, agentId: string): Promise<string>;
}

/** Starts the agent; resolves to its first run id. */
async function start(
  context: ScenarioContext,
  agentId: string,
  options: Partial<StartAgentOptions> = {},
): Promise<string> {
  const handle = await startAgent(context.client, {
    agentId,
    model: AGENT_MODEL,
    taskQueue: context.taskQueue,
    ...options,
  });
  return (await handle.describe()).runId;
}

/** Sends `text`; resolves to the turn's failure type (`TurnFailed`), which must happen. */
async function sendFailing(context: ScenarioContext, agentId: string, text: string): Promise<string> {
  const error = await sendMessage(context.client, agentId, text).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof AgentUpdateError)) throw new Error(`${agentId}: "${text}" should have failed its turn`);
  return error.type;
}

function check(agentId: string, ok: boolean, what: string): void {
  if (!ok) throw new Error(`${agentId}: ${what}`);
}

async function pages(context: ScenarioContext, agentId: string, from: number, to: number): Promise<void> {
  for (let page = from; page <= to; page++) await sendMessage(context.client, agentId, `[page ${page}] Read it.`);
}

/** Polls `probe` every 50 ms until it gives a value (at most 30 s); throws naming what never came. */
async function until<T>(
  agentId: string,
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(50);
  }
  throw new Error(`${agentId}: never ${what}`);
}

function progress(context: ScenarioContext, agentId: string): Promise<AgentProgress> {
  return agentHandle(context.client, agentId).query(api.progressQuery);
}

/** Waits until the agent's `hold` call is in flight, then lets it go (its step ends). */
async function release(agentId: string): Promise<void> {
  const letGo = await until(agentId, 'held a step', () => holding.get(agentId));
  letGo();
}

/** Waits until the agent's `hold` call is in flight (the turn is inside a step). */
async function held(agentId: string): Promise<void> {
  await until(agentId, 'held a step', () => (holding.has(agentId) ? true : undefined));
}

/** Waits until a Signal's input is queued (the turn takes it at its next step boundary). */
async function queued(context: ScenarioContext, agentId: string): Promise<void> {
  await until(agentId, 'queued the Signal', async () =>
    (await progress(context, agentId)).queued > 0 ? true : undefined,
  );
}

/** Waits until a tool call of the turn waits for approval; resolves to its call id. */
async function awaitingApproval(context: ScenarioContext, agentId: string): Promise<string> {
  return until(
    agentId,
    'waited for approval',
    async () => (await progress(context, agentId)).awaitingApproval?.[0]?.callId,
  );
}

/** Waits until the agent has finished `turns` turns (a turn opened by a steer or an interrupt's text). */
async function turnsDone(context: ScenarioContext, agentId: string, turns: number): Promise<void> {
  await until(agentId, `finished ${turns} turns`, async () =>
    (await agentState(context.client, agentId)).turns >= turns ? true : undefined,
  );
}

/** Starts an Update and resolves once the workflow has accepted it (queued: the turn takes it at a step boundary). */
function accepted<R, I>(context: ScenarioContext, agentId: string, update: UpdateDefinition<R, [I]>, input: I) {
  return agentHandle(context.client, agentId).startUpdate(update, {
    args: [input],
    waitForStage: WorkflowUpdateStage.ACCEPTED,
  });
}

/** Small enough that a few pages of the log fill it. */
const SMALL_WINDOW = { window: 2_048 };
/** Recent turns barely protected, so that a forced compaction finds something to remove. */
const LOOSE_POLICY = { reserveRatio: 0, keepTurns: 1 };

export const SCENARIOS: Scenario[] = [
  {
    name: 'turns-with-tools',
    about: 'a system prompt, a turn without tools, two tools in one step, a turn of two tool steps',
    async run(context, agentId) {
      const runId = await start(context, agentId, { systemPrompt: 'You are a test agent.' });
      await sendMessage(context.client, agentId, 'Hello.');
      const both = await sendMessage(context.client, agentId, '[tools] Echo and add.');
      const two = await sendMessage(context.client, agentId, '[steps 2] Two steps.');
      check(agentId, both.toolCalls === 2 && two.steps === 3, `tool calls ${both.toolCalls}, steps ${two.steps}`);
      return runId;
    },
  },
  {
    name: 'turn-failed',
    about: 'a turn failed by the provider (HTTP 401), one by a tool after its retries, then a turn that succeeds',
    async run(context, agentId) {
      const runId = await start(context, agentId);
      await sendMessage(context.client, agentId, 'Hello.');
      const rejected = await sendFailing(context, agentId, '[401] Call the model.');
      const broken = await sendFailing(context, agentId, '[broken] Call the broken tool.');
      check(agentId, rejected === 'TurnFailed' && broken === 'TurnFailed', `failures ${rejected}, ${broken}`);
      const after = await sendMessage(context.client, agentId, 'And now?');
      check(agentId, after.turn === 2, `the turn after the failures is turn ${after.turn}`);
      return runId;
    },
  },
  {
    name: 'turn-budget',
    about: 'a turn stopped by its step budget (the turn-budget patch), then the next message',
    async run(context, agentId) {
      const runId = await start(context, agentId, { turnBudget: { steps: 2 } });
      const stopped = await sendMessage(context.client, agentId, '[loop] Keep calling tools.');
      check(agentId, stopped.stopped?.by === 'steps', `the turn was not stopped by its steps`);
      await sendMessage(context.client, agentId, 'Go on.');
      return runId;
    },
  },
  {
    name: 'compaction-auto',
    about: 'automatic compactions in a small window: before a model call, and when the turn’s own message makes it due',
    async run(context, agentId) {
      const runId = await start(context, agentId, {
        systemPrompt: 'You read server logs.',
        modelOverride: SMALL_WINDOW,
        compaction: LOOSE_POLICY,
      });
      for (let page = 1; page <= 8 && ((await agentState(context.client, agentId)).compactions ?? 0) < 1; page++) {
        await pages(context, agentId, page, page);
      }
      const before = await agentState(context.client, agentId);
      check(agentId, (before.compactions ?? 0) >= 1, `no compaction after 8 pages`);
      // A message just over the trigger (" word" is one token): the model call stores it and the agent compacts.
      const words = Math.max(before.gate!.tokens - before.contextTokens + 20, 1);
      await sendMessage(context.client, agentId, `Summarize so far.${' word'.repeat(words)}`);
      const after = await agentState(context.client, agentId);
      const events = after.events ?? [];
      check(
        agentId,
        after.compactions! > before.compactions! && events.every((e) => e.trigger === 'auto'),
        `events ${JSON.stringify(events.map((e) => [e.seq, e.trigger]))}`,
      );
      return runId;
    },
  },
  {
    name: 'compaction-forced',
    about: 'a compaction forced by Update (with instructions), one asked by Signal, one skipped (force: false)',
    async run(context, agentId) {
      const runId = await start(context, agentId, { compaction: LOOSE_POLICY });
      await pages(context, agentId, 1, 3);
      // (evenIfLarger: three pages are a short context, which a summary and the task ledger may not shrink.)
      const forced = await compactAgent(context.client, agentId, {
        strategy: 'summarize',
        instructions: 'Keep the page numbers.',
        evenIfLarger: true,
      });
      await pages(context, agentId, 4, 4);
      await requestCompaction(context.client, agentId, { strategy: 'truncate-rounds' });
      for (let i = 0; i < 100 && (await agentState(context.client, agentId)).compactions !== 2; i++) await sleep(100);
      const skipped = await compactAgent(context.client, agentId, { force: false });
      const state = await agentState(context.client, agentId);
      check(
        agentId,
        forced.compacted && state.compactions === 2 && !skipped.compacted,
        `forced ${forced.compacted}, compactions ${state.compactions}, skipped ${!skipped.compacted}`,
      );
      return runId;
    },
  },
  {
    name: 'compaction-summarizer-failed',
    about: 'a forced summary whose summary model fails: the fallback (truncate-rounds, extractive summary) runs',
    async run(context, agentId) {
      const runId = await start(context, agentId, { compaction: LOOSE_POLICY });
      await pages(context, agentId, 1, 3);
      context.switches.summarizerDown = true;
      try {
        const result = await compactAgent(context.client, agentId, { strategy: 'summarize', evenIfLarger: true });
        const notes = result.event?.notes ?? [];
        check(agentId, result.compacted && notes.some((n) => n.includes('failed')), `notes ${notes.join('; ')}`);
      } finally {
        context.switches.summarizerDown = false;
      }
      return runId;
    },
  },
  {
    name: 'context-overflow',
    about: 'the provider refuses a request over its window (ContextOverflow): compaction with the overflow trigger',
    async run(context, agentId) {
      const runId = await start(context, agentId, {
        systemPrompt: OVERFLOW_PROMPT,
        compaction: { ...LOOSE_POLICY, keepMessages: 0 },
      });
      await pages(context, agentId, 1, 3);
      const events = (await agentState(context.client, agentId)).events ?? [];
      check(
        agentId,
        events.length > 0 && events.every((e) => e.trigger === 'overflow'),
        `events ${JSON.stringify(events.map((e) => e.trigger))}`,
      );
      return runId;
    },
  },
  {
    name: 'continue-as-new',
    minRuns: 2,
    about: 'turns across a continue-as-new, an Update delivered again to the next run (answered, not applied), close',
    async run(context, agentId) {
      const runId = await start(context, agentId, { systemPrompt: 'You are a test agent.' });
      await sendMessage(context.client, agentId, 'Hello.');
      const once = await sendMessage(context.client, agentId, '[tools] Once.', { updateId: `${agentId}-once` });
      await sleep(2_100); // a run lives at least 2 s before it hands over (workflows/continue-as-new.ts)
      const handle = agentHandle(context.client, agentId);
      for (let i = 1; i <= 12 && (await handle.describe()).runId === runId; i++) {
        await sendMessage(context.client, agentId, `Turn ${i}.`);
      }
      check(agentId, (await handle.describe()).runId !== runId, 'no continue-as-new after 12 turns');
      const again = await sendMessage(context.client, agentId, '[tools] Once.', { updateId: `${agentId}-once` });
      check(agentId, again.turn === once.turn, `the Update sent again opened turn ${again.turn}`);
      await sendMessage(context.client, agentId, 'Last turn.');
      await closeAgent(context.client, agentId);
      await handle.result();
      return runId;
    },
  },
  {
    name: 'closed',
    about: 'a message queued by Signal, then close by Update: the queued turn first, then the agent ends',
    async run(context, agentId) {
      const runId = await start(context, agentId);
      await sendMessage(context.client, agentId, 'Hello.');
      await queueMessage(context.client, agentId, '[tools] Queued by Signal.');
      const final = await closeAgentAndWait(context.client, agentId);
      check(agentId, final.status === 'closed' && final.turns === 2, `${final.status} after ${final.turns} turns`);
      return runId;
    },
  },
  {
    name: 'reopened',
    about: 'the run that reopens a closed agent (a turn, then close by Signal)',
    async run(context, agentId) {
      await start(context, agentId);
      await sendMessage(context.client, agentId, 'Hello.');
      await closeAgent(context.client, agentId);
      const handle = agentHandle(context.client, agentId);
      await handle.result();
      await reopenAgent(context.client, context.store, agentId);
      const runId = (await handle.describe()).runId;
      const next = await sendMessage(context.client, agentId, 'Welcome back.');
      check(agentId, next.turn === 2, `the reopened agent's turn is ${next.turn}`);
      await closeAgent(context.client, agentId);
      await handle.result();
      return runId;
    },
  },
  {
    name: 'reach-compaction',
    about:
      'reachable turns: a compaction forced by Update and one by Signal sent while a tool step runs, each applied at ' +
      'the next step boundary of the same turn, which goes on',
    async run(context, agentId) {
      const runId = await start(context, agentId, { compaction: LOOSE_POLICY, taskQueue: context.reachTaskQueue });
      await pages(context, agentId, 1, 3);
      const turn = sendMessage(context.client, agentId, '[hold 4] Read four pages, slowly.');
      await held(agentId); // step 1's tool runs
      const byUpdate = await accepted(context, agentId, api.compactUpdate, { strategy: 'summarize' });
      await release(agentId);
      const forced = await byUpdate.result();
      const during = (await progress(context, agentId)).turn;
      await held(agentId); // step 2's tool runs
      await agentHandle(context.client, agentId).signal(api.compactSignal, { strategy: 'truncate-rounds' });
      await queued(context, agentId);
      await release(agentId);
      await held(agentId); // step 3's tool: the Signal's compaction was done before its model call
      const mid = await agentState(context.client, agentId);
      await release(agentId);
      await release(agentId);
      const result = await turn;
      const events = (await agentState(context.client, agentId)).events ?? [];
      check(
        agentId,
        forced.compacted &&
          during?.turn === 4 &&
          during.step === 2 &&
          mid.compactions === 2 &&
          mid.turns === 3 &&
          result.steps === 5 &&
          events.length === 2 &&
          events.every((e) => e.trigger === 'forced'),
        `compacted ${JSON.stringify(forced)} during ${JSON.stringify(during)}, ${mid.compactions} compactions in turn ` +
          `${mid.turns + 1}, ${result.steps} steps, events ${JSON.stringify(events.map((e) => e.trigger))}`,
      );
      return runId;
    },
  },
  {
    name: 'reach-steer',
    about:
      'reachable turns: a steer by Update and one by Signal, each added to the turn in progress at its next step ' +
      'boundary, then a steer to the idle agent, which opens a turn',
    async run(context, agentId) {
      const runId = await start(context, agentId, { taskQueue: context.reachTaskQueue });
      const first = sendMessage(context.client, agentId, '[hold 3] Read three pages, slowly.');
      await held(agentId);
      const byUpdate = await accepted(context, agentId, api.steerUpdate, { text: 'Steered by Update: stop there.' });
      await release(agentId);
      const landed = await byUpdate.result();
      const one = await first;
      const second = sendMessage(context.client, agentId, '[hold 3] Read them again.');
      await held(agentId);
      await agentHandle(context.client, agentId).signal(api.steerSignal, { text: 'Steered by Signal: stop there.' });
      await queued(context, agentId);
      await release(agentId);
      const two = await second;
      const idle = await agentHandle(context.client, agentId).executeUpdate(api.steerUpdate, {
        args: [{ text: 'Steered while idle.' }],
      });
      await turnsDone(context, agentId, 3);
      const state = await agentState(context.client, agentId);
      const steers = state.messages.filter((m) => m.steer).length;
      check(
        agentId,
        landed.turn === 1 &&
          landed.step === 2 &&
          !landed.opened &&
          one.steps === 2 &&
          two.steps === 2 &&
          idle.turn === 3 &&
          idle.opened &&
          state.turns === 3 &&
          steers === 2,
        `landed ${JSON.stringify(landed)}, steps ${one.steps} and ${two.steps}, idle ${JSON.stringify(idle)}, ` +
          `${state.turns} turns, ${steers} steers`,
      );
      return runId;
    },
  },
  {
    name: 'reach-interrupt',
    about:
      'reachable turns: an interrupt by Update during a tool that honours cancellation, one with text during a slow ' +
      'model call (its text opens the next turn), one by Signal, one with no turn in progress',
    async run(context, agentId) {
      const runId = await start(context, agentId, { taskQueue: context.reachTaskQueue });
      const handle = agentHandle(context.client, agentId);
      const first = sendMessage(context.client, agentId, '[hold 3] Read three pages, slowly.');
      await held(agentId);
      const duringTool = await handle.executeUpdate(api.interruptUpdate, { args: [{}] });
      const one = await first;
      const cancelled = holdsCancelled.has(agentId);
      const slowBefore = context.switches.slowRequests;
      const second = sendMessage(context.client, agentId, '[slow] Think it over.');
      await until(agentId, 'called the slow model', () =>
        context.switches.slowRequests > slowBefore ? true : undefined,
      );
      const duringModel = await handle.executeUpdate(api.interruptUpdate, { args: [{ text: 'Do this instead.' }] });
      const two = await second;
      await turnsDone(context, agentId, 3);
      holdsCancelled.delete(agentId);
      const fourth = sendMessage(context.client, agentId, '[hold 3] Read three pages, slowly.');
      await held(agentId);
      await handle.signal(api.interruptSignal, {});
      const four = await fourth;
      const idle = await handle.executeUpdate(api.interruptUpdate, { args: [{}] });
      const state = await agentState(context.client, agentId);
      check(
        agentId,
        duringTool.interrupted &&
          duringTool.step === 1 &&
          one.reply === interruptedReply(1, 1) &&
          cancelled &&
          duringModel.interrupted &&
          duringModel.opens === 3 &&
          two.interrupted?.step === 1 &&
          two.steps === 0 &&
          four.reply === interruptedReply(4, 1) &&
          holdsCancelled.has(agentId) &&
          !idle.interrupted &&
          idle.reason === 'no turn in progress' &&
          state.turns === 4,
        `during the tool ${JSON.stringify(duringTool)} (cancelled ${cancelled}), during the model call ` +
          `${JSON.stringify(duringModel)} (steps ${two.steps}), by Signal "${four.reply}", idle ` +
          `${JSON.stringify(idle)}, ${state.turns} turns`,
      );
      return runId;
    },
  },
  {
    name: 'reach-approval',
    about: 'tool approval: a call of a tool that always asks, approved; another, denied with a reason',
    async run(context, agentId) {
      const runId = await start(context, agentId, { taskQueue: context.reachTaskQueue });
      const handle = agentHandle(context.client, agentId);
      const first = sendMessage(context.client, agentId, '[deploy staging] Ship it.');
      const approved = await handle.executeUpdate(api.approveToolUpdate, {
        args: [{ callId: await awaitingApproval(context, agentId) }],
      });
      const one = await first;
      const second = sendMessage(context.client, agentId, '[deploy prod] Ship it.');
      const denied = await handle.executeUpdate(api.denyToolUpdate, {
        args: [{ callId: await awaitingApproval(context, agentId), reason: 'not on a Friday' }],
      });
      const two = await second;
      check(
        agentId,
        approved.decision === 'approved' &&
          one.reply === 'Result: deployed staging' &&
          denied.decision === 'denied' &&
          two.reply.startsWith('Result: [denied]') &&
          two.reply.endsWith(': not on a Friday'),
        `${approved.decision}: "${one.reply}"; ${denied.decision}: "${two.reply}"`,
      );
      return runId;
    },
  },
  {
    name: 'reach-approval-timeout',
    about: 'tool approval by name (toolApproval.tools): nobody answers, and the call runs at the timeout (1 s)',
    async run(context, agentId) {
      const runId = await start(context, agentId, {
        taskQueue: context.reachTaskQueue,
        toolApproval: { tools: ['echo'], timeoutSeconds: 1, onTimeout: 'approve' },
      });
      const began = Date.now();
      const result = await sendMessage(context.client, agentId, '[steps 1] Echo once.');
      const state = await agentState(context.client, agentId);
      const echoed = state.messages.find((m) => m.role === 'tool')?.preview ?? '';
      check(
        agentId,
        result.steps === 2 && echoed.includes('step 1') && Date.now() - began >= 1_000,
        `${result.steps} steps, the tool answered "${echoed}" after ${Date.now() - began} ms`,
      );
      return runId;
    },
  },
  {
    name: 'turn-hands-over',
    minRuns: 2,
    about:
      'a turn of 30 tool steps that outlasts its run: the run hands over inside it at a step boundary (its send ' +
      'answered handedOver and sent again to the next run, which goes on with the turn), a message queued behind ' +
      'it carried over and answered as the next turn, close',
    async run(context, agentId) {
      const runId = await start(context, agentId, { systemPrompt: 'You are a test agent.' });
      const handle = agentHandle(context.client, agentId);
      const long = sendMessage(context.client, agentId, '[steps 30] Thirty steps.');
      await until(agentId, 'began the long turn', async () =>
        (await progress(context, agentId)).turn !== undefined ? true : undefined,
      );
      const next = sendMessage(context.client, agentId, 'After the long turn.');
      const [turn, after] = await Promise.all([long, next]);
      const runs = (await agentState(context.client, agentId)).runs ?? 1;
      check(
        agentId,
        turn.turn === 1 && turn.steps === 31 && after.turn === 2 && runs >= 2,
        `turn ${turn.turn} of ${turn.steps} steps, then turn ${after.turn}; ${runs} runs`,
      );
      await closeAgent(context.client, agentId);
      await handle.result();
      return runId;
    },
  },
  {
    name: 'reach-across-runs',
    minRuns: 2,
    about:
      'tool approval across a worker restart (the call waits, the worker stops, a new one takes the agent up and ' +
      'the approval reaches it), turns until continue-as-new, then a steer mid-turn in the next run, close',
    async run(context, agentId) {
      const runId = await start(context, agentId, { taskQueue: context.reachTaskQueue });
      const handle = agentHandle(context.client, agentId);
      const first = sendMessage(context.client, agentId, '[deploy prod] Ship it.');
      const callId = await awaitingApproval(context, agentId);
      await context.restartReachWorker();
      const approved = await handle.executeUpdate(api.approveToolUpdate, { args: [{ callId }] });
      const one = await first;
      await sleep(2_100); // a run lives at least 2 s before it hands over (workflows/continue-as-new.ts)
      for (let i = 1; i <= 12 && (await handle.describe()).runId === runId; i++) {
        await sendMessage(context.client, agentId, `Turn ${i}.`);
      }
      check(agentId, (await handle.describe()).runId !== runId, 'no continue-as-new after 12 turns');
      const last = sendMessage(context.client, agentId, '[hold 3] Read three pages, slowly.');
      await held(agentId);
      const steer = await accepted(context, agentId, api.steerUpdate, { text: 'Steered in the next run.' });
      await release(agentId);
      const landed = await steer.result();
      const after = await last;
      await closeAgent(context.client, agentId);
      await handle.result();
      check(
        agentId,
        approved.decision === 'approved' &&
          one.reply === 'Result: deployed prod' &&
          landed.step === 2 &&
          after.steps === 2,
        `${approved.decision}: "${one.reply}", the steer landed at ${JSON.stringify(landed)}, ${after.steps} steps`,
      );
      return runId;
    },
  },
];
