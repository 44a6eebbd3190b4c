/**
 * Lean payloads (contract/lean-calls.ts): the model and tool calls' inputs and results leave out what the other side
 * knows, and come back whole; payloads recorded before read as they were.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_COUNTING,
  ledgerChangesOf,
  ledgerWith,
  leanModelInput,
  leanModelResult,
  leanSummary,
  leanToolInput,
  leanToolResult,
  toolInputDefaults,
  wholeModelInput,
  wholeModelResult,
  wholeSummary,
  wholeToolResult,
} from '../../contract/lean-calls.ts';
import { EMPTY_LEDGER } from '../../engine/ledger.ts';
import type { TaskLedger } from '../../engine/ledger.ts';
import type {
  CallModelPayload,
  CallModelResult,
  RunToolInput,
  WholeCallModelInput,
} from '../../contract/activities.ts';
import type { LedgerChanges } from '../../contract/compaction-activities.ts';
import { noteFiguresOf } from '../../contract/activities.ts';
import { compactionKey } from '../../contract/keys.ts';
import { DEFAULT_TURN_STEPS } from '../../contract/inputs.ts';
import { budgetNote } from '../../engine/budget-note.ts';
import { registryPrice, resolveModelInfo } from '../../engine/models.ts';
import type { CallOfReply } from '../../engine/messages.ts';

const agent = { agentId: 'a1', life: '01a21bf8-768a-7e58-9bcf-b9841fc2f90e' };
const MODEL = 'gpt-4o-mini';
const registry = resolveModelInfo(MODEL);

/** A model call's input as the workflow builds it (whole), at step 23 of turn 1 after compaction 2. */
function whole(over: Partial<WholeCallModelInput> = {}): WholeCallModelInput {
  return {
    ...agent,
    model: MODEL,
    view: { base: compactionKey(agent, 2, 'context.json'), baseLength: 46, firstSeq: 47, lastSeq: 60 },
    replyId: 'm000061',
    counting: { encoding: 'o200k_base', margin: 1 },
    price: registryPrice(MODEL)!,
    window: registry.window,
    turn: { turn: 1, step: 23 },
    budget: {
      tokens: 5828,
      triggerRatio: 0.8,
      steps: { used: 22, limit: DEFAULT_TURN_STEPS },
      turnTokens: { used: 126260 },
      compacted: [
        { seq: 2, trigger: 'auto', strategies: ['mask-tool-results'], tokensBefore: 8073, tokensAfter: 5828 },
      ],
    },
    ...over,
  };
}

const bytes = (value: unknown) => JSON.stringify(value).length;

describe('a model call’s input', () => {
  it('leaves out what the activity tells itself: default counting, the registry’s window and price, the ids', () => {
    const lean = leanModelInput(whole());
    expect(lean).toEqual({
      ...agent,
      model: MODEL,
      view: { baseCompaction: 2, baseLength: 46, firstSeq: 47, lastSeq: 60 },
      turn: { turn: 1, step: 23 },
      budget: {
        tokens: 5828,
        triggerRatio: 0.8,
        turnTokens: { used: 126260 },
        compacted: whole().budget!.compacted,
      },
    });
    expect(bytes(lean)).toBeLessThan(bytes(whole()) * 0.6);
  });

  it('comes back whole in the activity, field for field', () => {
    const cases: WholeCallModelInput[] = [
      whole(),
      whole({ window: 16_000 }), // an override: kept
      whole({ price: { inputPerMillion: 1, cachedInputPerMillion: 0.1, outputPerMillion: 2 } }),
      whole({ counting: { encoding: 'cl100k_base', margin: 1.2 } }),
      whole({ replyId: 'm000065' }), // not the message after the view's last: kept
      whole({
        view: { base: 'agents/other/compactions/000002/context.json', baseLength: 3, firstSeq: 9, lastSeq: 60 },
      }),
      whole({ view: { firstSeq: 1, lastSeq: 60 } }),
      whole({ turn: { turn: 2, step: 5 } }), // steps used 22 is not step − 1: kept
      whole({ budget: { ...whole().budget!, steps: { used: 22, limit: 199 } } }),
      whole({ model: 'my-local-model', window: 32_000, price: undefined }), // unknown to the registry
      whole({ model: 'gpt-4', counting: { encoding: 'cl100k_base', margin: 1 }, window: 8192 }),
      (({ budget: _, turn: __, ...rest }) => rest)(whole()),
    ];
    for (const input of cases) {
      const lean = leanModelInput(input);
      expect(JSON.parse(JSON.stringify(wholeModelInput(lean)))).toEqual(JSON.parse(JSON.stringify(input)));
    }
    expect(leanModelInput(cases[1]!).window).toBe(16_000);
    expect(leanModelInput(cases[3]!).counting).toEqual({ encoding: 'cl100k_base', margin: 1.2 });
    expect(leanModelInput(cases[5]!).view.base).toBe('agents/other/compactions/000002/context.json');
    expect(leanModelInput(cases[9]!).window).toBe(32_000);
  });

  it('writes the same budget note from the lean figures', () => {
    for (const input of [
      whole(),
      whole({ turn: { turn: 1, step: 1 }, budget: { ...whole().budget!, steps: { used: 0, limit: 8 } } }),
    ]) {
      const restored = wholeModelInput(leanModelInput(input));
      expect(budgetNote(noteFiguresOf(restored.budget!, restored.window!))).toBe(
        budgetNote(noteFiguresOf(input.budget!, input.window!)),
      );
    }
  });

  it('reads an input scheduled before as it was', () => {
    const before = whole({ window: 16_000 });
    expect(wholeModelInput(before)).toEqual(before);
    expect(wholeModelInput({ ...before, counting: DEFAULT_COUNTING }).counting).toEqual(DEFAULT_COUNTING);
  });
});

