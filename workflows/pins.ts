/**
 * Pins in the agent's workflow (contract/pins.ts): the `pin` and `unpin` Updates' checks and work, and the model's
 * `context_pin` tool, which makes a pin the same way. Deterministic: a text's tokens are counted by the `storePin`
 * activity, which stores it under the pin's own key.
 */
import { STORE_OPTIONS, storePin } from './activities.ts';
import { agentClosed, invalidInput } from '../contract/failures.ts';
import { pinBudgetOf, pinnedTokensOf, pinRefusal, validatePinInput, validateUnpinInput } from '../contract/pins.ts';
import type { Pin, PinInput, PinResult, UnpinInput, UnpinResult } from '../contract/pins.ts';
import { recordKey } from '../contract/records.ts';
import type { WorkflowState } from '../contract/state.ts';
import type { Conversation } from './conversation.ts';
import { DraftRefused } from './inbox.ts';

/** A pin the loop refuses although its validator let it in: over the budget once its text was counted. */
export class PinRefused extends DraftRefused {
  constructor(message: string) {
    super(message);
    this.name = 'PinRefused';
  }
}

/** Why a pin of `input` cannot be made on `state` (before its text is counted), if it cannot. */
function refusalOf(input: PinInput, state: WorkflowState): string | undefined {
  if (input.messageId === undefined) return undefined;
  const record = state.messages.find((m) => m.id === input.messageId);
  if (!record) {
    return (
      `messageId: ${input.messageId} is not in the working context (longrun context lists it; pin a text of it ` +
      'with --text)'
    );
  }
  const key = recordKey(state, record);
  const already = state.pins?.find((pin) => pin.key === key);
  if (already) return `messageId: ${input.messageId} is pinned already (${already.id})`;
  return pinRefusal(state.pins, record.tokens, pinBudgetOf(state.policy, state.modelInfo?.window ?? 0));
}

/** The `pin` Update's validator: a message of the context within the budget, or a text; an agent not closed. */
export function checkPin(input: PinInput, state: WorkflowState, closing: boolean): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  try {
    validatePinInput(input);
  } catch (error) {
    throw invalidInput((error as Error).message);
  }
  const refused = refusalOf(input, state);
  if (refused) throw invalidInput(refused);
}

/** The `unpin` Update's validator: a pin the agent holds. */
export function checkUnpin(input: UnpinInput, state: WorkflowState, closing: boolean): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  try {
    validateUnpinInput(input);
  } catch (error) {
    throw invalidInput((error as Error).message);
  }
  if (!state.pins?.some((pin) => pin.id === input.pin)) {
    const held = state.pins?.length ? `the pins: ${state.pins.map((pin) => pin.id).join(', ')}` : 'no pins';
    throw invalidInput(`pin: ${input.pin} is not a pin of this agent (${held})`);
  }
}

/** The pins and budget after a change, as `pin` and `unpin` answer them. */
function totals(state: WorkflowState) {
  return {
    pinnedTokens: pinnedTokensOf(state.pins),
    budget: pinBudgetOf(state.policy, state.modelInfo?.window ?? 0),
    pins: state.pins?.length ?? 0,
  };
}

/**
 * Makes a pin (by a person's `pin` Update or the model's `context_pin`): checked again here (the context may have
 * changed since the validator ran), a text stored and counted first. Throws {@link PinRefused} when it cannot.
 */
export async function pinItem(conversation: Conversation, input: PinInput, by: Pin['by']): Promise<PinResult> {
  const { state } = conversation;
  const refused = refusalOf(input, state);
  if (refused) throw new PinRefused(refused);
  const id = conversation.newPinId();
  let pin: Pin;
  if (input.messageId !== undefined) {
    const record = state.messages.find((m) => m.id === input.messageId)!;
    pin = {
      id,
      kind: 'message',
      messageId: record.id,
      key: recordKey(state, record),
      tokens: record.tokens,
      preview: record.preview,
      by,
    };
  } else {
    const stored = await storePin.executeWithOptions({ ...STORE_OPTIONS, summary: `store ${id} (text)` }, [
      { ...conversation.life, pinId: id, text: input.text!, counting: conversation.counting },
    ]);
    pin = { id, kind: 'text', key: stored.key, tokens: stored.tokens, preview: stored.preview, by };
    const over = pinRefusal(state.pins, pin.tokens, pinBudgetOf(state.policy, conversation.window));
    if (over) throw new PinRefused(over);
  }
  conversation.pinned(pin);
  return { pin, ...totals(state) };
}

/** Removes a pin (`unpin`). */
export function unpinItem(conversation: Conversation, input: UnpinInput): UnpinResult {
  const unpinned = conversation.unpinned(input.pin);
  if (!unpinned) throw new PinRefused(`pin: ${input.pin} is not a pin of this agent`);
  return { unpinned, ...totals(conversation.state) };
}
