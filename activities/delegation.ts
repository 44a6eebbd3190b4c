/**
 * The `reportDelegation` activity: what a delegated task puts into the parent's context once its child agent has
 * ended (workflows/delegation.ts). It reads what the child stored (its messages: every tool call it made, and its
 * final answer), renders the manifest (contract/delegation.ts) and stores the call's result: the manifest and the
 * answer, cut so that the whole counts at most {@link DELEGATION_RESULT_TOKENS} tokens; a cut answer's whole result
 * is stored apart and named for `context_reload`, as a tool result cut as it arrives.
 */
import { agentLife, messageIdOf, messageKey, originalResultKey, resultMarksKey } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { ReportDelegationInput } from '../contract/activities.ts';
import type { ContextRecord, ResultMarks } from '../contract/records.ts';
import { DELEGATION_RESULT_TOKENS, manifestOf, renderManifest } from '../contract/delegation.ts';
import type { DelegationReport } from '../contract/delegation.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import type { Counting } from '../engine/models.ts';
import { totalCostOf } from '../engine/pricing.ts';
import { countMessage, loadTokenCounter } from '../engine/tokens.ts';
import type { TokenCounter } from '../engine/tokens.ts';
import type { BlobStore } from '../storage/s3.ts';
import { cutAtEntry } from './tool-results.ts';
import type { AgentStream } from './stream.ts';
import type { SearchWrites } from './search-writes.ts';
import { untilStored } from './stored.ts';

/** Child messages read at once. */
const READ_AT_ONCE = 32;

/**
 * The call's result: `manifest`, then `answer` cut (head and tail around a notice naming `originalKey`) so that the
 * whole message counts at most `limit` tokens. `cut`: whether the answer was cut.
 */
export function boundedResult(
  manifest: string,
  answer: string,
  callId: string,
  originalKey: string,
  counter: TokenCounter,
  margin = 1,
  limit = DELEGATION_RESULT_TOKENS,
): { content: string; cut: boolean } {
  const whole = `${manifest}\n${answer}`;
  const message = (content: string): ChatMessage & { content: string } => ({
    role: 'tool',
    tool_call_id: callId,
    content,
  });
  if (countMessage(counter, message(whole), margin) <= limit) return { content: whole, cut: false };
  // The manifest stays whole (it is bounded); the answer gets what is left, counted as a message of its own.
  const head = countMessage(counter, message(`${manifest}\n`), margin) - countMessage(counter, message(''), margin);
  const cut = cutAtEntry(
    message(answer),
    { maxResultTokens: Math.max(64, limit - head) },
    originalKey,
    counter,
    margin,
  );
  return { content: `${manifest}\n${cut ? textOf(cut.content) : answer}`, cut: cut !== undefined };
}

export interface ReportDelegationDeps {
  store: BlobStore;
  save: (agent: AgentLife, messageId: string, message: ChatMessage, counting: Counting) => Promise<ContextRecord>;
  search: SearchWrites;
  stream: AgentStream;
}

export function createReportDelegation({ store, save, search, stream }: ReportDelegationDeps) {
  const load = async (key: string): Promise<ChatMessage | undefined> => {
    const body = await store.get(key);
    return body === undefined ? undefined : (JSON.parse(body) as ChatMessage);
  };

  return async function reportDelegation(input: ReportDelegationInput): Promise<ContextRecord> {
    const agent = agentLife(input);
    const { resultId, counting, child } = input;
    const call = {
      ...input.call,
      function: { name: input.call.function.name, arguments: input.call.function.arguments ?? '' },
    };
    const childLife = { agentId: child.agentId, life: child.life };
    const counter = await loadTokenCounter(counting.encoding);
    // What the child stored: each message once (a compaction never deletes one), its tool calls and its size.
    const calls: { name: string; arguments: string }[] = [];
    let storedTokens = 0;
    for (let first = 1; first <= child.lastSeq; first += READ_AT_ONCE) {
      const seqs = Array.from({ length: Math.min(READ_AT_ONCE, child.lastSeq - first + 1) }, (_, i) => first + i);
      const messages = await untilStored(() =>
        Promise.all(seqs.map((seq) => load(messageKey(childLife, messageIdOf(seq))))),
      );
      for (const message of messages) {
        if (!message) continue;
        storedTokens += countMessage(counter, message, 1);
        for (const toolCall of message.tool_calls ?? []) calls.push(toolCall.function);
      }
    }
    const outcome = child.outcome;
    const reply = outcome?.replyId ? await untilStored(() => load(messageKey(childLife, outcome.replyId!))) : undefined;
    const answer = reply ? textOf(reply.content) : '';
    const report: DelegationReport = {
      childId: child.agentId,
      status: outcome === undefined || outcome.error !== undefined ? 'failed' : outcome.stopped ? 'stopped' : 'done',
      ...(outcome?.error !== undefined
        ? { why: outcome.error }
        : outcome?.stopped
          ? { why: outcome.stopped }
          : outcome === undefined
            ? { why: 'it ended without a task outcome' }
            : {}),
      steps: outcome?.steps ?? 0,
      toolCalls: calls.length,
      storedTokens,
      spentTokens: child.spend ? child.spend.promptTokens + child.spend.completionTokens : 0,
      cost: child.spend ? totalCostOf(child.spend) : null,
      entries: manifestOf(calls),
    };
    const originalKey = originalResultKey(agent, resultId);
    const manifest = renderManifest(report);
    const { content, cut } = boundedResult(
      manifest,
      answer || '(no answer)',
      call.id,
      originalKey,
      counter,
      counting.margin,
    );
    const whole: ChatMessage = { role: 'tool', tool_call_id: call.id, content: `${manifest}\n${answer}` };
    const message: ChatMessage = { role: 'tool', tool_call_id: call.id, content };
    const marks: ResultMarks = cut
      ? { kind: 'truncated', ref: originalKey, tool: call.function.name }
      : { tool: call.function.name };
    if (cut) await untilStored(() => store.put(originalKey, JSON.stringify(whole), 'application/json'));
    const record = await untilStored(() => save(agent, resultId, message, counting));
    // Beside the result, what its record says beyond its body: a plan derives the same record (as runTool's).
    await untilStored(() => store.put(resultMarksKey(agent, resultId), JSON.stringify(marks), 'application/json'));
    await search.messages(agent, [{ messageId: resultId, message, ...(cut ? { original: whole } : {}) }]);
    await stream.toolResult(agent, call, content);
    return { ...record, ...marks };
  };
}
