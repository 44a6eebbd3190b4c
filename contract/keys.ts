/**
 * The per-agent layout of the store. Keys derive from the agent's life and the message id (or event sequence), so a
 * retried activity overwrites the same object instead of writing a second one, and nothing else ever writes it.
 *
 *   agents/<agentId>/<life>/messages/<messageId>.json                 one chat message, as sent to the model
 *   agents/<agentId>/<life>/originals/<messageId>.json                a tool result cut as it arrived: the whole one
 *   agents/<agentId>/<life>/marks/<messageId>.json                    what a tool result's record says beyond its body
 *   agents/<agentId>/<life>/compactions/<seq>/plan.json               the plan and the context it was made over
 *   agents/<agentId>/<life>/compactions/<seq>/summary.json            the summary message (a chat message)
 *   agents/<agentId>/<life>/compactions/<seq>/summary-edited.json     a reviewer's edit of it (approve with a summary)
 *   agents/<agentId>/<life>/compactions/<seq>/draft.json              a draft for review: plan steps, summary, facts
 *   agents/<agentId>/<life>/compactions/<seq>/ledger.json             the task ledger message (a chat message)
 *   agents/<agentId>/<life>/compactions/<seq>/replaced/<messageId>.json   what replaced a message (a chat message)
 *   agents/<agentId>/<life>/compactions/<seq>/removed.jsonl           every message that left the context, one per line
 *   agents/<agentId>/<life>/compactions/<seq>/context.json            the new working context: its storage keys, in order
 *   agents/<agentId>/<life>/compactions/<seq>/event.json              the compaction event
 *   agents/<agentId>/<life>/stream/…                                  the live stream (contract/stream.ts)
 *   agents/<agentId>/<life>/search/…                                  the search index (storage/search-index.ts)
 *
 * `<seq>` is the compaction's sequence number, zero-padded to 6 digits. `<life>` is the run id the agent's life
 * began with (its first workflow run; continue-as-new and `--reopen` keep it): an agent id used again for a new life
 * (by any path: the client library, the temporal CLI, a workflow id reuse or conflict policy) gets new keys, so one
 * life never overwrites another's objects. Agents started before lives existed have no `<life>` segment.
 */

/** Agent ids: what may appear in a workflow id and an S3 key without escaping. */
export const AGENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** {@link AGENT_ID_PATTERN} in words, as errors about an agent id say it. */
export const AGENT_ID_RULE =
  'must be 1 to 64 letters, digits, dots, underscores or hyphens, starting with a letter or digit';

/** One life of an agent, as far as the store is concerned: its id and the run id its life began with. */
export interface AgentLife {
  agentId: string;
  /** Absent for agents started before lives existed (their objects are directly under agents/<agentId>/). */
  life?: string;
}

/** Every object of an agent id, all its lives. */
export function agentPrefix(agentId: string): string {
  return `agents/${agentId}/`;
}

/** The objects of one life of an agent. */
export function lifePrefix(agent: AgentLife): string {
  return agent.life === undefined ? agentPrefix(agent.agentId) : `${agentPrefix(agent.agentId)}${agent.life}/`;
}

/** The folders directly under a life's prefix (a key's third segment names a life unless it is one of these). */
const LIFE_FOLDERS = new Set(['messages', 'originals', 'marks', 'late', 'compactions', 'stream', 'search']);

/** The agent life a key of this layout is stored under (undefined: not a key of this layout). */
export function lifeOfKey(key: string): AgentLife | undefined {
  const [root, agentId, third, fourth] = key.split('/');
  if (root !== 'agents' || !agentId || !third || fourth === undefined) return undefined;
  return LIFE_FOLDERS.has(third) ? { agentId } : { agentId, life: third };
}

export function messageKey(agent: AgentLife, messageId: string): string {
  return `${lifePrefix(agent)}messages/${messageId}.json`;
}

