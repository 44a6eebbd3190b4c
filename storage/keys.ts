/**
 * The per-agent layout of the store. Keys derive from the agent and the message id (or event sequence), so a
 * retried activity overwrites the same object instead of writing a second one.
 *
 *   agents/<agentId>/messages/<messageId>.json                 one chat message, as sent to the model
 *   agents/<agentId>/compactions/<seq>/plan.json               the plan and the context it was made over
 *   agents/<agentId>/compactions/<seq>/summary.json            the summary message (a chat message)
 *   agents/<agentId>/compactions/<seq>/ledger.json             the task ledger message (a chat message)
 *   agents/<agentId>/compactions/<seq>/replaced/<messageId>.json   what replaced a message (a chat message)
 *   agents/<agentId>/compactions/<seq>/removed.jsonl           every message that left the context, one per line
 *   agents/<agentId>/compactions/<seq>/context.json            the new working context: its storage keys, in order
 *   agents/<agentId>/compactions/<seq>/event.json              the compression event
 *
 * `<seq>` is the compression's sequence number, zero-padded to 6 digits.
 */

/** Agent ids: what may appear in a workflow id and an S3 key without escaping. */
export const AGENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function agentPrefix(agentId: string): string {
  return `agents/${agentId}/`;
}

export function messageKey(agentId: string, messageId: string): string {
  return `${agentPrefix(agentId)}messages/${messageId}.json`;
}

/** The folder of one compression's objects. */
export function compactionPrefix(agentId: string, seq: number): string {
  return `${agentPrefix(agentId)}compactions/${String(seq).padStart(6, '0')}/`;
}

export type CompactionObject =
  'plan.json' | 'summary.json' | 'ledger.json' | 'removed.jsonl' | 'context.json' | 'event.json';

export function compactionKey(agentId: string, seq: number, object: CompactionObject): string {
  return `${compactionPrefix(agentId, seq)}${object}`;
}

/** Where the body that replaced message `messageId` in compression `seq` is stored. */
export function replacedKey(agentId: string, seq: number, messageId: string): string {
  return `${compactionPrefix(agentId, seq)}replaced/${messageId}.json`;
}
