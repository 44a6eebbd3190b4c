/**
 * Bad input at the HTTP model boundary, a row per case (the rows' columns and states: test/support/bad-input.ts):
 * what a model's reply and a team's tools hand the worker. A tool call or result the worker cannot use as it is is
 * answered with an error for the model to read, the turn completing; a reply it cannot keep fails the turn
 * (`BadReply`), nothing of it kept.
 */
import { expect } from 'vitest';
import { defineTool } from '../../activities/tools.ts';
import type { ToolDefinition } from '../../activities/tools.ts';
import { agentState, sendMessage } from '../../client/agents.ts';
import type { ChatMessage, ToolCall } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { describeRows, library, rowHarness } from '../support/bad-input.ts';
import type { Outcome, Row } from '../support/bad-input.ts';
import { newAgentId } from '../support/harness.ts';

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

const MODEL = newAgentId('bad-model');
let ownMessageKey = '';

const h = rowHarness(
  { open: [MODEL], closed: [] },
  {
    responder: script,
    tools: TOOLS,
    ready: async (started) => {
      ownMessageKey = (await agentState(started.client, MODEL)).messages[0]!.key;
    },
  },
);

/** A model-boundary row: a turn whose reply is the row's; the outcome is what the tool calls were answered with. */
async function modelTurn(row: string): Promise<Outcome> {
  const before = await agentState(h().client, MODEL);
  const result = await sendMessage(h().client, MODEL, `model row: ${row}`);
  const after = await agentState(h().client, MODEL);
  // The turn completed: the reply read the results back, every call was answered, the agent runs on.
  expect(result.reply).toMatch(/^results: /);
  expect(after).toMatchObject({ status: 'running', turns: before.turns + 1 });
  expect(after.lastError).toBeUndefined();
  const added = after.messages.slice(before.messages.length);
  const calls = added.flatMap((m) => m.toolCallIds ?? []);
  expect(added.filter((m) => m.role === 'tool').map((m) => m.toolCallId)).toEqual(calls);
  const stored = await Promise.all(
    added.filter((m) => m.role === 'tool').map(async (m) => JSON.parse((await h().store.get(m.key))!) as ChatMessage),
  );
  for (const message of stored) expect(typeof message.content).toBe('string');
  return { text: stored.map((m) => m.content as string).join(' | ') };
}

function rows(): Row[] {
  return [
    ...Object.entries({
      'unknown tool': [
        'error: unknown tool "launch_missiles" (the tools: context_reload, context_search, context_pin, context_budget, add, count_rows',
      ],
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
      run: () => library(() => sendMessage(h().client, MODEL, `model row: ${name}`)),
      error: [`callModel failed: model gpt-4o-mini replied with ${problem}; the reply is not kept`],
      type: 'TurnFailed',
      state: { turnFailed: MODEL },
    })),
  ];
}

describeRows('model boundary', 8, rows(), h);
