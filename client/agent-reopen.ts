/**
 * Reopening an agent that has ended (`longrun start --reopen`): a new workflow execution under its id that carries the
 * last run's state and life, refused when a run cut off mid-step left stored objects its state does not name.
 */
import type { Client, WorkflowHandle } from '@temporalio/client';
import { compactionPrefix, lifePrefix, messageKey, agentLife, messageIdOf } from '../contract/keys.ts';
import type { AgentCarry, AgentState, WorkflowState } from '../contract/state.ts';
import { AGENT_WORKFLOW, stateQuery } from '../contract/agent.ts';
import type { AgentInput } from '../contract/inputs.ts';
import { endAtLastCompleteStep } from '../contract/state.ts';
import { unkeyedRecord } from '../contract/records.ts';
import { decodePayloadAt } from './payloads.ts';
import { readAgent } from './agent-reads.ts';
import { agentHandle } from './agents.ts';

/** What {@link reopenAgent} needs of the store: the keys under a prefix (S3BlobStore has it). */
export interface StoredLister {
  list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<string[]>;
}

/**
 * Continues an agent that has ended, as the same agent: a new workflow execution under its id that carries the last
 * run's state (messages, ids, summary, ledger, policy) and its life, so new messages take the next ids and the same
 * storage prefix and nothing stored is written again. The agent's input (model, system prompt, turn budget, policy)
 * is the last run's. A running agent is returned as it is.
 *
 * An agent that closed itself (`close`) answers with its final state. One that was terminated, failed or timed out
 * is asked for its state (a worker replays it). It may have stopped mid-turn, after an activity stored objects the
 * state does not name: if any are found after its last message or compaction, it is not reopened (that would write
 * over them), and the error lists them.
 */
export async function reopenAgent(client: Client, store: StoredLister, agentId: string): Promise<WorkflowHandle> {
  const handle = agentHandle(client, agentId);
  const description = await handle.describe(); // WorkflowNotFoundError: nothing to reopen
  if (description.status.name === 'RUNNING') return handle;
  const closedAs = description.status.name.toLowerCase();
  const history = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId: description.workflowId, runId: description.runId },
    maximumPageSize: 1,
  });
  const started = history.history?.events?.[0]?.workflowExecutionStartedEventAttributes;
  if (!started) throw new Error(`agent ${agentId}: the start of its last run is not in its history`);
  const input = await decodePayloadAt<AgentInput>(client.options.loadedDataConverter, 0, started.input?.payloads);
  let final: AgentState;
  if (description.status.name === 'COMPLETED') {
    final = (await handle.result()) as AgentState;
  } else {
    // Its last state needs a worker to replay it: without one, said at once (AgentNotAnsweringError), not after a
    // query's timeout.
    final = await readAgent(
      client,
      client.workflow.getHandle(description.workflowId, description.runId),
      agentId,
      stateQuery,
      [],
    );
  }
  const { storagePrefix: _, shownStatus: __, messages, ...rest } = final;
  const state: WorkflowState = { ...rest, messages: messages.map((record) => unkeyedRecord(final, record)) };
  // A run cut off mid-step may hold an unanswered tool call: the context ends at its last complete step.
  const nextMessageSeq = endAtLastCompleteStep(state);
  state.nextMessageSeq = nextMessageSeq; // not the ids the cut-off run took: they name nothing stored
  if (description.status.name !== 'COMPLETED') await refuseOverUnnamedObjects(store, state, nextMessageSeq, closedAs);
  const carry: AgentCarry = { state, nextMessageSeq, applied: [], reopened: { closedAs } };
  await client.workflow.start(AGENT_WORKFLOW, {
    workflowId: description.workflowId,
    taskQueue: description.taskQueue,
    args: [input, carry],
    staticSummary: `longrun agent ${agentId} (${input.model}), reopened`,
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    workflowIdConflictPolicy: 'FAIL', // someone reopened or started it meanwhile: do not end theirs
  });
  return handle;
}

/**
 * Objects of the agent's life from message `next` on and after its last compaction: stored by a run cut off
 * mid-step. Refuses the reopen if there are any.
 */
async function refuseOverUnnamedObjects(
  store: StoredLister,
  state: WorkflowState,
  next: number,
  closedAs: string,
): Promise<void> {
  const life = agentLife(state);
  const found = [
    ...(await store.list(`${lifePrefix(life)}messages/`, {
      startAfter: messageKey(life, messageIdOf(next - 1)),
      limit: 5,
    })),
    ...(await store.list(compactionPrefix(life, (state.compactions ?? 0) + 1), { limit: 5 })),
  ];
  if (found.length > 0) {
    throw new Error(
      `agent ${state.agentId} was ${closedAs} mid-step: objects its state does not name are stored after its last ` +
        `message (${found.join(', ')}); reopening would write over them, so it is not reopened. Start a new agent id.`,
    );
  }
}
