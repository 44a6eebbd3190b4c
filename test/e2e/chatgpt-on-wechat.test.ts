/**
 * The chatgpt-on-wechat preset on a real agent (issues 31 and 45): the tool results of earlier turns over 20,000
 * characters are cut before every decision loop, the turn in progress keeping its own whole; over the turn limit the
 * oldest half of the turns is trimmed once, the summary injected into the first kept user message, which stays a user
 * turn; over the budget with fewer than 5 turns, each turn keeps its first user text and last reply, the tool chains
 * going into the summary (ours: the coverage invariant); on a provider overflow, the user's text and the tool result
 * of the turn in progress are cut to 10,000 characters too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentContext, agentProgress, compactionEvents, storedCompactionEvents } from '../../client/reads.ts';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { EXTRACTIVE_LABEL } from '../../engine/extractive.ts';
import { defineTool } from '../../activities/tools.ts';
import { textOf } from '../../engine/messages.ts';
import type { RecordedRequest } from '../../llm/chat-server.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

/** A page of 30,000 characters: numbered lines, so that its head and tail can be told apart. */
const PAGE = Array.from({ length: 1_000 }, (_, i) => `line ${String(i).padStart(4, '0')} of the page ......`)
  .join('\n')
  .slice(0, 30_000);

const fetchPage = defineTool({
  name: 'fetch_page',
  description: 'Fetch the page',
  parameters: { type: 'object', properties: {} },
  run: () => Promise.resolve(PAGE),
});

/** Rows of about 4,000 characters: a result well under the cut's 20,000. */
const ROWS = Array.from({ length: 100 }, (_, i) => `row ${String(i).padStart(3, '0')}: ${'abcdefghij'.repeat(3)}`).join(
  '\n',
);

const listRows = defineTool({
  name: 'list_rows',
  description: 'List the rows',
  parameters: { type: 'object', properties: {} },
  run: () => Promise.resolve(ROWS),
});

/** The system prompt of agents whose provider refuses a request holding a message over 11,000 characters. */
const OVERFLOW_PROMPT = 'cow overflow test';
const OVERFLOW_CHARS = 11_000;

const note = defineTool({
  name: 'note',
  description: 'Take a note',
  parameters: { type: 'object', properties: {} },
  run: () => Promise.resolve('noted'),
});

let h: Harness;
let calls = 0;

