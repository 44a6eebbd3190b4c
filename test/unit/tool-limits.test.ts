/**
 * Per-tool limits as the policy and `defineTool` take them (bad values refused, naming the field and the limit), the
 * resource a call reads (its arguments compared canonically), and the cut of a result as it arrives.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, cutAtEntry, resourceOf } from '../../activities/tool-results.ts';
import { defineTool } from '../../activities/tools.ts';
import type { ToolDefinition } from '../../activities/tools.ts';
import type { ToolCall } from '../../engine/messages.ts';
import { PolicyError } from '../../engine/policy.ts';
import type { PolicyOverrides } from '../../engine/policy.ts';
import { resolvePolicy } from '../../engine/presets.ts';
import { countMessage, loadTokenCounter } from '../../engine/tokens.ts';
import type { TokenCounter } from '../../engine/tokens.ts';

let counter: TokenCounter;
beforeAll(async () => {
  counter = await loadTokenCounter('o200k_base');
});

const refused = (overrides: PolicyOverrides) => {
  try {
    resolvePolicy(overrides);
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyError);
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('policy tools', () => {
  it('takes per-tool limits and merges overrides by tool name, field by field', () => {
    const policy = resolvePolicy({
      tools: { read_file: { maxResultTokens: 4_000, preview: 500 }, plan: { neverMask: true } },
    });
    expect(policy.tools).toEqual({ read_file: { maxResultTokens: 4_000, preview: 500 }, plan: { neverMask: true } });
    expect(resolvePolicy().tools).toBeUndefined();
    expect(resolvePolicy().strategies[0]).toBe('supersede-tool-results');
  });

  it('refuses bad values, naming the field and the limit', () => {
    expect(refused({ tools: { read_file: { maxResultTokens: 5 } } })).toBe(
      'tools.read_file.maxResultTokens: 5 is not allowed (an integer from 16 to 10000000)',
    );
    expect(refused({ tools: { read_file: { maxResultTokens: 100, preview: 200 } } })).toBe(
      'tools.read_file.preview: 200 is not allowed (an integer from 0 to maxResultTokens (100))',
    );
    expect(refused({ tools: { read_file: { preview: -1 } } })).toBe(
      'tools.read_file.preview: -1 is not allowed (an integer from 0 to 10000000)',
    );
    expect(refused({ tools: { read_file: { neverMask: 'yes' as unknown as boolean } } })).toBe(
      'tools.read_file.neverMask: "yes" is not allowed (true or false)',
    );
    expect(refused({ tools: { read_file: { maxTokens: 10 } as never } })).toBe(
      'tools.read_file.maxTokens: 10 is not allowed (not a tool limit (maxResultTokens, preview, neverMask))',
    );
    expect(refused({ tools: { 'read file': {} } })).toMatch(
      /^tools\.read file: \{\} is not allowed \(a tool name of 1 to 64/,
    );
    expect(refused({ tools: { read_file: 3 as never } })).toBe(
      'tools.read_file: 3 is not allowed (an object {maxResultTokens, preview, neverMask})',
    );
    expect(refused({ tools: [] as never })).toBe(
      'tools: [] is not allowed (an object of per-tool limits by tool name)',
    );
  });
});

describe('defineTool limits', () => {
  const base: ToolDefinition = {
    name: 'dump',
    description: 'd',
    parameters: { type: 'object' },
    run: () => Promise.resolve(''),
  };

  it('takes maxResultTokens, preview and neverMask', () => {
    expect(defineTool({ ...base, maxResultTokens: 2_000, preview: 300, neverMask: false }).maxResultTokens).toBe(2_000);
  });

  it('refuses bad values, naming the tool, the field and the limit', () => {
    expect(() => defineTool({ ...base, maxResultTokens: 0 })).toThrow(
      'tool dump: maxResultTokens 0 is not allowed (an integer from 16 to 10000000)',
    );
    expect(() => defineTool({ ...base, maxResultTokens: 1.5 })).toThrow(
      'tool dump: maxResultTokens 1.5 is not allowed',
    );
    expect(() => defineTool({ ...base, maxResultTokens: 100, preview: 101 })).toThrow(
      'tool dump: preview 101 is not allowed (an integer from 0 to maxResultTokens (100))',
    );
    expect(() => defineTool({ ...base, neverMask: 1 as unknown as boolean })).toThrow(
      'tool dump: neverMask 1 is not allowed (true or false)',
    );
  });
});

describe('the resource a call reads', () => {
  const call = (name: string, args: string): ToolCall => ({
    id: 'c',
    type: 'function',
    function: { name, arguments: args },
  });

  it('the same for the same arguments in any key order and spacing, at every depth', () => {
    expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: 'x' })).toBe('{"a":"x","b":[1,{"c":2,"d":1}]}');
    const a = resourceOf(call('read_file', '{"path":"src/a.ts","range":{"from":1,"to":9}}'));
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(resourceOf(call('read_file', '{ "range": { "to": 9, "from": 1 }, "path": "src/a.ts" }'))).toBe(a);
  });

  it('another for other arguments or another tool; none for arguments that are not an object', () => {
    const a = resourceOf(call('read_file', '{"path":"src/a.ts"}'));
    expect(resourceOf(call('read_file', '{"path":"src/b.ts"}'))).not.toBe(a);
    expect(resourceOf(call('stat_file', '{"path":"src/a.ts"}'))).not.toBe(a);
    expect(resourceOf(call('ls', ''))).toBe(resourceOf(call('ls', '{}')));
    expect(resourceOf(call('ls', '[1]'))).toBeUndefined();
    expect(resourceOf(call('ls', '{oops'))).toBeUndefined();
  });
});

describe('cut at entry', () => {
  const big = Array.from({ length: 5_000 }, (_, i) => `line ${i}: ${'x'.repeat(i % 40)}`).join('\n');
  const message = { role: 'tool' as const, tool_call_id: 'c1', content: big };
  const key = 'agents/a/life/originals/m000003.json';

  it('a result over maxResultTokens keeps head and tail within the limit, around a notice naming the original', () => {
    const cut = cutAtEntry(message, { maxResultTokens: 300 }, key, counter, 1.1)!;
    const tokens = countMessage(counter, cut, 1.1);
    expect(tokens).toBeLessThanOrEqual(300);
    expect(tokens).toBeGreaterThan(280);
    const content = cut.content as string;
    expect(content.startsWith('line 0: \nline 1: x\n')).toBe(true);
    expect(content.endsWith(`line 4999: ${'x'.repeat(4999 % 40)}`)).toBe(true);
    expect(content).toMatch(
      /\[… \d+ characters cut as this result arrived \(over the tool’s limit of 300 tokens\); the whole result is stored: context_reload\("agents\/a\/life\/originals\/m000003\.json"\) …\]/,
    );
    expect(cut.tool_call_id).toBe('c1');
  });

  it('preview: the notice and that many tokens of the result', () => {
    const cut = cutAtEntry(message, { maxResultTokens: 2_000, preview: 50 }, key, counter)!;
    const notice = countMessage(counter, {
      ...message,
      content: `\n[… 1234 characters cut as this result arrived (over the tool’s limit of 2000 tokens); the whole result is stored: context_reload("${key}") …]\n`,
    });
    expect(countMessage(counter, cut)).toBeLessThanOrEqual(notice + 50);
  });

  it('nothing to cut: under the limit, or no limit', () => {
    expect(cutAtEntry({ ...message, content: 'short' }, { maxResultTokens: 300 }, key, counter)).toBeUndefined();
    expect(cutAtEntry(message, { preview: 10 }, key, counter)).toBeUndefined();
  });
});
