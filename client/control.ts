/**
 * Reaching an agent while it works: steer the turn in progress with a user message, interrupt it, and answer the tool
 * calls that wait for approval. Each is an Update waited for as `sendMessage` waits for a reply (client/updates.ts: a
 * worker looked for before anything is sent, progress, the same Update id sent again after a lost connection), with
 * its input checked here first as the workflow's validator would check it; steer and interrupt also go as a Signal
 * (`wait: false`), fire and forget.
 *
 * @example
 *   const { turn, step } = await steerAgent(client, 'trip', 'Use metric units from now on');
 *   const { interrupted, step: at } = await interruptAgent(client, 'trip', { text: 'Stop: plan Tuesday first' });
 *   for (const call of await awaitingApproval(client, 'trip')) await approveTool(client, 'trip', call.callId);
 */
import type { Client, QueryDefinition, UpdateDefinition } from '@temporalio/client';
import {
  approveToolUpdate,
  denyToolUpdate,
  interruptSignal,
  interruptUpdate,
  progressQuery,
  steerSignal,
  steerUpdate,
} from '../contract/agent.ts';
import { validateInterruptInput, validateSteerInput, validateToolDecisionInput } from '../contract/input-checks.ts';
import type { InterruptInput, SteerInput, ToolDecisionInput } from '../contract/inputs.ts';
import type { AgentProgress, ApprovalProgress } from '../contract/progress.ts';
import type { InterruptResult, SteerResult, ToolDecisionResult } from '../contract/results.ts';
import { agentHandle, checkBeforeSending, closedAsError, queryAgentOrResult } from './agents.ts';
import { executeAgentUpdate } from './updates.ts';
import type { UpdateWaitOptions } from './updates.ts';

/** How a steer or an interrupt is sent: `wait: false` sends a Signal and returns at once (default: an Update). */
export interface ControlOptions extends UpdateWaitOptions {
  /** Wait for where it landed (an Update, the default), or only send it (`false`: a Signal, fire and forget). */
  wait?: boolean;
}

/**
 * Adds a user message to the turn in progress at its next step boundary: the model sees it after the step's tool
 * results, before its next call. On an idle agent it opens a turn, as {@link sendMessage} does (without waiting for
 * that turn's reply). Resolves to where it landed (`{turn, step, messageId, opened}`) once it has; with `wait: false`
 * it is a Signal and resolves once sent. Text the workflow would refuse (empty, over 200,000 characters) is refused
 * here before anything is sent: AgentUpdateError `type: 'InvalidInput'` naming `text` (InvalidInputError with `wait:
 * false`); an agent that has ended is an AgentClosedError.
 */
export async function steerAgent(
  client: Client,
  agentId: string,
  text: string,
  options: ControlOptions & { wait: false },
): Promise<undefined>;
export async function steerAgent(
  client: Client,
  agentId: string,
  text: string,
  options?: ControlOptions,
): Promise<SteerResult>;
export async function steerAgent(
  client: Client,
  agentId: string,
  text: string,
  options: ControlOptions = {},
): Promise<SteerResult | undefined> {
  const { wait = true, ...waiting } = options;
  const input: SteerInput = { text };
  if (!wait) {
    validateSteerInput(input);
    await agentHandle(client, agentId).signal(steerSignal, input);
    return undefined;
  }
  checkBeforeSending(agentId, steerUpdate.name, waiting, () => validateSteerInput(input));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, steerUpdate, [input], waiting));
}

/**
 * Stops the turn in progress: the model call or tool in flight is cancelled, every unanswered tool call is answered
 * as interrupted, and the turn ends with a reply that says so (the `send` that opened it resolves with that reply and
 * `interrupted: {step}`). With `text`, the next turn opens with it. Resolves once the turn has ended:
 * `{interrupted, turn?, step?, reason, opens?}` (`interrupted: false` on an idle agent, `reason` saying so); with
 * `wait: false` it is a Signal and resolves once sent. Bad text is refused here, as {@link steerAgent} refuses it.
 */
export async function interruptAgent(
  client: Client,
  agentId: string,
  options: ControlOptions & { text?: string; wait: false },
): Promise<undefined>;
export async function interruptAgent(
  client: Client,
  agentId: string,
  options?: ControlOptions & { text?: string },
): Promise<InterruptResult>;
export async function interruptAgent(
  client: Client,
  agentId: string,
  options: ControlOptions & { text?: string } = {},
): Promise<InterruptResult | undefined> {
  const { wait = true, text, ...waiting } = options;
  const input: InterruptInput = text !== undefined ? { text } : {};
  if (!wait) {
    validateInterruptInput(input);
    await agentHandle(client, agentId).signal(interruptSignal, input);
    return undefined;
  }
  checkBeforeSending(agentId, interruptUpdate.name, waiting, () => validateInterruptInput(input));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, interruptUpdate, [input], waiting));
}

/**
 * Lets a tool call waiting for approval run ({@link awaitingApproval} lists them). A call that does not wait (never
 * asked for, answered already, timed out) is refused by the workflow's validator: AgentUpdateError `type:
 * 'InvalidInput'`. A call id that cannot be one (empty, over 256 characters) is refused here before anything is sent.
 */
export async function approveTool(
  client: Client,
  agentId: string,
  callId: string,
  wait: UpdateWaitOptions = {},
): Promise<ToolDecisionResult> {
  return decideTool(client, agentId, approveToolUpdate, { callId }, wait);
}

/**
 * Refuses a tool call waiting for approval: the model sees a result that says it was denied, with `reason` (at most
 * 4,000 characters), and the turn goes on. Refused as {@link approveTool} is.
 */
export async function denyTool(
  client: Client,
  agentId: string,
  callId: string,
  reason?: string,
  wait: UpdateWaitOptions = {},
): Promise<ToolDecisionResult> {
  return decideTool(client, agentId, denyToolUpdate, { callId, ...(reason !== undefined ? { reason } : {}) }, wait);
}

async function decideTool(
  client: Client,
  agentId: string,
  update: UpdateDefinition<ToolDecisionResult, [ToolDecisionInput]>,
  input: ToolDecisionInput,
  wait: UpdateWaitOptions,
): Promise<ToolDecisionResult> {
  checkBeforeSending(agentId, update.name, wait, () => validateToolDecisionInput(input));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, update, [input], wait));
}

/**
 * The tool calls of the turn in progress waiting for approval, oldest first: id, tool, arguments (JSON text, cut to
 * 2,000 characters), since and until when (workflow time, ISO) and what then (`onTimeout`). Read from the `progress`
 * query, without a dead end (an agent no worker answers for is an AgentNotAnsweringError within seconds); a closed
 * agent has none.
 */
export async function awaitingApproval(client: Client, agentId: string): Promise<ApprovalProgress[]> {
  const query = progressQuery as QueryDefinition<AgentProgress | undefined, []>;
  const progress = await queryAgentOrResult(client, agentId, () => undefined, query);
  return progress?.awaitingApproval ?? [];
}
