/**
 * The workload longrun exists for: one user message, then a long loop of model calls with tool calls. A 150-step
 * loop in an 8,192-token window completes in one turn; every request fits the window; the older steps of the turn
 * are summarized (summaries that say which steps they cover and where the loop stands); nothing leaves the context
 * without a summary; every removed message reloads byte-identical.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { storedCompactionEvents } from '../../client/reads.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { countRequest, loadTokenCounter } from '../../engine/tokens.ts';
import { pairViewOf, toolPairViolations } from '../../engine/tool-pairs.ts';
import type { RecordedRequest } from '../../llm/chat-server.ts';
import { compactionKey } from '../../contract/keys.ts';
import { nextStep, readFile } from '../support/files.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const STEPS = 150;
const WINDOW = 8_192;

const isSummaryRequest = (request: RecordedRequest) => request.body.model === 'summary-model';

let h: Harness;

beforeAll(async () => {
  h = await startHarness(
    (request) => {
      if (isSummaryRequest(request)) {
        const prompt = textOf(request.body.messages.at(-1)!.content);
        const read = [...prompt.matchAll(/src\/module_\d+\.ts/g)].map((m) => m[0]);
        return {
          content: JSON.stringify({
            task_overview: 'Fix the undefined values in every module.',
            current_state: `Read ${new Set(read).size} modules so far.`,
            important_discoveries: 'Each module has one TypeError line.',
            next_steps: 'Read the next module.',
            context_to_preserve: [...new Set(read)].join(', '),
            decisions: [],
            done: [],
            pending: [],
          }),
        };
      }
      return nextStep(request.body.messages, STEPS);
    },
    [readFile],
  );
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('a long agent loop under one user message', () => {
  it(`runs ${STEPS} tool steps in an ${WINDOW}-token window: every request fits, summaries cover the steps, nothing is lost`, async () => {
    const agentId = newAgentId('loop');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      systemPrompt: 'You are a coding agent. Read every module, then answer.',
      modelOverride: { window: WINDOW },
    });
    const result = await sendMessage(
      h.client,
      agentId,
      'Read src/module_1.ts to src/module_150.ts one by one and tell me what is wrong. Do not modify any file.',
    );
    expect(result.toolCalls).toBe(STEPS);
    expect(result.reply).toBe(`All ${STEPS} modules read; the fix is the same in each.`);
    expect(result.turn).toBe(1);

    // Every request the agent's model got fits the window and keeps every tool call with its result.
    const counter = await loadTokenCounter('o200k_base');
    const agentRequests = h.model.requests.filter(
      (r) =>
        !isSummaryRequest(r) && textOf(r.body.messages.find((m) => m.role === 'user')?.content).includes('module_150'),
    );
    expect(agentRequests).toHaveLength(STEPS + 1);
    const schemas = (agentRequests[0]!.body.tools as unknown[] | undefined) ?? [];
    for (const request of agentRequests) {
      expect(countRequest(counter, request.body.messages, schemas)).toBeLessThanOrEqual(WINDOW);
      expect(toolPairViolations(request.body.messages.map(pairViewOf))).toEqual([]);
      // The user's request stays verbatim in every request.
      expect(
        request.body.messages.some((m) => m.role === 'user' && textOf(m.content).startsWith('Read src/module_1.ts')),
      ).toBe(true);
    }

    const state = await agentState(h.client, agentId);
    expect(state.compactions).toBeGreaterThanOrEqual(3);
    const events = await storedCompactionEvents(
      h.store,
      state,
      Array.from({ length: state.compactions! }, (_, i) => i + 1),
    );
    for (const event of events) {
      // Nothing leaves without a trace: whatever was dropped is in the event's summary.
      const dropped = event.removed.filter((r) => r.replacedBy === 'summary');
      if (dropped.length > 0) expect(event.summaryTokens, `compaction ${event.seq}`).toBeGreaterThan(0);
      for (const item of event.removed) expect(item.replacedBy, `${item.id} in compaction ${event.seq}`).toBeDefined();
      // Every removed message reloads byte-identical from storage.
      const lines = ((await h.store.get(event.keys.removed)) ?? '').split('\n').filter(Boolean);
      expect(lines).toHaveLength(event.removed.length);
      for (const line of lines) {
        const item = JSON.parse(line) as { key: string; message: ChatMessage };
        expect(await h.store.get(item.key)).toBe(JSON.stringify(item.message));
      }
    }
    // Below the trigger, from half the window, old tool results were masked in passes of their own: masks only.
    const maskPasses = events.filter((e) => e.reason.endsWith('mask the old tool results'));
    expect(maskPasses.length).toBeGreaterThanOrEqual(1);
    for (const pass of maskPasses) {
      expect(pass.strategies).toEqual(['mask-tool-results']);
      expect(pass.summaryTokens).toBeUndefined();
      expect(pass.removed.every((r) => r.replacedBy === 'masked')).toBe(true);
      expect(pass.tokensBefore - pass.tokensAfter).toBeGreaterThanOrEqual(Math.ceil(0.1 * WINDOW) - 50);
    }
    const summarized = events.filter((e) => (e.summaryTokens ?? 0) > 0);
    expect(summarized.length).toBeGreaterThanOrEqual(2);
    // No emergency: the older steps are masked and summarized, never halved or cut to fit.
    const emergency = new Set(['halve', 'fit-window', 'truncate-oversized']);
    expect(events.filter((e) => (e.strategies as string[]).some((s) => emergency.has(s)))).toEqual([]);
    // The latest summary says which steps of the request in progress it covers and where the loop stands.
    const last = summarized.at(-1)!;
    const body = JSON.parse((await h.store.get(compactionKey(state, last.seq, 'summary.json')))!) as ChatMessage;
    const text = textOf(body.content);
    const covered = Number(/steps 1–(\d+) of the request in progress/.exec(text)?.[1]);
    expect(covered).toBeGreaterThan(50);
    expect(covered).toBeLessThan(STEPS);
    expect(text).toContain('## Where the loop stands');
    expect(text).toContain(`Last action summarized (step ${covered}): read_file({"path":"src/module_${covered}.ts"})`);
    expect(text).toMatch(/Removed from the context and summarized above: /);
  }, 300_000);
});
