/**
 * The worker's Prometheus endpoint (LONGRUN_METRICS_ADDRESS, docs/metrics.md): a worker process (worker/main.ts)
 * against the shared stack and a scripted model, scraped before, during and after turns, model errors and a forced
 * compaction. longrun's counters move by what happened (turns, model calls and their errors by class, tokens,
 * compactions by trigger and strategy, tokens saved, bytes offloaded, cost and cached tokens) and the SDK's own metrics are served beside
 * them. A bad address is refused naming the variable.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parsePrometheus } from '../../bench/scale/results.ts';
import type { Metrics } from '../../bench/scale/results.ts';
import { agentHandle, agentState, closeAgent, compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionEvents } from '../../client/reads.ts';
import { METRIC_LIST, METRICS, SDK_METRICS } from '../../contract/metrics.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { asksForSummary, startChatServer } from '../../llm/chat-server.ts';
import { requestTokenIds } from '../../llm/prompt-cache.ts';
import { loadTokenCounter } from '../../engine/tokens.ts';
import { registryPrice } from '../../engine/models.ts';
import { SEARCH_ATTRIBUTES } from '../../contract/search-attributes.ts';
import type { ChatServer, ScriptedReply } from '../../llm/chat-server.ts';
import { freePort } from '../../stack/ports.ts';
import { newAgentId, sharedStackEnv, spawnWorker } from '../support/harness.ts';

const SUMMARY = JSON.stringify({
  task_overview: 'Keep a log of the turns.',
  current_state: 'Four turns logged.',
  important_discoveries: 'Nothing failed.',
  next_steps: 'Go on logging.',
  context_to_preserve: 'turn numbers',
});

let model: ChatServer;
let worker: ChildProcessWithoutNullStreams;
let client: Client;
let metricsUrl: string;
const dataDir = mkdtempSync(join(tmpdir(), 'longrun-metrics-'));
const taskQueue = `metrics-${Date.now()}`;
/** Faults the model answers the next requests of a turn with, in order (then it answers). */
const faults: ScriptedReply[] = [];
/** While set, the model holds its answer to a turn until released. */
let hold: { reached: () => void; release: Promise<void> } | undefined;
/**
 * While set, a summary call reports its request's tokens as the server's prompt cache counts them (the server then
 * reports the cached part of them), and the first one (`failFirst`) is answered with a 500: its retry sends the same
 * request again, which the cache serves.
 */
let countedSummary: { failFirst: boolean } | undefined;

/** The tokens of a request as the server's prompt cache counts them: it reports the cached part of them. */
async function requestTokens(body: {
  messages: ChatMessage[];
  tools?: unknown;
  response_format?: unknown;
}): Promise<number> {
  const counter = await loadTokenCounter('o200k_base');
  const tools = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
  return requestTokenIds(counter, body.messages, tools, body.response_format).length;
}

beforeAll(async () => {
  model = await startChatServer(async (request) => {
    if (asksForSummary(request.body)) {
      if (!countedSummary) return { content: SUMMARY, usage: { prompt_tokens: 700, completion_tokens: 80 } };
      if (countedSummary.failFirst) {
        countedSummary.failFirst = false;
        return { status: 500, error: 'the summary model is busy' };
      }
      return { content: SUMMARY, usage: { prompt_tokens: await requestTokens(request.body), completion_tokens: 80 } };
    }
    const fault = faults.shift();
    if (fault) return fault;
    if (hold) {
      const held = hold;
      hold = undefined;
      held.reached();
      await held.release;
    }
    const text = textOf(request.body.messages.findLast((m) => m.role === 'user')?.content);
    if (text.startsWith('cost turn')) {
      const prompt = await requestTokens(request.body);
      return { content: `logged: ${text.slice(0, 40)}`, usage: { prompt_tokens: prompt, completion_tokens: 9 } };
    }
    return { content: `logged: ${text.slice(0, 40)}`, usage: { prompt_tokens: 120, completion_tokens: 9 } };
  });
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  worker = await spawnWorker(
    'worker/main.ts',
    {
      LONGRUN_TASK_QUEUE: taskQueue,
      LONGRUN_DATA_DIR: dataDir,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: model.baseURL,
      LONGRUN_METRICS_ADDRESS: `127.0.0.1:${port}`,
    },
    ['--no-demo'],
  );
  const stack = inject('stack');
  client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
}, 120_000);

