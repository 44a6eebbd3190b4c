/**
 * Client library for longrun agents: connect, start an agent, send it messages and other Updates and Signals, read
 * its state. Reopening an ended agent is client/agent-reopen.ts's; the settings a start compares with a running
 * agent's, client/setting-differences.ts's. What else it reads (compaction events, progress, ledger, context, the list
 * of agents) is client/reads.ts's; the wait for an Update's outcome, client/updates.ts's. The CLI (commands/cli/main.ts)
 * and the demo are built on these; scripts can import them too.
 *
 * @example
 *   const client = await connectClient(loadTemporalTarget()); // both from config/temporal.ts
 *   await startAgent(client, { agentId: 'trip', model: 'gpt-4o-mini', taskQueue: 'longrun-agents' });
 *   const { reply } = await sendMessage(client, 'trip', 'Plan a hike');
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Client, QueryDefinition, WorkflowHandle } from '@temporalio/client';
import { resolveModelInfo } from '../engine/models.ts';
import { AGENT_ID_PATTERN, AGENT_ID_RULE } from '../contract/keys.ts';
import type { AgentState } from '../contract/state.ts';
import {
  AGENT_WORKFLOW,
  approveUpdate,
  agentWorkflowId,
  closeSignal,
  closeUpdate,
  compactSignal,
  compactUpdate,
  configureUpdate,
  discardUpdate,
  messageSignal,
  revertUpdate,
  sendUpdate,
  stateQuery,
} from '../contract/agent.ts';
import { compactionPolicyOf, InvalidInputError, quoted } from '../contract/inputs.ts';
import {
  validateAgentInput,
  validateCompactInput,
  validateConfigureInput,
  validateDraftInput,
  validateRevertInput,
  validateSendInput,
} from '../contract/input-checks.ts';
import { invalidInput } from '../contract/failures.ts';
import { observeAgent, workerPolling } from './agent-observation.ts';
import { SEARCH_ATTRIBUTES } from '../contract/search-attributes.ts';
import { readAgent } from './agent-reads.ts';
import { executeAgentUpdate } from './updates.ts';
import { AgentUpdateError } from './update-errors.ts';
import type { UpdateWaitOptions } from './updates.ts';
import type { AgentInput, CompactInput, ConfigureInput, RevertInput } from '../contract/inputs.ts';
import { validateDelegationInput } from '../contract/delegation.ts';
import type { CompactResult, ConfigureResult, DiscardResult, RevertResult, SendResult } from '../contract/results.ts';
import { resolvePolicy } from '../engine/presets.ts';
import { AgentSettingsDifferError, settingDifferences } from './setting-differences.ts';
import type { SettingDifference } from './setting-differences.ts';

/**
 * Thrown for an agent id that cannot name a workflow and a storage prefix (a long id is quoted cut, with its
 * length).
 */
export class InvalidAgentIdError extends Error {
  constructor(agentId: unknown) {
    super(
      typeof agentId === 'string'
        ? `agent id ${quoted(agentId)}: ${AGENT_ID_RULE}`
        : `agent id ${quoted(agentId)}: must be a string of 1 to 64 letters, digits, dots, underscores or hyphens`,
    );
    this.name = 'InvalidAgentIdError';
  }
}

export function assertAgentId(agentId: string): void {
  if (typeof agentId !== 'string' || !AGENT_ID_PATTERN.test(agentId)) throw new InvalidAgentIdError(agentId);
}

export interface StartAgentOptions extends AgentInput {
  taskQueue: string;
}

/**
 * Thrown by {@link startAgent} when the agent id names an agent that has ended (closed, terminated, failed…). Starting
 * it again silently would begin a new, empty agent under the same id: pick a new id, or `reopenAgent`
 * (client/agent-reopen.ts) to continue the old one with its messages.
 */
export class AgentClosedError extends Error {
  readonly agentId: string;
  /** How the agent's last run ended: completed, terminated, failed, timed_out, canceled. */
  readonly closedAs: string;
  constructor(agentId: string, closedAs: string) {
    super(
      `agent ${agentId} is closed (${closedAs}): pick a new agent id, or reopen it to continue with its messages ` +
        `(longrun start ${agentId} --reopen; reopenAgent() in the client library)`,
    );
    this.name = 'AgentClosedError';
    this.agentId = agentId;
    this.closedAs = closedAs;
  }
}

