/**
 * Living across releases, the way a release reaches a running agent on unversioned workers: one task queue, each
 * release's worker started and the older one stopped (its work in flight finished first), a change that would break
 * the replay of older runs shipped behind `patched()`, then `longrun rollout` (docs/operations.md).
 *
 * Four agents live on build A: one in the middle of a long turn, one with a tool call waiting for approval, one with
 * a compaction draft waiting for review, one idle. Build B (A's behaviour, another bundle) replaces A; then build C,
 * whose every run starts a timer first, replaces B: first as a broken release (the change unguarded: the runs begun
 * before it fail their workflow tasks on C, and nothing is lost meanwhile), then fixed forward with the change behind
 * `patched()`. The rollout renews every agent, the approval's once it is answered: each ends on a run that began on
 * C, each tool call run once and in order, no message lost or doubled, and a run begun on A replayed on C.
 * (The same under Worker Deployment Versioning: release-versioned.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentState, approveDraft, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { approveTool } from '../../client/control.ts';
import { rollOut } from '../../client/rollout.ts';
import type { RolloutProgress } from '../../client/rollout.ts';
import { localTemporalTarget } from '../../config/temporal.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import { newAgentId, sharedStackEnv } from '../support/harness.ts';
import { runLongrun } from '../support/longrun-cli.ts';
import { temporalCli } from '../support/temporal-cli.ts';
import { ReleaseWorld, STEPS, until } from '../support/release/world.ts';

let world: ReleaseWorld;

beforeAll(async () => {
  const stack = inject('stack');
  world = new ReleaseWorld(localTemporalTarget(stack.temporalAddress, stack.namespace), new S3BlobStore(stack.s3));
  await world.open(['A', 'B', 'C', 'Cpatched']);
}, 120_000);

afterAll(async () => {
  await world?.close();
});

describe('a release under living agents (unversioned workers, patched())', () => {
  it('moves agents mid-turn, waiting on an approval, on a review draft and idle from A to B to C; a breaking C fails tasks, never loses work', async () => {
    const { client, taskQueue, ran } = world;
    const ids = { A: world.buildId('A'), Cpatched: world.buildId('Cpatched') };
    expect(new Set((['A', 'B', 'C', 'Cpatched'] as const).map((b) => world.buildId(b))).size).toBe(4);
    await world.start('A');

    // On A: an idle agent, one waiting on a review draft, one on an approval, one in a long turn.
    const { ids: agents, draft, waiting, deploy, turn } = await world.fourAgents(4);
    expect(draft).toBe('draft-1');
    const approvalRun = (await world.runOf(agents.approval)).runId;

    // Release B: its worker starts, A's stops once its work in flight is done (the turn's next step, let through).
    await world.start('B');
    const stopA = world.stop('A');
    world.allowed = 8;
    await stopA;
    await until('8 items', () => (world.workDone() >= 8 ? true : undefined));

    // Release C, broken: a run begun before C fails its workflow tasks there (non-determinism). The message waits.
    await world.start('C');
    const stopB = world.stop('B');
    world.allowed = 12;
    await stopB;
    const message = sendMessage(client, agents.idle, 'after the release');
    const failure = await until(
      'a workflow task failure on C',
      async () => (await world.tasksOf(agentWorkflowId(agents.idle))).failures[0],
    );
    expect(failure).toMatch(/[Nn]ondetermin/);

    // Fixed forward: C with its change behind patched(). Everything goes on.
    await world.start('Cpatched');
    await world.stop('C');
    world.allowed = 16;
    expect(await message).toMatchObject({ reply: 're: after the release' });
    await until('16 items', () => (world.workDone() >= 16 ? true : undefined));

    // The rollout: every agent on a run of before C is asked to renew. The idle one and the review's go at once;
    // the turn at its next step; the approval's once it is answered.
    const since = new Date();
    const looks: RolloutProgress[] = [];
    const rollout = rollOut(client, { taskQueue, since, onProgress: (look) => looks.push(look), askAgainMs: 3_000 });
    const both = await until('the turn and the approval to be the ones left', () => {
      const waiting = looks.at(-1)?.waiting ?? [];
      return Promise.resolve(waiting.length === 2 ? waiting : undefined);
    });
    expect(looks.at(-1)).toMatchObject({ asked: 4, renewed: 2 });
    const why = Object.fromEntries(both.map((w) => [w.agentId, w.why]));
    expect(why[agents.approval]).toMatch(
      /^a tool call waits for approval \(until .+\); it renews once that is answered$/,
    );
    expect(why[agents.turn]).toMatch(/next safe point/);
    world.allowed = Number.POSITIVE_INFINITY;
    expect(await turn).toMatchObject({ turn: 1, toolCalls: STEPS, reply: `All ${STEPS} items done.` });
    await approveTool(client, agents.approval, waiting.callId);
    expect(await deploy).toMatchObject({ reply: 'the tool said: deployed prod', toolCalls: 1 });
    const done = await rollout;
    expect(done).toMatchObject({ asked: 4, renewed: 4, waiting: [] });

    // Every agent's run began on C (patched), after the rollout, with the release's patch marker; the draft made on A
    // is applied there, and each agent answers.
    for (const agentId of Object.values(agents)) {
      const run = await world.runOf(agentId);
      expect(run.startTime.getTime()).toBeGreaterThanOrEqual(since.getTime());
      const { builds: tasks, failures } = await world.tasksOf(agentWorkflowId(agentId));
      expect(new Set(tasks)).toEqual(new Set([ids.Cpatched]));
      expect(failures).toEqual([]);
    }
    expect((await approveDraft(client, agents.review, draft)).compacted).toBe(true);
    for (const agentId of Object.values(agents))
      expect((await sendMessage(client, agentId, 'still there?')).reply).toBe('re: still there?');

    // Each tool ran once, in order; no message lost or doubled.
    expect(ran.filter((r) => r.startsWith('work '))).toEqual(Array.from({ length: STEPS }, (_, i) => `work ${i + 1}`));
    expect(ran.filter((r) => r.startsWith('deploy '))).toEqual(['deploy prod']);
    const users = async (agentId: string) =>
      (await agentState(client, agentId)).messages.filter((m) => m.role === 'user').map((m) => m.preview);
    expect(await users(agents.idle)).toEqual(['hello', 'after the release', 'still there?']);
    expect(await users(agents.approval)).toEqual(['deploy now', 'still there?']);

    // The approval's run began on A and was replayed and finished its wait on C (patched): its tasks ran on A, then C.
    const approvalTasks = await world.tasksOf(agentWorkflowId(agents.approval), approvalRun);
    expect(approvalTasks.builds[0]).toBe(ids.A);
    expect(approvalTasks.builds).toContain(ids.Cpatched);
    console.log(
      `[release] rollout of C: ${done.elapsedMs} ms, the approval's answer included; events per renew: ` +
        JSON.stringify(await world.renewEvents(agentWorkflowId(agents.idle))),
    );
    for (const agentId of Object.values(agents)) await closeAgent(client, agentId);
  }, 240_000);

  it('longrun rollout renews an idle agent on a run of before and says so; again with the same --before renews none twice; the raw Signal by the temporal CLI', async () => {
    const { client, taskQueue, target } = world;
    const agentId = newAgentId('rel-cli');
    await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
    await sendMessage(client, agentId, 'hello');
    const before = (await world.runOf(agentId)).runId;
    const env = {
      ...process.env,
      ...sharedStackEnv(),
      TEMPORAL_ADDRESS: String(target.connectionOptions.address),
      TEMPORAL_NAMESPACE: target.namespace,
    };
    const first = await runLongrun(['rollout', '--task-queue', taskQueue], { env });
    expect(first.stderr).toMatch(/renewed (0|1) of 1 agents/);
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toMatch(/^renewed 1 of 1 agents on runs of before \d{4}-\d\d-\d\dT/);
    expect((await world.runOf(agentId)).runId).not.toBe(before);
    expect((await sendMessage(client, agentId, 'after')).reply).toBe('re: after');
    const since = /before (\S+)$/.exec(first.stdout.trim())![1]!;
    // Again with the same time: the run that began after it is not renewed twice.
    const again = await runLongrun(['rollout', '--task-queue', taskQueue, '--before', since, '--json'], { env });
    expect(JSON.parse(again.stdout)).toMatchObject({ since, asked: 0, renewed: 0, waiting: [] });
    // The raw Signal, as docs/temporal-ui.md shows it.
    const temporal = await temporalCli({ temporal: target });
    const renewed = (await world.runOf(agentId)).runId;
    const renew = JSON.stringify({ since: new Date().toISOString() });
    await temporal(
      'workflow',
      'signal',
      '--workflow-id',
      agentWorkflowId(agentId),
      '--name',
      'renew',
      '--input',
      renew,
    );
    await until('a new run', async () => ((await world.runOf(agentId)).runId !== renewed ? true : undefined));
    const bad = await runLongrun(['rollout', '--before', 'yesterday'], { env });
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toContain('--before: must be an ISO 8601 time like 2026-11-29T06:00:00Z (got "yesterday")');
    await closeAgent(client, agentId);
  }, 60_000);
});
