/**
 * The checks behind test/e2e/bad-input-*.test.ts, one by one: how an error quotes a value, the agent input's checks,
 * the events query, the model boundary's reading of a reply, and the replay recording's tool calls.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { readModelReply } from '../../activities/model-reply.ts';
import { InvalidInputError, quoted } from '../../contract/inputs.ts';
import { validateAgentInput, validateEventsQuery } from '../../contract/input-checks.ts';
import type { AgentInput } from '../../contract/inputs.ts';
import { FAILURE } from '../../contract/failures.ts';
import { parseSessionJsonl } from '../../llm/replayed-model.ts';

const agent = (extra: Record<string, unknown>) => ({ agentId: 'a', model: 'gpt-4o-mini', ...extra }) as AgentInput;

/** The message of the error `fn` throws (of the class `type`). */
function thrown(fn: () => unknown, type: abstract new (...args: never[]) => Error = InvalidInputError): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(type);
    return (error as Error).message;
  }
  throw new Error('nothing was thrown');
}

describe('quoted', () => {
  it('quotes as JSON, escaping control characters; cuts a long string at 64 characters and gives its length', () => {
    expect(quoted('trip')).toBe('"trip"');
    expect(quoted('a\u0007\nb')).toBe('"a\\u0007\\nb"');
    expect(quoted(42)).toBe('42');
    expect(quoted(undefined)).toBe('undefined');
    expect(quoted('x'.repeat(10_000))).toBe(`"${'x'.repeat(64)}…" (10000 characters)`);
    expect(quoted('😀'.repeat(100))).toBe(`"${'😀'.repeat(64)}…" (200 characters)`); // never half a character
    expect(quoted({ rows: 'y'.repeat(100) })).toMatch(/^\{"rows":"y+… \(111 characters\)$/);
  });
});

describe('validateAgentInput: what names storage keys and what reaches the model', () => {
  it('refuses an id that could leave its prefix, naming the rule', () => {
    for (const agentId of ['', '..', '../victim', 'a/b', 'a\u0000', 'agënt', 'x'.repeat(65), 42, undefined]) {
      expect(
        thrown(() => validateAgentInput(agent({ agentId }))),
        String(agentId),
      ).toMatch(
        /^agentId: .* must be 1 to 64 letters, digits, dots, underscores or hyphens, starting with a letter or digit$/,
      );
    }
  });

  it('refuses a model, a system prompt, a policy or an override of the wrong type or size', () => {
    expect(thrown(() => validateAgentInput(agent({ model: 42 })))).toBe('model: must be a non-empty string (got 42)');
    expect(thrown(() => validateAgentInput(agent({ model: ' ' })))).toBe('model: must be a non-empty string (got " ")');
    expect(thrown(() => validateAgentInput(agent({ systemPrompt: ['x'] })))).toBe('systemPrompt: must be a string');
    expect(thrown(() => validateAgentInput(agent({ systemPrompt: 'x'.repeat(200_001) })))).toBe(
      'systemPrompt: 200001 characters is over the limit of 200000',
    );
    expect(thrown(() => validateAgentInput(agent({ compaction: 'aggressive' })))).toBe(
      'compaction: must be an object (a preset and overrides of its fields)',
    );
    expect(thrown(() => validateAgentInput(agent({ modelOverride: [] })))).toBe(
      'modelOverride: must be an object ({window?, encoding?, margin?, price?})',
    );
    expect(() => validateAgentInput(agent({ systemPrompt: 'x'.repeat(200_000), compaction: {} }))).not.toThrow();
  });
});

describe('validateEventsQuery', () => {
  it('takes no query, null, and integers ≥ 0; refuses anything else, naming the field', () => {
    for (const query of [undefined, null, {}, { since: 0, limit: 0 }, { since: 12, limit: 3 }]) {
      expect(() => validateEventsQuery(query)).not.toThrow();
    }
    expect(thrown(() => validateEventsQuery({ since: -1 }))).toBe('since: must be an integer ≥ 0 (got -1)');
    expect(thrown(() => validateEventsQuery({ limit: 'all' as never }))).toBe(
      'limit: must be an integer ≥ 0 (got "all")',
    );
    expect(thrown(() => validateEventsQuery({ limit: 1.5 }))).toBe('limit: must be an integer ≥ 0 (got 1.5)');
  });
});

describe('readModelReply: the model boundary', () => {
  const call = (id: unknown, name: unknown, args: unknown, type: unknown = 'function') => ({
    id,
    type,
    function: { name, arguments: args },
  });

  it('keeps text, parts and null content; reads arguments sent as a JSON value as its text, none as none', () => {
    expect(readModelReply({ content: 'hi' }, 'm')).toEqual({ content: 'hi', text: 'hi', toolCalls: [] });
    expect(readModelReply({ content: [{ type: 'text', text: 'a' }] }, 'm').text).toBe('a');
    const reply = readModelReply(
      {
        content: null,
        tool_calls: [call('1', 'add', { a: 2 }), call('2', 'add', undefined), call('3', 'x', '{}', 'custom')],
      },
      'm',
    );
    expect(reply).toEqual({
      content: null,
      text: '',
      toolCalls: [
        { id: '1', type: 'function', function: { name: 'add', arguments: '{"a":2}' } },
        { id: '2', type: 'function', function: { name: 'add', arguments: '' } },
      ],
    });
  });

  it('refuses what cannot be sent back, as BadReply naming the field, not retried', () => {
    const refusal = (message: unknown) => {
      const error = (() => {
        try {
          readModelReply(message, 'gpt-4o-mini');
        } catch (caught) {
          return caught as ApplicationFailure;
        }
        throw new Error('accepted');
      })();
      expect(error).toBeInstanceOf(ApplicationFailure);
      expect(error).toMatchObject({ type: FAILURE.badReply, nonRetryable: true });
      return error.message.replace(/^model gpt-4o-mini replied with (.*); the reply is not kept$/, '$1');
    };
    expect(refusal({ content: 42 })).toBe('content that is a number (text, a list of typed parts or null is expected)');
    expect(refusal({ content: [1, 2] })).toBe(
      'content that is a list (text, a list of typed parts or null is expected)',
    );
    expect(refusal({ content: null, tool_calls: 'rm -rf /' })).toBe(
      'tool_calls that is a string (a list of calls is expected)',
    );
    expect(refusal({ content: null, tool_calls: [call('', 'add', '{}')] })).toBe(
      'tool_calls[0].id that is a string (a non-empty string is expected)',
    );
    expect(refusal({ content: null, tool_calls: [call('d', 'add', '{}'), call('d', 'add', '{}')] })).toBe(
      'tool call id "d" given twice (each call needs an id of its own)',
    );
    expect(refusal({ content: null, tool_calls: [call('1', 7, '{}')] })).toBe(
      "tool_calls[0].function.name that is a number (a tool's name is expected)",
    );
  });
});

describe('parseSessionJsonl: tool calls and results a replay can send back', () => {
  const line = (message: unknown) => JSON.stringify(message);
  const user = line({ role: 'user', content: 'hi' });

  it('refuses tool calls that are not function calls with an id, a name and arguments as text, naming the line', () => {
    const assistant = (calls: unknown) => `${user}\n${line({ role: 'assistant', content: null, tool_calls: calls })}`;
    const cases: [unknown, string][] = [
      ['rm -rf /', 'tool_calls must be an array of function calls'],
      [[42], 'tool_calls[0] must be an object'],
      [[{ function: { name: 'a', arguments: '{}' } }], 'tool_calls[0].id must be a non-empty string'],
      [[{ id: 'c', type: 'custom', function: {} }], 'tool_calls[0].type must be "function"'],
      [[{ id: 'c' }], 'tool_calls[0].function must be an object {name, arguments}'],
      [[{ id: 'c', function: { arguments: '{}' } }], 'tool_calls[0].function.name must be a string'],
      [[{ id: 'c', function: { name: 'a', arguments: {} } }], 'tool_calls[0].function.arguments must be a string'],
    ];
    for (const [calls, problem] of cases) {
      expect(thrown(() => parseSessionJsonl(assistant(calls)), Error)).toContain(`line 2: ${problem}`);
    }
    expect(thrown(() => parseSessionJsonl(`${user}\n${line({ role: 'tool', content: 'x' })}`), Error)).toBe(
      'line 2: tool_call_id must be a non-empty string (the call it answers)',
    );
    const valid = [
      user,
      line({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'a', arguments: '{}' } }],
      }),
      line({ role: 'tool', tool_call_id: 'c', content: 'ok' }),
    ];
    expect(parseSessionJsonl(valid.join('\n'))).toHaveLength(3);
  });
});
