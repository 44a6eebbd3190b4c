/**
 * Revert end to end: the context before an event comes back byte-identical (the scripted model's recorded
 * requests compared), every message stored since follows it raw, the ledger of then comes back, the revert is an
 * event of its own, and a revert of a revert gives back the context it replaced; from the client library, the
 * `longrun` CLI and the temporal CLI (by Update name).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, compactAgent, revertAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { agentLedger, compactionEvents, compactionHistory, compactionStats } from '../../client/reads.ts';
import { AgentUpdateError } from '../../client/update-errors.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import type { RevertResult } from '../../contract/results.ts';
import { textOf } from '../../engine/messages.ts';
import type { RecordedRequest } from '../../llm/chat-server.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';
import { temporalCli } from '../support/temporal-cli.ts';

const isSummary = (request: RecordedRequest) => request.body.model === 'summary-model';

let h: Harness;
let temporal: (...args: string[]) => Promise<string>;
beforeAll(async () => {
  h = await startHarness((request) => {
    if (isSummary(request)) {
      return {
        content: JSON.stringify({
          task_overview: 'Collect the notes.',
          current_state: 'Several notes taken.',
          important_discoveries: '',
          next_steps: 'Take the next note.',
          context_to_preserve: '',
          decisions: ['Keep notes short'],
          done: ['Notes so far'],
          pending: ['More notes'],
        }),
      };
    }
    const last = request.body.messages.at(-1)!;
    return { content: `noted: ${textOf(last.content)}` };
  });
  temporal = await temporalCli(h);
});
afterAll(async () => {
  await h?.close();
});

/** The agent's requests (not the summarizer's), and the one whose last message is the user's `text`. */
function agentRequests(): RecordedRequest[] {
  return h.model.requests.filter((r) => !isSummary(r));
}
function requestFor(agentId: string, text: string): RecordedRequest {
  const found = agentRequests().filter((r) => textOf(r.body.messages.at(-1)!.content) === `${agentId}: ${text}`);
  expect(found, `one request ends with "${text}"`).toHaveLength(1);
  return found[0]!;
}
const bytes = (messages: unknown[]) => messages.map((m) => JSON.stringify(m));

async function noted(agentId: string, text: string): Promise<void> {
  const { reply } = await sendMessage(h.client, agentId, `${agentId}: ${text}`);
  expect(reply).toBe(`noted: ${agentId}: ${text}`);
}

