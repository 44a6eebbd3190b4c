/**
 * A tool's result as it enters the context: cut to its tool's `maxResultTokens` (the policy's, over the
 * definition's) with the whole stored apart, stored and indexed, and its record marked with the tool and the resource
 * the call read (the marks stored beside the body, where the plan step reads them).
 */
import { originalResultKey, resultMarksKey } from '../contract/keys.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { RunToolInput } from '../contract/activities.ts';
import type { ContextRecord, ResultMarks } from '../contract/records.ts';
import type { Counting } from '../engine/models.ts';
import type { ChatMessage, ToolCall } from '../engine/messages.ts';
import { loadTokenCounter } from '../engine/tokens.ts';
import type { BlobStore } from '../storage/s3.ts';
import type { SearchWrites } from './search-writes.ts';
import { cutAtEntry, resourceOf } from './tool-results.ts';
import { contextReload, contextSearch, definedLimits } from './tools.ts';
import type { ToolDefinition } from './tools.ts';

/** What storing a result takes: the store, how a message is stored and counted, and the search index. */
export interface ResultEntryDeps {
  store: BlobStore;
  save: (agent: AgentLife, messageId: string, message: ChatMessage, counting: Counting) => Promise<ContextRecord>;
  /** The search index: a stored result (and its whole original) is added to it (activities/search-writes.ts). */
  search?: SearchWrites;
}

/** Storing a tool's result as it enters the context (`enter`). */
export function createResultEntry({ store, save, search }: ResultEntryDeps) {
  /**
   * Stores a tool's result as it enters the context: cut to its tool's `maxResultTokens` (the policy's, over the
   * definition's) with the whole stored apart, and its record naming the tool and the resource the call read.
   */
  async function enter(
    agent: AgentLife,
    resultId: string,
    message: ChatMessage & { content: string },
    input: RunToolInput & { call: ToolCall; counting: Counting },
    tool: ToolDefinition | undefined,
  ): Promise<ContextRecord> {
    const { record, marks } = await stored(agent, resultId, message, input, tool);
    return { ...record, ...marks };
  }

  /** What the record says beyond the body, stored beside it: the plan step derives the same record from the two. */
  const keepMarks = (agent: AgentLife, resultId: string, marks: ResultMarks) =>
    store.put(resultMarksKey(agent, resultId), JSON.stringify(marks), 'application/json');

  /** The body saved, then indexed (the index names stored bodies only); its record. */
  async function savedAndIndexed(
    agent: AgentLife,
    resultId: string,
    message: ChatMessage,
    counting: Counting,
    original?: ChatMessage,
  ): Promise<ContextRecord> {
    const record = await save(agent, resultId, message, counting);
    await search?.messages(agent, [{ messageId: resultId, message, ...(original ? { original } : {}) }]);
    return record;
  }

  /**
   * The result stored (cut, the whole apart) and its marks beside it, at once; its record as the body gives it, and
   * what the record says beyond it.
   */
  async function stored(
    agent: AgentLife,
    resultId: string,
    message: ChatMessage & { content: string },
    { call, counting, limits: policyLimits }: RunToolInput & { call: ToolCall; counting: Counting },
    tool: ToolDefinition | undefined,
  ): Promise<{ record: ContextRecord; marks?: ResultMarks }> {
    // What context_reload and context_search return is stored content again: not indexed a second time.
    if (tool === contextReload) {
      const marks = { reload: true as const };
      const [record] = await Promise.all([save(agent, resultId, message, counting), keepMarks(agent, resultId, marks)]);
      return { record, marks };
    }
    if (tool === contextSearch) return { record: await save(agent, resultId, message, counting) };
    const own = tool ? definedLimits(tool) : {};
    const limits = { ...own, ...policyLimits };
    const resource = resourceOf(call);
    const marks: ResultMarks = {
      tool: call.function.name,
      ...(resource !== undefined ? { resource } : {}),
      ...(own.neverMask ? { neverMask: true as const } : {}),
      ...(own.preview !== undefined ? { resultPreview: own.preview } : {}),
    };
    const originalKey = originalResultKey(agent, resultId);
    const cut =
      limits.maxResultTokens === undefined
        ? undefined
        : cutAtEntry(message, limits, originalKey, await loadTokenCounter(counting.encoding), counting.margin);
    if (cut === undefined) {
      const [record] = await Promise.all([
        savedAndIndexed(agent, resultId, message, counting),
        keepMarks(agent, resultId, marks),
      ]);
      return { record, marks };
    }
    const truncated: ResultMarks = { kind: 'truncated', ref: originalKey, ...marks };
    const marked = keepMarks(agent, resultId, truncated);
    marked.catch(() => {}); // awaited below, on every path
    // The whole result first: the cut names it, and nothing the model reads may point at what is not stored yet.
    await store.put(originalKey, JSON.stringify(message), 'application/json');
    const [record] = await Promise.all([savedAndIndexed(agent, resultId, cut, counting, message), marked]);
    return { record, marks: truncated };
  }

  return enter;
}
