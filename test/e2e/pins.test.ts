/**
 * Pins and the budget the model sees, end to end (issue 30): a pinned text and a pinned tool result reach the model
 * verbatim in every request after a forced, an automatic, a background and an overflow compaction, and after a
 * revert; the pin budget's refusal through the CLI; pin and unpin by name with the temporal CLI; the model's own
 * `context_pin` and `context_budget` through the loopback model; the budget note at the end of each request (and
 * none when it is off), the next request's prefix matching the one before up to where the note was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHandle, agentState, compactAgent, revertAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionEvents } from '../../client/reads.ts';
import { agentPins, pinMessage, pinText, unpin } from '../../client/pins.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { PINNED_BLOCK_HEADING } from '../../contract/pins.ts';
import type { PinResult } from '../../contract/pins.ts';
import { BUDGET_NOTE_TAG, isBudgetNote } from '../../engine/budget-note.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import type { RecordedRequest, Responder } from '../../llm/chat-server.ts';
import { isSummaryRequest, newAgentId, startHarness, summaryReply } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { fetchLog, logOf, WINDOW } from '../support/log-session.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import { temporalCli } from '../support/temporal-cli.ts';

/** Agents whose system prompt starts with this have a provider that refuses requests of over 14 messages. */
const SMALL_PROVIDER = 'overflow:';
const PINNED_TEXT = 'The launch code is 7401-ALPHA; never share it.';

/**
 * The scripted model: a user message "page N" calls fetch_log(N), "PIN-TOOL <text>" calls context_pin, "BUDGET-TOOL"
 * calls context_budget; after the tool results, a short answer. The summary model answers in JSON.
 */
const responder: Responder = (request, index) => {
  if (isSummaryRequest(request)) return { content: summaryReply('Read pages of the log.') };
  const messages = request.body.messages;
  if (textOf(messages[0]?.content).startsWith(SMALL_PROVIDER) && messages.length > 14) {
    return { status: 400, error: "This model's maximum context length is 4096 tokens. Please reduce the length." };
  }
  const last = messages.at(-1)!;
  if (last.role !== 'user') return { content: `Done: ${messages.length} messages in view.` };
  const text = textOf(last.content);
  const call = (name: string, args: unknown) => ({
    content: null,
    toolCalls: [
      { id: `call_${index}`, type: 'function' as const, function: { name, arguments: JSON.stringify(args) } },
    ],
  });
  if (text.startsWith('PIN-TOOL ')) return call('context_pin', { text: text.slice('PIN-TOOL '.length) });
  if (text === 'BUDGET-TOOL') return call('context_budget', {});
  return call('fetch_log', { line: Number(/page (\d+)/.exec(text)?.[1] ?? 0) });
};

let h: Harness;

beforeAll(async () => {
  h = await startHarness(responder, [fetchLog]);
});

afterAll(async () => {
  await h?.close();
});

/** The agent's requests to the model (not the summarizer's), by its system prompt. */
function requestsOf(systemPrompt: string): RecordedRequest[] {
  return h.model.requests.filter((r) => !isSummaryRequest(r) && textOf(r.body.messages[0]?.content) === systemPrompt);
}

/** The request's messages as the model read them: the pinned block, if any, right after the leading system prompt. */
function pinnedBlockOf(messages: ChatMessage[]): string | undefined {
  const block = messages[1];
  return block?.role === 'system' && textOf(block.content).startsWith(PINNED_BLOCK_HEADING)
    ? textOf(block.content)
    : undefined;
}

/** Every request from `from` on holds the pinned text in the pinned block and the pinned page in place, verbatim. */
function expectPinsVerbatim(requests: RecordedRequest[], page: number): void {
  expect(requests.length).toBeGreaterThan(0);
  for (const request of requests) {
    const messages = request.body.messages;
    expect(pinnedBlockOf(messages)).toContain(PINNED_TEXT);
    expect(messages.some((m) => m.role === 'tool' && textOf(m.content) === logOf(page))).toBe(true);
  }
}

