/**
 * Custom search attributes of agent workflows, shown and filterable in the Temporal UI
 * (e.g. `AgentStatus = "running" AND AgentContextTokens > 100000`). They hold no message content.
 * The embedded stack and docker-compose register them; the workflow upserts them; a worker checks at its start that
 * its namespace has them (config/search-attributes.ts).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The keys, by what they hold (the names are what the UI and queries use). */
export const SEARCH_ATTRIBUTES = {
  /**
   * The working context's tokens, as the state has them: upserted after a turn and at a step when they changed, at a
   * compaction and at close (`longrun list`'s CONTEXT).
   */
  contextTokens: defineSearchAttributeKey('AgentContextTokens', SearchAttributeType.INT),
  compactions: defineSearchAttributeKey('AgentCompactions', SearchAttributeType.INT),
  status: defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD),
  model: defineSearchAttributeKey('AgentModel', SearchAttributeType.KEYWORD),
  lastCompactedAt: defineSearchAttributeKey('AgentLastCompactedAt', SearchAttributeType.DATETIME),
  /**
   * What the agent has cost so far in USD (model calls and summary calls at the model's price: engine/pricing.ts),
   * e.g. `AgentCost > 5`; upserted after a turn in steps of 2% of itself. Absent while the model's price is not known.
   */
  cost: defineSearchAttributeKey('AgentCost', SearchAttributeType.DOUBLE),
  /**
   * @deprecated `compactions` under its former name: what agents wrote before the rename (and what a history recorded
   * then replays). Still registered, so those agents stay filterable; nothing new writes it.
   */
  compactionsFormerName: defineSearchAttributeKey('AgentCompressions', SearchAttributeType.INT),
} as const;

/**
 * The memo field holding the agent's turns so far (upserted after each turn, and at its first step when absent; `longrun
 * list` shows it).
 */
export const TURNS_MEMO = 'turns';

const CLI_TYPE_NAMES = {
  [SearchAttributeType.INT]: 'Int',
  [SearchAttributeType.KEYWORD]: 'Keyword',
  [SearchAttributeType.DATETIME]: 'Datetime',
  [SearchAttributeType.DOUBLE]: 'Double',
} as const;

/** A search attribute's type as the temporal CLI names it. */
export type SearchAttributeTypeName = (typeof CLI_TYPE_NAMES)[keyof typeof CLI_TYPE_NAMES];

/** Name → type as the temporal CLI's `--search-attribute Name=Type` and `operator search-attribute create` take it. */
export const SEARCH_ATTRIBUTE_TYPES: Readonly<Record<string, SearchAttributeTypeName>> = Object.fromEntries(
  Object.values(SEARCH_ATTRIBUTES).map((key) => [key.name, CLI_TYPE_NAMES[key.type]]),
);