const call = (id: string, name = 'bash'): CallOfReply => ({ id, type: 'function', function: { name } });

function result(over: Partial<CallModelResult> = {}): CallModelResult {
  return {
    stored: [],
    reply: {
      record: {
        id: 'm000061',
        role: 'assistant',
        chars: 147,
        tokens: 43,
        preview: 'Let me look at the schema',
        toolCallIds: ['call_1', 'call_2'],
      },
      content: '',
      toolCalls: [call('call_1'), call('call_2', 'read')],
      usage: { promptTokens: 2140, completionTokens: 36, cachedTokens: 0 },
      servedBy: MODEL,
    },
    ...over,
  };
}

describe('a model call’s result', () => {
  const asked = { model: MODEL, replyId: 'm000061' };

  it('leaves out what the workflow knows and comes back whole', () => {
    const lean = leanModelResult(result(), whole());
    expect(lean).toEqual({
      reply: {
        record: { chars: 147, tokens: 43, preview: 'Let me look at the schema' },
        toolCalls: [
          { id: 'call_1', function: { name: 'bash' } },
          { id: 'call_2', function: { name: 'read' } },
        ],
        usage: { promptTokens: 2140, completionTokens: 36, cachedTokens: 0 },
      },
    });
    expect(wholeModelResult(lean, asked)).toEqual(result());
  });

  it('keeps what differs from the defaults: stored records, text, another model, none named', () => {
    const stored = [{ id: 'm000060', role: 'user' as const, chars: 5, tokens: 9, preview: 'hello' }];
    const text = result();
    text.reply = { ...text.reply!, content: 'done', toolCalls: [], record: { ...text.reply!.record } };
    delete text.reply.record.toolCallIds;
    const cases: CallModelResult[] = [
      result({ stored }),
      text,
      result({ reply: { ...result().reply!, servedBy: 'gpt-4o-mini-2024-07-18' } }),
      (() => {
        const none = result();
        delete none.reply!.servedBy;
        return none;
      })(),
      { stored, compactionDue: 'tokens 13000 ≥ 12800' },
    ];
    for (const whole_ of cases) {
      const lean = leanModelResult(whole_, whole());
      expect(wholeModelResult(JSON.parse(JSON.stringify(lean)) as CallModelPayload, asked)).toEqual(whole_);
    }
    expect(leanModelResult(cases[3]!, whole()).reply!.servedBy).toBe('');
  });

  it('reads a result recorded before as it was: its record has its id', () => {
    const before = result();
    delete before.reply!.servedBy; // a provider that named no model: still none
    expect(wholeModelResult(before, asked)).toEqual(before);
  });
});

