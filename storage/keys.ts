/**
 * The per-agent layout of the store. Keys derive from the agent and the message id (or event sequence), so a
 * retried activity overwrites the same object instead of writing a second one.
 *
 *   agents/<agentId>/messages/<messageId>.json   one chat message, as sent to the model
 */

/** Agent ids: what may appear in a workflow id and an S3 key without escaping. */
export const AGENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function agentPrefix(agentId: string): string {
  return `agents/${agentId}/`;
}

export function messageKey(agentId: string, messageId: string): string {
  return `${agentPrefix(agentId)}messages/${messageId}.json`;
}
