/**
 * Living across releases under Worker Deployment Versioning (LONGRUN_DEPLOYMENT), on a Temporal server that moves a
 * pinned run at continue-as-new (Server 1.32.1, test/support/versioning-server.ts). Each agent run is pinned to the
 * build it began on and replays only there; a release makes its version current and rolls out (the renew Signal
 * wakes an idle agent; one in a turn sees the new version at its next step). So C's change, which breaks the replay
 * of any run begun before it, ships with no patch at all: no run of A or B ever replays on C.
 *
 * The same four agents as release.test.ts: idle, waiting on a review draft, on a tool approval, mid-turn. A → B → C;
 * each ends on a run pinned to C, with no workflow task failed in any of its runs, each tool call run once, no
 * message lost or doubled. B's workers stop once no run is pinned to B; A's once the approval is answered.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentState, approveDraft, closeAgent, sendMessage } from '../../client/agents.ts';
import { approveTool } from '../../client/control.ts';
import { rollOut } from '../../client/rollout.ts';
import { localTemporalTarget } from '../../config/temporal.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { createOpenAI } from '../../llm/openai.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import { createAgentWorker } from '../../worker/worker.ts';
import { ReleaseWorld, STEPS, tasksIn, until } from '../support/release/world.ts';
import type { Build } from '../support/release/world.ts';
import { startVersioningServer } from '../support/versioning-server.ts';
import type { VersioningServer } from '../support/versioning-server.ts';

const DEPLOYMENT = `longrun-release-${Date.now()}`;
let server: VersioningServer;
let world: ReleaseWorld;

beforeAll(async () => {
  server = await startVersioningServer();
  const store = new S3BlobStore(inject('stack').s3);
  world = new ReleaseWorld(localTemporalTarget(server.address, server.namespace), store, DEPLOYMENT);
  await world.open(['A', 'B', 'C']);
}, 180_000);

afterAll(async () => {
  await world?.close();
  await server?.stop();
});

/** Makes `build`'s version the deployment's current one (once its worker has polled, the version exists). */
async function makeCurrent(build: Build): Promise<void> {
  const request = { namespace: server.namespace, deploymentName: DEPLOYMENT, buildId: world.buildId(build) };
  await until(`version ${build} to become current`, () =>
    world.client.workflowService.setWorkerDeploymentCurrentVersion(request).then(
      () => true,
      () => undefined,
    ),
  );
}

/** The build the agent's current run is pinned to. */
async function pinnedTo(agentId: string): Promise<string | undefined> {
  const info = (await world.runOf(agentId)).raw.workflowExecutionInfo?.versioningInfo;
  return info?.deploymentVersion?.buildId ?? undefined;
}

/** Running agent runs pinned to `build`'s version. */
async function runsOn(build: Build): Promise<number> {
  const version = `${DEPLOYMENT}:${world.buildId(build)}`;
  const query = `TemporalWorkerDeploymentVersion = '${version}' AND ExecutionStatus = 'Running'`;
  return (await world.client.workflow.count(query)).count;
}

/** The workflow task failures of every run of the agent (its chain of continue-as-new). */
async function failuresOf(agentId: string): Promise<string[]> {
  const failures: string[] = [];
  for await (const events of world.histories(agentWorkflowId(agentId))) failures.push(...tasksIn(events).failures);
  return failures;
}

