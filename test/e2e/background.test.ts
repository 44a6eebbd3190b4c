/**
 * Background compaction (policy `backgroundRatio`, 70% of the window in the default preset): in a long agent loop
 * under one user message, compactions are prepared while the agent keeps calling its model and tools, and committed
 * at the next step boundary in front of what was added meanwhile. Every request fits the window, keeps its tool
 * pairs, and carries each tool result at most once; the coverage invariant is checked by the worker on every commit
 * and request (strict in tests: a break fails the turn). Then the same loop on two worker processes, one of them
 * killed with SIGKILL at random moments while a background compaction is in flight: the turn completes, nothing lost.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionEvents } from '../../client/reads.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { textOf } from '../../engine/messages.ts';
import { countRequest, loadTokenCounter } from '../../engine/tokens.ts';
import { pairViewOf, toolPairViolations } from '../../engine/tool-pairs.ts';
import { asksForSummary, startChatServer } from '../../llm/chat-server.ts';
import type { RecordedRequest, Responder } from '../../llm/chat-server.ts';
import { nextStep, readFile } from '../support/files.ts';
import { newAgentId, spawnWorker, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const WINDOW = 8_192;
const TASK = (steps: number) =>
  `Read src/module_1.ts to src/module_${steps}.ts one by one and tell me what is wrong. Do not modify any file.`;

/**
 * The default preset, without its masking pass below the trigger (from 50% of the window it masks old tool results,
 * cheaply and blocking, which in this loop keeps the context under the soft threshold most of the time), and
 * unpriced (priced, a compaction at the soft threshold that would not pay for the prompt cache it breaks waits for
 * the trigger: cost-cache.test.ts).
 */
const MASKING_OFF = { mask: { fromRatio: null }, cost: null };

const isSummaryRequest = (request: RecordedRequest) => request.body.model === 'summary-model';

/** The model: the loop's next step at once; a summary only after `summaryDelayMs` (the window it runs in). */
function loopModel(steps: number, summaryDelayMs: number, timeline: { at: number; summary: boolean }[]): Responder {
  return async (request) => {
    const summary = isSummaryRequest(request) || asksForSummary(request.body);
    timeline.push({ at: Date.now(), summary });
    if (summary) {
      await sleep(summaryDelayMs);
      return {
        content: JSON.stringify({
          task_overview: 'Read every module and find what is wrong.',
          current_state: 'Reading the modules one by one.',
          important_discoveries: 'Each module has one TypeError line.',
          next_steps: 'Read the next module.',
          context_to_preserve: 'module numbers',
          decisions: [],
          done: [],
          pending: [],
        }),
      };
    }
    return nextStep(request.body.messages, steps);
  };
}

/** Checks every request the agent's model received: it fits, keeps its pairs, carries each tool result once. */
async function checkRequests(requests: RecordedRequest[], steps: number, window: number): Promise<void> {
  const counter = await loadTokenCounter('o200k_base');
  const agentRequests = requests.filter(
    (r) =>
      !isSummaryRequest(r) &&
      !asksForSummary(r.body) &&
      textOf(r.body.messages.find((m) => m.role === 'user')?.content).includes(`module_${steps}.ts one by one`),
  );
  expect(agentRequests.length).toBeGreaterThanOrEqual(steps + 1);
  for (const request of agentRequests) {
    const schemas = (request.body.tools as unknown[] | undefined) ?? [];
    expect(countRequest(counter, request.body.messages, schemas)).toBeLessThanOrEqual(window);
    expect(toolPairViolations(request.body.messages.map(pairViewOf))).toEqual([]);
    const results = request.body.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
    expect(new Set(results).size).toBe(results.length);
    const tasks = request.body.messages.filter((m) => m.role === 'user' && textOf(m.content).startsWith('Read src/'));
    expect(tasks).toHaveLength(1); // the user's message verbatim, once
  }
}

let h: Harness | undefined;
const workers: ChildProcessWithoutNullStreams[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'longrun-background-'));

