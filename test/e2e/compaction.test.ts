/**
 * Compaction end to end: a long session with tool calls in a small window compacts itself several times through
 * the plan / summarize / apply activities; forced compactions by Update and Signal; events consistent with the
 * state; every request the model received valid and within the window; every removed item reloads byte-identical.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  agentHandle,
  agentState,
  compactAgent,
  requestCompaction,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import { agentContext, agentLedger, compactionEvents, compactionHistory, compactionStats } from '../../client/reads.ts';
import { EXTRACTIVE_MODEL } from '../../activities/compaction.ts';
import { contextReload, defineTool, ToolRegistry } from '../../activities/tools.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { estimateCost } from '../../engine/cost.ts';
import { countRequest, loadTokenCounter } from '../../engine/tokens.ts';
import { toolPairViolations, pairViewOf } from '../../engine/tool-pairs.ts';
import type { RecordedRequest } from '../../llm/chat-server.ts';
import { agentWorkflowId, compactUpdate } from '../../contract/agent.ts';
import { agentWithCompactions, newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const WINDOW = 8_192;

/** What the `fetch_log` tool returns for a call: deterministic, about 700 tokens, different per line number. */
function logOf(line: number): string {
  return Array.from(
    { length: 40 },
    (_, i) => `line ${line}.${i}: GET /api/items/${line * 100 + i} 200 ${i * 7} ms`,
  ).join('\n');
}

const fetchLog = defineTool({
  name: 'fetch_log',
  description: 'Fetch a page of the server log',
  parameters: { type: 'object', properties: { line: { type: 'integer' } }, required: ['line'] },
  run: (args) => Promise.resolve(logOf(Number(args.line))),
});

const OVERFLOW_PROMPT = 'overflow test';
const isSummaryRequest = (request: RecordedRequest) => request.body.model === 'summary-model';
let summaryFails = false;

let h: Harness;

beforeAll(async () => {
  h = await startHarness(
    (request, index) => {
      if (isSummaryRequest(request)) {
        if (summaryFails) return { status: 400, error: 'summaries are switched off for this test' };
        const prompt = textOf(request.body.messages.at(-1)!.content);
        const transcript = request.body.messages.map((m) => textOf(m.content)).join('\n');
        if (transcript.includes('NO-SCHEMA')) {
          if (request.body.response_format) return { status: 400, error: 'response_format is not supported' };
          return { content: '## Task overview\nCheck NO-SCHEMA.\n\n## Next steps\nGo on.' };
        }
        if (transcript.includes('deploy.yaml')) {
          // A summary that drops the path and the error, even when asked again.
          return {
            content: JSON.stringify({
              task_overview: 'Deployment checks.',
              current_state: 'A deploy failed.',
              important_discoveries: '',
              next_steps: 'Fix it.',
              context_to_preserve: '',
            }),
          };
        }
        return {
          content: JSON.stringify({
            task_overview: 'Read the server log page by page.',
            current_state: `Read pages so far (${prompt.length} characters of transcript).`,
            important_discoveries: 'All requests answered 200.',
            next_steps: 'Fetch the next page.',
            context_to_preserve: '/api/items',
            decisions: ['Read the pages in order'],
            done: [`Pages up to request ${index}`],
            pending: ['The remaining pages'],
          }),
          usage: { prompt_tokens: 900, completion_tokens: 80 },
        };
      }
      // A provider whose real window is smaller than the registry says: over 14 messages it refuses.
      if (request.body.messages[0]?.content === OVERFLOW_PROMPT && request.body.messages.length > 14) {
        return { status: 400, error: "This model's maximum context length is 4096 tokens. Please reduce the length." };
      }
      // The agent: a user message "page N" → call fetch_log(N); after the result → a short answer.
      const last = request.body.messages.at(-1)!;
      if (last.role === 'user') {
        const line = Number(/page (\d+)/.exec(textOf(last.content))?.[1] ?? 0);
        return {
          content: null,
          toolCalls: [
            { id: `call_${index}`, type: 'function', function: { name: 'fetch_log', arguments: `{"line":${line}}` } },
          ],
        };
      }
      return { content: `Page read: ${request.body.messages.length} messages in view.` };
    },
    [fetchLog],
  );
});

afterAll(async () => {
  await h?.close();
});

/** The requests the agents made (not the summarizer's). */
function agentRequests(): RecordedRequest[] {
  return h.model.requests.filter((r) => !isSummaryRequest(r));
}