/**
 * Starts the agent's workflow; if it is already running with the model, window and system prompt given, returns its
 * handle (starting is idempotent); running with others, nothing is applied and {@link AgentSettingsDifferError} says
 * which (change them with {@link configureAgent}; while no worker polls its task queue, only the model is compared).
 * An agent id
 * whose agent has ended is refused ({@link AgentClosedError}): the workflow id cannot be reused by this call.
 * Throws InvalidAgentIdError for an id that cannot name a workflow and a storage prefix; InvalidInputError for input
 * the workflow would refuse (a model that is not a non-empty string, a system prompt that is not a string or is over
 * `MAX_MESSAGE_CHARS`, a bad `turnBudget` or `maxSteps`, a policy or override that is not an object); UnknownModelError
 * for a model the registry does not know unless `modelOverride.window` is given; PolicyError for a bad policy.
 */
export async function startAgent(client: Client, options: StartAgentOptions): Promise<WorkflowHandle> {
  assertAgentId(options.agentId);
  const { taskQueue, ...input } = options;
  // Input the workflow would refuse (InvalidInputError names the field and the limit): a model or system prompt of
  // a wrong type or size, a bad turn budget.
  validateAgentInput(input);
  validateDelegationInput(input);
  // An unknown model (or a bad override) is an error here, before anything starts.
  resolveModelInfo(options.model, options.modelOverride);
  // So is a bad compaction policy (PolicyError names the field, the value and the allowed range).
  resolvePolicy(compactionPolicyOf(options));
  try {
    return await client.workflow.start(AGENT_WORKFLOW, {
      workflowId: agentWorkflowId(options.agentId),
      taskQueue,
      args: [input],
      staticSummary: `longrun agent ${options.agentId} (${options.model})`,
      workflowIdConflictPolicy: 'FAIL', // running: the same agent, if its settings are the ones given (below)
      workflowIdReusePolicy: 'REJECT_DUPLICATE', // ended: never a new life under the old id by accident
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    const description = await agentHandle(client, options.agentId).describe();
    if (description.status.name !== 'RUNNING') {
      throw new AgentClosedError(options.agentId, description.status.name.toLowerCase());
    }
    const differences = await runningDifferences(client, input);
    if (differences.length > 0) throw new AgentSettingsDifferError(options.agentId, differences);
    return agentHandle(client, options.agentId);
  }
}

/**
 * The settings of `asked` the running agent has otherwise. Its state says (a query, which a worker answers); while no
 * worker polls its task queue, only its model is known (the `AgentModel` search attribute): that one is compared, so
 * that `start` does not wait for a worker.
 */
async function runningDifferences(client: Client, asked: AgentInput): Promise<SettingDifference[]> {
  const handle = agentHandle(client, asked.agentId);
  const seen = await observeAgent(client, handle);
  if (workerPolling(seen)) return settingDifferences(asked, await agentState(client, asked.agentId));
  const description = await handle.describe();
  const model = description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.model);
  return model === undefined ? [] : settingDifferences({ model: asked.model }, { model });
}

/**
 * Queries the agent's current run, without a dead end (client/agent-reads.ts): an agent no worker answers for is an
 * AgentNotAnsweringError at once (no worker polls its task queue) or after a few seconds (the one seen
 * stopped), carrying what Temporal knows of it; right after continue-as-new the query is retried for a few seconds
 * until the new run's first workflow task is scheduled. `fromResult`: the answer from a completed agent's result.
 */
export async function queryAgent<R, A extends unknown[]>(
  client: Client,
  agentId: string,
  query: QueryDefinition<R, A>,
  ...args: A
): Promise<R> {
  return readAgent(client, agentHandle(client, agentId), agentId, query, args);
}

/** {@link queryAgent}, answered from the final state when the agent has completed (no worker needed). */
export function queryAgentOrResult<R, A extends unknown[]>(
  client: Client,
  agentId: string,
  fromResult: (final: AgentState) => R,
  query: QueryDefinition<R, A>,
  ...args: A
): Promise<R> {
  return readAgent(client, agentHandle(client, agentId), agentId, query, args, fromResult);
}

export function agentHandle(client: Client, agentId: string): WorkflowHandle {
  assertAgentId(agentId);
  return client.workflow.getHandle(agentWorkflowId(agentId));
}

/**
 * Checks an Update's input as the workflow's validator would, before anything is sent: what it refuses is the
 * AgentUpdateError the validator would give (`type: 'InvalidInput'`, the same message), without the round trip, and
 * also for input too large to reach the validator (Temporal refuses a payload over 2 MB on its own terms).
 */
export function checkBeforeSending(agentId: string, update: string, wait: UpdateWaitOptions, check: () => void): void {
  try {
    check();
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    throw new AgentUpdateError(agentId, update, wait.updateId ?? '', invalidInput(error.message));
  }
}

/**
 * An Update to an agent whose workflow has ended is reported by the server as "not found": described, it is an
 * {@link AgentClosedError} (how it ended, and how to reopen it); an agent that never existed stays
 * WorkflowNotFoundError.
 */
export async function closedAsError<T>(client: Client, agentId: string, update: Promise<T>): Promise<T> {
  try {
    return await update;
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    const status = await agentHandle(client, agentId)
      .describe()
      .then(
        (description) => description.status.name,
        () => undefined,
      );
    if (status !== undefined && status !== 'RUNNING') throw new AgentClosedError(agentId, status.toLowerCase());
    throw error;
  }
}

/**
 * Sends a user message and waits for the reply (an Update). `expectedTurn`: the turn it must open, or it is
 * rejected (another message came first). The wait is client/updates.ts's: nothing is sent until a worker polls the
 * agent's task queue, `onProgress` hears what it waits for, a lost connection is ridden out with the same Update id,
 * and a failed turn is an AgentUpdateError (`message`, `type: 'TurnFailed'`). Input the workflow would refuse is
 * refused here, before anything is sent, as the workflow would refuse it (AgentUpdateError, `type: 'InvalidInput'`,
 * the message naming the field and the limit); an agent that has ended is an {@link AgentClosedError}.
 */
export async function sendMessage(
  client: Client,
  agentId: string,
  text: string,
  options: { expectedTurn?: number } & UpdateWaitOptions = {},
): Promise<SendResult> {
  const { expectedTurn, ...wait } = options;
  const input = { text, ...(expectedTurn !== undefined ? { expectedTurn } : {}) };
  checkBeforeSending(agentId, sendUpdate.name, wait, () => validateSendInput(input));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, sendUpdate, [input], wait));
}

