/**
 * Pins: a message of the working context, or a text, that every compaction keeps verbatim. A pinned
 * message stays in place, protected from every strategy (the planner takes it as `fixed`); a pinned text, and a
 * pinned message that left the context anyway (a revert to before it, an emergency cut), reach the model in the
 * pinned block: one system message right after the leading system prompt, which changes only when that set changes,
 * so the provider's prompt cache keeps the prefix before it. Pins count against the pin budget, a share of the
 * window (policy `pinRatio`, {@link DEFAULT_PIN_RATIO} by default).
 */
import { recordKey } from './records.ts';
import type { ContextRecord } from './records.ts';
import type { AgentLife } from './keys.ts';
import { InvalidInputError, MAX_MESSAGE_CHARS } from './inputs.ts';

/** The pin budget's share of the window when the policy sets none. */
export const DEFAULT_PIN_RATIO = 0.1;
/** Pins an agent holds at most (each is a record in the state). */
export const MAX_PINS = 100;

/** Input of `pin`: a message of the working context by its id, or a text; exactly one of them. */
export interface PinInput {
  messageId?: string;
  text?: string;
}

/** Input of `unpin`: the pin's id (`pin-N`, as `pin` answered it and the state lists it). */
export interface UnpinInput {
  pin: string;
}

/** A pin as the state holds it. */
export interface Pin {
  /** `pin-N`, in the order pins were made. */
  id: string;
  kind: 'message' | 'text';
  /** The pinned message (kind `message`). */
  messageId?: string;
  /** Where its body is stored: the message's key, or the text's ({@link pinKey}). */
  key: string;
  tokens: number;
  preview: string;
  /** Who pinned it: a person (the `pin` Update) or the model (the `context_pin` tool). */
  by: 'person' | 'model';
}

/** What `pin` and `unpin` answer: the pin, and the pins and budget after it. */
export interface PinResult {
  pin: Pin;
  /** Tokens of every pin now, and the budget they count against. */
  pinnedTokens: number;
  budget: number;
  pins: number;
}

export interface UnpinResult {
  unpinned: Pin;
  pinnedTokens: number;
  budget: number;
  pins: number;
}

/** The pin budget in tokens: `pinRatio` (default {@link DEFAULT_PIN_RATIO}) of the window. */
export function pinBudgetOf(policy: { pinRatio?: number } | undefined, window: number): number {
  return Math.floor((policy?.pinRatio ?? DEFAULT_PIN_RATIO) * window);
}

/** Tokens of every pin. */
export function pinnedTokensOf(pins: readonly Pin[] | undefined): number {
  return (pins ?? []).reduce((sum, pin) => sum + pin.tokens, 0);
}

/** Why a pin of `tokens` cannot be added to `pins` under `budget`, if it cannot: names the budget and the sizes. */
export function pinRefusal(pins: readonly Pin[] | undefined, tokens: number, budget: number): string | undefined {
  const used = pinnedTokensOf(pins);
  if ((pins?.length ?? 0) >= MAX_PINS) return `pins: the agent holds ${MAX_PINS} pins, the most it may (unpin one)`;
  if (used + tokens <= budget) return undefined;
  return (
    `pin budget: this pin counts ${tokens} tokens and the pins ${used}, over the budget of ${budget} tokens ` +
    '(policy pinRatio of the window; unpin something, or raise pinRatio)'
  );
}

/** Checks a `pin` input: a message id or a text (a message's limits), exactly one. */
export function validatePinInput(input: PinInput): void {
  if (input === null || typeof input !== 'object') {
    throw new InvalidInputError('pin: input must be an object {"messageId": "..."} or {"text": "..."}');
  }
  const { messageId, text } = input as { messageId?: unknown; text?: unknown };
  if ((messageId === undefined) === (text === undefined)) {
    throw new InvalidInputError('pin: give exactly one of messageId (a message of the context) and text');
  }
  if (messageId !== undefined && (typeof messageId !== 'string' || messageId.trim() === '' || messageId.length > 64)) {
    throw new InvalidInputError(
      `messageId: must be a message id of 1 to 64 characters (got ${JSON.stringify(messageId)})`,
    );
  }
  if (text !== undefined) {
    if (typeof text !== 'string' || text.trim() === '') throw new InvalidInputError('text: must be a non-empty string');
    if (text.length > MAX_MESSAGE_CHARS) {
      throw new InvalidInputError(`text: ${text.length} characters is over the limit of ${MAX_MESSAGE_CHARS}`);
    }
  }
}

/** Checks an `unpin` input. */
export function validateUnpinInput(input: UnpinInput): void {
  if (input === null || typeof input !== 'object' || typeof input.pin !== 'string' || !/^pin-\d+$/.test(input.pin)) {
    throw new InvalidInputError(`pin: must be a pin id such as "pin-1" (got ${JSON.stringify(input?.pin)})`);
  }
}

/** Where a pin's body goes in a request: a key, and the line that names it in the pinned block. */
export interface PinnedRef {
  key: string;
  label: string;
}

/**
 * The pins the pinned block carries: every pin whose body is not in the working context as it was pinned (a text; a
 * message that left it, or was replaced), in the order they were made. Deterministic: the workflow decides it.
 */
export function pinnedBlockOf(
  agent: AgentLife,
  pins: readonly Pin[] | undefined,
  context: readonly ContextRecord[],
): Pin[] {
  if (!pins?.length) return [];
  const inPlace = new Set(context.map((record) => recordKey(agent, record)));
  return pins.filter((pin) => pin.kind === 'text' || !inPlace.has(pin.key));
}

/** The ids of pinned messages in the working context, raw: the planner protects them. */
export function pinnedIdsOf(
  agent: AgentLife,
  pins: readonly Pin[] | undefined,
  context: readonly ContextRecord[],
): string[] {
  if (!pins?.length) return [];
  const keys = new Set(pins.filter((pin) => pin.kind === 'message').map((pin) => pin.key));
  return context.filter((record) => keys.has(recordKey(agent, record))).map((record) => record.id);
}

/** A pin's references for the model call's pinned block. */
export function pinnedRefsOf(pins: readonly Pin[]): PinnedRef[] {
  return pins.map((pin) => ({
    key: pin.key,
    label: pin.kind === 'text' ? `${pin.id} (text)` : `${pin.id} (message ${pin.messageId})`,
  }));
}

/** The heading of the pinned block (the activity writes each pin's body under its label). */
export const PINNED_BLOCK_HEADING =
  'Pinned: kept verbatim through every compaction (unpin with the pin id; context_pin pins more).';

/** Tokens the pinned block's frame adds: the message, its heading, and a label per pin (an upper estimate). */
export const PINNED_BLOCK_FRAME_TOKENS = 24;
export const PINNED_LABEL_TOKENS = 12;

/** Tokens the pinned block adds to every request (0 without one). */
export function pinnedBlockTokensOf(
  agent: AgentLife,
  pins: readonly Pin[] | undefined,
  context: readonly ContextRecord[],
): number {
  const block = pinnedBlockOf(agent, pins, context);
  if (block.length === 0) return 0;
  return PINNED_BLOCK_FRAME_TOKENS + block.reduce((sum, pin) => sum + pin.tokens + PINNED_LABEL_TOKENS, 0);
}

/** Tokens every request spends besides its messages: the tool schemas, the reply primer and the pinned block. */
export function requestFixedTokensOf(state: { fixedTokens?: number; pinnedBlockTokens?: number }): number {
  return (state.fixedTokens ?? 0) + (state.pinnedBlockTokens ?? 0);
}