describe('automatic compaction in a long session', () => {
  const agentId = newAgentId('long');

  it('compacts several times, keeps every request valid and within the window', async () => {
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      systemPrompt: 'You read server logs.',
      modelOverride: { window: WINDOW },
      taskQueue: h.taskQueue,
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
    const requests = agentRequests();
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
    expect(stats.averageReduction).toBeLessThan(1);
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

    // The ledger is a message of its own right after the system prompt, protected from every strategy.
    for (let page = 5; page <= 8; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    await compactAgent(h.client, agentId, { strategy: 'summarize' });
    const state = await agentState(h.client, agentId);
    expect(state.messages[0]!.role).toBe('system');
    expect(state.messages[1]!.kind).toBe('ledger');
    expect(state.messages.filter((m) => m.kind === 'ledger')).toHaveLength(1);
    const body = JSON.parse((await h.store.get(state.messages[1]!.key))!) as ChatMessage;
    expect(body.content).toContain('## Constraints\n- Never skip a page.');
    expect(body.content).toContain('## Goal\nAudit the server log for slow requests.');
    expect((await agentLedger(h.client, agentId)).done).toHaveLength(2); // appended by each summary
    // The model sees it on the next call.
    await sendMessage(h.client, agentId, 'Read page 9 of the log.');
    const last = h.model.requests.filter((r) => r.body.messages[0]?.content === 'You read server logs.').at(-1)!;
    expect(last.body.messages[1]!.content).toContain('Never skip a page.');
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

describe('forced compaction', () => {
  /** An agent in a 64,000-token window, recent turns barely protected, after reading `pages` pages of the log. */
  async function agentAfterPages(prefix: string, pages: number): Promise<string> {
    const agentId = newAgentId(prefix);
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      modelOverride: { window: 64_000 },
      compaction: { reserveRatio: 0, keepTurns: 2 },
    });
    for (let page = 1; page <= pages; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    return agentId;
  }

  it('by Update returns the event; its instructions reach the summary prompt', async () => {
    const agentId = await agentAfterPages('forced', 8);
    const before = await agentState(h.client, agentId);
    expect(before.compactions).toBe(0);
    const result = await compactAgent(h.client, agentId, {
      instructions: 'Keep the item ids of page 2',
      strategy: 'summarize',
    });
    expect(result.compacted).toBe(true);
    expect(result.event).toMatchObject({ seq: 1, trigger: 'forced', strategies: ['summarize'] });
    expect(result.event!.instructions).toBe('Keep the item ids of page 2');
    expect(result.event!.tokensAfter).toBeLessThan(result.event!.tokensBefore);
    const summaryCalls = h.model.requests.filter(
      (r) => isSummaryRequest(r) && textOf(r.body.messages.at(-1)!.content).includes('Keep the item ids of page 2'),
    );
    expect(summaryCalls).toHaveLength(1);
    expect(summaryCalls[0]!.body.response_format).toMatchObject({ type: 'json_schema' });
    const after = await agentState(h.client, agentId);
    expect(after.compactions).toBe(1);
    expect(after.messages.some((m) => m.kind === 'summary')).toBe(true);
    // The agent goes on after it, with the summary in its view.
    const next = await sendMessage(h.client, agentId, 'Read page 9 of the log.');
    expect(next.turn).toBe(9);
  });

  it('an Update compact delivered again to a later run is answered with its result, not run twice', async () => {
    const agentId = await agentAfterPages('once', 6);
    const first = await agentHandle(h.client, agentId).executeUpdate(compactUpdate, {
      args: [{ strategy: 'truncate-rounds' }],
      updateId: 'compact-once',
    });
    expect(first.compacted).toBe(true);
    const runBefore = (await agentHandle(h.client, agentId).describe()).runId;
    await sleep(2_100); // a run lives at least 2 s before it continues as new
    for (let page = 7; page <= 12; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    expect((await agentHandle(h.client, agentId).describe()).runId).not.toBe(runBefore);
    const again = await agentHandle(h.client, agentId).executeUpdate(compactUpdate, {
      args: [{ strategy: 'truncate-rounds' }],
      updateId: 'compact-once',
    });
    expect(again).toEqual(first);
    expect((await agentState(h.client, agentId)).compactions).toBe(1);
  });

  it('by Signal runs after the queued input', async () => {
    const agentId = await agentAfterPages('signal', 6);
    await requestCompaction(h.client, agentId, {});
    await expect.poll(async () => (await agentState(h.client, agentId)).compactions, { timeout: 20_000 }).toBe(1);
  });

  it('falls back to dropping rounds when the summarizer fails, summarized extractively, and the event says so', async () => {
    const agentId = await agentAfterPages('fallback', 8);
    summaryFails = true;
    try {
      const result = await compactAgent(h.client, agentId, { strategy: 'summarize' });
      expect(result.compacted).toBe(true);
      expect(result.event!.notes).toEqual([
        'summarize: the summary model failed: truncate-rounds instead, with an extractive summary of what it removed',
      ]);
      // Nothing leaves without a trace: the dropped rounds are in an extractive summary, its facts checked.
      expect(result.event!.summaryTokens).toBeGreaterThan(0);
      expect(result.event!.responseFormat).toBe('none');
      expect(result.event!.llm!.model).toBe(EXTRACTIVE_MODEL);
      expect(result.event!.facts).toBeDefined();
    } finally {
      summaryFails = false;
    }
  });

  it('with force: false compacts only when the automatic trigger fires', async () => {
    const agentId = await agentAfterPages('ifdue', 5);
    const before = await agentState(h.client, agentId);
    const skipped = await compactAgent(h.client, agentId, { force: false });
    expect(skipped.compacted).toBe(false);
    expect(skipped.reason).toMatch(/^below the trigger \(\d+ tokens, \d+ messages, 5 turns\)$/);
    const after = await agentState(h.client, agentId);
    expect(after.compactions).toBe(0);
    expect(after.messages).toEqual(before.messages);
    expect(after.contextTokens).toBe(before.contextTokens);
    const error = await compactAgent(h.client, agentId, { force: 'yes' as never }).catch((e: unknown) => e);
    expect(String((error as Error).cause)).toContain('force: must be true or false (got "yes")');
    expect((await compactAgent(h.client, agentId, { force: true, strategy: 'truncate-rounds' })).compacted).toBe(true);
  });

  it('with prices in the policy, each event estimates its cost and the stats add up what was saved', async () => {
    const agentId = newAgentId('cost');
    const cost = {
      inputPerMillion: 3,
      summaryOutputPerMillion: 15,
      expectedRemainingTurns: 50,
    };
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      modelOverride: { window: 64_000 },
      compaction: { reserveRatio: 0, keepTurns: 2, cost },
    });
    for (let page = 1; page <= 8; page++) await sendMessage(h.client, agentId, `Read page ${page} of the log.`);
    const { event } = await compactAgent(h.client, agentId, { strategy: 'summarize' });
    const expected = estimateCost(
      cost,
      event!.tokensBefore,
      event!.tokensAfter,
      event!.llm!.promptTokens,
      event!.llm!.completionTokens,
    );
    expect(event!.cost).toEqual(expected);
    expect(expected.netBenefit).toBeGreaterThan(0);
    expect((await compactionStats(h.client, agentId)).costSaved).toBeCloseTo(expected.netBenefit, 10);
  });

  it('events beyond the ones the workflow keeps are read from S3: the history is complete', async () => {
    const { agentId, attempts } = await agentWithCompactions(h, 'history', 12);
    expect(attempts).toBe(12); // every compaction compacted (seq 1, 2, … 12)
    expect((await compactionEvents(h.client, agentId)).map((e) => e.seq)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const { events: all, stats } = await compactionHistory(h.client, h.store, agentId);
    expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(stats.count).toBe(12);
    for (const event of all) expect(event).toEqual(JSON.parse((await h.store.get(event.keys.event))!));
    const seqs = async (query: { since?: number; limit?: number }) =>
      (await compactionHistory(h.client, h.store, agentId, query)).events.map((e) => e.seq);
    expect(await seqs({ limit: 3 })).toEqual([1, 2, 3]);
    expect(await seqs({ since: 1, limit: 3 })).toEqual([2, 3, 4]);
    expect(await seqs({ since: 12 })).toEqual([]);
  });

  it('rejects an unknown strategy with a clear error and leaves the state unchanged', async () => {
    const agentId = newAgentId('bad');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'Read page 1 of the log.');
    const before = await agentState(h.client, agentId);
    const error = await compactAgent(h.client, agentId, { strategy: 'fold' as never }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((error as Error).cause)).toContain('strategy: "fold" is not one of truncate-tool-results');
    expect(await agentState(h.client, agentId)).toEqual(before);
  });

  it('rejects a bad compaction policy at start, naming the field', async () => {
    await expect(
      startAgent(h.client, {
        agentId: newAgentId('policy'),
        model: 'gpt-4o-mini',
        taskQueue: h.taskQueue,
        compaction: { triggerRatio: 1.5 },
      }),
    ).rejects.toThrow('triggerRatio: 1.5 is not allowed (a number > 0 and ≤ 0.9)');
  });
});
