/**
 * Pins from the client (contract/pins.ts): pin a message of an agent's working context or a text, so every
 * compaction keeps it verbatim; unpin it; list the pins. Each is an Update waited for as `steerAgent` waits (a
 * worker looked for first, the same Update id sent again after a lost connection), its input checked here first as
 * the workflow's validator checks it. Over the pin budget (policy `pinRatio` of the window, 10% by default) a pin is
 * refused: AgentUpdateError `type: 'InvalidInput'`, its message naming the budget and the sizes.
 *
 * @example
 *   const { pin } = await pinText(client, 'trip', 'The budget is 2,400 EUR, flights included');
 *   await pinMessage(client, 'trip', 'm000012'); // a message of the working context (longrun context lists them)
 *   console.log(await agentPins(client, 'trip')); // [{ id: 'pin-1', kind: 'text', tokens: 11, … }, …]
 *   await unpin(client, 'trip', pin.id);
 */
import type { Client } from '@temporalio/client';
import { pinUpdate, unpinUpdate } from '../contract/agent.ts';
import { validatePinInput, validateUnpinInput } from '../contract/pins.ts';
import type { Pin, PinInput, PinResult, UnpinInput, UnpinResult } from '../contract/pins.ts';
import { agentHandle, agentState, checkBeforeSending, closedAsError } from './agents.ts';
import { executeAgentUpdate } from './updates.ts';
import type { UpdateWaitOptions } from './updates.ts';

async function pinWith(client: Client, agentId: string, input: PinInput, options: UpdateWaitOptions) {
  checkBeforeSending(agentId, pinUpdate.name, options, () => validatePinInput(input));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, pinUpdate, [input], options));
}

/** Pins a message of the agent's working context by its id: it stays in place, verbatim, through every compaction. */
export function pinMessage(
  client: Client,
  agentId: string,
  messageId: string,
  options: UpdateWaitOptions = {},
): Promise<PinResult> {
  return pinWith(client, agentId, { messageId }, options);
}

/** Pins a text: it reaches the model in the pinned block after the system prompt, in every request from now on. */
export function pinText(
  client: Client,
  agentId: string,
  text: string,
  options: UpdateWaitOptions = {},
): Promise<PinResult> {
  return pinWith(client, agentId, { text }, options);
}

/** Removes a pin by its id (`pin-N`). */
export function unpin(
  client: Client,
  agentId: string,
  pin: string,
  options: UpdateWaitOptions = {},
): Promise<UnpinResult> {
  const input: UnpinInput = { pin };
  checkBeforeSending(agentId, unpinUpdate.name, options, () => validateUnpinInput(input));
  const handle = agentHandle(client, agentId);
  return closedAsError(client, agentId, executeAgentUpdate(client, handle, agentId, unpinUpdate, [input], options));
}

/** The agent's pins, in the order they were made (from its state). */
export async function agentPins(client: Client, agentId: string): Promise<Pin[]> {
  return (await agentState(client, agentId)).pins ?? [];
}
