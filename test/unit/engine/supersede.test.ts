/**
 * Less to send: a tool result superseded by a newer result of the same call (the same tool, the same arguments) is
 * replaced by a marker naming the newer one and the stored original; per-tool limits (`tools` in the policy, and the
 * record's marks from the tool's definition) cut and mask a tool's results as it says, or never mask them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { applyPlan, replacementBody } from '../../../engine/apply.ts';
import type { ChatMessage, MessageMeta } from '../../../engine/messages.ts';
import { MASK_TOKENS, SUPERSEDED_TOKENS } from '../../../engine/planner/index.ts';
import type { Operation } from '../../../engine/planner/index.ts';
import { countMessage, loadTokenCounter } from '../../../engine/tokens.ts';
import type { TokenCounter } from '../../../engine/tokens.ts';
import { pairViewOf, toolPairViolations } from '../../../engine/tool-pairs.ts';
import { context } from '../../support/contexts.ts';
import type { ContextBuilder } from '../../support/contexts.ts';
import { plan, strategiesOf } from './planner-support.ts';

let counter: TokenCounter;
beforeAll(async () => {
  counter = await loadTokenCounter('o200k_base');
});

/**
 * `n` turns of user, one `read_file` call answered with `tokens` tokens, reply; `resources[i]` is what turn i read
 * (the hash the activity gives the tool and its arguments), undefined: a record stored before resources.
 */
function reads(c: ContextBuilder, resources: (string | undefined)[], tokens = 2_000, tool = 'read_file') {
  for (const resource of resources) {
    c.user().tools(tokens).reply();
    const result = c.messages.at(-2)!;
    result.tool = tool;
    if (resource !== undefined) result.resource = resource;
  }
  return c;
}

const toolIds = (c: ContextBuilder) => c.messages.filter((m) => m.role === 'tool').map((m) => m.id);
const opOf = (p: ReturnType<typeof plan>, id: string) => p.operations.find((o) => o.id === id)!;

describe('supersede-tool-results', () => {
  it('same arguments: every older result becomes a marker naming the newest, recent ones too, first of all', () => {
    const c = reads(context().system().user(), Array<string>(20).fill('file-a'));
    const p = plan(c, {}, { trigger: 'forced' });
    const ids = toolIds(c);
    expect(strategiesOf(p)).toEqual(['supersede-tool-results']); // it alone reached the target
    for (const id of ids.slice(0, -1)) {
      expect(opOf(p, id)).toEqual({ op: 'mask', id, tokens: SUPERSEDED_TOKENS, supersededBy: ids.at(-1) });
    }
    expect(opOf(p, ids.at(-1)!)).toEqual({ op: 'keep', id: ids.at(-1) });
    expect(p.removed.filter((r) => r.by === 'supersede-tool-results').map((r) => r.id)).toEqual(ids.slice(0, -1));
    expect(p.removed.every((r) => r.replacedBy === 'masked')).toBe(true);
  });

  it('different arguments, or no resource (records stored before): kept', () => {
    const c = reads(context().system().user(), [
      'file-a',
      'file-b',
      undefined,
      'file-a',
      undefined,
      'file-c',
      'file-b',
    ]);
    const p = plan(c, { strategies: ['supersede-tool-results'] }, { trigger: 'forced' });
    const ids = toolIds(c);
    expect(p.steps).toEqual([expect.objectContaining({ strategy: 'supersede-tool-results', ids: [ids[0], ids[1]] })]);
    expect(opOf(p, ids[0]!)).toMatchObject({ op: 'mask', supersededBy: ids[3] });
    expect(opOf(p, ids[1]!)).toMatchObject({ op: 'mask', supersededBy: ids[6] });
    for (const i of [2, 3, 4, 5, 6]) expect(opOf(p, ids[i]!).op).toBe('keep');
  });

  it('the same resource from another tool is another resource only by its hash: the tool name is in it', () => {
    // The activity hashes the name with the arguments, so equal arguments of two tools never share a resource.
    const c = reads(context().system().user(), ['read:a', 'stat:a', 'read:a']);
    const p = plan(c, { strategies: ['supersede-tool-results'] }, { trigger: 'forced' });
    const ids = toolIds(c);
    expect(p.steps[0]!.ids).toEqual([ids[0]]);
  });

  it('never a result of the newest step (the model has not read it), nor a small one the marker would not shrink', () => {
    const c = reads(context().system().user(), ['file-a'], 60); // small: kept
    reads(c, ['file-a', 'file-b']);
    c.user().tools(2_000, 2_000); // the newest step: two calls of one resource, neither read yet
    const [x, y] = c.messages.slice(-2);
    for (const m of [x!, y!]) Object.assign(m, { tool: 'read_file', resource: 'file-c' });
    const p = plan(c, { strategies: ['supersede-tool-results'] }, { trigger: 'forced' });
    const ids = toolIds(c);
    expect(p.steps).toEqual([]); // nothing superseded: no step recorded
    expect(p.action).toBe('skip');
    expect(ids).toHaveLength(5);
  });

  it('neverMask (the policy’s, or the tool definition’s mark on the record): neither superseded nor masked', () => {
    const byPolicy = reads(context().system().user(), Array<string>(30).fill('file-a'));
    const p = plan(byPolicy, { tools: { read_file: { neverMask: true } } }, { trigger: 'forced' });
    const ids = toolIds(byPolicy);
    for (const id of ids) expect(['keep', 'drop']).toContain(opOf(p, id).op);
    expect(strategiesOf(p)).not.toContain('supersede-tool-results');
    expect(strategiesOf(p)).not.toContain('mask-tool-results');

    const byDefinition = reads(context().system().user(), Array<string>(30).fill('file-a'));
    for (const m of byDefinition.messages) if (m.role === 'tool') m.neverMask = true;
    const q = plan(byDefinition, {}, { trigger: 'forced' });
    expect(strategiesOf(q)).not.toContain('supersede-tool-results');
    expect(strategiesOf(q)).not.toContain('mask-tool-results');
    // The policy may lift the definition's mark.
    const r = plan(byDefinition, { tools: { read_file: { neverMask: false } } }, { trigger: 'forced' });
    expect(strategiesOf(r)[0]).toBe('supersede-tool-results');
  });

  it('pairs stay whole: the marker is the result, under the call’s id, and names the newer one and the original', () => {
    const c = reads(context().system().user(), ['file-a', 'file-b', 'file-a']);
    const p = plan(c, { strategies: ['supersede-tool-results'] }, { trigger: 'forced' });
    const ids = toolIds(c);
    const replaced: Record<string, MessageMeta> = {};
    const bodies = new Map<string, ChatMessage>();
    for (const m of c.messages) {
      bodies.set(m.id, {
        role: m.role,
        content: m.role === 'tool' ? `contents of ${m.resource}\n`.repeat(300) : 'text',
        ...(m.toolCallIds
          ? {
              tool_calls: m.toolCallIds.map((id) => ({
                id,
                type: 'function' as const,
                function: { name: 'read_file', arguments: '{}' },
              })),
            }
          : {}),
        ...(m.toolCallId ? { tool_call_id: m.toolCallId } : {}),
      });
    }
    for (const op of p.operations) {
      if (op.op !== 'mask') continue;
      const meta = c.messages.find((m) => m.id === op.id)!;
      const body = replacementBody(bodies.get(op.id)!, meta, op, '', { counter });
      expect(body.content).toBe(
        `[superseded: the tool read_file was called again with the same arguments; its newer result is message ${ids[2]}. ` +
          `This older result (2000 tokens) is stored: context_reload("${meta.key}")]`,
      );
      expect(body.tool_call_id).toBe(meta.toolCallId);
      bodies.set(op.id, body);
      replaced[op.id] = { ...meta, key: `replaced/${op.id}.json`, ref: meta.key, kind: 'masked', tokens: 80 };
    }
    expect(Object.keys(replaced)).toEqual([ids[0]]);
    const after = applyPlan(c.messages, p, replaced);
    expect(after.map((m) => m.id)).toEqual(c.ids());
    expect(toolPairViolations(after.map((m) => pairViewOf(bodies.get(m.id)!)))).toEqual([]);
  });
});

