/**
 * Client library for longrun agents: connect, start an agent, send it a message, read its state.
 * The CLI (client/cli.ts) and the demo are built on these; scripts can import them too.
 *
 * @example
 *   const client = await connectClient(loadTemporalTarget());
 *   await startAgent(client, { agentId: 'trip', model: 'gpt-4o-mini', taskQueue: 'longrun-agents' });
 *   const { reply } = await sendMessage(client, 'trip', 'Plan a hike');
 */
import { Client, Connection, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { QueryDefinition, WorkflowHandle } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TemporalTarget } from '../config/temporal.ts';
import { resolveModelInfo } from '../engine/models.ts';
import { AGENT_ID_PATTERN, compactionKey } from '../storage/keys.ts';
import {
  AGENT_WORKFLOW,
  AGENT_WORKFLOW_ID_PREFIX,
  agentWorkflowId,
  closeSignal,
  closeUpdate,
  compactSignal,
  compactUpdate,
  compressionEventsQuery,
  contextQuery,
  ledgerQuery,
  messageSignal,
  sendUpdate,
  stateQuery,
  statsQuery,
} from '../workflows/contract.ts';
import { AgentModel, AgentStatus } from '../workflows/search-attributes.ts';
import type {
  AgentInput,
  AgentState,
  CompactInput,
  CompactResult,
  CompressionEvent,
  CompressionEventSummary,
  CompressionStats,
  MessageRecord,
  SendResult,
} from '../workflows/contract.ts';
import { resolvePolicy } from '../engine/presets.ts';
import type { TaskLedger } from '../engine/ledger.ts';

/** Thrown for an agent id that cannot name a workflow and a storage prefix. */
export class InvalidAgentIdError extends Error {
  constructor(agentId: string) {
    super(
      `agent id ${JSON.stringify(agentId)}: must be 1 to 64 letters, digits, dots, underscores or hyphens, ` +
        'starting with a letter or digit',
    );
    this.name = 'InvalidAgentIdError';
  }
}

export function assertAgentId(agentId: string): void {
  if (!AGENT_ID_PATTERN.test(agentId)) throw new InvalidAgentIdError(agentId);
}

const CONNECT_TIMEOUT_MS = 5_000;

export async function connectClient(target: TemporalTarget): Promise<Client> {
  const connection = await Connection.connect({ connectTimeout: CONNECT_TIMEOUT_MS, ...target.connectionOptions });
  return new Client({ connection, namespace: target.namespace });
}

export interface StartAgentOptions extends AgentInput {
  taskQueue: string;
}

/**
 * Starts the agent's workflow; if it is already running, returns its handle (starting is idempotent).
 * Throws UnknownModelError for a model the registry does not know unless `modelOverride.window` is given.
 */
export async function startAgent(client: Client, options: StartAgentOptions): Promise<WorkflowHandle> {
  assertAgentId(options.agentId);
  // An unknown model (or a bad override) is an error here, before anything starts.
  resolveModelInfo(options.model, options.modelOverride);
  // So is a bad compression policy (PolicyError names the field, the value and the allowed range).
  resolvePolicy(options.compression);
  const { taskQueue, ...input } = options;
  try {
    return await client.workflow.start(AGENT_WORKFLOW, {
      workflowId: agentWorkflowId(options.agentId),
      taskQueue,
      args: [input],
      staticSummary: `longrun agent ${options.agentId} (${options.model})`,
    });
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return agentHandle(client, options.agentId);
    throw error;
  }
}

/** How long a query waits for a run that has just continued-as-new to take its first workflow task. */
const QUERY_RETRY_MS = 10_000;

/**
 * Queries the agent's current run. Right after continue-as-new the new run cannot answer until its first workflow
 * task is scheduled (FAILED_PRECONDITION "Workflow task is not scheduled yet"): that is retried for a few seconds.
 */
export async function queryAgent<R, A extends unknown[]>(
  client: Client,
  agentId: string,
  query: QueryDefinition<R, A>,
  ...args: A
): Promise<R> {
  const deadline = Date.now() + QUERY_RETRY_MS;
  for (;;) {
    try {
      return await agentHandle(client, agentId).query(query, ...args);
    } catch (error) {
      const notYet = /not scheduled yet/.test(String((error as Error).cause ?? error));
      if (!notYet || Date.now() > deadline) throw error;
      await sleep(50);
    }
  }
}

export function agentHandle(client: Client, agentId: string): WorkflowHandle {
  assertAgentId(agentId);
  return client.workflow.getHandle(agentWorkflowId(agentId));
}

/**
 * Sends a user message and waits for the reply (an Update). `expectedTurn`: the turn it must open, or it is
 * rejected (another message came first).
 */
export function sendMessage(
  client: Client,
  agentId: string,
  text: string,
  options: { expectedTurn?: number } = {},
): Promise<SendResult> {
  return agentHandle(client, agentId).executeUpdate(sendUpdate, { args: [{ text, ...options }] });
}

export function agentState(client: Client, agentId: string): Promise<AgentState> {
  return queryAgent(client, agentId, stateQuery);
}