/**
 * The agent's state: a closed agent's from its result (no worker needed), a running one's by the `state` query. An
 * agent no worker answers for is an AgentNotAnsweringError (what Temporal knows of it, and why), within
 * seconds.
 */
export function agentState(client: Client, agentId: string): Promise<AgentState> {
  return queryAgentOrResult(client, agentId, (final) => final, stateQuery);
}

/**
 * Forces a compaction and waits for what it did (an Update, waited for as {@link sendMessage} does; its input is
 * checked here first, and an agent that has ended is an {@link AgentClosedError}). With `review: true` nothing is
 * applied: the result's `draft` (its id, plan steps, summary text, tokens, facts) waits for {@link approveDraft} or
 * {@link discardDraft}.
 */
export async function compactAgent(
  client: Client,
  agentId: string,
  request: CompactInput = {},
  wait: UpdateWaitOptions = {},
): Promise<CompactResult> {
  checkBeforeSending(agentId, compactUpdate.name, wait, () => validateCompactInput(request));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, compactUpdate, [request], wait));
}

/**
 * Restores the agent's working context as it was before event `toEvent` (a compaction or an earlier revert), every
 * message stored since after it, raw, and the task ledger of then; waits for the revert's own event (an Update,
 * waited for as {@link sendMessage} does). An event the agent does not have is refused by the workflow's validator
 * (AgentUpdateError, `type: 'InvalidInput'`, naming the range).
 */
