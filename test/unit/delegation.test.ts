/**
 * The pure parts of sub-agents (issue 30, item 4): the manifest (tool calls by name and resource, counted, bounded),
 * the bound on what a delegated task puts into the parent's context, the child's id, the call's arguments, the
 * settings' validation, and `longrun list`'s children under their parent.
 */
import { describe, expect, it } from 'vitest';
import { boundedResult } from '../../activities/delegation.ts';
import { ToolRegistry, delegateTo } from '../../activities/tools.ts';
import type { AgentSummary } from '../../client/reads.ts';
import { withChildren } from '../../commands/render.ts';
import {
  childAgentId,
  delegateArguments,
  DELEGATION_RESULT_TOKENS,
  manifestOf,
  MANIFEST_ENTRIES,
  readableResource,
  renderManifest,
  validateDelegationInput,
} from '../../contract/delegation.ts';
import { toolSelectionOf } from '../../contract/inputs.ts';
import { countMessage, loadTokenCounter } from '../../engine/tokens.ts';

const call = (name: string, args: unknown) => ({ name, arguments: JSON.stringify(args) });

describe('the manifest', () => {
  it('counts calls by tool and readable resource, most called first', () => {
    const entries = manifestOf([
      call('read_file', { path: 'src/a.ts' }),
      call('grep', { pattern: 'TODO', path: 'src' }),
      call('read_file', { path: 'src/a.ts' }),
      call('write_file', { path: 'out.md', content: 'x' }),
      { name: 'odd', arguments: 'not json' },
    ]);
    expect(entries).toEqual([
      { tool: 'read_file', resource: 'src/a.ts', calls: 2 },
      { tool: 'grep', resource: 'src', calls: 1 },
      { tool: 'odd', calls: 1 },
      { tool: 'write_file', resource: 'out.md', calls: 1 },
    ]);
    expect(readableResource(JSON.stringify({ query: 'a\n  b' }))).toBe('a b');
    expect(readableResource(JSON.stringify({ text: 'y'.repeat(200) }))).toHaveLength(80);
  });

  it('shows at most MANIFEST_ENTRIES entries and counts the rest in one line', () => {
    const calls = Array.from({ length: 50 }, (_, i) => call('read_file', { path: `f${i}` }));
    const text = renderManifest({
      childId: 'p.d1-1-1',
      status: 'done',
      steps: 51,
      toolCalls: 50,
      storedTokens: 90_000,
      spentTokens: 1_000_000,
      cost: 0.25,
      entries: manifestOf(calls),
    });
    expect(text.split('\n').filter((l) => l.startsWith('- read_file'))).toHaveLength(MANIFEST_ENTRIES);
    expect(text).toContain(`- … ${50 - MANIFEST_ENTRIES} more (${50 - MANIFEST_ENTRIES} call(s))`);
    expect(text).toContain(
      '[delegated to sub-agent p.d1-1-1: done] 51 step(s), 50 tool call(s), 1000000 tokens spent ($0.2500)',
    );
  });
});

describe('the bound on what comes back', () => {
  it('keeps a short answer whole, cuts a long one to DELEGATION_RESULT_TOKENS with the manifest whole and the original named', async () => {
    const counter = await loadTokenCounter('o200k_base');
    const manifest = renderManifest({
      childId: 'c',
      status: 'done',
      steps: 3,
      toolCalls: 2,
      storedTokens: 10,
      spentTokens: 10,
      cost: null,
      entries: manifestOf(Array.from({ length: 40 }, (_, i) => call('read_file', { path: `a/long/path/${i}.ts` }))),
    });
    const short = boundedResult(manifest, 'All good.', 'call_1', 'agents/p/l/originals/m000009.json', counter);
    expect(short).toEqual({ content: `${manifest}\nAll good.`, cut: false });
    for (const answer of ['word '.repeat(50_000), '漢字'.repeat(30_000), `HEAD ${'x'.repeat(100_000)} TAIL`]) {
      const long = boundedResult(manifest, answer, 'call_1', 'agents/p/l/originals/m000009.json', counter);
      expect(long.cut).toBe(true);
      expect(long.content.startsWith(`${manifest}\n`)).toBe(true);
      expect(long.content).toContain('context_reload("agents/p/l/originals/m000009.json")');
      const tokens = countMessage(counter, { role: 'tool', tool_call_id: 'call_1', content: long.content });
      expect(tokens).toBeLessThanOrEqual(DELEGATION_RESULT_TOKENS);
      expect(tokens).toBeGreaterThan(DELEGATION_RESULT_TOKENS - 200); // the room is used, not wasted
    }
  });
});

