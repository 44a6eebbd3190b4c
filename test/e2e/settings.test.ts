/**
 * The settings of a running agent: `start` with another model, window or system prompt applies nothing and says
 * which differ (exit 2; the library's AgentSettingsDifferError); `longrun configure` (the `configure` Update, the
 * client's configureAgent, the temporal CLI) changes them, a smaller window compacting first, and they survive
 * continue-as-new. And what the human output of `state` and `list` shows.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHandle, agentState, configureAgent, queueMessage, sendMessage, startAgent } from '../../client/agents.ts';
import { AgentSettingsDifferError } from '../../client/setting-differences.ts';
import { SEARCH_ATTRIBUTES } from '../../contract/search-attributes.ts';
import type { ConfigureResult } from '../../contract/results.ts';
import { textOf } from '../../engine/messages.ts';
import { FIVE_TURNS, isSummaryRequest, newAgentId, startHarness, summaryReply } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun, STACK_TRACE } from '../support/longrun-cli.ts';
import type { CliRun } from '../support/longrun-cli.ts';
import { temporalCli } from '../support/temporal-cli.ts';

let h: Harness;
let temporal: (...args: string[]) => Promise<string>;
beforeAll(async () => {
  h = await startHarness((request) => {
    if (isSummaryRequest(request)) return { content: summaryReply('The notes are read.') };
    const last = textOf(request.body.messages.findLast((m) => m.role === 'user')?.content);
    if (last === 'fail with 401') return { status: 401, error: 'Incorrect API key provided' };
    return { content: `noted: ${textOf(request.body.messages.at(-1)!.content)}` };
  });
  temporal = await temporalCli(h);
});
afterAll(async () => {
  await h?.close();
});

function longrun(...args: string[]): Promise<CliRun> {
  return runLongrun(args, { env: cliEnv(h) });
}

/** The agent requests (not the summarizer's) the model server received, newest last. */
const agentRequests = () => h.model.requests.filter((r) => !isSummaryRequest(r));

const NOTE = 'The quarterly report lists revenue by region and the regional managers comment on each figure. ';

