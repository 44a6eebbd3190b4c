/**
 * Bad input, table-driven, across the four ways in: the `longrun` CLI, the client library, the temporal CLI and the
 * HTTP model boundary (what a model's reply and a team's tools hand the worker). Each row is one case: what is
 * sent, the words the error must hold (the field and the limit), the CLI's exit code, and the state afterwards:
 *
 * - `unchanged`: the agent's state (status, turns, messages, tokens, compactions, dropped signals) and its stored
 *   objects are what they were before the row;
 * - `dropped`: a Signal, which cannot be rejected: dropped and counted in `droppedSignals`, nothing else changed;
 * - `absent`: the agent the row would have started does not exist, and nothing is stored under its id;
 * - `answered`: a model reply or tool result the worker cannot use as it is: the turn ends with every tool call
 *   answered (the error is the call's result, for the model to read), the agent running and intact.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools.ts';
import type { ToolDefinition } from '../../activities/tools.ts';
import {
  agentState,
  closeAgent,
  compactAgent,
  queueMessage,
  requestCompaction,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import { compactionEvents, compactionHistory } from '../../client/reads.ts';
import type { StartAgentOptions } from '../../client/agents.ts';
import { AGENT_WORKFLOW, agentWorkflowId } from '../../contract/agent.ts';
import type { AgentState, CompactInput } from '../../contract/agent.ts';
import { AGENT_ID_PATTERN, agentPrefix } from '../../contract/keys.ts';
import type { ChatMessage, ToolCall } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import { temporalCli } from '../support/temporal-cli.ts';

/** A team's tools that break their contract (`run` returns text): a number, an object, nothing. */
const untyped = (name: string, value: unknown): ToolDefinition =>
  defineTool({
    name,
    description: `returns ${JSON.stringify(value) ?? 'undefined'} instead of text`,
    parameters: { type: 'object', properties: {} },
    run: () => Promise.resolve(value as string),
  });
const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  run: ({ a, b }) => Promise.resolve(String(Number(a) + Number(b))),
});
const TOOLS = [add, untyped('count_rows', 42), untyped('lookup', { rows: 3 }), untyped('forgetful', undefined)];

const call = (id: string, name: string, args: unknown): ToolCall =>
  ({ id, type: 'function', function: { name, arguments: args } }) as ToolCall;

/** What the model answers to each model-boundary row's first request (the user's message names the row). */
const MODEL_REPLIES: Record<string, ScriptedReply> = {
  'unknown tool': { content: null, toolCalls: [call('u1', 'launch_missiles', '{}')] },
  'invalid JSON arguments': { content: null, toolCalls: [call('j1', 'add', '{"a": 2, "b":')] },
  'arguments a JSON array': { content: null, toolCalls: [call('j2', 'add', '[2, 3]')] },
  'arguments a JSON object, not its text': { content: null, toolCalls: [call('j3', 'add', { a: 2, b: 3 })] },
  'a tool name of 10 KB with control characters': {
    content: null,
    toolCalls: [call('n1', `evil\u0000\u001b[2J${'x'.repeat(10_240)}`, '{}')],
  },
  'a tool result that is a number': { content: null, toolCalls: [call('r1', 'count_rows', '{}')] },
  'a tool result that is an object': { content: null, toolCalls: [call('r2', 'lookup', '{}')] },
  'a tool result that is undefined': { content: null, toolCalls: [call('r3', 'forgetful', '{}')] },
  'context_reload outside the agent (..)': {
    content: null,
    toolCalls: [call('c1', 'context_reload', JSON.stringify({ reference: 'agents/OWN/../victim/m000001.json' }))],
  },
  'tool_calls that is not a list': { content: null, toolCalls: 'rm -rf /' as unknown as ToolCall[] },
  'a tool call id given twice': {
    content: null,
    toolCalls: [call('d1', 'add', '{"a":1,"b":1}'), call('d1', 'add', '{"a":2,"b":2}')],
  },
  'a tool call without a name': {
    content: null,
    toolCalls: [{ id: 'w1', type: 'function', function: { arguments: '{}' } } as unknown as ToolCall],
  },
  'content that is a number': { content: 42 as unknown as string },
  'context_reload with a bad page': {
    content: null,
    toolCalls: [call('c2', 'context_reload', JSON.stringify({ reference: 'OWN_MESSAGE', page: 'two' }))],
  },
};

/** The scripted model: a row's reply, then the tool results read back; anything else is answered plainly. */
function script(request: RecordedRequest): ScriptedReply {
  const messages = request.body.messages;
  const user = textOf(messages.findLast((m) => m.role === 'user')?.content);
  const row = /^model row: (.*)$/.exec(user)?.[1];
  if (row === undefined) return { content: `got ${messages.length} messages` };
  if (messages.at(-1)!.role === 'tool') {
    const results = messages.slice(messages.findLastIndex((m) => m.role === 'assistant') + 1);
    return { content: `results: ${results.map((m) => textOf(m.content)).join(' | ')}` };
  }
  // The agent's own keys stand in for the placeholders (each agent's objects are under its own prefix).
  const reply = JSON.stringify(MODEL_REPLIES[row]!)
    .replaceAll('agents/OWN/', `agents/${MODEL}/`)
    .replaceAll('OWN_MESSAGE', ownMessageKey);
  return JSON.parse(reply) as ScriptedReply;
}

