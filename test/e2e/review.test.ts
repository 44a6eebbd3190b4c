/**
 * Review and edit end to end: `compact` with `review: true` returns a draft and applies nothing; `approve` applies it,
 * with an edited summary whose lost facts are pinned; `discard` drops it; a stale draft is refused; from the client
 * library, the `longrun` CLI and the temporal CLI (by Update name).
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agentState,
  approveDraft,
  compactAgent,
  discardDraft,
  revertAgent,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import type { CompactResult } from '../../contract/results.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import type { RecordedRequest } from '../../llm/chat-server.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import { temporalCli } from '../support/temporal-cli.ts';

const isSummary = (request: RecordedRequest) => request.body.model === 'summary-model';
const PATH = '/srv/app/deploy.yaml';

let h: Harness;
let temporal: (...args: string[]) => Promise<string>;
beforeAll(async () => {
  h = await startHarness((request) => {
    if (isSummary(request)) {
      return {
        content: JSON.stringify({
          task_overview: 'Collect the deployment notes.',
          current_state: `The config is at ${PATH}; the timeout is 750 ms.`,
          important_discoveries: '',
          next_steps: 'Take the next note.',
          context_to_preserve: PATH,
        }),
      };
    }
    return { content: `noted: ${textOf(request.body.messages.at(-1)!.content)}` };
  });
  temporal = await temporalCli(h);
});
afterAll(async () => {
  await h?.close();
});

async function agentWithNotes(prefix: string): Promise<string> {
  const agentId = newAgentId(prefix);
  await startAgent(h.client, {
    agentId,
    model: 'gpt-4o-mini',
    taskQueue: h.taskQueue,
    compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
  });
  // The goal (the first message) is kept verbatim in the ledger: the fact to lose comes after it.
  await sendMessage(h.client, agentId, 'Collect the deployment notes.');
  await sendMessage(h.client, agentId, `The deploy config is at ${PATH} and the timeout is 750 ms.`);
  for (const text of ['note 3', 'note 4']) await sendMessage(h.client, agentId, text);
  return agentId;
}

describe('review and edit', () => {
  it('a draft applies nothing; approve with an edited summary pins the fact it lost', async () => {
    const agentId = await agentWithNotes('review');
    const before = await agentState(h.client, agentId);
    const reviewed = await compactAgent(h.client, agentId, { strategy: 'summarize', review: true });
    expect(reviewed.compacted).toBe(false);
    const draft = reviewed.draft!;
    expect(draft).toMatchObject({ id: 'draft-1', seq: 1, madeFor: { compactions: 0 } });
    expect(draft.steps.map((s) => s.strategy)).toEqual(['summarize']);
    expect(draft.summary).toContain(PATH);
    expect(draft.facts!.found).toBeGreaterThan(0);
    expect(draft.tokensBefore).toBe(before.contextTokens);
    // Nothing applied; the draft is in the state and in S3.
    const held = await agentState(h.client, agentId);
    expect(held.messages.map((m) => m.key)).toEqual(before.messages.map((m) => m.key));
    expect(held.compactions).toBe(0);
    expect(held.draft?.info.id).toBe('draft-1');
    const stored = JSON.parse((await h.store.get(draft.summaryKey!.replace('summary.json', 'draft.json')))!) as {
      summary: string;
    };
    expect(stored.summary).toBe(draft.summary);

    await sendMessage(h.client, agentId, 'note 5'); // the draft still applies: in front of what came since
    const edited = 'Notes about the deployment were taken; the timeout is 750 ms.';
    const approved = await approveDraft(h.client, agentId, 'draft-1', { summary: edited });
    expect(approved.compacted, approved.reason).toBe(true);
    expect(approved.event!.seq).toBe(1);
    expect(approved.event!.summaryParsedAs).toBe('edited');
    expect(approved.event!.facts!.pinned).toContain(PATH);
    const after = await agentState(h.client, agentId);
    const summary = after.messages.find((m) => m.kind === 'summary')!;
    expect(summary.key).toMatch(/compactions\/000001\/summary-edited\.json$/);
    const body = JSON.parse((await h.store.get(summary.key))!) as ChatMessage;
    expect(textOf(body.content)).toContain(edited);
    expect(textOf(body.content)).toMatch(new RegExp(`Preserved facts[^]*${PATH.replaceAll('/', '\\/')}`));
    // The summarizer's own summary stays where it was stored.
    expect(textOf((JSON.parse((await h.store.get(draft.summaryKey!))!) as ChatMessage).content)).toBe(draft.summary);
    expect(after.messages.at(-1)!.preview).toContain('note 5');
    expect(after.draft).toBeUndefined();
    expect(after.lastDraft).toBe('draft-1 approved with an edited summary');

    // The next request carries the edited summary.
    await sendMessage(h.client, agentId, 'note 6');
    const last = h.model.requests.filter((r) => !isSummary(r)).at(-1)!;
    expect(last.body.messages.some((m) => textOf(m.content).includes(edited))).toBe(true);
  });

  it('discard drops a draft; a replaced or stale draft is refused with a message that says so', async () => {
    const agentId = await agentWithNotes('discard');
    const first = await compactAgent(h.client, agentId, { strategy: 'summarize', review: true });
    expect(await discardDraft(h.client, agentId, first.draft!.id)).toEqual({ discarded: 'draft-1' });
    expect((await agentState(h.client, agentId)).compactions).toBe(0);
    await expect(approveDraft(h.client, agentId, 'draft-1')).rejects.toThrow(
      /draft: draft-1 is not pending: no draft is pending \(draft-1 discarded\)/,
    );
    await expect(approveDraft(h.client, agentId, 'd1')).rejects.toThrow(/draft: must be a draft id like "draft-1"/);

    // A compaction prepared after a draft replaces it (its objects share the draft's seq). (This small context grows
    // with a summary and a ledger: a forced compaction of it is made only when asked even so.)
    await compactAgent(h.client, agentId, { strategy: 'summarize', review: true });
    expect((await compactAgent(h.client, agentId, { strategy: 'summarize' })).noGain).toBeDefined();
    expect((await compactAgent(h.client, agentId, { strategy: 'summarize', evenIfLarger: true })).compacted).toBe(true);
    await expect(approveDraft(h.client, agentId, 'draft-2')).rejects.toThrow(
      /draft-2 is not pending: no draft is pending \(draft-2 replaced by a compaction prepared after it\)/,
    );

    // Stale: a revert changed the context the draft was made for.
    for (const text of ['note 7', 'note 8']) await sendMessage(h.client, agentId, text);
    const third = await compactAgent(h.client, agentId, { strategy: 'summarize', review: true });
    expect(third.draft).toMatchObject({ id: 'draft-3', madeFor: { compactions: 1 } });
    await revertAgent(h.client, agentId, { toEvent: 1 });
    await expect(approveDraft(h.client, agentId, 'draft-3')).rejects.toThrow(
      /draft: draft-3 is stale, made for a context that has changed: it was made after compaction 1; the agent has had 2 since/,
    );
  });

  it('from the longrun CLI and the temporal CLI', async () => {
    const agentId = await agentWithNotes('review-cli');
    const env = cliEnv(h);
    const reviewed = await runLongrun(['compact', agentId, '--review', '--strategy', 'summarize'], { env });
    expect(reviewed, reviewed.stderr).toMatchObject({ code: 0 });
    expect(reviewed.stdout).toMatch(/^draft-1 \(compaction 1, not applied\): \d+ → \d+ tokens/);
    expect(reviewed.stdout).toContain(PATH);
    // The hints name the agent, ready to paste.
    expect(reviewed.stdout).toContain(`longrun approve ${agentId} draft-1 [--summary-file F]`);
    expect(reviewed.stdout).toContain(`longrun discard ${agentId} draft-1`);
    expect(reviewed.stdout).not.toContain('replaces');
    // A second review while draft-1 is pending says draft-2 replaces it; draft-1 can then not be answered.
    const second = await runLongrun(['compact', agentId, '--review', '--strategy', 'summarize'], { env });
    expect(second, second.stderr).toMatchObject({ code: 0 });
    expect(second.stdout).toMatch(/^draft-2 \(compaction 1, not applied\)/);
    expect(second.stdout).toContain('it replaces draft-1, which was not applied (one draft at a time)');
    const replaced = await runLongrun(['approve', agentId, 'draft-1'], { env });
    expect(replaced.code).toBe(1);
    expect(replaced.stderr).toMatch(/draft-1 is not pending/);
    const dir = await mkdtemp(join(tmpdir(), 'review-'));
    const file = join(dir, 'summary.md');
    await writeFile(file, 'Edited by hand: the timeout is 750 ms.');
    const approved = await runLongrun(['approve', agentId, 'draft-2', '--summary-file', file, '--json'], { env });
    expect(approved, approved.stderr).toMatchObject({ code: 0 });
    const result = JSON.parse(approved.stdout) as CompactResult;
    expect(result.event!.facts!.pinned).toContain(PATH);
    const again = await runLongrun(['discard', agentId, 'draft-2'], { env });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/draft-2 is not pending/);

    // The temporal CLI, by Update name.
    await sendMessage(h.client, agentId, 'note 9');
    const id = agentWorkflowId(agentId);
    const update = async (name: string, input: unknown) =>
      JSON.parse(
        await temporal(
          'workflow',
          'update',
          'execute',
          '--workflow-id',
          id,
          '--name',
          name,
          '--input',
          JSON.stringify(input),
        ),
      ) as { result: CompactResult };
    const draft = (await update('compact', { strategy: 'summarize', review: true })).result.draft!;
    expect(draft.id).toBe('draft-3');
    const applied = (await update('approve', { draft: 'draft-3' })).result;
    expect(applied).toMatchObject({ compacted: true, event: { seq: 2 } });
  });
});