describe('settings of a running agent', () => {
  it('start with another --model, --system or --window applies nothing and names each (exit 2)', async () => {
    const agentId = newAgentId('differ');
    expect(await longrun('start', agentId, '--window', '8192', '--system', 'Be brief.')).toMatchObject({ code: 0 });
    // The same settings (or none given): idempotent.
    expect(await longrun('start', agentId)).toMatchObject({ code: 0, stdout: `started agent ${agentId}\n` });
    expect(await longrun('start', agentId, '--window', '8192', '--system', 'Be brief.')).toMatchObject({ code: 0 });

    const other = await longrun('start', agentId, '--model', 'gpt-4o', '--window', '4096', '--system', 'Be long.');
    expect(other.code, other.stderr).toBe(2);
    expect(other.stdout).toBe('');
    expect(other.stderr).toContain(`agent ${agentId} is running already, with other settings; not applied:`);
    expect(other.stderr).toContain('model "gpt-4o-mini" (asked "gpt-4o")');
    expect(other.stderr).toContain('window 8192 (asked 4096)');
    expect(other.stderr).toContain('systemPrompt "Be brief." (asked "Be long.")');
    expect(other.stderr).toContain(`longrun configure ${agentId} --model gpt-4o --window 4096 --system "Be long."`);
    expect(other.stderr).not.toMatch(STACK_TRACE);
    const state = await agentState(h.client, agentId);
    expect(state).toMatchObject({ model: 'gpt-4o-mini', systemPrompt: 'Be brief.', modelInfo: { window: 8192 } });

    // The library: a typed error naming each difference.
    const error = await startAgent(h.client, { agentId, model: 'gpt-4o', taskQueue: h.taskQueue }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AgentSettingsDifferError);
    expect((error as AgentSettingsDifferError).differences).toEqual([
      { setting: 'model', running: 'gpt-4o-mini', asked: 'gpt-4o' },
    ]);
    await expect(
      startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue, systemPrompt: 'Be brief.' }),
    ).resolves.toBeDefined();
  });

  it('start on a running agent no worker polls answers at once (what it cannot read, it does not compare)', async () => {
    const agentId = newAgentId('no-worker');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: `nobody-${agentId}` });
    const again = await longrun('start', agentId, '--window', '4096');
    expect(again, again.stderr).toMatchObject({ code: 0, stdout: `started agent ${agentId}\n` });
    expect(again.ms).toBeLessThan(15_000); // not a query's wait for a worker
    await agentHandle(h.client, agentId).terminate('test done');
  });

  it('configure changes the model, window and system prompt; they survive continue-as-new', async () => {
    const agentId = newAgentId('configure');
    expect((await longrun('start', agentId, '--window', '8192')).code).toBe(0);
    await sendMessage(h.client, agentId, 'first');

    const done = await longrun('configure', agentId, '--model', 'gpt-4o', '--window', '64000', '--system', 'Be kind.');
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe(
      'model: "gpt-4o-mini" → "gpt-4o"\nwindow: 8192 tokens → 64000 tokens\nsystemPrompt: none → "Be kind."\n',
    );
    // The next turn: the new model, and the new system prompt before the message.
    await sendMessage(h.client, agentId, 'second');
    const request = agentRequests().at(-1)!;
    expect(request.body.model).toBe('gpt-4o');
    expect(request.body.messages.slice(-2)).toMatchObject([
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: 'second' },
    ]);
    await sendMessage(h.client, agentId, 'third'); // sent once only
    expect(
      agentRequests()
        .at(-1)!
        .body.messages.filter((m) => m.role === 'system'),
    ).toHaveLength(1);
    const search = (await agentHandle(h.client, agentId).describe()).typedSearchAttributes;
    expect(search.get(SEARCH_ATTRIBUTES.model)).toBe('gpt-4o');

    // Unchanged settings: nothing to change; start with the new ones is idempotent, with the old ones it differs.
    expect((await longrun('configure', agentId, '--model', 'gpt-4o')).stdout).toContain('nothing to change');
    expect((await longrun('start', agentId, '--model', 'gpt-4o', '--window', '64000')).code).toBe(0);
    expect((await longrun('start', agentId, '--model', 'gpt-4o-mini')).code).toBe(2);

    // Across continue-as-new (a run lives at least 2 s; the test server suggests handing over early).
    const before = await agentState(h.client, agentId);
    await sleep(2_100);
    let extra = 0;
    while ((await agentState(h.client, agentId)).runs === before.runs && extra < 8) {
      await sendMessage(h.client, agentId, `more ${++extra}`);
    }
    const after = await agentState(h.client, agentId);
    expect(after.runs).toBeGreaterThan(before.runs ?? 1);
    expect(after).toMatchObject({ model: 'gpt-4o', systemPrompt: 'Be kind.', modelInfo: { window: 64000 } });
    await sendMessage(h.client, agentId, 'after the hand-over');
    expect(agentRequests().at(-1)!.body.model).toBe('gpt-4o');
  });

  it('a smaller window the context would not fit compacts first (planned for it), then switches', async () => {
    const agentId = newAgentId('shrink');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o',
      taskQueue: h.taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
    });
    for (let i = 1; i <= 14; i++) await sendMessage(h.client, agentId, `Note ${i}: ${NOTE.repeat(8)}`);
    const before = await agentState(h.client, agentId);
    expect(before.contextTokens).toBeGreaterThan(2_048); // more than the new window holds

    const result: ConfigureResult = await configureAgent(h.client, agentId, { model: 'gpt-4o-mini', window: 2_048 });
    expect(result.changed).toEqual([
      { setting: 'model', from: 'gpt-4o', to: 'gpt-4o-mini' },
      { setting: 'window', from: 128_000, to: 2_048 },
    ]);
    expect(result.compacted).toBe(true);
    expect(result.compaction?.event).toMatchObject({ seq: 1, trigger: 'forced', tokensBefore: before.contextTokens });
    const after = await agentState(h.client, agentId);
    expect(after.contextTokens).toBeLessThanOrEqual(2_048);
    expect(after).toMatchObject({ model: 'gpt-4o-mini', compactions: 1, modelInfo: { window: 2_048 } });
    await sendMessage(h.client, agentId, 'go on');
    expect(agentRequests().at(-1)!.body.model).toBe('gpt-4o-mini');

    // The CLI says it compacted first.
    const cli = await longrun('configure', agentId, '--window', '1024');
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/^window: 2048 tokens → 1024 tokens\n/);
  });

  it('refuses a model it cannot count or does not know, and a bad window, naming the setting', async () => {
    const agentId = newAgentId('refuse');
    expect((await longrun('start', agentId)).code).toBe(0);
    const unknown = await longrun('configure', agentId, '--model', 'my-own-model');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('rejected: model: unknown model "my-own-model"');
    const counted = await longrun('configure', agentId, '--model', 'claude-sonnet-4');
    expect(counted.code).toBe(1);
    expect(counted.stderr).toContain('configure cannot change how tokens are counted');
    const window = await longrun('configure', agentId, '--window', '512');
    expect(window.code).toBe(2);
    expect(window.stderr).toContain('--window');
    expect((await longrun('configure', agentId)).code).toBe(2);
    expect(await agentState(h.client, agentId)).toMatchObject({ model: 'gpt-4o-mini', modelInfo: { window: 128_000 } });

    // The temporal CLI: the same Update by name.
    const out = await temporal(
      'workflow',
      'update',
      'execute',
      '--workflow-id',
      `agent-${agentId}`,
      '--name',
      'configure',
      '--input',
      '{"window": 64000}',
    );
    expect(out).toContain('64000');
    expect((await agentState(h.client, agentId)).modelInfo?.window).toBe(64_000);
  });
});

