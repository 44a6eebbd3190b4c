/**
 * What the compaction activities store and read back: the records a plan and a revert store (plan.json), the keys an
 * event writes, the span a summary covers, and the stored-object helpers over the store (read, store and count, write
 * JSON). Every key derives from the agent and the compaction's sequence number, so a retry overwrites, never
 * duplicates.
 */
import { extractFacts } from '../../engine/facts.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import type { Plan, SummarySpec } from '../../engine/planner/index.ts';
import type { CompactionPolicy } from '../../engine/policy.ts';
import type { TaskLedger } from '../../engine/ledger.ts';
import type { CooldownState } from '../../engine/trigger.ts';
import type { BlobStore } from '../../storage/s3.ts';
import { compactionKey } from '../../contract/keys.ts';
import type { AgentLife } from '../../contract/keys.ts';
import type { MessageRecord } from '../../contract/records.ts';
import { storedObjects } from '../stored.ts';

/**
 * What a revert to before an event restores, stored with the event (a compaction's plan, a revert's own record): the
 * context it was made for, the task ledger then, and the first sequence number after that context.
 */
export interface StoredBefore {
  context: MessageRecord[];
  /** Absent in plans stored before reverts existed: a revert to before such an event keeps the ledger it finds. */
  ledger?: TaskLedger;
  /** Absent in plans stored before reverts existed: read as the last message's sequence number + 1. */
  tailFromSeq?: number;
  /** Set in a revert's own record: the event it reverted to. */
  revertedTo?: number;
}

/** What the plan step stores (plan.json) for the apply step and for a draft's review. */
export interface StoredPlan extends StoredBefore {
  plan: Plan;
  policy: CompactionPolicy;
  trigger: Plan['trigger'];
  /** The cooldown the plan was made under (absent in plans stored before masking passes). */
  cooldown?: CooldownState;
}

/** Whether a stored key is a summary message's (the summarizer's, or a reviewer's edit of it). */
function isSummaryKey(key: string): boolean {
  return /\/summary(?:-edited|-\d+)?\.json$/.test(key);
}

/** The storage keys of a summary's span and of its user messages kept verbatim, from the context's records. */
export function spanKeysOf(
  spec: Pick<SummarySpec, 'spanIds' | 'keptUserIds'>,
  keyOf: ReadonlyMap<string, string>,
): { spanKeys: string[]; keptKeys: string[] } {
  return {
    spanKeys: spec.spanIds.map((id) => keyOf.get(id)!),
    keptKeys: spec.keptUserIds.map((id) => keyOf.get(id)!),
  };
}

/** The objects an event writes besides its plan: the event, the removed segment (JSONL) and the context manifest. */
export function eventKeys(agent: AgentLife, seq: number): { event: string; removed: string; context: string } {
  return {
    event: compactionKey(agent, seq, 'event.json'),
    removed: compactionKey(agent, seq, 'removed.jsonl'),
    context: compactionKey(agent, seq, 'context.json'),
  };
}

/** The tokens of a context: the fixed part (system prompt, tool schemas) and its records. */
export function tokensOf(fixedTokens: number, records: readonly { tokens: number }[]): number {
  return fixedTokens + records.reduce((sum, m) => sum + m.tokens, 0);
}

/** The agent's stored objects as the compaction activities read and write them. */
export function compactionObjects(store: BlobStore) {
  const objects = storedObjects(store);
  const { load } = objects;

  /**
   * A summary's span: the previous summaries in it, the rest, and the must-keep facts of what leaves the context
   * with it (the previous summaries and the messages not kept verbatim), which the summary must keep.
   */
  async function spanOf(spanKeys: readonly string[], keptKeys: readonly string[] = []) {
    const span = await Promise.all(spanKeys.map((key) => load<ChatMessage>(key)));
    const isPrevious = (i: number) => isSummaryKey(spanKeys[i]!);
    const previous = span.filter((_, i) => isPrevious(i));
    const rest = span.filter((_, i) => !isPrevious(i));
    const kept = new Set(keptKeys);
    const leaving = span.filter((_, i) => !isPrevious(i) && !kept.has(spanKeys[i]!));
    return { previous, rest, facts: extractFacts([...previous, ...leaving]) };
  }

  return {
    ...objects,

    /** Writes `value` as JSON under `key` (idempotent: a retry overwrites it). */
    putJson: (key: string, value: unknown): Promise<void> => store.put(key, JSON.stringify(value), 'application/json'),

    spanOf,
  };
}

export type CompactionObjects = ReturnType<typeof compactionObjects>;
