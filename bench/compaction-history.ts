/**
 * History bytes per compaction (`agent.historyBytesPerCompaction`): an agent's context grown to about `messages`
 * messages of one short line each, then one compaction forced by Update, measured as the bytes of the Temporal
 * history events it took (its activities' inputs and results, the Update, the upserts). The compaction
 * payloads are references and deltas (issue 29, item 5), so the figure should not grow with the context: the target
 * is flat within ±10% from 20 to 2,000 messages. Beside it, the plans the agent made and how many found nothing.
 *
 * Measured as the bytes of the events from the Update's acceptance to its completion, so a continue-as-new on the
 * way does not matter. Bounded: the context grows by two messages a send (the user's, the model's "ok"), so it takes `messages / 2`
 * sends; an agent that compacts on the way fails with an error naming the size.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import protos from '@temporalio/proto';
import { agentWorkflowId } from '../contract/agent.ts';
import { MAX_CONTEXT_MESSAGES } from '../engine/policy.ts';
import { agentHandle, agentState, closeAgent, compactAgent, sendMessage, startAgent } from '../client/agents.ts';

/** A model whose window leaves 2,000 short messages far below every threshold of the default policy. */
export const COMPACTION_HISTORY_MODEL = 'gpt-4.1';

export interface CompactionHistoryFigures {
  /** The context's messages when the compaction was forced. */
  messages: number;
  /** The history events of the compaction (bytes), from the Update's acceptance to its completion. */
  historyBytes: number | null;
  /** Plans made over the agent's life, and those that found nothing to do. */
  plans: { made: number; empty: number };
}

/**
 * The bytes of the history events of the agent's last `compact` Update, from its acceptance to its completion (its
 * activities, workflow tasks and upserts), as the server stores them (each event protobuf-encoded): in whichever of
 * `runIds` holds it, so a continue-as-new before or after it does not matter. Null when none holds it.
 */
async function compactionBytes(client: Client, agentId: string, runIds: string[]): Promise<number | null> {
  const { HistoryEvent } = protos.temporal.api.history.v1;
  for (const runId of new Set(runIds)) {
    const events = (await client.workflow.getHandle(agentWorkflowId(agentId), runId).fetchHistory()).events ?? [];
    const accepted = events.findLastIndex(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'compact',
    );
    if (accepted === -1) continue;
    const updateId = events[accepted]!.workflowExecutionUpdateAcceptedEventAttributes!.protocolInstanceId;
    const completed = events.findIndex(
      (e, i) => i > accepted && e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId === updateId,
    );
    if (completed === -1) continue;
    return events
      .slice(accepted, completed + 1)
      .reduce((sum, e) => sum + HistoryEvent.encode(HistoryEvent.fromObject(e)).finish().length, 0);
  }
  return null;
}

/** Grows an agent's context to `messages` messages, forces one compaction, and measures the history it took. */
export async function historyBytesPerCompaction(
  client: Client,
  taskQueue: string,
  messages: number,
): Promise<CompactionHistoryFigures> {
  if (!Number.isInteger(messages) || messages < 4 || messages % 2 !== 0) {
    throw new Error(`history per compaction: messages must be an even whole number from 4 (got ${messages})`);
  }
  const agentId = `bench-${randomUUID().slice(0, 8)}`;
  await startAgent(client, {
    agentId,
    model: COMPACTION_HISTORY_MODEL,
    taskQueue,
    // The default's limit of 1,000 messages raised to the state's bound: the context grows to the sizes untouched.
    compaction: { reserveRatio: 0, keepTurns: 1, maxMessages: MAX_CONTEXT_MESSAGES },
  });
  try {
    for (let i = 0; i < messages / 2; i++) await sendMessage(client, agentId, `note ${i}: the queue consumer retries`);
    const grown = await agentState(client, agentId);
    if (grown.messages.length !== messages || (grown.compactions ?? 0) > 0) {
      throw new Error(
        `history per compaction at ${messages} messages: ${agentId} holds ${grown.messages.length} messages after ` +
          `${grown.compactions ?? 0} compactions (${(grown.events ?? []).map((e) => e.reason).join('; ')})`,
      );
    }
    const before = await agentHandle(client, agentId).describe();
    // Even if larger: at 20 short messages the summary's frame and the ledger outweigh what leaves.
    const result = await compactAgent(client, agentId, { strategy: 'summarize', evenIfLarger: true });
    const after = await agentHandle(client, agentId).describe();
    if (!result.compacted) throw new Error(`history per compaction at ${messages} messages: ${result.reason}`);
    const state = await agentState(client, agentId);
    return {
      messages,
      historyBytes: await compactionBytes(client, agentId, [after.runId, before.runId]),
      plans: { made: state.plans?.made ?? 0, empty: state.plans?.empty ?? 0 },
    };
  } finally {
    await closeAgent(client, agentId);
  }
}