/**
 * Where the whole result of a tool call is kept when it was cut as it arrived (over its tool's `maxResultTokens`):
 * the cut one, which the model reads, is the message under `messageKey(agent, messageId)`.
 */
export function originalResultKey(agent: AgentLife, messageId: string): string {
  return `${lifePrefix(agent)}originals/${messageId}.json`;
}

/**
 * What the record of a tool result the `runTool` activity stored says beyond what its body does (the tool, the
 * resource, the tool's limits, a cut and where its original is: contract/records.ts `ResultMarks`), so that the plan
 * step derives from the stored bodies the records the workflow holds. Results the workflow answered have none.
 */
export function resultMarksKey(agent: AgentLife, messageId: string): string {
  return `${lifePrefix(agent)}marks/${messageId}.json`;
}

/**
 * Where the late result of an interrupted tool call is kept: the call was answered as interrupted under
 * `messageKey(agent, resultId)`, and what the tool returned afterwards is stored here, apart, and not used.
 */
export function lateResultKey(agent: AgentLife, resultId: string): string {
  return `${lifePrefix(agent)}late/${resultId}.json`;
}

/** Where the text of a pin made with a text (not a message) is kept: `pin-N` of the agent's life. */
export function pinKey(agent: AgentLife, pinId: string): string {
  return `${lifePrefix(agent)}pins/${pinId}.json`;
}

/** The folder of one compaction's objects. */
export function compactionPrefix(agent: AgentLife, seq: number): string {
  return `${lifePrefix(agent)}compactions/${String(seq).padStart(6, '0')}/`;
}

export type CompactionObject =
  | 'plan.json'
  | 'summary.json'
  /** A plan's further summaries in their places (AgentScope Java's runs and rounds): summary-2.json, … */
  | `summary-${number}.json`
  | 'summary-edited.json'
  | 'draft.json'
  | 'ledger.json'
  | 'removed.jsonl'
  | 'context.json'
  | 'records.json'
  | 'summary-outcome.json'
  | 'summary-edited-outcome.json'
  | 'task-ledger.json'
  | 'event.json';

export function compactionKey(agent: AgentLife, seq: number, object: CompactionObject): string {
  return `${compactionPrefix(agent, seq)}${object}`;
}

/** Where the body that replaced message `messageId` in compaction `seq` is stored. */
export function replacedKey(agent: AgentLife, seq: number, messageId: string): string {
  return `${compactionPrefix(agent, seq)}replaced/${messageId}.json`;
}

/** A per-agent sequence number as an id: a one-letter prefix and the number, zero-padded to 6 digits. */
function seqId(prefix: string, seq: number): string {
  return `${prefix}${String(seq).padStart(6, '0')}`;
}

/** Message ids are a per-agent sequence: m000001, m000002, … (so a range of them is two numbers). */
export function messageIdOf(seq: number): string {
  return seqId('m', seq);
}

/**
 * The ids a step's tool results take: the ones right after its reply's, in call order (the workflow takes them so,
 * workflows/turn/tool-calls.ts, and the model call that answers the calls itself stores under them).
 */
export function resultIdsOf(replyId: string, calls: number): string[] {
  return Array.from({ length: calls }, (_, i) => messageIdOf(seqOf(replyId) + 1 + i));
}

/** The sequence number of a message id made by {@link messageIdOf}. */
export function seqOf(messageId: string): number {
  return Number(messageId.slice(1));
}

/** The store's view of an agent's state: its id and its life. */
export function agentLife(state: { agentId: string; life?: string }): AgentLife {
  return state.life === undefined ? { agentId: state.agentId } : { agentId: state.agentId, life: state.life };
}

/** The id of compaction `seq`'s summary message: c000001, c000002, … */
export function summaryIdOf(seq: number): string {
  return seqId('c', seq);
}

/** The id of compaction `seq`'s task ledger message: l000001, l000002, … */
export function ledgerIdOf(seq: number): string {
  return seqId('l', seq);
}