const OPEN = newAgentId('bad-open');
const CLOSED = newAgentId('bad-closed');
const MODEL = newAgentId('bad-model');
let ownMessageKey = '';

let h: Harness;
let temporal: (...args: string[]) => Promise<string>;
let files: string;
beforeAll(async () => {
  h = await startHarness(script, TOOLS);
  temporal = await temporalCli(h);
  files = await mkdtemp(join(tmpdir(), 'bad-input-'));
  const start = (agentId: string) => startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
  await Promise.all([start(OPEN), start(CLOSED), start(MODEL)]);
  await Promise.all([sendMessage(h.client, OPEN, 'hello'), sendMessage(h.client, MODEL, 'hello')]);
  ownMessageKey = (await agentState(h.client, MODEL)).messages[0]!.key;
  await closeAgent(h.client, CLOSED);
  await h.client.workflow.getHandle(agentWorkflowId(CLOSED)).result();
});
afterAll(async () => {
  await h?.close();
});

type Surface = 'longrun CLI' | 'client library' | 'temporal CLI' | 'model boundary';

/** What a row produced: the error's text, and the exit code (CLI) or error type (library, workflow). */
interface Outcome {
  text: string;
  exit?: number | null;
  type?: string;
}

interface Row {
  surface: Surface;
  case: string;
  /** What is sent, as a reader would type it (long values abridged). */
  input: string;
  run: () => Promise<Outcome>;
  /** Words the error must hold: the field, and the limit or what is allowed. */
  error: (string | RegExp)[];
  /** The CLI's exit code (docs/cli.md: 2 bad usage, 3 unknown agent, 4 agent closed). */
  exit?: number;
  /** The error's class or failure type. */
  type?: string;
  state:
    | { unchanged: string }
    | { dropped: 'message' | 'compact'; agent: string }
    | { absent: string }
    /** The temporal CLI started the workflow: it failed at its start, before any activity or stored object. */
    | { failedAtStart: string }
    /** The model's reply was refused: the turn failed, the agent kept the user's message and nothing of the reply. */
    | { turnFailed: string }
    /** `longrun replay`: refused before it started anything (no server, no worker, no agent). */
    | { refusedBeforeStart: true }
    | { answered: true };
}

/** The CLI's outcome; a row's error is on stderr, and nothing is on stdout. */
async function cli(...args: string[]): Promise<Outcome> {
  const run = await runLongrun(args, { env: cliEnv(h), timeoutMs: 30_000 });
  expect(run.stdout, `stdout of longrun ${args.join(' ').slice(0, 200)}`).toBe('');
  return { text: run.stderr, exit: run.code };
}

/** A client call that must fail: its error's message and type (failure type, else class name). */
async function library(call: () => Promise<unknown>): Promise<Outcome> {
  const error = await call().then(
    () => undefined,
    (error: unknown) => error as Error & { type?: string },
  );
  expect(error, 'the call must fail').toBeDefined();
  return { text: error!.message, type: error!.type ?? error!.name };
}

/**
 * A temporal CLI command: its error, as the CLI logs it (`msg="unable to update workflow: … (type: InvalidInput, …)"`,
 * unescaped) and the failure type it names; '' when it succeeded (a Signal is always accepted).
 */
function temporalCliRun(...args: string[]): Promise<Outcome> {
  return temporal(...args).then(
    () => ({ text: '' }),
    (error: Error) => {
      const logged = /msg="((?:[^"\\]|\\.)*)"/.exec(error.message)?.[1]?.replaceAll('\\"', '"') ?? error.message;
      const type = /\(type: (\w+),/.exec(logged)?.[1];
      return { text: logged, ...(type ? { type } : {}) };
    },
  );
}

/** `temporal workflow update execute` / `signal` on an agent, the input from a file (an argument holds 128 KiB). */
async function tUpdate(agentId: string, name: string, input: unknown): Promise<Outcome> {
  const file = join(files, `${name}-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify(input));
  const target = ['--workflow-id', agentWorkflowId(agentId), '--name', name, '--input-file', file];
  return temporalCliRun('workflow', 'update', 'execute', ...target);
}
async function tSignal(agentId: string, name: string, input: unknown): Promise<Outcome> {
  const file = join(files, `${name}-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify(input));
  return temporalCliRun(
    'workflow',
    'signal',
    '--workflow-id',
    agentWorkflowId(agentId),
    '--name',
    name,
    '--input-file',
    file,
  );
}

/**
 * `temporal workflow start` of an agent with `input`: the workflow refuses it at its start. The outcome is its
 * failure (the workflow's result).
 */
async function tStart(agentId: string, input: unknown): Promise<Outcome> {
  const file = join(files, `start-${agentId}.json`);
  await writeFile(file, JSON.stringify(input));
  const started = await temporalCliRun(
    'workflow',
    'start',
    '--type',
    AGENT_WORKFLOW,
    '--task-queue',
    h.taskQueue,
    '--workflow-id',
    agentWorkflowId(agentId),
    '--input-file',
    file,
  );
  expect(started.text).toBe('');
  const failure = await h.client.workflow
    .getHandle(agentWorkflowId(agentId))
    .result()
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  const cause = (failure as WorkflowFailedError).cause as Error & { type?: string };
  return { text: cause.message, type: cause.type ?? cause.name };
}

