/**
 * What the client library reads of an agent besides its state (`agentState`, client/agents.ts): its compaction events
 * (the workflow's last ten, and every one in full from S3) and their totals, what it is doing now, its task ledger and
 * working context, and the agents of a namespace. A completed agent is read from its result; one no worker answers
 * for is an AgentNotAnsweringError within seconds (client/agent-reads.ts).
 *
 * @example
 *   for (const event of await compactionEvents(client, 'trip')) console.log(event.seq, event.tokensAfter);
 */
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import protos from '@temporalio/proto';
import type { SummarizeProgress } from '../contract/compaction-activities.ts';
import {
  AGENT_WORKFLOW,
  AGENT_WORKFLOW_ID_PREFIX,
  compactionEventsQuery,
  contextQuery,
  ledgerQuery,
  progressQuery,
  statsQuery,
} from '../contract/agent.ts';
import { statsOf } from '../contract/state.ts';
import { validateEventsQuery } from '../contract/input-checks.ts';
import type { AgentProgress } from '../contract/progress.ts';
import type { CompactionEvent, CompactionEventSummary, CompactionStats } from '../contract/results.ts';
import type { MessageRecord } from '../contract/records.ts';
import { compactionKey } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import { SEARCH_ATTRIBUTES, TURNS_MEMO } from '../contract/search-attributes.ts';
import { EMPTY_LEDGER } from '../engine/ledger.ts';
import type { TaskLedger } from '../engine/ledger.ts';
import type { AgentState } from '../contract/state.ts';
import { agentHandle, agentState, queryAgent, queryAgentOrResult } from './agents.ts';
import { decodePayloadAt } from './payloads.ts';
import { timestampMs } from './agent-observation.ts';

/**
 * The compaction events the workflow keeps (the last ten), after `since`, without their removed
 * items; {@link compactionHistory} reads every full event from S3. `since` and `limit` are integers ≥ 0
 * (InvalidInputError otherwise).
 */
export async function compactionEvents(
  client: Client,
  agentId: string,
  query: { since?: number; limit?: number } = {},
): Promise<CompactionEventSummary[]> {
  validateEventsQuery(query);
  const since = query.since ?? 0;
  const fromResult = (final: AgentState) => {
    const events = (final.events ?? []).filter((event) => event.seq > since);
    return query.limit !== undefined ? events.slice(0, query.limit) : events;
  };
  return queryAgentOrResult(client, agentId, fromResult, compactionEventsQuery, query);
}

/** What reads stored objects: an S3BlobStore, or anything with its `get`. */
export interface StoredReader {
  get(key: string): Promise<string | undefined>;
}

/** How many stored events are read at once. */
const EVENT_READS_AT_ONCE = 32;

/**
 * Full compaction events (removed items included) by sequence number, read from S3
 * (agents/<id>/compactions/<seq>/event.json). A missing one is an error naming its key.
 */
export async function storedCompactionEvents(
  store: StoredReader,
  agent: AgentLife,
  seqs: number[],
): Promise<CompactionEvent[]> {
  const events: CompactionEvent[] = [];
  for (let i = 0; i < seqs.length; i += EVENT_READS_AT_ONCE) {
    const batch = seqs.slice(i, i + EVENT_READS_AT_ONCE).map(async (seq) => {
      const key = compactionKey(agent, seq, 'event.json');
      const body = await store.get(key);
      if (body === undefined) throw new Error(`compaction event ${seq} is missing from storage (${key})`);
      const event = JSON.parse(body) as CompactionEvent;
      return { ...event, removedCount: event.removed.length };
    });
    events.push(...(await Promise.all(batch)));
  }
  return events;
}

/**
 * Every compaction event after `since` (oldest first, at most `limit`), in full (removed items included), and the
 * totals. The events are read from S3, where every one is kept, so the answer is complete however long the agent
 * has run; the workflow's count says how many there are.
 */
export async function compactionHistory(
  client: Client,
  store: StoredReader,
  agentId: string,
  query: { since?: number; limit?: number } = {},
): Promise<{ events: CompactionEvent[]; stats: CompactionStats }> {
  validateEventsQuery(query);
  const since = query.since ?? 0;
  const limit = query.limit ?? Infinity;
  // The state names the agent's life (where its events are stored) and holds the totals.
  const state = await agentState(client, agentId);
  const stats = statsOf(state); // as the stats query answers
  const seqs: number[] = [];
  const last = state.compactions ?? stats.count; // the last event's seq (reverts are events too)
  for (let seq = since + 1; seq <= last && seqs.length < limit; seq++) seqs.push(seq);
  return { events: await storedCompactionEvents(store, state, seqs), stats };
}

export function compactionStats(client: Client, agentId: string): Promise<CompactionStats> {
  return queryAgentOrResult(client, agentId, statsOf, statsQuery);
}

/**
 * What the agent is doing now (the `progress` query: the turn in progress and its model call, the compaction in
 * progress and its step, the counts), with the summary model's chunk (`compaction.chunk` of `compaction.chunks`)
 * while a compaction summarizes: the workflow cannot see inside the summarizeSpan activity, so it is read from the
 * pending activity's heartbeat details (a describe, no other infrastructure). Cheap enough to poll.
 */
export async function agentProgress(client: Client, agentId: string): Promise<AgentProgress> {
  const progress = await queryAgent(client, agentId, progressQuery);
  const compaction = progress.compaction;
  if (compaction?.step !== 'summarizing') return progress;
  const chunk = await summarizingChunk(client, agentId);
  return chunk ? { ...progress, compaction: { ...compaction, chunk: chunk.chunk, chunks: chunk.chunks } } : progress;
}

