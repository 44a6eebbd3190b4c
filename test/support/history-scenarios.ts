/**
 * The representative agents whose histories each release records (test/support/record-histories.ts): turns with
 * tools, failed turns, a turn budget, compactions of each kind (automatic, forced by Update and by Signal, skipped,
 * with the summarizer failing), a context overflow, continue-as-new, close and reopen. Each drives one agent through
 * the client library against a scripted model, checks that the agent did what the scenario is named for, and says
 * which run its recording starts from.
 */
import type { Client } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool } from '../../activities/tools.ts';
import {
  agentHandle,
  agentState,
  closeAgent,
  closeAgentAndWait,
  compactAgent,
  queueMessage,
  reopenAgent,
  requestCompaction,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import type { StartAgentOptions } from '../../client/agents.ts';
import { AgentUpdateError } from '../../client/update-errors.ts';
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

/** What the script is told between scenarios (they run one after the other). */
export interface ScriptSwitches {
  summarizerDown: boolean;
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
 * or for any other message, a short answer.
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

export interface ScenarioContext {
  client: Client;
  store: S3BlobStore;
  taskQueue: string;
  switches: ScriptSwitches;
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
      const forced = await compactAgent(context.client, agentId, {
        strategy: 'summarize',
        instructions: 'Keep the page numbers.',
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
        const result = await compactAgent(context.client, agentId, { strategy: 'summarize' });
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
];