export async function revertAgent(
  client: Client,
  agentId: string,
  request: RevertInput,
  wait: UpdateWaitOptions = {},
): Promise<RevertResult> {
  checkBeforeSending(agentId, revertUpdate.name, wait, () => validateRevertInput(request));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, revertUpdate, [request], wait));
}

/**
 * Applies a draft (made by {@link compactAgent} with `review: true`), with `summary` instead of the draft's summary
 * when given: the must-keep facts of the span it lost are pinned (the event's `facts` say which). A draft that is not
 * pending, or stale (made for a context that has changed since), is refused (AgentUpdateError, `type:
 * 'InvalidInput'`, saying so).
 */
export async function approveDraft(
  client: Client,
  agentId: string,
  draft: string,
  options: { summary?: string } & UpdateWaitOptions = {},
): Promise<CompactResult> {
  const { summary, ...wait } = options;
  const input = { draft, ...(summary !== undefined ? { summary } : {}) };
  checkBeforeSending(agentId, approveUpdate.name, wait, () => validateDraftInput(input));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, approveUpdate, [input], wait));
}

/** Drops a draft (refused, as {@link approveDraft} is, when it is not pending). */
export async function discardDraft(
  client: Client,
  agentId: string,
  draft: string,
  wait: UpdateWaitOptions = {},
): Promise<DiscardResult> {
  const input = { draft };
  checkBeforeSending(agentId, discardUpdate.name, wait, () => validateDraftInput(input));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, discardUpdate, [input], wait));
}

/**
 * Changes a running agent's model, window or system prompt (the `configure` Update, after the queued input; waited
 * for as {@link sendMessage} does). A new model without `window` takes its window from the registry; it must count
 * tokens as the agent does. A smaller window that the context would not fit compacts first, under the settings before;
 * the result says what changed and whether it compacted. Input the workflow refuses (an unknown model without a
 * window, a window out of range, a model counted otherwise, a context that would not fit even compacted) is an
 * AgentUpdateError (`type: 'InvalidInput'`) naming the setting; an agent that has ended is an {@link AgentClosedError}.
 */
export async function configureAgent(
  client: Client,
  agentId: string,
  request: ConfigureInput,
  wait: UpdateWaitOptions = {},
): Promise<ConfigureResult> {
  checkBeforeSending(agentId, configureUpdate.name, wait, () => validateConfigureInput(request));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, configureUpdate, [request], wait));
}

/**
 * Asks for a compaction without waiting (a Signal): it runs after the queued input. Input the workflow would drop is
 * refused here (InvalidInputError names the field and the limit) and never sent.
 */
export async function requestCompaction(client: Client, agentId: string, request: CompactInput = {}): Promise<void> {
  validateCompactInput(request);
  await agentHandle(client, agentId).signal(compactSignal, request);
}

/**
 * Queues a user message without waiting for the reply (a Signal). Text the workflow would drop is refused here
 * (InvalidInputError names the field and the limit) and never sent.
 */
export async function queueMessage(client: Client, agentId: string, text: string): Promise<void> {
  validateSendInput({ text });
  await agentHandle(client, agentId).signal(messageSignal, { text });
}

/** Asks the agent to close (a Signal): it finishes queued input first. */
export async function closeAgent(client: Client, agentId: string): Promise<void> {
  await agentHandle(client, agentId).signal(closeSignal);
}

/** Closes the agent and waits until it is done (an Update, waited for as {@link sendMessage} does); the final state. */
export async function closeAgentAndWait(
  client: Client,
  agentId: string,
  wait: UpdateWaitOptions = {},
): Promise<AgentState> {
  const handle = agentHandle(client, agentId);
  const closed = await closedAsError(
    client,
    agentId,
    executeAgentUpdate(client, handle, agentId, closeUpdate, [], wait),
  );
  // A worker of before answered the whole state; since, the final state is only the workflow's result.
  if ('messages' in closed) return closed;
  return (await handle.result()) as AgentState;
}