afterAll(async () => {
  await client?.connection.close();
  if (worker && worker.exitCode === null && worker.signalCode === null) {
    const exited = new Promise((resolve) => worker.on('exit', resolve));
    worker.kill('SIGTERM');
    await exited;
  }
  await model?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function scrape(): Promise<Metrics> {
  const response = await fetch(metricsUrl);
  expect(response.status).toBe(200);
  return parsePrometheus(await response.text());
}

/** The sum of a metric's series whose labels include `labels` (0 when there is none). */
function total(metrics: Metrics, name: string, labels: Record<string, string> = {}): number {
  return (metrics.get(name) ?? [])
    .filter((series) => Object.entries(labels).every(([key, value]) => series.labels[key] === value))
    .reduce((sum, series) => sum + series.value, 0);
}

/** How much each of `names` moved between two scrapes, with `labels`. */
function moved(before: Metrics, after: Metrics, name: string, labels: Record<string, string> = {}): number {
  return total(after, name, labels) - total(before, name, labels);
}

describe('the worker serves Prometheus metrics at LONGRUN_METRICS_ADDRESS', () => {
  it('counts turns, model calls, errors by class, tokens and a forced compaction; the SDK metrics beside them', async () => {
    const agentId = newAgentId('metrics');
    await startAgent(client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
    });
    const before = await scrape();
    const turnCount = `${METRICS.turnLatency.name}_count`;
    const callCount = `${METRICS.modelCallLatency.name}_count`;

    // A turn whose first two model calls fail (429, then 500), retried until the model answers.
    faults.push({ status: 429, error: 'slow down', headers: { 'retry-after': '1' } }, { status: 500, error: 'oops' });
    expect((await sendMessage(client, agentId, `turn 1: ${'all is well. '.repeat(150)}`)).reply).toMatch(/^logged/);
    const afterFirst = await scrape();
    expect(moved(before, afterFirst, turnCount, { outcome: 'ok' })).toBe(1);
    expect(moved(before, afterFirst, callCount, { purpose: 'turn', result: 'error' })).toBe(2);
    expect(moved(before, afterFirst, callCount, { purpose: 'turn', result: 'ok' })).toBe(1);
    const errors = METRICS.modelCallErrors.name;
    expect(moved(before, afterFirst, errors, { purpose: 'turn', class: 'rate_limit' })).toBe(1);
    expect(moved(before, afterFirst, errors, { purpose: 'turn', class: 'server' })).toBe(1);
    expect(moved(before, afterFirst, METRICS.modelTokens.name, { purpose: 'turn', kind: 'prompt' })).toBe(120);
    expect(moved(before, afterFirst, METRICS.modelTokens.name, { purpose: 'turn', kind: 'completion' })).toBe(9);

    // During a turn (the model holding its answer): the endpoint answers, the turn is not counted yet.
    let reached!: () => void;
    let release!: () => void;
    const atModel = new Promise<void>((resolve) => (reached = resolve));
    hold = { reached, release: new Promise<void>((resolve) => (release = resolve)) };
    const pending = sendMessage(client, agentId, `turn 2: ${'all is well. '.repeat(150)}`);
    await atModel;
    const during = await scrape();
    expect(moved(afterFirst, during, turnCount)).toBe(0);
    // The activity in flight holds one of the worker's activity slots (an SDK metric).
    expect(total(during, 'temporal_worker_task_slots_used', { worker_type: 'ActivityWorker' })).toBeGreaterThanOrEqual(
      1,
    );
    release();
    await pending;
    for (let turn = 3; turn <= 4; turn++)
      await sendMessage(client, agentId, `turn ${turn}: ${'all is well. '.repeat(150)}`);
    const afterTurns = await scrape();
    expect(moved(afterFirst, afterTurns, turnCount, { outcome: 'ok' })).toBe(3);
    expect(total(afterTurns, `${METRICS.turnLatency.name}_sum`)).toBeGreaterThan(0);

    // A forced compaction that summarizes: counted by trigger and strategy, with what it saved and offloaded.
    const result = await compactAgent(client, agentId, { strategy: 'summarize', evenIfLarger: true });
    expect(result.compacted, result.reason).toBe(true);
    const event = result.event!;
    const after = await scrape();
    const forced = { trigger: 'forced' };
    expect(moved(afterTurns, after, METRICS.compactions.name, forced)).toBe(1);
    expect(moved(afterTurns, after, METRICS.compactionSteps.name, { ...forced, strategy: 'summarize' })).toBe(1);
    expect(moved(afterTurns, after, METRICS.compactionTokensSaved.name, forced)).toBe(
      event.tokensBefore - event.tokensAfter,
    );
    expect(event.tokensBefore - event.tokensAfter).toBeGreaterThan(0);
    expect(moved(afterTurns, after, `${METRICS.compactionTokensBefore.name}_sum`, forced)).toBe(event.tokensBefore);
    expect(moved(afterTurns, after, `${METRICS.compactionTokensAfter.name}_sum`, forced)).toBe(event.tokensAfter);
    expect(moved(afterTurns, after, METRICS.compactionRemovedMessages.name, forced)).toBe(event.removedCount);
    expect(moved(afterTurns, after, METRICS.compactionOffloadedBytes.name, forced)).toBeGreaterThan(
      event.removedCount * 500, // each removed message is over 1,900 characters of text
    );
    expect(moved(afterTurns, after, METRICS.compactionFactsPinned.name, forced)).toBe(event.facts?.pinned.length ?? 0);
    expect(moved(afterTurns, after, `${METRICS.compactionDuration.name}_count`, forced)).toBe(1);
    expect(moved(afterTurns, after, callCount, { purpose: 'summary', result: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(
      moved(afterTurns, after, METRICS.modelTokens.name, { purpose: 'summary', kind: 'prompt' }),
    ).toBeGreaterThanOrEqual(700);

    // Histograms carry the buckets of the list (contract/metrics.ts), not the SDK's defaults.
    const buckets = (after.get(`${METRICS.compactionTokensBefore.name}_bucket`) ?? []).map((s) => s.labels.le);
    expect(buckets).toContain(String(METRICS.compactionTokensBefore.buckets[0]));

    // The SDK's own metrics, from the same endpoint.
    await closeAgent(client, agentId);
    // The Update answers once the agent is closed; the workflow completes in the task after it.
    let closed = await scrape();
    for (let waited = 0; waited < 10_000 && !closed.has('temporal_workflow_completed'); waited += 250) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      closed = await scrape();
    }
    // Every one the docs and the dashboard use (contract/metrics.ts SDK_METRICS), but those that need what this
    // session did not do (a cache miss, a failed run): the agent closed, and callModel attempts failed above.
    const happened = new Set(['temporal_workflow_completed', 'temporal_activity_execution_failed']);
    for (const metric of SDK_METRICS.filter((m) => m.onlyAfter === undefined || happened.has(m.name))) {
      const name = metric.kind === 'histogram' ? `${metric.name}_bucket` : metric.name;
      expect(closed.has(name), `${name} is served (of ${[...closed.keys()].join(' ')})`).toBe(true);
    }
    expect(
      moved(before, closed, 'temporal_activity_execution_failed', { activity_type: 'callModel' }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      moved(before, closed, 'temporal_workflow_completed', { workflow_type: 'agentWorkflow' }),
    ).toBeGreaterThanOrEqual(1);
    // Every longrun metric this session recorded is in the list, and has its type line.
    const served = [...closed.keys()].filter((name) => name.startsWith('longrun_'));
    const listed = new Set(
      METRIC_LIST.flatMap((m) =>
        (m.kind === 'histogram' ? ['_bucket', '_sum', '_count'] : ['']).map((s) => m.name + s),
      ),
    );
    expect(served.filter((name) => !listed.has(name))).toEqual([]);
    expect(served.length).toBeGreaterThan(METRIC_LIST.length);
  });

  it("an agent's state, events, details, AgentCost and the metrics show its cost and the cached share of its input", async () => {
    const agentId = newAgentId('cost');
    await startAgent(client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
    });
    const price = registryPrice('gpt-4o-mini')!;
    const before = await scrape();
    // Each turn's request begins as the one before it: the server's prompt cache serves that prefix (≥ 1,024 tokens).
    for (let turn = 1; turn <= 5; turn++) {
      await sendMessage(client, agentId, `cost turn ${turn}: ${'all is well. '.repeat(150)}`);
    }
    const state = await agentState(client, agentId);
    expect(state.modelInfo?.price).toEqual(price);
    const spend = state.spend!;
    expect(spend).toMatchObject({ calls: 5, countedCalls: 0, completionTokens: 45 });
    expect(spend.cachedTokens).toBeGreaterThan(3 * 1_024); // turns 3 to 5 found the turns before them cached
    expect(spend.cachedTokens).toBeLessThan(spend.promptTokens);
    const calls =
      ((spend.promptTokens - spend.cachedTokens) * price.inputPerMillion +
        spend.cachedTokens * price.cachedInputPerMillion +
        spend.completionTokens * price.outputPerMillion) /
      1e6;
    expect(state.cost!.modelCalls).toBeCloseTo(calls, 12);
    expect(state.cost!.cachedInputShare).toBeCloseTo(spend.cachedTokens / spend.promptTokens, 12);
    const afterTurns = await scrape();
    expect(moved(before, afterTurns, METRICS.modelTokens.name, { purpose: 'turn', kind: 'cached' })).toBe(
      spend.cachedTokens,
    );
    // Each call's cost is counted in whole millionths of a dollar.
    const counted = moved(before, afterTurns, METRICS.modelCost.name, { purpose: 'turn' });
    expect(Math.abs(counted - calls * 1e6)).toBeLessThanOrEqual(spend.calls);

    // A compaction: its summary call's cost and the cache it invalidated, in its event and the agent's total. The
    // summary call is sent twice (the first answered with a 500): the second finds the first's prompt cached, and its
    // cached part is priced at the cached price.
    countedSummary = { failFirst: true };
    const result = await compactAgent(client, agentId, { strategy: 'summarize', evenIfLarger: true });
    countedSummary = undefined;
    expect(result.compacted, result.reason).toBe(true);
    const llm = result.event!.llm!;
    expect(llm.cachedTokens).toBeGreaterThanOrEqual(1_024);
    expect(llm.cachedTokens).toBeLessThanOrEqual(llm.promptTokens);
    expect(llm.promptTokens - llm.cachedTokens!).toBeLessThan(128); // all but the last block of the same request
    const summary =
      ((llm.promptTokens - llm.cachedTokens!) * price.inputPerMillion +
        llm.cachedTokens! * price.cachedInputPerMillion +
        80 * price.outputPerMillion) /
      1e6;
    const spent = result.event!.spent!;
    expect(spent.summary).toBeCloseTo(summary, 12);
    expect(spent.cache.invalidatedTokens).toBeGreaterThan(0);
    expect(spent.cache.keptTokens + spent.cache.invalidatedTokens).toBe(result.event!.tokensBefore);
    expect(spent.cache.nextCallCost).toBeCloseTo(
      (spent.cache.rewrittenTokens * (price.inputPerMillion - price.cachedInputPerMillion)) / 1e6,
      12,
    );
    expect((await compactionEvents(client, agentId)).at(-1)!.spent).toEqual(spent);

    await sendMessage(client, agentId, `cost turn 6: ${'all is well. '.repeat(150)}`);
    const after = await agentState(client, agentId);
    expect(after.cost!.summaries).toBeCloseTo(summary, 12);
    expect(after.cost!.total).toBeCloseTo(after.cost!.modelCalls! + summary, 12);
    // The search attribute and the current details (what the Temporal UI shows).
    const handle = agentHandle(client, agentId);
    // (Upserted in steps of 2% of itself, or with the context's tokens.)
    const shown = (await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.cost)!;
    expect(shown).toBeGreaterThanOrEqual(after.cost!.total! * 0.98);
    expect(shown).toBeLessThanOrEqual(after.cost!.total!);
    const details = (await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata')).currentDetails;
    const share = Math.round(after.cost!.cachedInputShare! * 100);
    expect(details).toContain(`cost: $${after.cost!.total!.toFixed(6)}`);
    expect(details).toContain(`cached input ${share}%`);
    await closeAgent(client, agentId);
  });

  it('refuses an address it cannot listen on, naming the variable', async () => {
    const run = (address: string) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          [join(PROJECT_ROOT, 'worker/main.ts')],
          {
            encoding: 'utf8',
            env: { ...process.env, ...sharedStackEnv(), LONGRUN_METRICS_ADDRESS: address, LONGRUN_DATA_DIR: dataDir },
            timeout: 60_000,
          },
          (_error, _stdout, stderr) => resolve({ code: child.exitCode, stderr }),
        );
      });
    const named = await run('localhost:9464');
    expect(named.code).toBe(1);
    expect(named.stderr).toContain('LONGRUN_METRICS_ADDRESS: must be an IP address and a port');
    // The port the first worker serves on is taken.
    const taken = await run(new URL(metricsUrl).host);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain(`LONGRUN_METRICS_ADDRESS: cannot serve metrics on ${new URL(metricsUrl).host}`);
  });
});