describe('a tool call’s input and result', () => {
  const input = (over: Partial<RunToolInput & { call: CallOfReply }> = {}) => ({
    ...agent,
    call: call('call_1'),
    replyId: 'm000061',
    resultId: 'm000062',
    counting: { encoding: 'o200k_base' as const, margin: 1 },
    approval: 'ask' as const,
    ...over,
  });

  it('names the call by its id when the stored reply holds it; default counting and `ask` left out', () => {
    expect(leanToolInput(input())).toEqual({
      ...agent,
      call: { id: 'call_1' },
      replyId: 'm000061',
      resultId: 'm000062',
    });
    const lean = leanToolInput(input({ approval: 'granted', counting: { encoding: 'cl100k_base', margin: 1 } }));
    expect(lean).toMatchObject({ approval: 'granted', counting: { encoding: 'cl100k_base', margin: 1 } });
    const withArgs = { id: 'c', type: 'function' as const, function: { name: 'context_pin', arguments: '{}' } };
    expect(leanToolInput(input({ call: withArgs })).call).toEqual({ id: 'c', function: withArgs.function });
  });

  it('restores the defaults of a lean input; an input of before keeps its own (no approval: run it)', () => {
    expect(toolInputDefaults(leanToolInput(input()))).toEqual({ counting: DEFAULT_COUNTING, approval: 'ask' });
    const { approval: _, ...before } = input();
    expect(toolInputDefaults(before)).toEqual({ counting: before.counting, approval: undefined });
  });

  it('a lean input’s result leaves out its ids and role, and comes back whole; other answers pass', () => {
    const record = {
      id: 'm000062',
      role: 'tool' as const,
      chars: 1200,
      tokens: 591,
      preview: '<returncode>0</returncode>',
      toolCallId: 'call_1',
      tool: 'bash',
      resource: 'c4637c43b236a38c',
    };
    const lean = leanToolInput(input());
    const payload = leanToolResult(record, lean);
    expect(payload).toEqual({
      chars: 1200,
      tokens: 591,
      preview: '<returncode>0</returncode>',
      tool: 'bash',
      resource: 'c4637c43b236a38c',
    });
    expect(wholeToolResult(payload, { resultId: 'm000062', callId: 'call_1' })).toEqual(record);
    // An input of before (its call with `type`) gets its result whole.
    expect(leanToolResult(record, input())).toEqual(record);
    expect(wholeToolResult(record, { resultId: 'm000062', callId: 'call_1' })).toEqual(record);
    const asked = { approvalNeeded: true as const, arguments: '{"target":"prod"}' };
    expect(wholeToolResult(leanToolResult(asked, lean), { resultId: 'm000062', callId: 'call_1' })).toEqual(asked);
  });
});

describe('a summary’s task ledger', () => {
  const goal = 'Fix the TypeError in marshmallow’s nested validation. '.repeat(20);
  const base: TaskLedger = {
    goal,
    constraints: ['never touch the tests'],
    decisions: [],
    done: ['read schema.py'],
    pending: [],
    nextAction: 'run the repro',
    keyFacts: Array.from({ length: 40 }, (_, i) => `src/marshmallow/file${i}.py`),
  };

  it('comes as a change of the ledger its plan was made with: the same fields left out, lists as their end', () => {
    const next: TaskLedger = {
      ...base,
      done: ['read schema.py', 'wrote the repro'],
      nextAction: 'fix _do_load',
      keyFacts: [...base.keyFacts!.slice(6), 'TypeError: NoneType', 'fix.py'],
    };
    const changes = ledgerChangesOf(base, next);
    expect(changes).toEqual({
      done: ['read schema.py', 'wrote the repro'], // (as a change no shorter: whole)
      nextAction: 'fix _do_load',
      keyFacts: { from: 6, add: ['TypeError: NoneType', 'fix.py'] },
    });
    expect(ledgerWith(base, JSON.parse(JSON.stringify(changes)) as LedgerChanges)).toEqual(next);
    expect(JSON.stringify(changes).length).toBeLessThan(JSON.stringify(next).length / 10);
  });

  it('restores any ledger from any base, none included', () => {
    const others: TaskLedger[] = [
      base,
      { ...base, keyFacts: ['other'], constraints: [] },
      (({ keyFacts: _, ...rest }) => rest)(base), // a field the ledger no longer has
      { ...base, goal: 'another goal', pending: ['a', 'b'], decisions: ['c'] },
      EMPTY_LEDGER,
    ];
    for (const from of [undefined, ...others]) {
      for (const to of others) {
        const changes = JSON.parse(JSON.stringify(ledgerChangesOf(from, to))) as LedgerChanges;
        expect(ledgerWith(from, changes)).toEqual(to);
      }
    }
  });

  it('a summary of before carries its whole ledger: read as it is', () => {
    const outcome = {
      record: { id: 'c000001', role: 'user' as const, key: 'k', chars: 1, tokens: 1, preview: '' },
      parsedAs: 'extractive',
      responseFormat: 'none' as const,
      facts: { found: 0, missing: 0, reprompted: false, pinned: [] },
      ledger: base,
      ledgerRecord: { id: 'l000001', role: 'user' as const, key: 'l', chars: 1, tokens: 1, preview: '' },
      llm: { model: 'extractive', promptTokens: 0, completionTokens: 0, durationMs: 1, cost: 0 },
    };
    expect(wholeSummary(outcome, undefined)).toEqual(outcome);
    const lean = leanSummary({ ...outcome, ledger: { ...base, nextAction: 'next' } }, base);
    expect(lean.ledger).toBeUndefined();
    expect(wholeSummary(lean, base)).toEqual({ ...outcome, ledger: { ...base, nextAction: 'next' } });
  });
});
