/**
 * History bytes per compaction (`agent.historyBytesPerCompaction`): an agent's context grown to about `messages`
 * messages of one short line each, then one compaction forced by Update, measured as the growth of the run's
 * Temporal history across it (its activities' inputs and results, the Update, the upserts). The compaction
 * payloads are references and deltas (issue 29, item 5), so the figure should not grow with the context: the target
 * is flat within ±10% from 20 to 2,000 messages. Beside it, the plans the agent made and how many found nothing.
 *
 * Bounded: the context grows by two messages a send (the user's, the model's "ok"), so it takes `messages / 2`
 * sends; an agent that compacts or continues as new on the way fails with an error naming the size.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { MAX_CONTEXT_MESSAGES } from '../engine/policy.ts';
import { agentHandle, agentState, closeAgent, compactAgent, sendMessage, startAgent } from '../client/agents.ts';

/** A model whose window leaves 2,000 short messages far below every threshold of the default policy. */
export const COMPACTION_HISTORY_MODEL = 'gpt-4.1';

export interface CompactionHistoryFigures {
  /** The context's messages when the compaction was forced. */
  messages: number;
  /** Growth of the run's history across the compaction (bytes), or null when the run continued as new across it. */
  historyBytes: number | null;
  /** Plans made over the agent's life, and those that found nothing to do. */
  plans: { made: number; empty: number };
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
      historyBytes: before.runId === after.runId ? (after.historySize ?? 0) - (before.historySize ?? 0) : null,
      plans: { made: state.plans?.made ?? 0, empty: state.plans?.empty ?? 0 },
    };
  } finally {
    await closeAgent(client, agentId);
  }
}