/** A model-boundary row: a turn whose reply is the row's; the outcome is what the tool calls were answered with. */
async function modelTurn(row: string): Promise<Outcome> {
  const before = await agentState(h.client, MODEL);
  const result = await sendMessage(h.client, MODEL, `model row: ${row}`);
  const after = await agentState(h.client, MODEL);
  // The turn completed: the reply read the results back, every call was answered, the agent runs on.
  expect(result.reply).toMatch(/^results: /);
  expect(after).toMatchObject({ status: 'running', turns: before.turns + 1 });
  expect(after.lastError).toBeUndefined();
  const added = after.messages.slice(before.messages.length);
  const calls = added.flatMap((m) => m.toolCallIds ?? []);
  expect(added.filter((m) => m.role === 'tool').map((m) => m.toolCallId)).toEqual(calls);
  const stored = await Promise.all(
    added.filter((m) => m.role === 'tool').map(async (m) => JSON.parse((await h.store.get(m.key))!) as ChatMessage),
  );
  for (const message of stored) expect(typeof message.content).toBe('string');
  return { text: stored.map((m) => m.content as string).join(' | ') };
}

const x = (n: number) => 'x'.repeat(n);
const ID_10KB = `a${x(10_239)}`;
const FRESH = () => newAgentId('bad-fresh');

/** A JSONL recording in a temporary file, for `longrun replay`. */
async function recording(name: string, lines: string[]): Promise<string> {
  const file = join(files, `${name}.jsonl`);
  await writeFile(file, lines.join('\n'));
  return file;
}

const ID_RULE = 'must be 1 to 64 letters, digits, dots, underscores or hyphens';
const STRATEGY_LIST = 'is not one of truncate-tool-results, mask-tool-results';
const PRESET_LIST = 'one of default, astrbot, chatgpt-on-wechat, agentscope, agentscope-java, octomind';