/** Starts an agent, reads pages 1 to 3, pins a text and page 2's tool result; returns its prompt and pin results. */
async function pinnedAgent(
  prefix: string,
  compaction: Record<string, unknown>,
  options: { system?: string; window?: number } = {},
) {
  const agentId = newAgentId(prefix);
  const systemPrompt = `${options.system ?? 'You read server logs.'} (${agentId})`;
  await startAgent(h.client, {
    agentId,
    model: 'gpt-4o-mini',
    systemPrompt,
    taskQueue: h.taskQueue,
    modelOverride: { window: options.window ?? WINDOW },
    compaction,
  });
  for (let page = 1; page <= 3; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
  const state = await agentState(h.client, agentId);
  const result = state.messages.find((m) => m.role === 'tool' && m.preview.startsWith('line 2.0'))!;
  const text = await pinText(h.client, agentId, PINNED_TEXT);
  const message = await pinMessage(h.client, agentId, result.id);
  const pinnedAt = h.model.requests.length;
  return { agentId, systemPrompt, text, message, pinnedAt, resultId: result.id };
}

/** Reads pages from `from` on until `done()` says so (at most `most` of them). */
async function readUntil(agentId: string, from: number, most: number, done: () => Promise<boolean>): Promise<number> {
  let page = from;
  for (; page < from + most && !(await done()); page++) {
    await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
  }
  return page;
}

describe('pins survive every compaction kind verbatim', () => {
  it('pin answers the pin and the budget; the state, context and UI details show it', async () => {
    const { agentId, text, message, resultId } = await pinnedAgent('pin-shown', { cost: null });
    expect(text).toMatchObject({
      pin: { id: 'pin-1', kind: 'text', by: 'person' },
      pins: 1,
      budget: Math.floor(WINDOW / 10),
    });
    expect(message).toMatchObject({ pin: { id: 'pin-2', kind: 'message', messageId: resultId }, pins: 2 });
    expect(message.pinnedTokens).toBe(text.pin.tokens + message.pin.tokens);
    expect((await agentPins(h.client, agentId)).map((pin) => pin.id)).toEqual(['pin-1', 'pin-2']);
    // The Temporal UI's current details (set when the next step or turn shows its progress).
    await sendMessage(h.client, agentId, 'Read page 4 of the log.');
    const metadata = await agentHandle(h.client, agentId).query<{ currentDetails?: string }>(
      '__temporal_workflow_metadata',
    );
    expect(metadata.currentDetails).toMatch(/pins: pin-1, pin-2 · \d+ of 819 tokens of the pin budget/);
    const context = await runLongrun(['context', agentId], { env: cliEnv(h) });
    expect(context.code).toBe(0);
    expect(context.stdout).toMatch(new RegExp(`${resultId}\\s+tool\\s+\\d+\\s+pin-2`));
    expect(context.stdout).toContain('pins: 2');
    expect(context.stdout).toContain('The launch code is 7401-ALPHA');
  });

  it('through a forced compaction, and a revert to before it', async () => {
    const { agentId, systemPrompt, pinnedAt } = await pinnedAgent('pin-forced', { cost: null, backgroundRatio: null });
    await sendMessage(h.client, agentId, 'Read page 4 of the log.');
    const forced = await compactAgent(h.client, agentId, { strategy: 'summarize', evenIfLarger: true });
    expect(forced.compacted).toBe(true);
    expect(forced.event).toMatchObject({ trigger: 'forced' });
    await sendMessage(h.client, agentId, 'Read page 5 of the log.');
    const events = await compactionEvents(h.client, agentId);
    expect(events.at(-1)).toMatchObject({ trigger: 'forced', pinned: ['pin-1', 'pin-2'] });
    const reverted = await revertAgent(h.client, agentId, { toEvent: forced.event!.seq });
    expect(reverted.reverted).toBe(true);
    await sendMessage(h.client, agentId, 'Read page 6 of the log.');
    expectPinsVerbatim(requestsOf(systemPrompt).slice(requestsOf(systemPrompt).length - 6), 2);
    expectPinsVerbatim(
      h.model.requests.slice(pinnedAt).filter((r) => requestsOf(systemPrompt).includes(r)),
      2,
    );
  });

  it('through automatic compactions (blocking)', async () => {
    const { agentId, systemPrompt, pinnedAt } = await pinnedAgent('pin-auto', { cost: null, backgroundRatio: null });
    await readUntil(agentId, 4, 30, async () =>
      (await compactionEvents(h.client, agentId)).some((e) => e.trigger === 'auto'),
    );
    await sendMessage(h.client, agentId, 'Read page 40 of the log.');
    expect((await compactionEvents(h.client, agentId)).some((e) => e.trigger === 'auto')).toBe(true);
    expectPinsVerbatim(
      h.model.requests.slice(pinnedAt).filter((r) => requestsOf(systemPrompt).includes(r)),
      2,
    );
  });

  it('through compactions in the background', async () => {
    const { agentId, systemPrompt, pinnedAt } = await pinnedAgent('pin-bg', { cost: null });
    await readUntil(agentId, 4, 40, async () =>
      (await compactionEvents(h.client, agentId)).some((e) => e.trigger === 'background'),
    );
    await sendMessage(h.client, agentId, 'Read page 50 of the log.');
    expect((await compactionEvents(h.client, agentId)).some((e) => e.trigger === 'background')).toBe(true);
    expectPinsVerbatim(
      h.model.requests.slice(pinnedAt).filter((r) => requestsOf(systemPrompt).includes(r)),
      2,
    );
  });

  it('through a context overflow the provider reports', async () => {
    const { agentId, systemPrompt, pinnedAt } = await pinnedAgent(
      'pin-overflow',
      { reserveRatio: 0, keepTurns: 1, keepMessages: 0 },
      { system: SMALL_PROVIDER, window: 128_000 },
    );
    await readUntil(agentId, 4, 10, async () =>
      (await compactionEvents(h.client, agentId)).some((e) => e.trigger === 'overflow'),
    );
    await sendMessage(h.client, agentId, 'Read page 20 of the log.');
    expect((await compactionEvents(h.client, agentId)).some((e) => e.trigger === 'overflow')).toBe(true);
    // The requests the model answered (a refused one is sent again, smaller).
    const answered = h.model.requests
      .slice(pinnedAt)
      .filter((r) => requestsOf(systemPrompt).includes(r) && r.body.messages.length <= 14);
    expectPinsVerbatim(answered, 2);
  });

  it('unpin: the text leaves the pinned block', async () => {
    const { agentId, systemPrompt } = await pinnedAgent('pin-unpin', { cost: null });
    const result = await unpin(h.client, agentId, 'pin-1');
    expect(result).toMatchObject({ unpinned: { id: 'pin-1' }, pins: 1 });
    await sendMessage(h.client, agentId, 'Read page 4 of the log.');
    const last = requestsOf(systemPrompt).at(-1)!;
    expect(pinnedBlockOf(last.body.messages)).toBeUndefined();
    await expect(unpin(h.client, agentId, 'pin-1')).rejects.toThrow(/pin-1 is not a pin of this agent/);
  });
});

describe('the pin budget', () => {
  it('the CLI refuses a pin over the budget, naming the budget and the sizes; pin, context, unpin', async () => {
    const agentId = newAgentId('pin-cli');
    const env = cliEnv(h);
    const started = await runLongrun(['start', agentId, '--window', String(WINDOW), '--pin-ratio', '0.01'], { env });
    expect(started.code).toBe(0);
    const long = Array.from({ length: 60 }, (_, i) => `fact ${i}: the value is ${i * 37}`).join('; ');
    const refused = await runLongrun(['pin', agentId, '--text', long], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /pin budget: this pin counts \d+ tokens and the pins 0, over the budget of 81 tokens/,
    );
    const pinned = await runLongrun(['pin', agentId, '--text', 'Keep this', '--json'], { env });
    expect(pinned.code).toBe(0);
    const result = JSON.parse(pinned.stdout) as PinResult;
    expect(result).toMatchObject({ pin: { kind: 'text', preview: 'Keep this' }, pins: 1, budget: 81 });
    const state = await runLongrun(['state', agentId], { env });
    expect(state.stdout).toContain(`pins     ${result.pin.id}`);
    const unknown = await runLongrun(['pin', agentId, 'm000999'], { env });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('m000999 is not in the working context');
    const removed = await runLongrun(['unpin', agentId, result.pin.id], { env });
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain(`unpinned ${result.pin.id}; pins: 0`);
    const bad = await runLongrun(['pin', agentId], { env });
    expect(bad.code).toBe(2);
  });

  it('pin and unpin by name with the temporal CLI', async () => {
    const temporal = await temporalCli(h);
    const agentId = newAgentId('pin-tcli');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const update = (name: string, input: string) =>
      temporal(
        'workflow',
        'update',
        'execute',
        '--workflow-id',
        agentWorkflowId(agentId),
        '--name',
        name,
        '--input',
        input,
      );
    const pinned = JSON.parse(await update('pin', JSON.stringify({ text: PINNED_TEXT }))) as { result: PinResult };
    expect(pinned.result).toMatchObject({ pin: { id: 'pin-1', kind: 'text' }, pins: 1 });
    await expect(update('pin', '{"text":"a","messageId":"m000001"}')).rejects.toThrow(/exactly one of messageId/);
    await update('unpin', '{"pin":"pin-1"}');
    expect(await agentPins(h.client, agentId)).toEqual([]);
  });
});

describe('the model in charge: context_pin, context_budget and the budget note', () => {
  it('the model pins with context_pin and reads its budget with context_budget', async () => {
    const agentId = newAgentId('pin-model');
    const systemPrompt = `You keep what matters (${agentId})`;
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      systemPrompt,
      taskQueue: h.taskQueue,
      modelOverride: { window: WINDOW },
    });
    await sendMessage(h.client, agentId, 'PIN-TOOL the vault code is 3141');
    expect(await agentPins(h.client, agentId)).toMatchObject([{ id: 'pin-1', kind: 'text', by: 'model' }]);
    await sendMessage(h.client, agentId, 'BUDGET-TOOL');
    const requests = requestsOf(systemPrompt);
    // The call's result, in the request after it: pinned, and the next requests carry the pinned block.
    const pinResult = requests[1]!.body.messages.find((m) => m.role === 'tool')!;
    expect(textOf(pinResult.content)).toMatch(/^Pinned as pin-1 \(\d+ tokens; the pins now hold \d+ of 819 tokens\)/);
    for (const request of requests.slice(1))
      expect(pinnedBlockOf(request.body.messages)).toContain('the vault code is 3141');
    const budget = requests
      .at(-1)!
      .body.messages.filter((m) => m.role === 'tool')
      .at(-1)!;
    expect(textOf(budget.content)).toMatch(
      /^Context: [\d,]+ of 8,192 tokens in use \(\d+%; compaction at 80%\)\. Turn: \d+ of \d+ steps left/,
    );
    expect(textOf(budget.content)).toContain('Pins: 1');
  });

  it('the note ends every request of the default preset, stored nowhere; the prefix holds; none when off', async () => {
    const on = await pinnedAgent('note-on', { cost: null, backgroundRatio: null });
    await compactAgent(h.client, on.agentId, { strategy: 'summarize', evenIfLarger: true });
    await sendMessage(h.client, on.agentId, 'Read page 4 of the log.');
    const requests = requestsOf(on.systemPrompt);
    const noteOf = (r: RecordedRequest) => textOf(r.budgetNote!.content);
    // Every request has the note (the loopback server takes it off its messages: llm/chat-server.ts): last after
    // the step's tool results, and just before the person's words when the request ends with them, which stay last.
    const opening = requests.filter((r) => textOf(r.body.messages.at(-1)!.content) === 'Read page 4 of the log.');
    expect(opening.length).toBeGreaterThan(0);
    for (const request of requests) {
      expect(isBudgetNote(request.budgetNote!)).toBe(true);
      expect(noteOf(request)).toMatch(/Context: [\d,]+ of 8,192 tokens in use/);
      const { messages } = request.body;
      let personFrom = messages.length;
      while (personFrom > 0 && messages[personFrom - 1]!.role === 'user') personFrom--;
      expect(request.budgetNoteAt).toBe(personFrom);
      if (opening.includes(request)) expect(request.budgetNoteAt).toBe(messages.length - 1);
    }
    expect(requests.some((r) => r.budgetNoteAt === r.body.messages.length)).toBe(true); // after tool results
    // The note after the forced compaction says what it did, once.
    const told = requests.filter((r) => noteOf(r).includes('Compacted since the last note'));
    expect(told).toHaveLength(1);
    expect(noteOf(told[0]!)).toMatch(/#1 forced \(summarize\): [\d,]+ → [\d,]+ tokens/);
    // Within a turn, the next request is the one before without its note, then the new messages.
    const [first, second] = requests.slice(0, 2).map((r) => r.body.messages);
    expect(second!.slice(0, first!.length)).toEqual(first);
    // Not stored: the working context holds no note.
    const state = await agentState(h.client, on.agentId);
    expect(state.messages.some((m) => m.preview.startsWith(BUDGET_NOTE_TAG.slice(0, 20)))).toBe(false);

    const off = await pinnedAgent('note-off', { cost: null, budgetNote: false });
    const offRequests = requestsOf(off.systemPrompt);
    expect(offRequests.length).toBeGreaterThan(0);
    for (const request of offRequests) {
      expect(request.budgetNote).toBeUndefined();
      expect(request.body.messages.some(isBudgetNote)).toBe(false);
    }
  });
});