describe('per-tool limits in the planner', () => {
  it('maxResultTokens: a result over the tool’s limit is cut to it by truncate-tool-results (others to the policy’s)', () => {
    const c = reads(context().system().user(), ['a'], 3_000, 'build_log');
    reads(c, ['b'], 3_000, 'read_file');
    const p = plan(
      c,
      { strategies: ['truncate-tool-results'], tools: { build_log: { maxResultTokens: 500 } } },
      { trigger: 'forced' },
    );
    const [log, file] = toolIds(c);
    expect(opOf(p, log!)).toMatchObject({ op: 'truncate', maxTokens: 500 });
    expect(opOf(p, file!).op).not.toBe('truncate'); // under the policy's 8,000
  });

  it('preview: a cut keeps the preview and its marker; a mask keeps the preview of the head', () => {
    const c = reads(context().system().user(), ['a'], 3_000, 'build_log');
    const cut = plan(
      c,
      { strategies: ['truncate-tool-results'], tools: { build_log: { maxResultTokens: 500, preview: 100 } } },
      { trigger: 'forced' },
    );
    expect(opOf(cut, toolIds(c)[0]!)).toMatchObject({ op: 'truncate', maxTokens: 140 });

    const many = reads(
      context().system().user(),
      Array.from({ length: 30 }, (_, i) => `f${i}`),
      2_000,
      'build_log',
    );
    const masked = plan(many, { tools: { build_log: { preview: 120 } } });
    const op = masked.operations.find((o) => o.op === 'mask')!;
    expect(op).toEqual({ op: 'mask', id: op.id, tokens: MASK_TOKENS + 120, previewTokens: 120 });
    // The definition's preview, kept on the record, when the policy sets none.
    for (const m of many.messages) if (m.role === 'tool') m.resultPreview = 50;
    const byRecord = plan(many, {});
    expect(byRecord.operations.find((o) => o.op === 'mask')).toMatchObject({ previewTokens: 50 });
  });

  it('a masked result with a preview keeps its head within the preview, then the stub naming the original', () => {
    const meta: MessageMeta = {
      id: 'm000009',
      role: 'tool',
      tokens: 3_000,
      chars: 12_000,
      key: 'k/m9.json',
      toolCallId: 'c9',
    };
    const text = Array.from({ length: 1_500 }, (_, i) => `line ${i}`).join('\n');
    const original: ChatMessage = { role: 'tool', tool_call_id: 'c9', content: text };
    const op: Extract<Operation, { op: 'mask' }> = {
      op: 'mask',
      id: meta.id,
      tokens: MASK_TOKENS + 100,
      previewTokens: 100,
    };
    const body = replacementBody(original, meta, op, '', { counter });
    const content = body.content as string;
    expect(content.startsWith('line 0\nline 1\n')).toBe(true);
    expect(content).toMatch(
      /\n\[tool result masked to save context: 12000 characters, 3000 tokens; read it with context_reload\("k\/m9\.json"\)\]$/,
    );
    const stubOnly = replacementBody(original, meta, { op: 'mask', id: meta.id, tokens: MASK_TOKENS }, '', { counter });
    const extra = countMessage(counter, body) - countMessage(counter, stubOnly);
    expect(extra).toBeLessThanOrEqual(100);
    expect(extra).toBeGreaterThan(90);
  });
});