function rows(): Row[] {
  const fresh = Array.from({ length: 18 }, FRESH);
  const start = (agentId: string, extra: Partial<StartAgentOptions>) => () =>
    library(() => startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue, ...extra }));
  const user = (m: string) => JSON.stringify({ role: 'user', content: m });
  return [
    // ── the longrun CLI ────────────────────────────────────────────────────────────────────────────────────────
    {
      surface: 'longrun CLI',
      case: 'empty text',
      input: 'send OPEN "   "',
      run: () => cli('send', OPEN, '   '),
      error: ['text: must not be empty'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'huge text',
      input: 'send OPEN <100,000 x> <100,001 x>',
      run: () => cli('send', OPEN, x(100_000), x(100_001)),
      error: ['text: 200002 characters is over the limit of 200000'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'unknown agent',
      input: 'send <fresh id> hi',
      run: () => cli('send', fresh[0]!, 'hi'),
      error: [`unknown agent ${fresh[0]!}`, 'longrun start'],
      exit: 3,
      state: { absent: fresh[0]! },
    },
    {
      surface: 'longrun CLI',
      case: 'closed agent',
      input: 'send CLOSED hi',
      run: () => cli('send', CLOSED, 'hi'),
      error: [`agent ${CLOSED} is closed`],
      exit: 4,
      state: { unchanged: CLOSED },
    },
    {
      surface: 'longrun CLI',
      case: 'id with a slash',
      input: 'state a/b',
      run: () => cli('state', `${OPEN}/x`),
      error: [`agent id "${OPEN}/x": ${ID_RULE}`],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'id ..',
      input: 'start ..',
      run: () => cli('start', '..'),
      error: [`agent id "..": ${ID_RULE}`, 'starting with a letter or digit'],
      exit: 2,
      state: { absent: '..' },
    },
    {
      surface: 'longrun CLI',
      case: 'id with control characters',
      input: 'start "a\\u0007\\u001b[2Jb"',
      run: () => cli('start', 'a\u0007\u001b[2Jb'),
      error: ['agent id "a\\u0007\\u001b[2Jb"', ID_RULE],
      exit: 2,
      state: { absent: 'a\u0007\u001b[2Jb' },
    },
    {
      surface: 'longrun CLI',
      case: 'id of 10 KB',
      input: 'start <10,240 characters>',
      run: () => cli('start', ID_10KB),
      error: [/agent id "ax{40,80}…" \(10240 characters\): must be 1 to 64/],
      exit: 2,
      state: { absent: ID_10KB },
    },
    {
      surface: 'longrun CLI',
      case: 'unicode id',
      input: 'start agënt-ü',
      run: () => cli('start', 'agënt-ü'),
      error: ['agent id "agënt-ü"', ID_RULE],
      exit: 2,
      state: { absent: 'agënt-ü' },
    },
    {
      surface: 'longrun CLI',
      case: 'unknown flag',
      input: 'state OPEN --bogus',
      run: () => cli('state', OPEN, '--bogus'),
      error: ["state: Unknown option '--bogus' (its options: --json)"],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'another command’s flag',
      input: 'send OPEN hi --strategy halve',
      run: () => cli('send', OPEN, 'hi', '--strategy', 'halve'),
      error: ['send: --strategy is not an option of this command (its options: --no-wait, --expect-turn, --json)'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'bad preset',
      input: 'start <fresh> --preset nope',
      run: () => cli('start', fresh[1]!, '--preset', 'nope'),
      error: [`preset: "nope" is not allowed (${PRESET_LIST})`],
      exit: 2,
      state: { absent: fresh[1]! },
    },
    {
      surface: 'longrun CLI',
      case: 'bad strategy',
      input: 'compact OPEN --strategy nope',
      run: () => cli('compact', OPEN, '--strategy', 'nope'),
      error: [`--strategy: "nope" ${STRATEGY_LIST}`],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'window not a number',
      input: 'start <fresh> --window abc',
      run: () => cli('start', fresh[2]!, '--window', 'abc'),
      error: ['--window: must be an integer ≥ 1 (got "abc")'],
      exit: 2,
      state: { absent: fresh[2]! },
    },
    {
      surface: 'longrun CLI',
      case: 'step budget over its limit',
      input: 'start <fresh> --max-steps 2000000',
      run: () => cli('start', fresh[3]!, '--max-steps', '2000000'),
      error: ['--max-steps: must be an integer from 1 to 1000000 (got "2000000")'],
      exit: 2,
      state: { absent: fresh[3]! },
    },
    {
      surface: 'longrun CLI',
      case: 'unknown model',
      input: 'start <fresh> --model my-finetune',
      run: () => cli('start', fresh[4]!, '--model', 'my-finetune'),
      error: ['unknown model "my-finetune"', "set the agent's window"],
      exit: 2,
      state: { absent: fresh[4]! },
    },
    {
      surface: 'longrun CLI',
      case: 'expected turn 0',
      input: 'send OPEN hi --expect-turn 0',
      run: () => cli('send', OPEN, 'hi', '--expect-turn', '0'),
      error: ['--expect-turn: must be an integer ≥ 1 (got "0")'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'negative event limit',
      input: 'events OPEN --limit -1',
      run: () => cli('events', OPEN, '--limit', '-1'),
      error: ['--limit: must be an integer ≥ 0 (got "-1")'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'instructions over their limit',
      input: 'compact OPEN --instructions <4,001 x>',
      run: () => cli('compact', OPEN, '--instructions', x(4_001)),
      error: ['instructions: 4001 characters is over the limit of 4000'],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'compact a closed agent',
      input: 'compact CLOSED',
      run: () => cli('compact', CLOSED),
      error: [`agent ${CLOSED} is closed`],
      exit: 4,
      state: { unchanged: CLOSED },
    },
    {
      surface: 'longrun CLI',
      case: 'reload another agent’s key',
      input: 'reload OPEN agents/MODEL/…/m000001.json',
      run: () => cli('reload', OPEN, ownMessageKey),
      error: [`is outside agents/${OPEN}/`],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'reload a reference with ..',
      input: 'reload OPEN agents/OPEN/../MODEL/…',
      run: () => cli('reload', OPEN, `${agentPrefix(OPEN)}../${ownMessageKey.slice('agents/'.length)}`),
      error: [`is outside agents/${OPEN}/`],
      exit: 2,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'reload a reference with control characters',
      input: 'reload OPEN "agents/OPEN/\\u0001\\n"',
      run: () => cli('reload', OPEN, `${agentPrefix(OPEN)}\u0001\n`),
      error: [`nothing is stored under "${agentPrefix(OPEN)}\\u0001\\n"`],
      exit: 1,
      state: { unchanged: OPEN },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: a line that is not JSON',
      input: 'replay <user line, then {"role":>',
      run: async () => cli('replay', await recording('not-json', [user('hi'), '{"role":'])),
      error: ['line 2: not JSON'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: an unknown role',
      input: 'replay <{"role":"root","content":"x"}>',
      run: async () => cli('replay', await recording('role', [JSON.stringify({ role: 'root', content: 'x' })])),
      error: ['line 1: role must be one of system, user, assistant, tool'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: content of a wrong type',
      input: 'replay <{"role":"user","content":42}>',
      run: async () => cli('replay', await recording('content', [JSON.stringify({ role: 'user', content: 42 })])),
      error: ['line 1: content must be a string, an array of parts or null'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: tool_calls that are not a list',
      input: 'replay <user, {"role":"assistant","tool_calls":"rm -rf /"}>',
      run: async () =>
        cli(
          'replay',
          await recording('tool-calls', [user('hi'), JSON.stringify({ role: 'assistant', tool_calls: 'rm -rf /' })]),
        ),
      error: ['line 2: tool_calls must be an array of function calls'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: a tool call without a name',
      input: 'replay <user, assistant calling {"id":"c1","function":{}}>',
      run: async () =>
        cli(
          'replay',
          await recording('call-name', [
            user('hi'),
            JSON.stringify({ role: 'assistant', content: null, tool_calls: [{ id: 'c1', function: {} }] }),
          ]),
        ),
      error: ['line 2: tool_calls[0].function.name must be a string'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: a tool result without its call id',
      input: 'replay <user, {"role":"tool","content":"x"}>',
      run: async () =>
        cli('replay', await recording('tool-id', [user('hi'), JSON.stringify({ role: 'tool', content: 'x' })])),
      error: ['line 2: tool_call_id must be a non-empty string'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: no user message (an empty file)',
      input: 'replay <empty file>',
      run: async () => cli('replay', await recording('empty', [''])),
      error: ['has no user message'],
      exit: 2,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'replay: a missing file',
      input: 'replay /nonexistent.jsonl',
      run: () => cli('replay', join(files, 'nonexistent.jsonl')),
      error: ['no such file', 'nonexistent.jsonl'],
      exit: 1,
      state: { refusedBeforeStart: true },
    },
    {
      surface: 'longrun CLI',
      case: 'unknown command',
      input: 'frobnicate OPEN',
      run: () => cli('frobnicate', OPEN),
      error: ['unknown command "frobnicate"'],
      exit: 2,
      state: { unchanged: OPEN },
    },

    // ── the client library ─────────────────────────────────────────────────────────────────────────────────────
    {
      surface: 'client library',
      case: 'empty id',
      input: "startAgent({ agentId: '' })",
      run: start('', {}),
      error: [`agent id "": ${ID_RULE}`],
      type: 'InvalidAgentIdError',
      state: { absent: '' },
    },
    {
      surface: 'client library',
      case: 'id with a slash and ..',
      input: "startAgent({ agentId: 'x/../y' })",
      run: start('x/../y', {}),
      error: [`agent id "x/../y": ${ID_RULE}`],
      type: 'InvalidAgentIdError',
      state: { absent: 'x/../y' },
    },
    {
      surface: 'client library',
      case: 'id of 10 KB',
      input: 'startAgent({ agentId: <10,240 characters> })',
      run: start(ID_10KB, {}),
      error: [/^agent id "ax{40,80}…" \(10240 characters\): must be 1 to 64/],
      type: 'InvalidAgentIdError',
      state: { absent: ID_10KB },
    },
    {
      surface: 'client library',
      case: 'id of a wrong type',
      input: 'startAgent({ agentId: 42 })',
      run: start(42 as unknown as string, {}),
      error: ['agent id 42: must be a string'],
      type: 'InvalidAgentIdError',
      state: { absent: '42' },
    },
    {
      surface: 'client library',
      case: 'model of a wrong type',
      input: 'startAgent({ model: 42 })',
      run: start(fresh[10]!, { model: 42 as unknown as string }),
      error: ['model: must be a non-empty string (got 42)'],
      type: 'InvalidInputError',
      state: { absent: fresh[10]! },
    },
    {
      surface: 'client library',
      case: 'system prompt of a wrong type',
      input: "startAgent({ systemPrompt: { role: 'system' } })",
      run: start(fresh[11]!, { systemPrompt: { role: 'system' } as unknown as string }),
      error: ['systemPrompt: must be a string'],
      type: 'InvalidInputError',
      state: { absent: fresh[11]! },
    },
    {
      surface: 'client library',
      case: 'huge system prompt',
      input: 'startAgent({ systemPrompt: <200,001 x> })',
      run: start(fresh[12]!, { systemPrompt: x(200_001) }),
      error: ['systemPrompt: 200001 characters is over the limit of 200000'],
      type: 'InvalidInputError',
      state: { absent: fresh[12]! },
    },
    {
      surface: 'client library',
      case: 'turn budget of 0 steps',
      input: 'startAgent({ turnBudget: { steps: 0 } })',
      run: start(fresh[13]!, { turnBudget: { steps: 0 } }),
      error: ['turnBudget.steps: 0 is not allowed (an integer from 1 to 1,000,000)'],
      type: 'InvalidInputError',
      state: { absent: fresh[13]! },
    },
    {
      surface: 'client library',
      case: 'unknown budget',
      input: 'startAgent({ turnBudget: { minutes: 5 } })',
      run: start(fresh[14]!, { turnBudget: { minutes: 5 } as never }),
      error: ['turnBudget.minutes: not a budget (one of steps, tokens, seconds)'],
      type: 'InvalidInputError',
      state: { absent: fresh[14]! },
    },
    {
      surface: 'client library',
      case: 'bad preset',
      input: "startAgent({ compaction: { preset: 'nope' } })",
      run: start(fresh[15]!, { compaction: { preset: 'nope' } }),
      error: [`preset: "nope" is not allowed (${PRESET_LIST})`],
      type: 'PolicyError',
      state: { absent: fresh[15]! },
    },
    {
      surface: 'client library',
      case: 'policy of a wrong type',
      input: "startAgent({ compaction: 'aggressive' })",
      run: start(fresh[16]!, { compaction: 'aggressive' as never }),
      error: ['compaction: must be an object (a preset and overrides of its fields)'],
      type: 'InvalidInputError',
      state: { absent: fresh[16]! },
    },
    {
      surface: 'client library',
      case: 'window under its limit',
      input: 'startAgent({ modelOverride: { window: 10 } })',
      run: start(fresh[17]!, { modelOverride: { window: 10 } }),
      error: ['window: 10 is outside the allowed range (an integer from 1024 to 10000000 tokens)'],
      type: 'ModelOverrideError',
      state: { absent: fresh[17]! },
    },
    {
      surface: 'client library',
      case: 'start a closed agent',
      input: 'startAgent({ agentId: CLOSED })',
      run: start(CLOSED, {}),
      error: [`agent ${CLOSED} is closed (completed)`, '--reopen'],
      type: 'AgentClosedError',
      state: { unchanged: CLOSED },
    },
    {
      surface: 'client library',
      case: 'empty text',
      input: "sendMessage(OPEN, '')",
      run: () => library(() => sendMessage(h.client, OPEN, '')),
      error: ['text: must not be empty'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'text of 3 MB',
      input: 'sendMessage(OPEN, <3,000,000 x>)',
      run: () => library(() => sendMessage(h.client, OPEN, x(3_000_000))),
      error: ['text: 3000000 characters is over the limit of 200000'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'text of a wrong type',
      input: 'sendMessage(OPEN, { text: "hi" })',
      run: () => library(() => sendMessage(h.client, OPEN, { text: 'hi' } as unknown as string)),
      error: ['text: must be a string'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'expected turn not an integer',
      input: "sendMessage(OPEN, 'hi', { expectedTurn: 1.5 })",
      run: () => library(() => sendMessage(h.client, OPEN, 'hi', { expectedTurn: 1.5 })),
      error: ['expectedTurn: must be a positive integer (got 1.5)'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'expected turn already taken',
      input: "sendMessage(OPEN, 'hi', { expectedTurn: 1 })",
      run: () => library(() => sendMessage(h.client, OPEN, 'hi', { expectedTurn: 1 })),
      error: ['expectedTurn: this message would open turn 2, not 1'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'unknown agent',
      input: "sendMessage(<fresh>, 'hi')",
      run: () => library(() => sendMessage(h.client, fresh[6]!, 'hi')),
      error: [fresh[6]!, 'not found'],
      type: 'WorkflowNotFoundError',
      state: { absent: fresh[6]! },
    },
    {
      surface: 'client library',
      case: 'closed agent',
      input: "sendMessage(CLOSED, 'hi')",
      run: () => library(() => sendMessage(h.client, CLOSED, 'hi')),
      error: [`agent ${CLOSED} is closed`],
      type: 'AgentClosedError',
      state: { unchanged: CLOSED },
    },
    {
      surface: 'client library',
      case: 'bad strategy',
      input: "compactAgent(OPEN, { strategy: 'nope' })",
      run: () => library(() => compactAgent(h.client, OPEN, { strategy: 'nope' as never })),
      error: [`strategy: "nope" ${STRATEGY_LIST}`],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'force of a wrong type',
      input: "compactAgent(OPEN, { force: 'yes' })",
      run: () => library(() => compactAgent(h.client, OPEN, { force: 'yes' } as unknown as CompactInput)),
      error: ['force: must be true or false (got "yes")'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'signal: strategy of a wrong type',
      input: 'requestCompaction(OPEN, { strategy: 5 })',
      run: () => library(() => requestCompaction(h.client, OPEN, { strategy: 5 as never })),
      error: ['strategy: 5 is not one of truncate-tool-results'],
      type: 'InvalidInputError',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'signal: huge text',
      input: 'queueMessage(OPEN, <200,001 x>)',
      run: () => library(() => queueMessage(h.client, OPEN, x(200_001))),
      error: ['text: 200001 characters is over the limit of 200000'],
      type: 'InvalidInputError',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'events after a negative seq',
      input: 'compactionEvents(OPEN, { since: -1 })',
      run: () => library(() => compactionEvents(h.client, OPEN, { since: -1 })),
      error: ['since: must be an integer ≥ 0 (got -1)'],
      type: 'InvalidInputError',
      state: { unchanged: OPEN },
    },
    {
      surface: 'client library',
      case: 'event history limit of a wrong type',
      input: "compactionHistory(OPEN, { limit: 'all' })",
      run: () => library(() => compactionHistory(h.client, h.store, OPEN, { limit: 'all' as never })),
      error: ['limit: must be an integer ≥ 0 (got "all")'],
      type: 'InvalidInputError',
      state: { unchanged: OPEN },
    },

    // ── the temporal CLI ───────────────────────────────────────────────────────────────────────────────────────
    {
      surface: 'temporal CLI',
      case: 'update send: empty text',
      input: 'update execute --name send --input {"text":""}',
      run: () => tUpdate(OPEN, 'send', { text: '' }),
      error: ['text: must not be empty'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send: text of a wrong type',
      input: 'update execute --name send --input {"text":["hi"]}',
      run: () => tUpdate(OPEN, 'send', { text: ['hi'] }),
      error: ['text: must be a string'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send: input not an object',
      input: 'update execute --name send --input "hi"',
      run: () => tUpdate(OPEN, 'send', 'hi'),
      error: ['send: input must be an object'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send: huge text',
      input: 'update execute --name send --input-file <{"text": 200,001 x}>',
      run: () => tUpdate(OPEN, 'send', { text: x(200_001) }),
      error: ['text: 200001 characters is over the limit of 200000'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send: expectedTurn of a wrong type',
      input: 'update execute --name send --input {"text":"hi","expectedTurn":"2"}',
      run: () => tUpdate(OPEN, 'send', { text: 'hi', expectedTurn: '2' }),
      error: ['expectedTurn: must be a positive integer (got "2")'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update compact: bad strategy',
      input: 'update execute --name compact --input {"strategy":"nope"}',
      run: () => tUpdate(OPEN, 'compact', { strategy: 'nope' }),
      error: [`strategy: "nope" ${STRATEGY_LIST}`],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update compact: instructions over their limit',
      input: 'update execute --name compact --input {"instructions": <4,001 x>}',
      run: () => tUpdate(OPEN, 'compact', { instructions: x(4_001) }),
      error: ['instructions: 4001 characters is over the limit of 4000'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update compact: force of a wrong type',
      input: 'update execute --name compact --input {"force":1}',
      run: () => tUpdate(OPEN, 'compact', { force: 1 }),
      error: ['force: must be true or false (got 1)'],
      type: 'InvalidInput',
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update of an unknown name',
      input: 'update execute --name sendd --input {"text":"hi"}',
      run: () => tUpdate(OPEN, 'sendd', { text: 'hi' }),
      error: ['No registered handler for update: sendd'],
      state: { unchanged: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'update send to a closed agent',
      input: 'update execute --name send (CLOSED)',
      run: () => tUpdate(CLOSED, 'send', { text: 'hi' }),
      error: ['workflow execution already completed'],
      state: { unchanged: CLOSED },
    },
    {
      surface: 'temporal CLI',
      case: 'signal message: empty text',
      input: 'signal --name message --input {"text":" "}',
      run: () => tSignal(OPEN, 'message', { text: ' ' }),
      error: [],
      state: { dropped: 'message', agent: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'signal message: huge text',
      input: 'signal --name message --input-file <{"text": 200,001 x}>',
      run: () => tSignal(OPEN, 'message', { text: x(200_001) }),
      error: [],
      state: { dropped: 'message', agent: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'signal message: input not an object',
      input: 'signal --name message --input 42',
      run: () => tSignal(OPEN, 'message', 42),
      error: [],
      state: { dropped: 'message', agent: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'signal compact: bad strategy',
      input: 'signal --name compact --input {"strategy":"nope"}',
      run: () => tSignal(OPEN, 'compact', { strategy: 'nope' }),
      error: [],
      state: { dropped: 'compact', agent: OPEN },
    },
    {
      surface: 'temporal CLI',
      case: 'start: agent id with .. that is not the workflow’s',
      input: 'workflow start --workflow-id agent-<fresh> --input {"agentId":"../victim",…}',
      run: () => tStart(fresh[7]!, { agentId: '../victim', model: 'gpt-4o-mini' }),
      error: [`agentId: "../victim" ${ID_RULE}`],
      type: 'InvalidInput',
      state: { failedAtStart: fresh[7]! },
    },
    {
      surface: 'temporal CLI',
      case: 'start: model of a wrong type',
      input: 'workflow start --input {"agentId":<fresh>,"model":42}',
      run: () => tStart(fresh[8]!, { agentId: fresh[8]!, model: 42 }),
      error: ['model: must be a non-empty string (got 42)'],
      type: 'InvalidInput',
      state: { failedAtStart: fresh[8]! },
    },
    {
      surface: 'temporal CLI',
      case: 'start: turn budget over its limit',
      input: 'workflow start --input {…,"turnBudget":{"seconds":1e9}}',
      run: () => tStart(fresh[9]!, { agentId: fresh[9]!, model: 'gpt-4o-mini', turnBudget: { seconds: 1e9 } }),
      error: ['turnBudget.seconds: 1000000000 is not allowed (an integer from 1 to 2,592,000)'],
      type: 'InvalidInput',
      state: { failedAtStart: fresh[9]! },
    },

    // ── the HTTP model boundary: the model's reply, a team's tools ────────────────────────────────────────────
    ...Object.entries({
      'unknown tool': ['error: unknown tool "launch_missiles" (the tools: context_reload, add, count_rows'],
      'invalid JSON arguments': ['error: arguments of add are not valid JSON', 'must be a JSON object'],
      'arguments a JSON array': ['error: arguments of add must be a JSON object'],
      'arguments a JSON object, not its text': [/^5$/],
      'a tool name of 10 KB with control characters': [
        /^error: unknown tool "evil\\u0000\\u001b\[2Jx{20,80}…" \(10249 characters\)/,
      ],
      'a tool result that is a number': [
        'error: tool count_rows returned a number, not text (a tool’s run must resolve to a string)',
      ],
      'a tool result that is an object': ['error: tool lookup returned an object, not text'],
      'a tool result that is undefined': ['error: tool forgetful returned undefined, not text'],
      'context_reload outside the agent (..)': ['is not stored content of this agent'],
      'context_reload with a bad page': ['page must be an integer from 1 (got two)'],
    }).map(([name, error]): Row => ({
      surface: 'model boundary',
      case: name,
      input: JSON.stringify(MODEL_REPLIES[name]).slice(0, 160),
      run: () => modelTurn(name),
      error,
      state: { answered: true },
    })),
    ...Object.entries({
      'tool_calls that is not a list': 'tool_calls that is a string (a list of calls is expected)',
      'a tool call id given twice': 'tool call id "d1" given twice (each call needs an id of its own)',
      'a tool call without a name': "tool_calls[0].function.name that is undefined (a tool's name is expected)",
      'content that is a number': 'content that is a number (text, a list of typed parts or null is expected)',
    }).map(([name, problem]): Row => ({
      surface: 'model boundary',
      case: name,
      input: JSON.stringify(MODEL_REPLIES[name]).slice(0, 160),
      run: () => library(() => sendMessage(h.client, MODEL, `model row: ${name}`)),
      error: [`callModel failed: model gpt-4o-mini replied with ${problem}; the reply is not kept`],
      type: 'TurnFailed',
      state: { turnFailed: MODEL },
    })),
  ];
}

/** What a row must leave as it was: the state without run bookkeeping, and the agent's stored objects. */
async function fingerprint(agentId: string) {
  const state: AgentState = await agentState(h.client, agentId);
  const { status, turns, messages, contextTokens, compactions, lastError, nextMessageSeq, droppedSignals } = state;
  const keys = await h.store.list(agentPrefix(agentId));
  return {
    state: { status, turns, messages, contextTokens, compactions, lastError, nextMessageSeq },
    droppedSignals: droppedSignals ?? {},
    keys,
  };
}

/** The agent `agentId` was never started, and nothing is stored under its id. */
async function expectAbsent(agentId: string) {
  const described = await h.client.workflow
    .getHandle(agentWorkflowId(agentId))
    .describe()
    .then(
      () => 'exists',
      (error: unknown) => (error instanceof WorkflowNotFoundError ? 'not found' : 'not a workflow id'),
    );
  expect(described).not.toBe('exists');
  // Only an id of the agent id pattern can name a prefix (S3 refuses a `..` segment, and keys over 1,024 bytes).
  if (AGENT_ID_PATTERN.test(agentId)) expect(await h.store.list(agentPrefix(agentId))).toEqual([]);
}

const TABLE = rows();

describe('bad input: each a clear error naming the field and the limit, the state unchanged', () => {
  it('has at least 40 rows, on every surface', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(40);
    for (const surface of ['longrun CLI', 'client library', 'temporal CLI', 'model boundary'] as const) {
      expect(TABLE.filter((row) => row.surface === surface).length, surface).toBeGreaterThanOrEqual(8);
    }
  });

  it.each(TABLE.map((row) => [`${row.surface}: ${row.case}`, row] as const))('%s', async (_name, row) => {
    const target =
      'unchanged' in row.state
        ? row.state.unchanged
        : 'dropped' in row.state
          ? row.state.agent
          : 'turnFailed' in row.state
            ? row.state.turnFailed
            : undefined;
    const before = target ? await fingerprint(target) : undefined;

    const outcome = await row.run();

    for (const words of row.error) {
      if (typeof words === 'string') expect(outcome.text, row.input).toContain(words);
      else expect(outcome.text, row.input).toMatch(words);
    }
    if (row.surface === 'longrun CLI') {
      expect(outcome.exit, outcome.text).toBe(row.exit);
      expect(outcome.text).not.toMatch(/\n\s+at /); // no stack trace
      expect(outcome.text.length).toBeLessThan(1_000); // not the input echoed back
    }
    if (row.type !== undefined) expect(outcome.type, outcome.text).toBe(row.type);

    if ('unchanged' in row.state) expect(await fingerprint(row.state.unchanged)).toEqual(before);
    if ('absent' in row.state) await expectAbsent(row.state.absent);
    if ('failedAtStart' in row.state) {
      const history = await h.client.workflow.getHandle(agentWorkflowId(row.state.failedAtStart)).fetchHistory();
      expect(history.events?.some((event) => event.activityTaskScheduledEventAttributes)).toBe(false);
      expect(await h.store.list(agentPrefix(row.state.failedAtStart))).toEqual([]);
    }
    if ('turnFailed' in row.state) {
      const after = await fingerprint(row.state.turnFailed);
      expect(after.state).toMatchObject({ status: 'running', turns: before!.state.turns, lastError: outcome.text });
      expect(after.state.messages.slice(before!.state.messages.length).map((m) => m.role)).toEqual(['user']);
    }
    // Nothing but the error was printed: no server, worker or agent was started (each of them logs a line).
    if ('refusedBeforeStart' in row.state) {
      expect(outcome.text.split('\n').filter((line) => line !== '' && !line.startsWith('Run `longrun help`'))).toEqual([
        expect.stringMatching(/^longrun: /),
      ]);
    }
    if ('dropped' in row.state) {
      const signal = row.state.dropped;
      expect(outcome.text).toBe(''); // a Signal is accepted by the server, then dropped by the agent
      await expect
        .poll(async () => (await fingerprint(target!)).droppedSignals[signal] ?? 0, { timeout: 10_000 })
        .toBe((before!.droppedSignals[signal] ?? 0) + 1);
      const after = await fingerprint(target!);
      expect({ ...after, droppedSignals: undefined }).toEqual({ ...before, droppedSignals: undefined });
    }
  });
});
