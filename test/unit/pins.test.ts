/**
 * Pins and the budget the model sees, the pure parts (issue 30): the planner keeps a pinned message and its step in
 * every plan (the emergency cut and halving too); which pins the pinned block carries; the pin budget's refusal; the
 * block's place in a request; the budget note's words; the `pin` input's checks.
 */
import { describe, expect, it } from 'vitest';
import { protectionOf } from '../../engine/planner/index.ts';
import { resolvePolicy } from '../../engine/presets.ts';
import { toolPairViolations } from '../../engine/tool-pairs.ts';
import { BUDGET_NOTE_TAG, budgetNote, budgetText, isBudgetNote } from '../../engine/budget-note.ts';
import {
  pinBudgetOf,
  pinnedBlockOf,
  pinnedBlockTokensOf,
  pinnedIdsOf,
  pinRefusal,
  validatePinInput,
  validateUnpinInput,
  PINNED_BLOCK_HEADING,
} from '../../contract/pins.ts';
import type { Pin } from '../../contract/pins.ts';
import { messageKey } from '../../contract/keys.ts';
import { insertBudgetNote, insertPinnedBlock } from '../../activities/request-extras.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { context } from '../support/contexts.ts';
import { plan, WINDOW } from './engine/planner-support.ts';

const agent = { agentId: 't' };
const pinOf = (id: string, messageId: string, tokens = 100): Pin => ({
  id,
  kind: 'message',
  messageId,
  key: messageKey(agent, messageId),
  tokens,
  preview: '',
  by: 'person',
});

describe('the planner keeps pinned messages', () => {
  it('a pinned tool result is fixed with its whole step; without the pin a forced summary takes it', () => {
    const c = context().system().user().turns(12, 2_000);
    const toolIds = c.messages.filter((m) => m.role === 'tool').map((m) => m.id);
    const pinned = toolIds[1]!;
    const caller = c.messages[c.messages.findIndex((m) => m.id === pinned) - 1]!;
    const protect = protectionOf(c.messages, resolvePolicy(), WINDOW, undefined, undefined, [pinned]);
    expect(protect[c.messages.findIndex((m) => m.id === pinned)]).toBe('fixed');
    expect(protect[c.messages.indexOf(caller)]).toBe('fixed'); // its call, so the pair stays whole

    const without = plan(c, {}, { trigger: 'forced', strategies: ['summarize'] });
    expect(without.operations.find((o) => o.id === pinned)!.op).toBe('drop');
    const withPin = plan(c, {}, { trigger: 'forced', strategies: ['summarize'], pinnedIds: [pinned] });
    expect(withPin.action).toBe('compact');
    expect(withPin.operations.find((o) => o.id === pinned)!.op).toBe('keep');
    expect(withPin.operations.find((o) => o.id === caller.id)!.op).toBe('keep');
    const kept = c.messages.filter((m) => withPin.operations.find((o) => o.id === m.id)!.op !== 'drop');
    expect(
      toolPairViolations(kept.map((m) => ({ role: m.role, toolCallIds: m.toolCallIds, toolCallId: m.toolCallId }))),
    ).toEqual([]);
  });

  it('over the hard limit, the emergency steps cut and halve around a pinned message, never it', () => {
    const c = context().system().user().tools(30_000).reply().user().tools(30_000).reply().user(100);
    const big = c.messages.filter((m) => m.role === 'tool')[0]!.id;
    const without = plan(c, {}, { trigger: 'overflow', attempt: 3 });
    expect(without.operations.find((o) => o.id === big)!.op).not.toBe('keep');
    const withPin = plan(c, {}, { trigger: 'overflow', attempt: 3, pinnedIds: [big] });
    expect(withPin.operations.find((o) => o.id === big)!.op).toBe('keep');
    // The largest message pinned, over the hard limit even alone: the cut takes the others, never it.
    const large = context().system().user().tools(70_000).reply().user(100).tools(20_000);
    const pinned = large.messages.filter((m) => m.role === 'tool')[0]!.id;
    const cut = plan(large, {}, { trigger: 'overflow', attempt: 3, pinnedIds: [pinned] });
    expect(cut.steps.map((s) => s.strategy)).toContain('truncate-oversized');
    expect(cut.operations.find((o) => o.id === pinned)!.op).toBe('keep');
  });
});

