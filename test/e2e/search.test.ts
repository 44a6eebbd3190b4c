/**
 * Full-text search over what an agent stored (`context_search`, `searchAgent`, `longrun search`), on the real stack:
 * a long tool loop in a small window (automatic compactions; more messages than one sealed block of the index), a
 * continue-as-new, the model calling context_search through the loopback model server, bad input from the model,
 * the client and the CLI, and a closed agent.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHandle, agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { searchAgent } from '../../client/search.ts';
import { InvalidInputError } from '../../contract/inputs.ts';
import { agentLife, lifePrefix, messageKey } from '../../contract/keys.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import type { RecordedRequest } from '../../llm/chat-server.ts';
import { SEARCH_BLOCK, searchPrefix } from '../../storage/search-index.ts';
import { nextStep, readFile } from '../support/files.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';

/** Tool steps of the loop: two messages each, so the first block of the index (256 messages) is sealed. */
const STEPS = 140;
const WINDOW = 8_192;

const isSummaryRequest = (request: RecordedRequest) => request.body.model === 'summary-model';

/** The model: `loop:` reads the modules one by one; `search: words` calls context_search; `search-bad` calls it wrong. */
function script(request: RecordedRequest) {
  const messages = request.body.messages;
  if (isSummaryRequest(request)) {
    return {
      content: JSON.stringify({
        task_overview: 'Read every module (summary zebracorn).',
        current_state: 'Reading modules.',
        important_discoveries: 'Each module has one TypeError line.',
        next_steps: 'Read the next module.',
        context_to_preserve: '',
        decisions: [],
        done: [],
        pending: [],
      }),
    };
  }
  const user = textOf(messages.findLast((m) => m.role === 'user')?.content);
  const last = messages.at(-1)!;
  // The loop goes on from its own tool results (the user message may be in a summary by then).
  if (user.startsWith('loop:') || (last.role === 'tool' && last.tool_call_id?.startsWith('call_'))) {
    return nextStep(messages, STEPS);
  }
  if (last.role === 'tool') {
    const results = messages.slice(messages.findLastIndex((m) => m.role === 'assistant') + 1);
    return { content: results.map((m) => textOf(m.content)).join('\n---\n') };
  }
  const call = (id: string, args: unknown) => ({
    id,
    type: 'function' as const,
    function: { name: 'context_search', arguments: JSON.stringify(args) },
  });
  if (user.startsWith('search:'))
    return { content: null, toolCalls: [call('s1', { query: user.slice(7).trim(), limit: 50 })] };
  if (user === 'search-bad') {
    return {
      content: null,
      toolCalls: [call('b1', { query: 'value3', limit: 0 }), call('b2', { query: '  ' }), call('b3', { limit: 2 })],
    };
  }
  return { content: `noted: ${user}` };
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(script, [readFile]);
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const agentId = newAgentId('search');

describe('context_search', () => {
  it('finds a tool result that left the context, after several compactions and a continue-as-new, in a sealed block', async () => {
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      systemPrompt: 'You are a coding agent.',
      modelOverride: { window: WINDOW },
    });
    const loop = await sendMessage(h.client, agentId, `loop: read src/module_1.ts to src/module_${STEPS}.ts`);
    expect(loop.toolCalls).toBe(STEPS);
    const first = await agentHandle(h.client, agentId).describe();
    // A run hands over (continue-as-new) once it is 2 s old, at the server's suggestion: messages until it has.
    await sleep(2_100);
    for (let i = 0; i < 10 && (await agentHandle(h.client, agentId).describe()).runId === first.runId; i++) {
      await sendMessage(h.client, agentId, `filler ${i}`);
    }
    expect((await agentHandle(h.client, agentId).describe()).runId).not.toBe(first.runId);
    await sendMessage(h.client, agentId, 'after the hand-over: the kumquat order ships Friday');

    const state = await agentState(h.client, agentId);
    expect(state.compactions).toBeGreaterThanOrEqual(2);
    const life = agentLife(state);
    // The index: the first block of messages sealed into one segment, and the rest in small ones.
    const keys = await h.store.list(searchPrefix(life));
    expect(keys).toContain(`${searchPrefix(life)}1/m000000.json`);
    expect(keys.filter((key) => key.startsWith(`${searchPrefix(life)}0/m`)).length).toBeLessThan(SEARCH_BLOCK);

    // The error line is in the tool result and, as a must-keep fact, in the summaries and task ledgers made since:
    // they rank with it, and it is among the first five.
    const matches = await searchAgent(h.client, agentId, 'module_3.ts TypeError value3 undefined', {
      store: h.store,
      limit: 50,
    });
    expect(matches.slice(0, 5).some((match) => match.kind === 'summary' || match.kind === 'ledger')).toBe(true);
    const hit = matches.slice(0, 5).find((match) => match.kind === 'message');
    expect(hit).toMatchObject({ role: 'tool' });
    expect(hit!.key).toBe(messageKey(life, hit!.id));
    expect(hit!.snippet).toContain('ERROR src/module_3.ts:13: TypeError: value3 is undefined');
    const body = JSON.parse((await h.store.get(hit!.key))!) as ChatMessage;
    expect(textOf(body.content)).toContain('// src/module_3.ts');
    expect(state.messages.map((m) => m.id)).not.toContain(hit!.id); // it left the context long ago

    const summaries = await searchAgent(h.client, agentId, 'zebracorn', { store: h.store, limit: 50 });
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    expect(summaries.every((match) => match.kind === 'summary' && match.key.startsWith(lifePrefix(life)))).toBe(true);

    const late = await searchAgent(h.client, agentId, 'kumquat', { store: h.store });
    expect(late.map((match) => [match.role, match.turn, match.step]).sort()).toEqual([
      ['assistant', state.turns, 1],
      ['user', state.turns, 1],
    ]);
  }, 300_000);

  it('the model calls context_search and reads the matches, each with the reference context_reload takes', async () => {
    const result = await sendMessage(h.client, agentId, 'search: module_7.ts:17 TypeError');
    const state = await agentState(h.client, agentId);
    const matches = await searchAgent(h.client, agentId, 'module_7.ts:17 TypeError', { store: h.store, limit: 50 });
    const module7 = matches.find(
      (match) => match.role === 'tool' && match.snippet.includes('ERROR src/module_7.ts:17'),
    );
    expect(module7).toBeDefined();
    // The first match is a stored body: a message, a summary or a task ledger that quotes the line (which one ranks
    // first depends on where the compactions fell).
    expect(result.reply).toMatch(/^\d+ match\(es\) for "module_7.ts:17 TypeError", best first:\n1\. [cml]\d{6} \(/);
    expect(result.reply).toContain(`. ${module7!.id} (tool) score`);
    expect(result.reply).toContain(`context_reload("${messageKey(agentLife(state), module7!.id)}")`);
    expect(result.reply).toContain('ERROR src/module_7.ts:17: TypeError: value7 is undefined');
    const request = h.model.requests.findLast((r) =>
      r.body.messages.some((m) => m.content === 'search: module_7.ts:17 TypeError'),
    );
    expect((request!.body.tools as { function: { name: string } }[]).map((t) => t.function.name)).toContain(
      'context_search',
    );
  });

  it('answers the model’s bad calls with errors naming the field and the limit', async () => {
    const result = await sendMessage(h.client, agentId, 'search-bad');
    expect(result.reply.split('\n---\n')).toEqual([
      'error: limit must be an integer from 1 to 50 (got 0)',
      'error: query must be a non-empty string',
      'error: query must be a non-empty string',
    ]);
  });

  it('searches a closed agent from the client and the CLI; bad input is refused before anything is read', async () => {
    await closeAgent(h.client, agentId);
    await agentHandle(h.client, agentId).result();
    const late = await searchAgent(h.client, agentId, 'kumquat', { store: h.store });
    expect(late.find((match) => match.role === 'user')?.snippet).toBe(
      'after the hand-over: the kumquat order ships Friday',
    );

    const env = cliEnv(h);
    const json = await runLongrun(['search', agentId, 'value3', 'is', 'undefined', '--json', '--limit', '2'], { env });
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    const matches = JSON.parse(json.stdout) as { id: string; key: string; snippet: string }[];
    expect(matches).toHaveLength(2);
    expect(matches[0]!.snippet).toContain('TypeError: value3 is undefined');
    const text = await runLongrun(['search', agentId, 'kumquat'], { env });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /^2 match\(es\) for "kumquat", best first:\n1\. m\d{6} \((user|assistant), turn \d+, step 1\) score /,
    );
    // Each match ends with the command that prints it whole: pasted, it runs.
    const command = /: (longrun reload \S+ \S+)\n/.exec(text.stdout)?.[1];
    expect(command, text.stdout).toBe(`longrun reload ${agentId} ${late[0]!.key}`);
    const reloaded = await runLongrun(command!.split(' ').slice(1), { env });
    expect(reloaded.code, reloaded.stderr).toBe(0);
    expect(reloaded.stdout).toContain('kumquat');
    // The model's form of the same reference, as the context_search tool shows it, is taken too.
    const asTool = await runLongrun(['reload', agentId, `context_reload("${late[0]!.key}")`], { env });
    expect(asTool.code, asTool.stderr).toBe(0);
    expect(asTool.stdout).toBe(reloaded.stdout);

    const zero = await runLongrun(['search', agentId, 'value3', '--limit', '0'], { env });
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('--limit: must be an integer from 1 to 50 (got "0")');
    const blank = await runLongrun(['search', agentId, ' '], { env });
    expect(blank.code).toBe(2);
    expect(blank.stderr).toContain('search: query must be a non-empty string');
    await expect(searchAgent(h.client, agentId, '', { store: h.store })).rejects.toThrow(
      new InvalidInputError('query must be a non-empty string'),
    );
    await expect(searchAgent(h.client, agentId, 'x', { store: h.store, limit: 51 })).rejects.toThrow(
      /^limit must be an integer from 1 to 50 \(got 51\)$/,
    );
  }, 60_000);
});