describe('revert', () => {
  it('restores the context before a compaction byte-identical, the ledger with it; a revert of it undoes it', async () => {
    const agentId = newAgentId('revert');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      systemPrompt: 'You take notes.',
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
    });
    for (const text of ['note 1', 'note 2', 'note 3', 'note 4']) await noted(agentId, text);
    const ledgerBefore = await agentLedger(h.client, agentId);
    const contextBefore = (await agentState(h.client, agentId)).messages;

    const compacted = await compactAgent(h.client, agentId, { strategy: 'summarize', evenIfLarger: true }); // a small context
    expect(compacted.compacted, compacted.reason).toBe(true);
    expect(compacted.event!.seq).toBe(1);
    const ledgerAfter = await agentLedger(h.client, agentId);
    expect(ledgerAfter.done).toContain('Notes so far'); // the summary wrote the ledger
    await noted(agentId, 'note 5'); // after the compaction: summarized context, then note 5
    const compactedRequest = requestFor(agentId, 'note 5').body.messages;
    expect(compactedRequest.length).toBeLessThan(contextBefore.length + 1);

    // Revert to before event 1, by the client library.
    const reverted: RevertResult = await revertAgent(h.client, agentId, { toEvent: 1 });
    expect(reverted.event).toMatchObject({ seq: 2, trigger: 'revert', strategies: ['revert'], removedCount: 0 });
    expect(reverted.reason).toBe('revert to before event 1');
    expect(reverted.event.notes.join('\n')).toMatch(/task ledger restored as it was before event 1/);
    expect(await agentLedger(h.client, agentId)).toEqual(ledgerBefore);
    const state = await agentState(h.client, agentId);
    // The context before event 1, then note 5 and its reply (stored since), raw.
    expect(state.messages.slice(0, contextBefore.length)).toEqual(contextBefore);
    expect(state.messages.slice(contextBefore.length).map((m) => m.role)).toEqual(['user', 'assistant']);
    // The stats: the compaction's saving is undone, and counted so (`longrun events`: "0 tokens saved now").
    const undone = await compactionStats(h.client, agentId);
    expect(undone).toMatchObject({ count: 1, reverts: 1 });
    expect(undone.tokensRestored).toBe(compacted.event!.tokensBefore - compacted.event!.tokensAfter);
    expect(undone.tokensSaved - undone.tokensRestored!).toBe(0);

    await noted(agentId, 'note 6');
    const afterRevert = requestFor(agentId, 'note 6').body.messages;
    // Byte-identical: the last request before event 1 (note 4), its reply as the request after it carried it,
    // note 5 as the model got it, then note 5's reply and note 6.
    const lastBefore = requestFor(agentId, 'note 4').body.messages;
    const reply4 = compactedRequest.find((m) => m.role === 'assistant' && textOf(m.content).endsWith('note 4'));
    expect(reply4, 'the compaction kept the last turn').toBeDefined();
    expect(bytes(afterRevert)).toEqual(
      bytes([
        ...lastBefore,
        reply4,
        compactedRequest.at(-1),
        { role: 'assistant', content: `noted: ${agentId}: note 5` },
        afterRevert.at(-1),
      ]),
    );
    expect(afterRevert.length).toBe(contextBefore.length + 3);

    // A revert of the revert: the context before event 2 (summarized, note 5, its reply), then what came since.
    const twice = await revertAgent(h.client, agentId, { toEvent: 2 });
    expect(twice.event).toMatchObject({ seq: 3, trigger: 'revert' });
    expect(await agentLedger(h.client, agentId)).toEqual(ledgerAfter);
    await noted(agentId, 'note 7');
    const afterTwice = requestFor(agentId, 'note 7').body.messages;
    expect(bytes(afterTwice.slice(0, compactedRequest.length))).toEqual(bytes(compactedRequest));
    expect(afterTwice.slice(compactedRequest.length).map((m) => [m.role, textOf(m.content)])).toEqual([
      ['assistant', `noted: ${agentId}: note 5`],
      ['user', `${agentId}: note 6`],
      ['assistant', `noted: ${agentId}: note 6`],
      ['user', `${agentId}: note 7`],
    ]);

    // Events, in the workflow and in storage, and the stats.
    const events = await compactionEvents(h.client, agentId);
    expect(events.map((e) => [e.seq, e.trigger])).toEqual([
      [1, 'forced'],
      [2, 'revert'],
      [3, 'revert'],
    ]);
    const stats = await compactionStats(h.client, agentId);
    expect(stats).toMatchObject({ count: 1, reverts: 2 });
    // The revert of the revert put the compaction's saving back in effect: saved now as when it was made.
    expect(stats.tokensSaved - stats.tokensRestored!).toBe(stats.tokensSaved);
    const history = await compactionHistory(h.client, h.store, agentId);
    expect(history.events.map((e) => e.trigger)).toEqual(['forced', 'revert', 'revert']);
  });

  it('from the longrun CLI and the temporal CLI; an event the agent does not have is refused', async () => {
    const agentId = newAgentId('revert-cli');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      compaction: { reserveRatio: 0, keepTurns: 1, keepMessages: 0, summary: { keepUserTokens: 0 } },
    });
    for (const text of ['a', 'b', 'c']) await noted(agentId, text);
    const before = (await agentState(h.client, agentId)).messages.map((m) => m.key);
    await expect(revertAgent(h.client, agentId, { toEvent: 1 })).rejects.toThrow(
      /toEvent: 1 is not an event of this agent \(it has none yet: nothing to revert\)/,
    );
    await expect(revertAgent(h.client, agentId, { toEvent: 0 })).rejects.toBeInstanceOf(AgentUpdateError);
    expect((await compactAgent(h.client, agentId, { strategy: 'truncate-rounds', evenIfLarger: true })).compacted).toBe(
      true,
    );
    const compactedKeys = (await agentState(h.client, agentId)).messages.map((m) => m.key);
    expect(compactedKeys).not.toEqual(before);

    const env = cliEnv(h);
    const missing = await runLongrun(['revert', agentId], { env });
    expect(missing).toMatchObject({ code: 2 });
    expect(missing.stderr).toMatch(/missing --to-event/);
    const refused = await runLongrun(['revert', agentId, '--to-event', '5'], { env });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/toEvent: 5 is not an event of this agent \(its events are 1 to 1\)/);
    const run = await runLongrun(['revert', agentId, '--to-event', '1'], { env });
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toMatch(/^event 2: revert to before event 1: \d+ → \d+ tokens/);
    expect((await agentState(h.client, agentId)).messages.map((m) => m.key)).toEqual(before);

    const events = await runLongrun(['events', agentId], { env });
    expect(events.stdout).toMatch(/2 +\S+ \S+ +revert/);
    expect(events.stdout).toMatch(/1 revert\(s\)/);

    // The temporal CLI, by Update name: back to before the CLI's revert (the compacted context).
    const out = JSON.parse(
      await temporal(
        'workflow',
        'update',
        'execute',
        '--workflow-id',
        agentWorkflowId(agentId),
        '--name',
        'revert',
        '--input',
        '{"toEvent":2}',
      ),
    ) as { result: RevertResult };
    expect(out.result).toMatchObject({ reverted: true, event: { seq: 3, trigger: 'revert' } });
    expect((await agentState(h.client, agentId)).messages.map((m) => m.key)).toEqual(compactedKeys);
  });
});