/** Forces a compaction and waits for what it did (an Update). */
export function compactAgent(client: Client, agentId: string, request: CompactInput = {}): Promise<CompactResult> {
  return agentHandle(client, agentId).executeUpdate(compactUpdate, { args: [request] });
}

/** Asks for a compaction without waiting (a Signal): it runs after the queued input. */
export async function requestCompaction(client: Client, agentId: string, request: CompactInput = {}): Promise<void> {
  await agentHandle(client, agentId).signal(compactSignal, request);
}

/**
 * The compression events the workflow keeps (the last ten), after `since`, without their removed
 * items; {@link compressionHistory} reads every full event from S3.
 */
export function compressionEvents(
  client: Client,
  agentId: string,
  query: { since?: number; limit?: number } = {},
): Promise<CompressionEventSummary[]> {
  return queryAgent(client, agentId, compressionEventsQuery, query);
}

/** What reads stored objects: an S3BlobStore, or anything with its `get`. */
export interface StoredReader {
  get(key: string): Promise<string | undefined>;
}

/** How many stored events are read at once. */
const EVENT_READS_AT_ONCE = 32;

/**
 * Full compression events (removed items included) by sequence number, read from S3
 * (agents/<id>/compactions/<seq>/event.json). A missing one is an error naming its key.
 */
export async function storedCompressionEvents(
  store: StoredReader,
  agentId: string,
  seqs: number[],
): Promise<CompressionEvent[]> {
  const events: CompressionEvent[] = [];
  for (let i = 0; i < seqs.length; i += EVENT_READS_AT_ONCE) {
    const batch = seqs.slice(i, i + EVENT_READS_AT_ONCE).map(async (seq) => {
      const key = compactionKey(agentId, seq, 'event.json');
      const body = await store.get(key);
      if (body === undefined) throw new Error(`compression event ${seq} is missing from storage (${key})`);
      const event = JSON.parse(body) as CompressionEvent;
      return { ...event, removedCount: event.removed.length };
    });
    events.push(...(await Promise.all(batch)));
  }
  return events;
}

/**
 * Every compression event after `since` (oldest first, at most `limit`), in full (removed items included), and the
 * totals. The events are read from S3, where every one is kept, so the answer is complete however long the agent
 * has run; the workflow's count says how many there are.
 */
export async function compressionHistory(
  client: Client,
  store: StoredReader,
  agentId: string,
  query: { since?: number; limit?: number } = {},
): Promise<{ events: CompressionEvent[]; stats: CompressionStats }> {
  const since = query.since ?? 0;
  const limit = query.limit ?? Infinity;
  const stats = await compressionStats(client, agentId);
  const seqs: number[] = [];
  for (let seq = since + 1; seq <= stats.count && seqs.length < limit; seq++) seqs.push(seq);
  return { events: await storedCompressionEvents(store, agentId, seqs), stats };
}

export function compressionStats(client: Client, agentId: string): Promise<CompressionStats> {
  return queryAgent(client, agentId, statsQuery);
}

/** The task ledger: goal, constraints, decisions, done, pending, next action. */
export function agentLedger(client: Client, agentId: string): Promise<TaskLedger> {
  return queryAgent(client, agentId, ledgerQuery);
}

/** The working context as previews. */
export function agentContext(client: Client, agentId: string): Promise<MessageRecord[]> {
  return queryAgent(client, agentId, contextQuery);
}

/** Queues a user message without waiting for the reply (a Signal). */
export async function queueMessage(client: Client, agentId: string, text: string): Promise<void> {
  await agentHandle(client, agentId).signal(messageSignal, { text });
}

/** Asks the agent to close (a Signal): it finishes queued input first. */
export async function closeAgent(client: Client, agentId: string): Promise<void> {
  await agentHandle(client, agentId).signal(closeSignal);
}

/** Closes the agent and waits until it is done (an Update); resolves to the final state. */
export function closeAgentAndWait(client: Client, agentId: string): Promise<AgentState> {
  return agentHandle(client, agentId).executeUpdate(closeUpdate);
}

export interface AgentSummary {
  agentId: string;
  status: string;
  model: string;
  startedAt: Date;
  workflowStatus: string;
}

/** Agents known to this namespace, newest first, from the workflow list and the agents' search attributes. */
export async function listAgents(client: Client, limit = 100): Promise<AgentSummary[]> {
  const agents: AgentSummary[] = [];
  for await (const workflow of client.workflow.list({ query: `WorkflowType = '${AGENT_WORKFLOW}'` })) {
    if (!workflow.workflowId.startsWith(AGENT_WORKFLOW_ID_PREFIX)) continue;
    const attributes = workflow.typedSearchAttributes;
    agents.push({
      agentId: workflow.workflowId.slice(AGENT_WORKFLOW_ID_PREFIX.length),
      status: attributes.get(AgentStatus) ?? '',
      model: attributes.get(AgentModel) ?? '',
      startedAt: workflow.startTime,
      workflowStatus: workflow.status.name,
    });
    if (agents.length >= limit) break;
  }
  return agents;
}