/** The chunk the pending summarizeSpan activity last heartbeated, if it has (the SDK sends one at most every 8 s). */
async function summarizingChunk(client: Client, agentId: string): Promise<SummarizeProgress | undefined> {
  const { raw } = await agentHandle(client, agentId).describe();
  const activity = raw.pendingActivities?.find((pending) => pending.activityType?.name === 'summarizeSpan');
  const payloads = activity?.heartbeatDetails?.payloads;
  if (!payloads?.length) return undefined;
  const details = await decodePayloadAt<Partial<SummarizeProgress> | undefined>(
    client.options.loadedDataConverter,
    0,
    payloads,
  );
  const { chunk, chunks } = details ?? {};
  return typeof chunk === 'number' && typeof chunks === 'number' && chunk > 0 ? { chunk, chunks } : undefined;
}

/** The task ledger: goal, constraints, decisions, done, pending, next action. */
export function agentLedger(client: Client, agentId: string): Promise<TaskLedger> {
  return queryAgentOrResult(client, agentId, (final) => final.ledger ?? EMPTY_LEDGER, ledgerQuery);
}

/** The working context as previews. */
export function agentContext(client: Client, agentId: string): Promise<MessageRecord[]> {
  return queryAgentOrResult(client, agentId, (final) => final.messages, contextQuery);
}

export interface AgentSummary {
  agentId: string;
  /**
   * The agent's status as `longrun state` shows it: its `AgentStatus` (running, compacting, awaiting-review, closed;
   * decided by contract/state.ts `shownStatusOf`) while its workflow runs, else how the workflow ended (closed when
   * it completed; terminated, failed, timed_out…).
   */
  status: string;
  model: string;
  /** Turns so far (absent for an agent that has not answered one since this was recorded). */
  turns?: number;
  /**
   * Tokens of its working context (`AgentContextTokens`: as the state has them after its last turn or step; for an agent
   * of a build before the `exact-list-figures` patch, in steps of 2% of the window).
   */
  contextTokens?: number;
  taskQueue: string;
  startedAt: Date;
  workflowStatus: string;
  /** A sub-agent's parent agent (it was started by that agent's `delegate`: a child workflow). */
  parent?: string;
}

/** The status `list` shows: the agent's own while its workflow runs, else how the workflow ended. */
export function listedStatus(attribute: string | undefined, workflowStatus: string): string {
  if (workflowStatus === 'RUNNING') return attribute || 'running';
  return workflowStatus === 'COMPLETED' ? 'closed' : workflowStatus.toLowerCase();
}

/**
 * Agents known to this namespace, newest first, from the workflow list and the agents' search attributes: one row
 * per agent id, its latest execution (a reopened agent's earlier executions are not listed again).
 *
 * Listed raw, not with `client.workflow.list`, which decodes every execution's whole memo and throws for the whole
 * list at one it cannot decode: an encrypted agent's memo (LONGRUN_ENCRYPTION_KEYS) read by a client without the
 * keys. Here such an agent is listed without its turns. Search attributes are never encoded by a codec.
 */
export async function listAgents(client: Client, limit = 100): Promise<AgentSummary[]> {
  const agents: AgentSummary[] = [];
  const seen = new Set<string>();
  const converter = client.options.loadedDataConverter;
  const attribute = <T>(fields: Record<string, Payload> | null | undefined, name: string): T | undefined => {
    const payload = fields?.[name];
    return payload ? converter.payloadConverter.fromPayload<T>(payload) : undefined;
  };
  // Running executions come first, then by close time, newest first: the first of each id is its latest.
  const query = `WorkflowType = '${AGENT_WORKFLOW}'`;
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const raw of page.executions) {
      const workflowId = raw.execution?.workflowId ?? '';
      if (!workflowId.startsWith(AGENT_WORKFLOW_ID_PREFIX) || seen.has(workflowId)) continue;
      seen.add(workflowId);
      const fields = raw.searchAttributes?.indexedFields;
      const workflowStatus = statusName(raw.status);
      const memo = raw.memo?.fields?.[TURNS_MEMO];
      // Undefined when encrypted and this client has not the key.
      const turns = memo ? await decodePayloadAt<unknown>(converter, 0, [memo]).catch(() => undefined) : undefined;
      const contextTokens = attribute<number>(fields, SEARCH_ATTRIBUTES.contextTokens.name);
      const parentId = raw.parentExecution?.workflowId ?? '';
      agents.push({
        agentId: workflowId.slice(AGENT_WORKFLOW_ID_PREFIX.length),
        status: listedStatus(attribute<string>(fields, SEARCH_ATTRIBUTES.status.name), workflowStatus),
        model: attribute<string>(fields, SEARCH_ATTRIBUTES.model.name) ?? '',
        ...(typeof turns === 'number' ? { turns } : {}),
        ...(typeof contextTokens === 'number' ? { contextTokens } : {}),
        taskQueue: raw.taskQueue ?? '',
        startedAt: new Date(timestampMs(raw.startTime) ?? 0),
        workflowStatus,
        ...(parentId.startsWith(AGENT_WORKFLOW_ID_PREFIX)
          ? { parent: parentId.slice(AGENT_WORKFLOW_ID_PREFIX.length) }
          : {}),
      });
      if (agents.length >= limit) return agents;
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return agents;
}

/** A workflow's status by the name the client library gives it (RUNNING, COMPLETED, TERMINATED, CANCELLED, …). */
function statusName(status: number | null | undefined): string {
  const name =
    protos.temporal.api.enums.v1.WorkflowExecutionStatus[status ?? 0] ?? 'WORKFLOW_EXECUTION_STATUS_UNSPECIFIED';
  const short = name.replace('WORKFLOW_EXECUTION_STATUS_', '');
  return short === 'CANCELED' ? 'CANCELLED' : short;
}
