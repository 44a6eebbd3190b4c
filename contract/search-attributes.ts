/**
 * Custom search attributes of agent workflows, shown and filterable in the Temporal UI
 * (e.g. `AgentStatus = "running" AND AgentContextTokens > 100000`). They hold no message content.
 * The embedded stack and docker-compose register them; the workflow upserts them.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const AgentContextTokens = defineSearchAttributeKey('AgentContextTokens', SearchAttributeType.INT);
export const AgentCompressions = defineSearchAttributeKey('AgentCompressions', SearchAttributeType.INT);
export const AgentStatus = defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD);
export const AgentModel = defineSearchAttributeKey('AgentModel', SearchAttributeType.KEYWORD);
export const AgentLastCompactedAt = defineSearchAttributeKey('AgentLastCompactedAt', SearchAttributeType.DATETIME);

/** Name → type as the temporal CLI's `--search-attribute Name=Type` and `operator search-attribute create` take it. */
export const SEARCH_ATTRIBUTE_TYPES: Readonly<Record<string, 'Int' | 'Keyword' | 'Datetime'>> = {
  AgentContextTokens: 'Int',
  AgentCompressions: 'Int',
  AgentStatus: 'Keyword',
  AgentModel: 'Keyword',
  AgentLastCompactedAt: 'Datetime',
};