/** Polls `read` until `ok` holds (at most 15 s). */
async function until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within 15 s (last: ${JSON.stringify(value)})`);
    await sleep(200);
  }
}

/** The agent's current details, as the Temporal UI shows them. */
async function details(agentId: string): Promise<string> {
  const metadata = await agentHandle(h.client, agentId).query<{ currentDetails?: string }>(
    '__temporal_workflow_metadata',
  );
  return metadata.currentDetails ?? '';
}

describe('what the human output shows', () => {
  it('state: the status list shows, a waiting draft (time left, commands), the worker; list: turns, context, queue', async () => {
    const agentId = newAgentId('shown');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { ...FIVE_TURNS, review: { automatic: true, timeoutSeconds: 600 } },
    });
    // Four turns of about 200 tokens each: the fifth message's call needs a compaction, whose draft waits.
    for (let i = 1; i <= 4; i++) await sendMessage(h.client, agentId, `Note ${i}: ${NOTE.repeat(12)}`);
    await queueMessage(h.client, agentId, 'note 5');
    await until(
      'a draft',
      () => agentState(h.client, agentId),
      (s) => s.draft !== undefined,
    );

    const state = await longrun('state', agentId);
    expect(state.code, state.stderr).toBe(0);
    expect(state.stdout).toContain('status   awaiting-review');
    expect(state.stdout).toMatch(
      /review {3}draft-1 \(automatic compaction 1, \d+ → \d+ tokens\) waits: \d+ s left, then applied as made/,
    );
    expect(state.stdout).toContain(`approve: longrun approve ${agentId} draft-1 [--summary-file F]`);
    expect(state.stdout).toContain(`discard: longrun discard ${agentId} draft-1`);
    expect(state.stdout).toContain(`worker   a worker polls task queue ${h.taskQueue} (last polled`);

    // list: the same status, the turns, the context's tokens and the task queue.
    const row = await until(
      'the list row',
      async () => (await longrun('list')).stdout.split('\n').find((line) => line.startsWith(agentId)) ?? '',
      (line) => /awaiting-review/.test(line) && /\b4\b/.test(line),
    );
    const [, status, model, turns, context, queue] = row.split(/\s{2,}/);
    expect({ status, model, turns, queue }).toEqual({
      status: 'awaiting-review',
      model: 'gpt-4o-mini',
      turns: '4',
      queue: h.taskQueue,
    });
    expect(Number(context)).toBeGreaterThan(0);
    expect((await longrun('list')).stdout.split('\n')[0]).toMatch(
      /^AGENT\s+STATUS\s+MODEL\s+TURNS\s+CONTEXT\s+TASK QUEUE/,
    );

    // The current details fit the panel: no line over 80 characters.
    for (const line of (await details(agentId)).split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);
  });

  it('state shows the last error of a failed turn until a turn succeeds', async () => {
    const agentId = newAgentId('failed');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const failed = await longrun('send', agentId, 'fail with 401');
    expect(failed.code).toBe(1);
    const state = await longrun('state', agentId);
    expect(state.stdout).toMatch(/^error {4}callModel failed: .*Incorrect API key provided/m);
    await sendMessage(h.client, agentId, 'fine now');
    expect((await longrun('state', agentId)).stdout).not.toMatch(/^error /m);
  });

  it('after a compact or a revert the current details keep the whole block; AgentCompactions counts as events does', async () => {
    const agentId = newAgentId('details');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1 },
    });
    for (let i = 1; i <= 4; i++) await sendMessage(h.client, agentId, `Note ${i}: ${NOTE.repeat(4)}`);
    // Its short context may not shrink (the task ledger it writes): this test is about what the details show after.
    const compacted = await longrun('compact', agentId, '--strategy', 'truncate-rounds', '--even-if-larger');
    expect(compacted.code, compacted.stderr).toBe(0);
    const compactedAt = (
      await until(
        'the attributes the compaction upserted',
        async () => (await agentHandle(h.client, agentId).describe()).typedSearchAttributes,
        (a) => a.get(SEARCH_ATTRIBUTES.lastCompactedAt) !== undefined,
      )
    ).get(SEARCH_ATTRIBUTES.lastCompactedAt)!;
    const afterCompact = await details(agentId);
    expect(afterCompact).toMatch(/^\*\*running\*\* · model gpt-4o-mini/);
    expect(afterCompact).toContain('turns: 4 · messages in context:');
    expect(afterCompact).toMatch(/last compaction: 1, \d+ → \d+ tokens/);

    const reverted = await longrun('revert', agentId, '--to-event', '1');
    expect(reverted.code, reverted.stderr).toBe(0);
    const afterRevert = await details(agentId);
    expect(afterRevert).toContain('context: ');
    expect(afterRevert).toContain('compactions: 1 · reverts: 1');
    expect(afterRevert).toMatch(/last event \(a revert\): 2, \d+ → \d+ tokens/);
    for (const line of afterRevert.split('\n')) expect(line.length, line).toBeLessThanOrEqual(80);

    // AgentCompactions and `longrun events` count the same: compactions, the revert apart.
    const events = await longrun('events', agentId);
    expect(events.stdout).toMatch(/^1 compaction\(s\), .*; 1 revert\(s\) put /m);
    const shown = async () => (await agentHandle(h.client, agentId).describe()).typedSearchAttributes;
    const attribute = await until(
      'the attributes the revert upserted',
      shown,
      (a) => a.get(SEARCH_ATTRIBUTES.lastCompactedAt)?.getTime() !== compactedAt.getTime(),
    );
    expect(attribute.get(SEARCH_ATTRIBUTES.compactions)).toBe(1);
  });
});