describe('a release under living agents (Worker Deployment Versioning)', () => {
  it('moves agents mid-turn, waiting on an approval, on a review draft and idle from A to B to C with no patch; old workers stop once drained', async () => {
    const { client, taskQueue, ran } = world;
    const ids = { A: world.buildId('A'), B: world.buildId('B'), C: world.buildId('C') };
    await world.start('A');
    await makeCurrent('A');
    const { ids: agents, draft, waiting, deploy, turn } = await world.fourAgents(4);
    for (const agentId of Object.values(agents)) expect(await pinnedTo(agentId)).toBe(ids.A);
    await until('the four runs on A in visibility', async () => ((await runsOn('A')) === 4 ? true : undefined));

    // Release B: current, then the rollout. The idle agent and the review's move at once, the turn at its next step;
    // the approval's run stays on A until the call is answered.
    await world.start('B');
    await makeCurrent('B');
    await rollOut(client, { taskQueue, timeoutMs: 0 });
    world.allowed = 8;
    for (const agentId of [agents.idle, agents.review, agents.turn]) {
      await until(`${agentId} on B`, async () => ((await pinnedTo(agentId)) === ids.B ? true : undefined));
    }
    expect(await pinnedTo(agents.approval)).toBe(ids.A);

    // Release C, whose change would break the replay of A's and B's runs: current, rollout; B drains and stops.
    await world.start('C');
    await makeCurrent('C');
    const rolled = Date.now();
    await rollOut(client, { taskQueue, timeoutMs: 0 });
    world.allowed = 12;
    const moved: Record<string, number> = {};
    for (const agentId of [agents.idle, agents.review, agents.turn]) {
      await until(`${agentId} on C`, async () => ((await pinnedTo(agentId)) === ids.C ? true : undefined));
      moved[agentId] = Date.now() - rolled;
    }
    await until('no run on B', async () => ((await runsOn('B')) === 0 ? true : undefined));
    await world.stop('B');

    // The turn goes on and ends on C; the approval, answered, runs its call on A and the turn goes on on C.
    world.allowed = Number.POSITIVE_INFINITY;
    expect(await turn).toMatchObject({ turn: 1, toolCalls: STEPS, reply: `All ${STEPS} items done.` });
    expect(await pinnedTo(agents.approval)).toBe(ids.A);
    await approveTool(client, agents.approval, waiting.callId);
    expect(await deploy).toMatchObject({ reply: 'the tool said: deployed prod', toolCalls: 1 });
    expect(await pinnedTo(agents.approval)).toBe(ids.C);
    await until('no run on A', async () => ((await runsOn('A')) === 0 ? true : undefined));
    await world.stop('A');

    // Everything on C; the draft made on A applies there; each agent answers.
    expect((await approveDraft(client, agents.review, draft)).compacted).toBe(true);
    for (const agentId of Object.values(agents)) {
      expect((await sendMessage(client, agentId, 'still there?')).reply).toBe('re: still there?');
      expect(await pinnedTo(agentId)).toBe(ids.C);
      expect(await failuresOf(agentId)).toEqual([]); // no run replayed on code it did not begin on
    }
    expect(ran.filter((r) => r.startsWith('work '))).toEqual(Array.from({ length: STEPS }, (_, i) => `work ${i + 1}`));
    expect(ran.filter((r) => r.startsWith('deploy '))).toEqual(['deploy prod']);
    const users = async (agentId: string) =>
      (await agentState(client, agentId)).messages.filter((m) => m.role === 'user').map((m) => m.preview);
    expect(await users(agents.idle)).toEqual(['hello', 'still there?']);
    expect(await users(agents.approval)).toEqual(['deploy now', 'still there?']);
    // What moving cost (BENCHMARKS.md, Releases): each renew's events in the run it ended, and how soon each was on C.
    console.log(
      `[release-versioned] on C after the rollout (ms): ${JSON.stringify(moved)}; events per renew: ` +
        JSON.stringify(await world.renewEvents(agentWorkflowId(agents.idle))),
    );
    for (const agentId of Object.values(agents)) await closeAgent(client, agentId);
  }, 300_000);

  it('a worker with a deployment refuses Temporal Server 1.29.1, whose pinned runs never move, saying why', async () => {
    const stack = inject('stack');
    const old = localTemporalTarget(stack.temporalAddress, stack.namespace);
    await expect(
      createAgentWorker({
        temporal: old,
        taskQueue: `${world.taskQueue}-old`,
        deployment: DEPLOYMENT,
        deps: {
          store: world.store,
          openai: createOpenAI({ apiKey: 'k', baseURL: world.model.baseURL, timeoutMs: 1_000 }),
        },
      }),
    ).rejects.toThrow(
      /^LONGRUN_DEPLOYMENT needs Temporal Server 1\.30 or later; .+ runs 1\.29\.1: there a pinned agent/,
    );
  });
});
