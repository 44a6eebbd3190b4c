/**
 * The rename to one noun (compaction) keeps what agents and scripts of the release before use working: an agent input
 * with `compression` is read, the `compressionEvents` query is answered, and a new compaction shows its count as
 * `AgentCompactions` (histories recorded before replay with `AgentCompressions`: test/fixtures/histories/
 * 0.1.0-dev.49c6ab7/, replayed by test/unit/history-replay.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHandle, agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import {
  AGENT_WORKFLOW,
  agentWorkflowId,
  compactionEventsQuery,
  compressionEventsQuery,
} from '../../contract/agent.ts';
import { InvalidInputError } from '../../contract/inputs.ts';
import type { AgentInput } from '../../contract/inputs.ts';
import { SEARCH_ATTRIBUTES } from '../../contract/search-attributes.ts';
import { textOf } from '../../engine/messages.ts';
import { agentWithCompactions, newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness((request) => ({ content: `reply to ${textOf(request.body.messages.at(-1)!.content)}` }));
});
afterAll(async () => {
  await h?.close();
});

describe('former names', () => {
  it('an agent started with `compression` (as a client of the release before sends it) gets that policy', async () => {
    const agentId = newAgentId('former-input');
    const input: AgentInput = { agentId, model: 'gpt-4o-mini', compression: { preset: 'agentscope' } };
    await h.client.workflow.start(AGENT_WORKFLOW, {
      workflowId: agentWorkflowId(agentId),
      taskQueue: h.taskQueue,
      args: [input],
    });
    await sendMessage(h.client, agentId, 'hello');
    expect((await agentState(h.client, agentId)).policy?.preset).toBe('agentscope');
    await closeAgent(h.client, agentId);
  });

  it('a policy given under both names is refused, naming the field', async () => {
    const agentId = newAgentId('former-both');
    const both = { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue };
    const start = startAgent(h.client, {
      ...both,
      compaction: { preset: 'default' },
      compression: { preset: 'astrbot' },
    });
    await expect(start).rejects.toThrow(InvalidInputError);
    await expect(start).rejects.toThrow(/^compaction: given twice/);
  });

  it('compressionEvents answers as compactionEvents does; the count is shown as AgentCompactions', async () => {
    const { agentId } = await agentWithCompactions(h, 'former-query', 1);
    const handle = agentHandle(h.client, agentId);
    const events = await handle.query(compactionEventsQuery);
    expect(events).toHaveLength(1);
    expect(await handle.query(compressionEventsQuery)).toEqual(events);
    // A query's bad input is answered with an error naming the field (it was answered as if absent).
    await expect(handle.query(compactionEventsQuery, { since: -1 })).rejects.toThrow(/since: must be an integer ≥ 0/);
    const state = await agentState(h.client, agentId);
    expect(state.compactions).toBe(1);
    expect(state).not.toHaveProperty('compressions');
    const attributes = (await handle.describe()).typedSearchAttributes;
    expect(attributes.get(SEARCH_ATTRIBUTES.compactions)).toBe(1);
    expect(attributes.get(SEARCH_ATTRIBUTES.compactionsFormerName)).toBeUndefined();
    await closeAgent(h.client, agentId);
  });
});
