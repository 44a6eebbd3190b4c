/**
 * Automatic compaction end to end: a long session with tool calls in a small window compacts itself several times
 * through the plan / summarize / apply activities; events consistent with the state; every request the model
 * received valid and within the window; every removed item reloads byte-identical; the task ledger; a context
 * overflow the provider reports; summaries checked for the facts they must keep. Forced compactions:
 * forced-compaction.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentContext, agentLedger, compactionEvents, compactionHistory, compactionStats } from '../../client/reads.ts';
import { agentState, compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { contextReload, ToolRegistry } from '../../activities/tools.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { countRequest, loadTokenCounter } from '../../engine/tokens.ts';
import { toolPairViolations, pairViewOf } from '../../engine/tool-pairs.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { isSummaryRequest, newAgentId } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { agentRequests, fetchLog, logOf, OVERFLOW_PROMPT, startLogHarness, WINDOW } from '../support/log-session.ts';

let h: Harness;

beforeAll(async () => {
  h = await startLogHarness();
});

afterAll(async () => {
  await h?.close();
});

describe('automatic compaction in a long session', () => {
  const agentId = newAgentId('long');

  it('compacts several times, keeps every request valid and within the window', async () => {
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      systemPrompt: 'You read server logs.',
      modelOverride: { window: WINDOW },
      taskQueue: h.taskQueue,
      // Unpriced: the soft threshold's and the trigger's timing as set (priced, a compaction at the soft threshold
      // that would not pay for the prompt cache it breaks waits for the trigger: cost-cache.test.ts).
      compaction: { cost: null },
    });
    const turns = 120;
    for (let page = 1; page <= turns; page++) {
      const result = await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
      expect(result.toolCalls).toBe(1);
    }
    const state = await agentState(h.client, agentId);
    expect(state.turns).toBe(turns);
    expect(state.compactions).toBeGreaterThanOrEqual(5);
    expect(state.contextTokens).toBeLessThanOrEqual(WINDOW);

    // Every request the model received: tool pairs intact, and within the window (counted as the engine counts).
    const counter = await loadTokenCounter('o200k_base');
    const schemas = new ToolRegistry([fetchLog]).schemas();
    const requests = agentRequests(h);
    expect(requests.length).toBeGreaterThanOrEqual(turns * 2);
    for (const request of requests) {
      expect(toolPairViolations(request.body.messages.map(pairViewOf))).toEqual([]);
      expect(countRequest(counter, request.body.messages, schemas)).toBeLessThanOrEqual(WINDOW);
    }
  });

  it('records events consistent with the state, queryable by since/limit, with stats', async () => {
    const state = await agentState(h.client, agentId);
    const events = await compactionEvents(h.client, agentId);
    expect(events.length).toBe(Math.min(10, state.compactions!));
    expect(events.at(-1)!.seq).toBe(state.compactions);
    // The default preset prepares compactions in the background from its soft threshold (70% of the window); the
    // blocking trigger (80%) compacts only when one is not done in time.
    expect(events.some((event) => event.trigger === 'background')).toBe(true);
    for (const event of events) {
      expect(['auto', 'background']).toContain(event.trigger);
      expect(event.tokensAfter).toBeLessThan(event.tokensBefore);
      expect(event.strategies.length).toBeGreaterThan(0);
      expect(event.removedCount).toBeGreaterThan(0);
      // The state keeps the summary; the removed items are listed in the full event in S3.
      expect(event).not.toHaveProperty('removed');
    }
    const since = events.at(-3)!.seq;
    expect((await compactionEvents(h.client, agentId, { since, limit: 1 })).map((e) => e.seq)).toEqual([since + 1]);
    const stats = await compactionStats(h.client, agentId);
    expect(stats.count).toBe(state.compactions);
    expect(stats.tokensSaved).toBeGreaterThan(0);
    expect(stats.averageSizeRatio).toBeLessThan(1);
    // The last event's context manifest is the working context's start.
    const manifest = JSON.parse((await h.store.get(events.at(-1)!.keys.context))!) as string[];
    expect(state.messages.slice(0, state.baseLength).map((m) => m.key)).toEqual(manifest.slice(0, state.baseLength));
    const context = await agentContext(h.client, agentId);
    expect(context.map((m) => m.id)).toEqual(state.messages.map((m) => m.id));
  });

  it('every removed item reloads byte-identical, from its key and through context_reload', async () => {
    const { events } = await compactionHistory(h.client, h.store, agentId); // every event, in full, from S3
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    let checked = 0;
    for (const event of events) {
      const lines = (await h.store.get(event.keys.removed))!.trim().split('\n');
      expect(lines).toHaveLength(event.removed.length);
      expect(event.removedCount).toBe(event.removed.length);
      for (const [i, item] of event.removed.entries()) {
        const line = JSON.parse(lines[i]!) as { id: string; message: ChatMessage };
        expect(line.id).toBe(item.id);
        const stored = (await h.store.get(item.key))!;
        expect(JSON.stringify(line.message)).toBe(stored);
        const original = JSON.parse(stored) as ChatMessage;
        if (original.role === 'tool') {
          // The tool's own output, byte for byte: find the call that produced it.
          const line = Number(/line (\d+)\.0:/.exec(textOf(original.content))?.[1]);
          expect(original.content).toBe(logOf(line));
          const page = await contextReload.run({ reference: item.key }, { agentId, store: h.store });
          expect(page.slice(page.indexOf('\n') + 1)).toBe(stored.slice(0, 8_000));
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(0);
  });
});

describe("the turn's own message", () => {
  it('when it makes compaction due, the model call stores it, skips the model, and the agent compacts first', async () => {
    const agentId = newAgentId('due');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      modelOverride: { window: WINDOW },
      taskQueue: h.taskQueue,
      // Unpriced: after four model calls, this compaction would not pay for the prompt cache it breaks.
      compaction: { cost: null },
    });
    for (let page = 1; page <= 2; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    const before = await agentState(h.client, agentId);
    expect(before.compactions).toBe(0);
    expect(before.contextTokens).toBeLessThan(before.gate!.tokens);
    // A message just large enough to cross the trigger (" word" is one token in o200k_base).
    const big = `Read page 3 of the log. ${'word '.repeat(before.gate!.tokens - before.contextTokens + 200)}`;
    await sendMessage(h.client, agentId, big);
    const after = await agentState(h.client, agentId);
    expect(after.compactions).toBe(1);
    expect(after.events![0]!.trigger).toBe('auto');
    expect(after.events![0]!.tokensBefore).toBeGreaterThan(before.gate!.tokens);

    // In the history: the first model call of that turn stored the message and came back without calling the model.
    let runId: string | undefined;
    type CallResult = { stored: unknown[]; compactionDue?: string; reply?: unknown };
    const calls: { summary: string; result: CallResult }[] = [];
    for (;;) {
      const history = await h.client.workflow.getHandle(agentWorkflowId(agentId), runId).fetchHistory();
      const events = history.events ?? [];
      const scheduled = new Map<string, string>();
      for (const event of events) {
        const attributes = event.activityTaskScheduledEventAttributes;
        if (attributes?.activityType?.name === 'callModel') {
          scheduled.set(String(event.eventId), Buffer.from(event.userMetadata!.summary!.data!).toString('utf8'));
        }
        const completed = event.activityTaskCompletedEventAttributes;
        if (completed && scheduled.has(String(completed.scheduledEventId))) {
          calls.unshift({
            summary: scheduled.get(String(completed.scheduledEventId))!,
            result: JSON.parse(Buffer.from(completed.result!.payloads![0]!.data!).toString('utf8')) as CallResult,
          });
        }
      }
      runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
      if (!runId) break;
    }
    const due = calls.filter((call) => call.result.compactionDue !== undefined);
    expect(due).toHaveLength(1);
    expect(due[0]!.result.reply).toBeUndefined();
    expect(due[0]!.result.stored).toHaveLength(1);
    expect(due[0]!.result.compactionDue).toMatch(/^tokens \d+ ≥ \d+$/);
    // Every request with the big message came after the compaction, and fits the window.
    const counter = await loadTokenCounter('o200k_base');
    const schemas = new ToolRegistry([fetchLog]).schemas();
    const withBig = h.model.requests.filter((r) => r.body.messages.some((m) => m.content === big));
    expect(withBig.length).toBeGreaterThan(0);
    for (const request of withBig) {
      expect(countRequest(counter, request.body.messages, schemas)).toBeLessThanOrEqual(WINDOW);
    }
  });
});

describe('the task ledger', () => {
  it('carries the goal and the user’s constraints verbatim across compactions, updated by each summary', async () => {
    const agentId = newAgentId('ledger');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      systemPrompt: 'You read server logs.',
      taskQueue: h.taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
    });
    await sendMessage(h.client, agentId, 'Audit the server log for slow requests.');
    await sendMessage(h.client, agentId, 'Read page 1 of the log. Never skip a page.');
    for (let page = 2; page <= 4; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    await compactAgent(h.client, agentId, { strategy: 'summarize' });
    const ledger = await agentLedger(h.client, agentId);
    expect(ledger.goal).toBe('Audit the server log for slow requests.');
    expect(ledger.constraints).toEqual(['Never skip a page.']);
    expect(ledger.decisions).toEqual(['Read the pages in order']);
    expect(ledger.pending).toEqual(['The remaining pages']);
    expect(ledger.nextAction).toBe('Fetch the next page.');

    // The ledger is a message of its own right after the summary, protected from every strategy; the system prompt
    // and the goal stay first (the prefix the provider's prompt cache keeps across compactions).
    for (let page = 5; page <= 8; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    await compactAgent(h.client, agentId, { strategy: 'summarize' });
    const state = await agentState(h.client, agentId);
    expect(state.messages[0]!.role).toBe('system');
    expect(state.messages[1]!.id).toBe(state.goalId);
    const at = state.messages.findIndex((m) => m.kind === 'ledger');
    expect(state.messages[at - 1]!.kind).toBe('summary');
    expect(state.messages.filter((m) => m.kind === 'ledger')).toHaveLength(1);
    const body = JSON.parse((await h.store.get(state.messages[at]!.key))!) as ChatMessage;
    expect(body.content).toContain('## Constraints\n- Never skip a page.');
    expect(body.content).toContain('## Goal\nAudit the server log for slow requests.');
    expect((await agentLedger(h.client, agentId)).done).toHaveLength(2); // appended by each summary
    // The model sees it on the next call.
    await sendMessage(h.client, agentId, 'Read page 9 of the log.');
    const last = h.model.requests.filter((r) => r.body.messages[0]?.content === 'You read server logs.').at(-1)!;
    expect(last.body.messages[1]!.content).toBe('Audit the server log for slow requests.');
    expect(last.body.messages[at]!.content).toContain('Never skip a page.');
  });
});

describe('context overflow reported by the provider', () => {
  it('compacts with the overflow trigger and calls again, so the turn succeeds', async () => {
    const agentId = newAgentId('overflow');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      systemPrompt: OVERFLOW_PROMPT,
      taskQueue: h.taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0 },
    });
    for (let page = 1; page <= 6; page++) {
      const result = await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
      expect(result.reply).toMatch(/^Page read/);
    }
    const events = await compactionEvents(h.client, agentId);
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.trigger === 'overflow')).toBe(true);
    // No request after a refusal went out unchanged: every refusal was followed by a smaller request.
    const mine = h.model.requests.filter((r) => r.body.messages[0]?.content === OVERFLOW_PROMPT);
    mine.forEach((request, i) => {
      if (request.body.messages.length > 14) expect(mine[i + 1]!.body.messages.length).toBeLessThanOrEqual(14);
    });
  });
});

describe('summaries that keep what matters', () => {
  const start = async (agentId: string) =>
    startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      // The user's messages leave with the span (not kept verbatim), so their facts are at risk.
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
    });

  it('the fact check catches a summary that dropped a path and an error: the error in the ledger, the path re-asked and pinned', async () => {
    const agentId = newAgentId('facts');
    await start(agentId);
    await sendMessage(h.client, agentId, 'Start the deployment checks.');
    await sendMessage(
      h.client,
      agentId,
      "Deploy with /srv/app/deploy.yaml failed.\nTypeError: Cannot read properties of undefined (reading 'port')",
    );
    for (let page = 1; page <= 3; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    const result = await compactAgent(h.client, agentId, { strategy: 'summarize' });
    const event = result.event!;
    expect(event.facts!.reprompted).toBe(true);
    expect(event.facts!.pinned).toContain('/srv/app/deploy.yaml');
    // The error line is carried in the task ledger's key facts, so it is not pinned again.
    expect(event.facts!.pinned.some((f) => f.includes('TypeError'))).toBe(false);
    expect((await agentLedger(h.client, agentId)).keyFacts).toContain(
      "TypeError: Cannot read properties of undefined (reading 'port')",
    );
    const asks = h.model.requests.filter(
      (r) => isSummaryRequest(r) && r.body.messages.some((m) => textOf(m.content).includes('/srv/app/deploy.yaml')),
    );
    expect(asks).toHaveLength(2);
    expect(asks[1]!.body.messages.at(-1)!.content).toContain('Your summary lost these facts');
    expect(asks[1]!.body.messages.at(-1)!.content).toContain('- /srv/app/deploy.yaml');
    // The summary in the context carries the preserved-facts block, verbatim.
    const state = await agentState(h.client, agentId);
    const summary = state.messages.find((m) => m.kind === 'summary')!;
    const body = JSON.parse((await h.store.get(summary.key))!) as ChatMessage;
    expect(body.content).toContain('## Preserved facts (verbatim from the removed messages)');
    expect(body.content).toContain('- path: /srv/app/deploy.yaml');
  });

  it('a provider that rejects response_format gets the plain prompt; the event records the path taken', async () => {
    const agentId = newAgentId('noschema');
    await start(agentId);
    await sendMessage(h.client, agentId, 'Start the checks.');
    for (let page = 1; page <= 4; page++)
      await sendMessage(h.client, agentId, `NO-SCHEMA: read page ${page} of the log.`);
    const result = await compactAgent(h.client, agentId, { strategy: 'summarize' });
    expect(result.event).toMatchObject({ responseFormat: 'text', summaryParsedAs: 'headings' });
  });
});
