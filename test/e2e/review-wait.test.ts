/**
 * Automatic compactions that wait for review (policy `review: { automatic, timeoutSeconds, onTimeout }`): the turn
 * that needs the compaction waits with its draft, `AgentStatus` is `awaiting-review` and the current details and the
 * progress query show the draft; an approve (with an edited summary) applies it and the turn answers, then the
 * messages sent meanwhile, in order; a timeout applies or discards it as configured; a discard pauses automatic
 * compaction and the agent keeps answering. A draft made in the background waits while the agent keeps working, and
 * survives continue-as-new. Started from the client library, the longrun CLI and the temporal CLI.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHandle, agentState, approveDraft, discardDraft, sendMessage, startAgent } from '../../client/agents.ts';
import { agentProgress, compactionEvents } from '../../client/reads.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import type { AgentProgress } from '../../contract/progress.ts';
import type { AgentState } from '../../contract/state.ts';
import { SEARCH_ATTRIBUTES } from '../../contract/search-attributes.ts';
import { textOf } from '../../engine/messages.ts';
import { FIVE_TURNS, isSummaryRequest, newAgentId, startHarness, summaryReply } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { eventsOfAllRuns } from '../support/planned.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import { startWithTemporalCli, temporalCli } from '../support/temporal-cli.ts';

const PATH = '/srv/app/deploy.yaml';

let h: Harness;
let temporal: (...args: string[]) => Promise<string>;
beforeAll(async () => {
  h = await startHarness((request) => {
    if (isSummaryRequest(request)) return { content: summaryReply(`The config is at ${PATH}.`) };
    return { content: `noted: ${textOf(request.body.messages.at(-1)!.content)}` };
  });
  temporal = await temporalCli(h);
});
afterAll(async () => {
  await h?.close();
});

const status = async (agentId: string) =>
  (await agentHandle(h.client, agentId).describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.status);

async function details(agentId: string): Promise<string> {
  const metadata = await agentHandle(h.client, agentId).query<{ currentDetails?: string }>(
    '__temporal_workflow_metadata',
  );
  return metadata.currentDetails ?? '';
}

/** Polls until `check` holds (or fails after 30 s, saying what was last seen). */
async function until<T>(what: string, read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not seen; last ${JSON.stringify(value)}`);
    await sleep(100);
  }
}

const NOTE = 'The quarterly report lists revenue by region and the regional managers comment on each figure. ';

/** Four turns of about 200 tokens each (a summary saves most of them): the fifth message makes compaction due. */
async function fourTurns(agentId: string): Promise<void> {
  await sendMessage(h.client, agentId, `Collect the deployment notes. ${NOTE.repeat(12)}`);
  await sendMessage(h.client, agentId, `The deploy config is at ${PATH}. ${NOTE.repeat(12)}`);
  for (const n of [3, 4]) await sendMessage(h.client, agentId, `Note ${n}: ${NOTE.repeat(12)}`);
}

describe('automatic compactions that wait for review', () => {
  it('wait as drafts (awaiting-review, details, progress); approve with an edit applies; all messages answered in order', async () => {
    const agentId = newAgentId('await');
    // Started from the temporal CLI, the policy option in the workflow's input JSON.
    await startWithTemporalCli(temporal, h.taskQueue, {
      agentId,
      model: 'gpt-4o-mini',
      compaction: { ...FIVE_TURNS, review: { automatic: true, timeoutSeconds: 600 } },
    });
    await fourTurns(agentId);
    expect((await agentState(h.client, agentId)).policy?.review).toEqual({
      automatic: true,
      timeoutSeconds: 600,
      onTimeout: 'apply',
    });

    // Its call needs the compaction: it waits, and its sender hears why.
    const lines: string[] = [];
    const waiting = sendMessage(h.client, agentId, 'note 5', { onProgress: (line) => lines.push(line) });
    await until(
      'AgentStatus awaiting-review',
      () => status(agentId),
      (s) => s === 'awaiting-review',
    );
    // Messages sent meanwhile are queued (one after the other: their order is the order they arrive in).
    const later = [sendMessage(h.client, agentId, 'note 6')];
    await until(
      'one queued',
      () => agentProgress(h.client, agentId),
      (p: AgentProgress) => p.queued === 1,
    );
    later.push(sendMessage(h.client, agentId, 'note 7'));
    const state = await agentState(h.client, agentId);
    expect(state.compactions).toBe(0);
    expect(state.draft?.info).toMatchObject({
      id: 'draft-1',
      seq: 1,
      waits: { timeoutSeconds: 600, onTimeout: 'apply' },
    });
    expect(state.draft!.info.summaryPreview).toContain(PATH);

    const shown = await details(agentId);
    expect(shown).toContain('**awaiting review: draft-1** (automatic compaction 1)');
    expect(shown).toMatch(/\d+ → \d+ tokens \(summarize\)/);
    expect(shown).toContain(PATH); // the summary's preview
    expect(shown).toMatch(/times out at \S+Z \(in \d+ s\), then applied as made/);
    expect(shown).toContain(`\`longrun approve ${agentId} draft-1\``);
    expect(shown).toContain(`\`longrun discard ${agentId} draft-1\``);

    const progress = await until(
      'the progress query with two queued',
      () => agentProgress(h.client, agentId),
      (p: AgentProgress) => p.queued === 2,
    );
    expect(progress.review).toMatchObject({ draft: 'draft-1', seq: 1, onTimeout: 'apply' });
    expect(Date.parse(progress.review!.until)).toBeGreaterThan(Date.now() + 500_000);
    // The same from the temporal CLI.
    const queried = JSON.parse(
      await temporal('workflow', 'query', '--workflow-id', agentWorkflowId(agentId), '--type', 'progress'),
    ) as { queryResult: AgentProgress[] };
    expect(queried.queryResult[0]!.review?.draft).toBe('draft-1');

    const heard = await until(
      "the sender's progress line",
      () => Promise.resolve(lines),
      (all) => all.some((line) => line.includes('waits for a review')),
    );
    expect(heard.find((line) => line.includes('waits for a review'))).toContain(
      `send to ${agentId}, `, // the Update, the agent, the time waited, then why
    );
    expect(heard.join('\n')).toContain(`approve or discard it (longrun watch ${agentId} names the draft`);

    const edited = 'Notes about the deployment were taken.';
    const approved = await approveDraft(h.client, agentId, 'draft-1', { summary: edited });
    expect(approved.compacted, approved.reason).toBe(true);
    expect(approved.event).toMatchObject({ seq: 1, trigger: 'auto', summaryParsedAs: 'edited' });
    expect(approved.event!.notes).toContain('review: draft-1 approved with an edited summary');
    expect(approved.event!.facts!.pinned).toContain(PATH);

    // The waiting turn answers, then the two sent meanwhile, in order.
    const results = [await waiting, ...(await Promise.all(later))];
    expect(results.map((r) => r.turn)).toEqual([5, 6, 7]);
    expect(results.map((r) => r.reply)).toEqual(['noted: note 5', 'noted: note 6', 'noted: note 7']);
    const after = await agentState(h.client, agentId);
    expect(after).toMatchObject({ turns: 7, compactions: 1, lastDraft: 'draft-1 approved with an edited summary' });
    expect(after.draft).toBeUndefined();
    expect(
      after.messages.filter((m) => m.role === 'user' && m.preview.startsWith('note ')).map((m) => m.preview),
    ).toEqual(['note 5', 'note 6', 'note 7']);
    await until(
      'AgentStatus running',
      () => status(agentId),
      (s) => s === 'running',
    );
    expect(await details(agentId)).not.toContain('awaiting review');
  });

  it('a timeout with onTimeout apply applies the draft as made, and the event says so', async () => {
    const agentId = newAgentId('await-apply');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { ...FIVE_TURNS, review: { automatic: true, timeoutSeconds: 2 } },
    });
    await fourTurns(agentId);
    const began = Date.now();
    const result = await sendMessage(h.client, agentId, 'note 5');
    expect(Date.now() - began).toBeGreaterThanOrEqual(2_000);
    expect(result).toMatchObject({ turn: 5, reply: 'noted: note 5' });
    const [event] = await compactionEvents(h.client, agentId);
    expect(event).toMatchObject({ seq: 1, trigger: 'auto', strategies: ['summarize'] });
    expect(event!.notes).toContain('review: draft-1 applied after the review timeout (2 s), not reviewed');
    // The History tab shows the wait as a timer that says what it waits for, not a bare `3 (2s)`.
    const timers = (await eventsOfAllRuns(h.client, agentWorkflowId(agentId))).filter(
      (e) => e.timerStartedEventAttributes,
    );
    expect(timers.map((e) => Buffer.from(e.userMetadata?.summary?.data ?? []).toString('utf8'))).toEqual([
      '"review of draft-1 (compaction 1): applied after 2 s undecided"',
    ]);
    const state = await agentState(h.client, agentId);
    expect(state).toMatchObject({
      compactions: 1,
      lastDraft: 'draft-1 applied after the review timeout (2 s), not reviewed',
    });
    await until(
      'AgentStatus running',
      () => status(agentId),
      (s) => s === 'running',
    );
  });

  it('a timeout with onTimeout discard applies nothing and pauses automatic compaction; the agent keeps answering', async () => {
    const agentId = newAgentId('await-discard');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { ...FIVE_TURNS, review: { automatic: true, timeoutSeconds: 2, onTimeout: 'discard' } },
    });
    await fourTurns(agentId);
    expect(await sendMessage(h.client, agentId, 'note 5')).toMatchObject({ turn: 5, reply: 'noted: note 5' });
    const state = await agentState(h.client, agentId);
    expect(state).toMatchObject({
      compactions: 0,
      drafts: 1,
      lastDraft: 'draft-1 discarded after the review timeout (2 s)',
    });
    expect(state.cooldown?.pausedFor).toBe('draft-1 discarded after the review timeout (2 s)');
    const pausedUntil = state.cooldown!.pausedUntil!;
    expect(pausedUntil).toBeGreaterThan(state.contextTokens);
    expect((await agentProgress(h.client, agentId)).pausedUntil).toBe(pausedUntil);
    expect(await details(agentId)).toContain(
      `automatic compaction paused until ${pausedUntil} tokens:\n\ndraft-1 discarded after the review timeout (2 s)`,
    );
    // The next message is answered at once: the same compaction is not prepared again.
    expect(await sendMessage(h.client, agentId, 'note 6')).toMatchObject({ turn: 6, reply: 'noted: note 6' });
    expect(await agentState(h.client, agentId)).toMatchObject({ compactions: 0, drafts: 1, turns: 6 });
    await until(
      'AgentStatus running',
      () => status(agentId),
      (s) => s === 'running',
    );
  });

  it('from the longrun CLI: start --await-review, discard by a person pauses automatic compaction', async () => {
    const agentId = newAgentId('await-cli');
    const env = cliEnv(h);
    const bad = await runLongrun(['start', agentId, '--on-review-timeout', 'discard'], { env });
    expect(bad, bad.stderr).toMatchObject({ code: 2 });
    expect(bad.stderr).toContain('--on-review-timeout goes with --await-review SECONDS');
    const tooLong = await runLongrun(['start', agentId, '--await-review', '9999999'], { env });
    expect(tooLong.stderr).toContain('--await-review: must be an integer from 1 to 2592000 (got "9999999")');
    const started = await runLongrun(['start', agentId, '--await-review', '600', '--on-review-timeout', 'discard'], {
      env,
    });
    expect(started, started.stderr).toMatchObject({ code: 0 });
    const { policy } = await until(
      'the policy',
      () => agentState(h.client, agentId),
      (s) => s.policy !== undefined,
    );
    expect(policy!.review).toEqual({ automatic: true, timeoutSeconds: 600, onTimeout: 'discard' });

    const other = newAgentId('await-person');
    await startAgent(h.client, {
      agentId: other,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { ...FIVE_TURNS, review: { automatic: true, timeoutSeconds: 600 } },
    });
    await fourTurns(other);
    const waiting = sendMessage(h.client, other, 'note 5');
    await until(
      'AgentStatus awaiting-review',
      () => status(other),
      (s) => s === 'awaiting-review',
    );
    const discarded = await runLongrun(['discard', other, 'draft-1'], { env });
    expect(discarded, discarded.stderr).toMatchObject({ code: 0 });
    const state: AgentState = await agentState(h.client, other);
    expect(discarded.stdout.trim()).toBe(
      `discarded draft-1; automatic compaction paused until the context reaches ${state.cooldown!.pausedUntil} tokens`,
    );
    expect(await waiting).toMatchObject({ turn: 5, reply: 'noted: note 5' });
    expect(await sendMessage(h.client, other, 'note 6')).toMatchObject({ turn: 6 });
    expect(await agentState(h.client, other)).toMatchObject({
      compactions: 0,
      drafts: 1,
      lastDraft: 'draft-1 discarded',
    });
    await expect(discardDraft(h.client, other, 'draft-1')).rejects.toThrow(/draft-1 is not pending/);
  });

  it('a draft made in the background waits while the agent works, survives continue-as-new, then applies', async () => {
    const agentId = newAgentId('await-bg');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      modelOverride: { window: 8_192 }, // the soft threshold at 2,457 tokens, the trigger at 6,553
      compaction: {
        ...FIVE_TURNS,
        maxTurns: undefined,
        backgroundRatio: 0.3,
        review: { automatic: true, timeoutSeconds: 600 },
        // Unpriced: a summary at the soft threshold, this early, would not pay for the prompt cache it breaks.
        cost: null,
      },
    });
    let sent = 0;
    const hasDraft = async () => (await agentState(h.client, agentId)).draft !== undefined;
    while (!(await hasDraft()) && sent < 14) await sendMessage(h.client, agentId, `Note ${++sent}: ${NOTE.repeat(12)}`);
    const drafted = await until(
      'a draft',
      () => agentState(h.client, agentId),
      (s) => s.draft !== undefined,
    );
    expect(drafted.draft!.info).toMatchObject({ id: 'draft-1', waits: { onTimeout: 'apply' } });
    expect(drafted.compactions).toBe(0);
    await until(
      'AgentStatus awaiting-review',
      () => status(agentId),
      (s) => s === 'awaiting-review',
    );

    // The agent keeps answering while the draft waits; a run hands over (continue-as-new) carrying it.
    await sleep(2_100); // a run lives at least 2 s before it continues as new (workflows/continue-as-new.ts)
    let extra = 0;
    while ((await agentState(h.client, agentId)).runs === drafted.runs && extra < 6) {
      expect(await sendMessage(h.client, agentId, `hi ${++extra}`)).toMatchObject({ reply: `noted: hi ${extra}` });
    }
    const carried = await agentState(h.client, agentId);
    expect(carried.runs).toBeGreaterThan(drafted.runs ?? 1);
    expect(carried.draft?.info).toEqual(drafted.draft!.info); // its deadline too
    expect(carried.compactions).toBe(0);
    await until(
      'AgentStatus awaiting-review',
      () => status(agentId),
      (s) => s === 'awaiting-review',
    );
    expect(await details(agentId)).toContain('**awaiting review: draft-1** (automatic compaction 1)');

    const approved = await approveDraft(h.client, agentId, 'draft-1');
    expect(approved.compacted, approved.reason).toBe(true);
    expect(approved.event).toMatchObject({ seq: 1, trigger: 'background' });
    expect(approved.event!.notes).toContain('review: draft-1 approved');
    // Applied in front of what the agent added while it waited.
    const after = await agentState(h.client, agentId);
    expect(after.messages.at(-1)!.preview).toBe(`noted: hi ${extra}`);
    expect(after.messages.some((m) => m.kind === 'summary')).toBe(true);
    await until(
      'AgentStatus running',
      () => status(agentId),
      (s) => s === 'running',
    );
  });
});
