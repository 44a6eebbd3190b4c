/**
 * What the model sees of its own context, answered by the workflow, not by a tool activity: the budget
 * note at the end of each request (policy `budgetNote`), and the built-in tools `context_pin` (pins a message or a
 * text, as the `pin` Update does) and `context_budget` (the note's figures). The tools' schemas are registered with
 * the worker's tools (activities/tools.ts); their calls are answered here, so a pin is in the state at once.
 */
import { budgetText } from '../engine/budget-note.ts';
import type { BudgetFigures } from '../engine/budget-note.ts';
import type { NoteFigures } from '../contract/activities.ts';
import type { CallOfReply } from '../engine/messages.ts';
import { pinBudgetOf, pinnedTokensOf, validatePinInput } from '../contract/pins.ts';
import type { PinInput } from '../contract/pins.ts';
import type { Conversation } from './conversation.ts';
import { DraftRefused } from './inbox.ts';
import { pinItem } from './pins.ts';

/**
 * Since this patch, calls of `context_pin` and `context_budget` are answered by the workflow (a stored tool result,
 * no `runTool` activity). A history of before ran every call as an activity.
 */
export const CONTEXT_TOOLS_PATCH = 'workflow-context-tools';

/** The built-in tools the workflow answers. */
export const WORKFLOW_TOOLS: ReadonlySet<string> = new Set(['context_pin', 'context_budget']);

/** Compactions the note names at most (the newest). */
const NOTED_AT_MOST = 3;

/** The turn's budget and what it used so far, as the turn knows it. */
export interface TurnUsage {
  steps: { used: number; limit: number };
  turnTokens: { used: number; limit?: number };
}

/** The figures of the agent's context and turn now; `sinceNote`: only the compactions since the last note. */
export function figuresOf(conversation: Conversation, usage: TurnUsage, sinceNote: boolean): BudgetFigures {
  const { state } = conversation;
  const after = sinceNote ? (state.notedCompactions ?? 0) : Math.max(0, (state.compactions ?? 0) - 1);
  const compacted = (state.events ?? [])
    .filter((event) => event.seq > after)
    .slice(-NOTED_AT_MOST)
    .map((event) => ({
      seq: event.seq,
      trigger: event.trigger,
      strategies: event.strategies,
      tokensBefore: event.tokensBefore,
      tokensAfter: event.tokensAfter,
    }));
  return {
    tokens: state.contextTokens,
    window: conversation.window,
    ...(state.policy ? { triggerRatio: state.policy.triggerRatio } : {}),
    ...usage,
    ...(state.pins?.length
      ? {
          pins: {
            count: state.pins.length,
            tokens: pinnedTokensOf(state.pins),
            budget: pinBudgetOf(state.policy, conversation.window),
          },
        }
      : {}),
    compacted,
  };
}

/**
 * The budget note's figures for the next request when the agent's policy asks for one: the model-call activity writes
 * the note from them (engine/budget-note.ts `budgetNote`).
 */
export function noteFor(conversation: Conversation, usage: TurnUsage): NoteFigures | undefined {
  if (conversation.state.policy?.budgetNote !== true) return undefined;
  const { window: _, compacted, ...figures } = figuresOf(conversation, usage, true);
  return { ...figures, ...(compacted.length ? { compacted } : {}) };
}

/** The arguments of a call as the model wrote them (an object), or why not. */
function argumentsOf(call: CallOfReply): Record<string, unknown> | string {
  return (
    argumentsObjectOf(call) ??
    `the arguments must be a JSON object (got ${JSON.stringify((call.function.arguments ?? '').slice(0, 200))})`
  );
}

/** The arguments of a call the workflow answers, as the model wrote them: a JSON object, or undefined if not one. */
export function argumentsObjectOf(call: CallOfReply): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(call.function.arguments || '{}');
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // not JSON: undefined
  }
  return undefined;
}

/** Answers a call of a tool in {@link WORKFLOW_TOOLS}: the text of its result (a refusal is a result too). */
export async function answerContextTool(
  conversation: Conversation,
  call: CallOfReply,
  usage: TurnUsage,
): Promise<string> {
  if (call.function.name === 'context_budget') return budgetText(figuresOf(conversation, usage, false));
  const args = argumentsOf(call);
  if (typeof args === 'string') return `[refused] ${args}`;
  const input: PinInput = {
    ...(args.message_id !== undefined ? { messageId: args.message_id as string } : {}),
    ...(args.text !== undefined ? { text: args.text as string } : {}),
  };
  try {
    validatePinInput(input);
    const { pin, pinnedTokens, budget } = await pinItem(conversation, input, 'model');
    return (
      `Pinned as ${pin.id} (${pin.tokens} tokens; the pins now hold ${pinnedTokens} of ${budget} tokens). ` +
      'It stays verbatim through every compaction.'
    );
  } catch (error) {
    if (error instanceof DraftRefused || (error as Error).name === 'InvalidInputError') {
      return `[refused] ${(error as Error).message}`;
    }
    throw error;
  }
}