afterAll(async () => {
  await h?.close();
  const running = workers.filter((w) => w.exitCode === null && w.signalCode === null);
  const exits = running.map((w) => new Promise((resolve) => w.on('exit', resolve)));
  for (const worker of running) worker.kill('SIGTERM');
  await Promise.all(exits);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('background compaction', () => {
  it('compacts while the agent works: steps go on during the summary, committed in front of them', async () => {
    // A window where the steps between the soft threshold (70%) and the trigger (80%) are several (results of about
    // 1,000 tokens): the agent works on through them while the summary is written.
    const steps = 90;
    const window = 32_000;
    const timeline: { at: number; summary: boolean }[] = [];
    h = await startHarness(loopModel(steps, 1_500, timeline), [readFile]);
    const agentId = newAgentId('background');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      modelOverride: { window },
      // Summaries only: each compaction waits for the (slow) summary model.
      compaction: { ...MASKING_OFF, strategies: ['summarize'] },
    });
    const result = await sendMessage(h.client, agentId, TASK(steps));
    expect(result.toolCalls).toBe(steps);
    expect(result.steps).toBe(steps + 1);
    expect(result.reply).toBe(`All ${steps} modules read; the fix is the same in each.`);

    const events = await compactionEvents(h.client, agentId);
    console.log(
      'EV ' + events.map((e) => `${e.seq} ${e.trigger} ${e.reason} ${e.tokensBefore}->${e.tokensAfter}`).join('\nEV '),
    );
    console.log('TL ' + timeline.map((t) => `${t.at % 100000} ${t.summary}`).join('\nTL '));
    const background = events.filter((e) => e.trigger === 'background');
    expect(background.length).toBeGreaterThan(0);
    // While a summary was being written (1.5 s each), the agent's model was called: the agent did not wait.
    const during = timeline.filter(
      (t) => !t.summary && timeline.some((s) => s.summary && t.at > s.at && t.at < s.at + 1_400),
    );
    expect(during.length).toBeGreaterThan(0);
    await checkRequests(h.model.requests, steps, window);
    const state = await agentState(h.client, agentId);
    expect(state.violations).toBeUndefined();
    expect(state.backgroundCompaction).toBeUndefined();
  });

  it('loses nothing when a worker is killed at random moments during background compactions', async () => {
    const steps = 70;
    const timeline: { at: number; summary: boolean }[] = [];
    const model = await startChatServer(loopModel(steps, 2_000, timeline));
    const taskQueue = `background-${Date.now()}`;
    const start = () =>
      spawnWorker('test/support/files-worker.ts', {
        LONGRUN_TASK_QUEUE: taskQueue,
        LONGRUN_DATA_DIR: dataDir,
        LONGRUN_SUMMARY_MODEL: 'summary-model',
        OPENAI_API_KEY: 'test-key',
        OPENAI_BASE_URL: model.baseURL,
      }).then((child) => (workers.push(child), child));
    await Promise.all([start(), start()]);
    const stack = inject('stack');
    const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
    // Deterministic "random" moments (a linear congruential generator), printed so a failure can be replayed.
    let seed = Date.now() % 2_147_483_647;
    console.log(`background kill test seed ${seed}`);
    const random = () => (seed = (seed * 48_271) % 2_147_483_647) / 2_147_483_647;
    try {
      const agentId = newAgentId('background-kill');
      await startAgent(client, {
        agentId,
        model: 'gpt-4o-mini',
        taskQueue,
        modelOverride: { window: WINDOW },
        compaction: MASKING_OFF,
      });
      let done = false;
      const turn = sendMessage(client, agentId, TASK(steps)).finally(() => (done = true));
      let kills = 0;
      while (!done && kills < 3) {
        const state = await agentState(client, agentId).catch(() => undefined);
        if (state?.backgroundCompaction) {
          await sleep(Math.floor(random() * 1_500));
          const alive = workers.filter((w) => w.exitCode === null && w.signalCode === null);
          const victim = alive[Math.floor(random() * alive.length)]!;
          victim.kill('SIGKILL');
          kills++;
          await start();
          // The next kill waits for the next background compaction.
          while (!done && (await agentState(client, agentId).catch(() => undefined))?.backgroundCompaction) {
            await sleep(200);
          }
        }
        await sleep(100);
      }
      const result = await turn;
      expect(kills).toBeGreaterThan(0);
      expect(result.toolCalls).toBe(steps);
      expect(result.reply).toBe(`All ${steps} modules read; the fix is the same in each.`);
      const state = await agentState(client, agentId);
      expect(state.violations).toBeUndefined();
      expect(state.turns).toBe(1);
      const events = await compactionEvents(client, agentId);
      expect(events.some((e) => e.trigger === 'background')).toBe(true);
      await checkRequests(model.requests, steps, WINDOW);
      await closeAgent(client, agentId);
    } finally {
      await client.connection.close();
      await model.close();
    }
  }, 300_000);
});