beforeAll(async () => {
  h = await startHarness(
    (request) => {
      const { messages } = request.body;
      const last = messages.at(-1)!;
      if (messages[0]?.content === OVERFLOW_PROMPT && messages.some((m) => textOf(m.content).length > OVERFLOW_CHARS)) {
        return { status: 400, error: "This model's maximum context length is 4096 tokens. Please reduce the length." };
      }
      // After the page, one more step (a small note) in the same turn, then the answer; after the rows, the answer.
      if (last.role === 'tool' && textOf(last.content) === 'noted') return { content: 'fetched' };
      if (last.role === 'tool' && textOf(last.content).startsWith('row 000')) return { content: 'listed' };
      if (last.role === 'tool') {
        return {
          content: null,
          toolCalls: [
            { id: `call_${++calls}`, type: 'function' as const, function: { name: 'note', arguments: '{}' } },
          ],
        };
      }
      if (last.role === 'user' && textOf(last.content).includes('list')) {
        return {
          content: null,
          toolCalls: [
            { id: `call_${++calls}`, type: 'function' as const, function: { name: 'list_rows', arguments: '{}' } },
          ],
        };
      }
      if (textOf(last.content).includes('fetch')) {
        return {
          content: null,
          toolCalls: [
            { id: `call_${++calls}`, type: 'function' as const, function: { name: 'fetch_page', arguments: '{}' } },
          ],
        };
      }
      return { content: `ok: ${textOf(last.content).slice(-12)}` };
    },
    [fetchPage, note, listRows],
    { summaryModel: null },
  );
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const toolContents = (request: RecordedRequest) =>
  request.body.messages.filter((m) => m.role === 'tool').map((m) => textOf(m.content));

describe('chatgpt-on-wechat', () => {
  it('"tool results > 20,000 chars cut to head + tail with a notice (older turns only)": before the next turn\'s first call', async () => {
    const agentId = newAgentId('cow-cut');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { preset: 'chatgpt-on-wechat' },
    });
    const from = h.model.requests.length;
    await sendMessage(h.client, agentId, 'Please fetch the page.');
    // The turn in progress keeps its result whole, in every call of its loop (after the page, after the note).
    const inTurn = h.model.requests.slice(from).filter((r) => r.body.messages.at(-1)?.role === 'tool');
    expect(inTurn).toHaveLength(2);
    expect(toolContents(inTurn[0]!)).toEqual([PAGE]);
    expect(toolContents(inTurn[1]!)).toEqual([PAGE, 'noted']);
    expect(await compactionEvents(h.client, agentId)).toEqual([]);

    const next = h.model.requests.length;
    await sendMessage(h.client, agentId, 'Thanks, that is all.');
    const [first] = h.model.requests.slice(next);
    const [cut] = toolContents(first!);
    expect(cut).toMatch(/\[\.\.\. \d+ characters omitted from this tool result \.\.\.\]/);
    expect(cut!.startsWith('line 0000 of the page')).toBe(true);
    expect(cut!.endsWith(PAGE.slice(-200))).toBe(true);
    expect(cut!.length).toBeLessThan(20_000);
    const events = await compactionEvents(h.client, agentId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ trigger: 'auto', strategies: ['truncate-tool-results'] });
  });

  it('"turns > max turns": the oldest half trimmed once, into the first kept user message, which stays a turn', async () => {
    const agentId = newAgentId('cow-turns');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { preset: 'chatgpt-on-wechat', maxTurns: 3 },
    });
    for (let turn = 1; turn <= 4; turn++) await sendMessage(h.client, agentId, `message number ${turn}`);
    // At the 4th turn (4 > 3): the oldest half trimmed (the goal stands for its turn), the summary put at the head of
    // the request in progress, which keeps its text and counts as a turn.
    const [trimmed] = await compactionEvents(h.client, agentId);
    expect(trimmed).toMatchObject({ trigger: 'auto', strategies: ['trim-turns'] });
    const context = await agentContext(h.client, agentId);
    const host = context.find((m) => m.kind === 'summary');
    expect(host).toMatchObject({ role: 'user', userTurn: true });
    const lastRequest = h.model.requests.at(-1)!;
    const hostText = textOf(
      lastRequest.body.messages.find((m) => textOf(m.content).includes('message number 4'))!.content,
    );
    expect(hostText.endsWith('message number 4')).toBe(true);
    expect(hostText.length).toBeGreaterThan('message number 4'.length);
    // Counted as a turn: 2 turns now (the goal, the host), so the 6th message (4 > 3) trims again, not the 7th.
    for (let turn = 5; turn <= 6; turn++) await sendMessage(h.client, agentId, `message number ${turn}`);
    expect(await compactionEvents(h.client, agentId)).toHaveLength(2);
  });

  it('"under 5 turns keep only first user text and last reply per turn": the tool chain into the summary (ours), the user\'s words as sent', async () => {
    // The budget: what one turn of rows leaves, and some; the second turn's rows pass it.
    const probe = newAgentId('cow-probe');
    await startAgent(h.client, {
      agentId: probe,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { preset: 'chatgpt-on-wechat' },
    });
    await sendMessage(h.client, probe, 'Please list the rows.');
    const oneTurn = (await agentProgress(h.client, probe)).contextTokens;

    const agentId = newAgentId('cow-few');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { preset: 'chatgpt-on-wechat', maxTokens: oneTurn + 300 },
    });
    await sendMessage(h.client, agentId, 'Please list the rows.');
    const chain = (await agentContext(h.client, agentId)).filter((m) => m.role === 'tool' || m.toolCallIds?.length);
    expect(chain.map((m) => m.role)).toEqual(['assistant', 'tool']);
    await sendMessage(h.client, agentId, 'Please list the rows once more.');
    // One compaction, one pass.
    const events = await compactionEvents(h.client, agentId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ trigger: 'auto', strategies: ['trim-turns'], responseFormat: 'none' });
    // The first turn's tool chain (its call and its result) left into the summary (extractive: no summary model),
    // which names it: each id listed as removed into it, its call and the head of its result quoted.
    const [event] = await storedCompactionEvents(h.store, await agentState(h.client, agentId), [events[0]!.seq]);
    const removed = new Map(event!.removed.map((r) => [r.id, r]));
    for (const m of chain) expect(removed.get(m.id)).toMatchObject({ by: 'trim-turns', replacedBy: 'summary' });
    const context = await agentContext(h.client, agentId);
    const host = context.find((m) => m.kind === 'summary')!;
    expect(host).toMatchObject({ role: 'user', userTurn: true });
    expect(context.some((m) => chain.some((c) => c.id === m.id))).toBe(false);
    // The next request: the first turn its request and its reply; the user's words as sent, the second request's
    // after the summary at its head (it stays a user turn), then longrun's task ledger, the call and its rows.
    const last = h.model.requests.at(-1)!.body.messages;
    expect(last.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'user', 'assistant', 'tool']);
    expect(context.map((m) => m.kind ?? 'normal')).toEqual([
      'normal',
      'normal',
      'summary',
      'ledger',
      'normal',
      'normal',
      'normal',
    ]);
    expect(last.slice(0, 2).map((m) => textOf(m.content))).toEqual(['Please list the rows.', 'listed']);
    const hostText = textOf(last[2]!.content);
    expect(hostText).toContain(EXTRACTIVE_LABEL);
    expect(hostText).toMatch(/list_rows\(\{\}\) → row 000: /);
    expect(hostText.endsWith("[The user's message continues:]\nPlease list the rows once more.")).toBe(true);
    expect((await sendMessage(h.client, agentId, 'Thanks.')).reply).toMatch(/^ok/);
  });

  it('"on a provider overflow error: trim hard (10k chars, 5 turns)": the request in progress and its page cut too', async () => {
    const agentId = newAgentId('cow-overflow');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      systemPrompt: OVERFLOW_PROMPT,
      compaction: { preset: 'chatgpt-on-wechat' },
    });
    const request = `Please fetch the page.\n${PAGE.slice(0, 12_000)}`; // a 12,000-character paste
    const from = h.model.requests.length;
    expect(await sendMessage(h.client, agentId, request)).toMatchObject({ reply: 'fetched' });
    const events = await compactionEvents(h.client, agentId);
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.trigger === 'overflow' && e.strategies.includes('trim-turns'))).toBe(true);
    // Every request the provider took holds no message over its limit: the user's text and the page went cut, each
    // its head, the notice and its tail.
    const taken = h.model.requests
      .slice(from)
      .filter((r) => !r.body.messages.some((m) => textOf(m.content).length > OVERFLOW_CHARS));
    const final = taken.at(-1)!.body.messages;
    const user = textOf(final.find((m) => m.role === 'user')!.content);
    expect(user.startsWith('Please fetch the page.')).toBe(true);
    expect(user).toMatch(/characters omitted/);
    expect(user.endsWith(request.slice(-100))).toBe(true);
    const page = textOf(final.find((m) => m.role === 'tool')!.content);
    expect(page.startsWith('line 0000 of the page')).toBe(true);
    expect(page).toMatch(/characters omitted/);
    expect(page.length).toBeLessThanOrEqual(OVERFLOW_CHARS);
  });
});
