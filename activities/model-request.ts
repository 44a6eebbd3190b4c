/**
 * The model call's request as it leaves the worker: the view's messages loaded (the turn's new ones as the call holds
 * them, the rest from storage), the pinned block and the budget note put in (activities/agent-request.ts,
 * activities/request-extras.ts), and its two invariants checked: every tool result with its call and every call with
 * its result, and no request over the model's window.
 */
import { ApplicationFailure } from '@temporalio/common';
import { agentLife, messageIdOf, messageKey } from '../contract/keys.ts';
import { FAILURE } from '../contract/failures.ts';
import { noteFiguresOf } from '../contract/activities.ts';
import type { WholeCallModelInput } from '../contract/activities.ts';
import { budgetNote } from '../engine/budget-note.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { countRequest, loadTokenCounter } from '../engine/tokens.ts';
import { pairViewOf, ToolPairError, toolPairViolations } from '../engine/tool-pairs.ts';
import { withPinnedBlock } from './agent-request.ts';
import { insertBudgetNote } from './request-extras.ts';
import type { MessageStore } from './messages.ts';
import { untilStored } from './stored.ts';
import type { ToolRegistry } from './tools.ts';

/** What the model call asks with: its input, less the turn's new messages and the gate they are checked against. */
export type AnswerInput = Omit<WholeCallModelInput, 'newMessages' | 'gateCheck'>;

/** Loading the request of a model call from the stored objects, its tools' schemas from `tools`. */
export function createRequestLoading({ objects, tools }: Pick<MessageStore, 'objects'> & { tools: ToolRegistry }) {
  /** The request's messages for `input`, the turn's new messages taken from `fresh` (by key) instead of storage. */
  return async function loadRequest(input: AnswerInput, fresh: Map<string, ChatMessage>): Promise<ChatMessage[]> {
    const { view, counting } = input;
    const agent = agentLife(input);
    const base = view.base ? await untilStored(() => objects.load<string[]>(view.base!)) : [];
    const keys = [
      ...base.slice(0, view.baseLength ?? base.length),
      ...Array.from({ length: Math.max(0, view.lastSeq - view.firstSeq + 1) }, (_, i) =>
        messageKey(agent, messageIdOf(view.firstSeq + i)),
      ),
    ];
    const messages = await Promise.all(
      keys.map((key) => {
        const body = fresh.get(key);
        return body ? Promise.resolve(body) : untilStored(() => objects.load<ChatMessage>(key));
      }),
    );
    // Invariant: no view reaches a model with a tool result without its call, or a call without its result.
    const violations = toolPairViolations(messages.map(pairViewOf));
    if (violations.length > 0) {
      throw ApplicationFailure.nonRetryable(new ToolPairError(violations).message, FAILURE.toolPairViolation);
    }
    // The pinned block after the system prompt, the budget note at the end (contract/pins.ts, request-extras.ts).
    await withPinnedBlock(messages, input.pinned, (key) => untilStored(() => objects.load<ChatMessage>(key)));
    // The note written here from its figures (`budget`); a call scheduled before carries its text (`budgetNote`).
    const note =
      input.budget !== undefined ? budgetNote(noteFiguresOf(input.budget, input.window ?? 0)) : input.budgetNote;
    if (note !== undefined) insertBudgetNote(messages, note);
    // Invariant: no request leaves the worker over the model's window.
    if (input.window !== undefined) {
      const counter = await loadTokenCounter(counting.encoding);
      const tokens = countRequest(counter, messages, tools.schemas(input.tools), counting.margin);
      if (tokens > input.window) {
        throw ApplicationFailure.nonRetryable(
          `the request counts ${tokens} tokens, over the model's window of ${input.window}: not sent`,
          FAILURE.contextOverflow,
        );
      }
    }
    return messages;
  };
}