describe('the pinned block and the pin budget', () => {
  const c = context().system().user().tools(500).reply();
  const records = c.messages.map(({ key: _, ...record }) => ({ ...record, preview: '' }));
  const inContext = pinOf('pin-1', c.messages[3]!.id, 500);
  const gone = pinOf('pin-2', 'm000999', 40);
  const text: Pin = {
    id: 'pin-3',
    kind: 'text',
    key: 'agents/t/pins/pin-3.json',
    tokens: 20,
    preview: '',
    by: 'model',
  };

  it('carries texts and pinned messages no longer in the context; the planner protects the others', () => {
    expect(pinnedBlockOf(agent, [inContext, gone, text], records).map((pin) => pin.id)).toEqual(['pin-2', 'pin-3']);
    expect(pinnedIdsOf(agent, [inContext, gone, text], records)).toEqual([inContext.messageId]);
    expect(pinnedBlockTokensOf(agent, [inContext], records)).toBe(0);
    expect(pinnedBlockTokensOf(agent, [text], records)).toBeGreaterThan(20);
  });

  it('refuses a pin over the budget, naming the budget and the sizes', () => {
    expect(pinBudgetOf(undefined, 128_000)).toBe(12_800);
    expect(pinBudgetOf({ pinRatio: 0.01 }, 8_192)).toBe(81);
    expect(pinRefusal([inContext], 300, 819)).toBeUndefined();
    expect(pinRefusal([inContext], 400, 819)).toBe(
      'pin budget: this pin counts 400 tokens and the pins 500, over the budget of 819 tokens (policy pinRatio of ' +
        'the window; unpin something, or raise pinRatio)',
    );
  });

  it('goes right after the leading system messages, each pin under its label, verbatim', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You read logs.' },
      { role: 'user', content: 'hi' },
    ];
    insertPinnedBlock(
      messages,
      [
        { key: 'a', label: 'pin-1 (text)' },
        { key: 'b', label: 'pin-2 (message m000004)' },
      ],
      [
        { role: 'user', content: 'The code is 7401.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
      ],
    );
    expect(messages.map((m) => m.role)).toEqual(['system', 'system', 'user']);
    expect(messages[1]!.content).toBe(
      `${PINNED_BLOCK_HEADING}\n\n[pin-1 (text)]\nThe code is 7401.\n\n[pin-2 (message m000004)]\n[tool call f({})]`,
    );
  });
});

describe('the budget note', () => {
  const figures = {
    tokens: 41_200,
    window: 128_000,
    triggerRatio: 0.8,
    steps: { used: 2, limit: 8 },
    turnTokens: { used: 90_000, limit: 200_000 },
    pins: { count: 2, tokens: 1_200, budget: 12_800 },
    compacted: [{ seq: 3, trigger: 'forced', strategies: ['summarize'], tokensBefore: 90_000, tokensAfter: 30_000 }],
  };

  it('says the tokens of the window, the turn left, the pins and what was compacted, in one short paragraph', () => {
    expect(budgetText(figures)).toBe(
      'Context: 41,200 of 128,000 tokens in use (32%; compaction at 80%). Turn: 6 of 8 steps left, 110,000 tokens ' +
        'left of 200,000 (90,000 tokens spent). Pins: 2 (1,200 of 12,800 tokens). Compacted since the last note: ' +
        '#3 forced (summarize): 90,000 → 30,000 tokens.',
    );
    const note = budgetNote({ ...figures, pins: undefined, compacted: [] });
    expect(isBudgetNote({ role: 'user', content: note })).toBe(true);
    expect(isBudgetNote({ role: 'user', content: 'Context: 1 of 2' })).toBe(false);
    expect(note).not.toContain('Pins');
    expect(note).not.toContain('Compacted');
  });

  it("goes last after tool results, and before the person's words when the request ends with them", () => {
    const call = { id: 'c1', type: 'function' as const, function: { name: 'read', arguments: '{}' } };
    const base: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'task' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'c1', content: 'result' },
    ];
    const roles = (messages: ChatMessage[]) => messages.map((m) => (isBudgetNote(m) ? 'note' : m.role));
    const afterTools = [...base];
    insertBudgetNote(afterTools, BUDGET_NOTE_TAG);
    expect(roles(afterTools)).toEqual(['system', 'user', 'assistant', 'tool', 'note']);
    const steered: ChatMessage[] = [
      ...base,
      { role: 'user', content: 'steer 1' },
      { role: 'user', content: 'steer 2' },
    ];
    insertBudgetNote(steered, BUDGET_NOTE_TAG);
    expect(roles(steered)).toEqual(['system', 'user', 'assistant', 'tool', 'note', 'user', 'user']);
    expect(steered.at(-1)!.content).toBe('steer 2');
    const opening: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hello' },
    ];
    insertBudgetNote(opening, BUDGET_NOTE_TAG);
    expect(roles(opening)).toEqual(['system', 'note', 'user']);
  });
});

describe('pin input', () => {
  it('takes exactly one of a message id and a text, naming the field', () => {
    expect(() => validatePinInput({ messageId: 'm000001' })).not.toThrow();
    expect(() => validatePinInput({ text: 'keep' })).not.toThrow();
    expect(() => validatePinInput({})).toThrow('pin: give exactly one of messageId');
    expect(() => validatePinInput({ messageId: 'm1', text: 'x' })).toThrow('exactly one');
    expect(() => validatePinInput({ text: ' ' })).toThrow('text: must be a non-empty string');
    expect(() => validatePinInput({ text: 'x'.repeat(200_001) })).toThrow('over the limit of 200000');
    expect(() => validateUnpinInput({ pin: 'pin-3' })).not.toThrow();
    expect(() => validateUnpinInput({ pin: 'm000001' })).toThrow('pin: must be a pin id such as "pin-1"');
  });
});