describe('the delegate call and the settings', () => {
  it('derives the child id from the parent, shortened to fit 64 characters', () => {
    expect(childAgentId('parent', 3, 2, 1)).toBe('parent.d3-2-1');
    const long = childAgentId('p'.repeat(64), 12, 5, 2);
    expect(long).toHaveLength(64);
    expect(long.endsWith('.d12-5-2')).toBe(true);
  });

  it('takes the task and the steps asked within the limit, and says what is wrong otherwise', () => {
    const settings = { turnBudget: { steps: 10 }, maxStepsPerTask: 30 };
    expect(delegateArguments({ task: 'do it' }, settings)).toEqual({ task: 'do it', steps: 10 });
    expect(delegateArguments({ task: 'do it', max_steps: 30 }, settings)).toEqual({ task: 'do it', steps: 30 });
    expect(delegateArguments({ task: 'do it', max_steps: 31 }, settings)).toBe(
      "max_steps: 31 is not allowed (an integer from 1 to 30, this agent's maxStepsPerTask)",
    );
    expect(delegateArguments({}, settings)).toBe('task: must be a non-empty string (what the sub-agent is to do)');
    expect(delegateArguments({ task: 'x' }, {})).toEqual({ task: 'x', steps: 50 });
  });

  it('refuses bad settings naming the field and the limit', () => {
    const thrown = (input: object) => {
      try {
        validateDelegationInput(input);
        return 'no error';
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(thrown({ delegation: 'yes' })).toMatch(/^delegation: must be an object/);
    expect(thrown({ delegation: { turnBudget: { tokens: 0 } } })).toBe(
      'delegation.turnBudget.tokens: 0 is not allowed (an integer from 1 to 1,000,000,000)',
    );
    expect(thrown({ delegation: { maxStepsPerTask: 1.5 } })).toBe(
      'delegation.maxStepsPerTask: 1.5 is not allowed (an integer from 1 to 1,000,000)',
    );
    expect(thrown({ delegation: { model: '' } })).toBe('delegation.model: must be a non-empty string (got "")');
    expect(thrown({ tools: ['ok', 'not ok'] })).toBe('tools: must be a list of tool names (got ["ok","not ok"])');
    expect(thrown({ task: { text: '' } })).toMatch(/^task: must be an object/);
    expect(thrown({ delegation: {}, tools: ['a'] })).toBe('no error');
  });

  it('sends the delegate schema only to agents with delegation, and only the tools an agent names', () => {
    const registry = new ToolRegistry([
      delegateTo({ name: 'research', description: 'r' }),
      { name: 'grep', description: 'g', parameters: {}, run: () => Promise.resolve('') },
    ]);
    const names = (input: object) => registry.schemas(toolSelectionOf(input)).map((s) => s.function.name);
    const builtIn = ['context_reload', 'context_search', 'context_pin', 'context_budget'];
    expect(names({})).toEqual([...builtIn, 'research', 'grep']);
    expect(names({ delegation: {} })).toEqual([...builtIn, 'delegate', 'research', 'grep']);
    expect(names({ tools: ['grep'] })).toEqual([...builtIn, 'grep']);
  });
});

describe('longrun list', () => {
  it('puts each sub-agent right under its parent, indented by depth', () => {
    const agent = (agentId: string, parent?: string): AgentSummary => ({
      agentId,
      status: 'running',
      model: 'm',
      taskQueue: 'q',
      startedAt: new Date(0),
      workflowStatus: 'RUNNING',
      ...(parent ? { parent } : {}),
    });
    const rows = withChildren([
      agent('p.d1-1-1', 'p'),
      agent('other'),
      agent('p.d1-1-1.x', 'p.d1-1-1'),
      agent('p'),
      agent('orphan', 'gone'),
    ]);
    expect(rows.map((r) => `${r.depth}:${r.agent.agentId}`)).toEqual([
      '0:other',
      '0:p',
      '1:p.d1-1-1',
      '2:p.d1-1-1.x',
      '0:orphan',
    ]);
  });
});
