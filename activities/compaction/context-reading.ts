/**
 * The working context's records by reference (`contextRef`), as the plan step reads them: the base's as stored (or
 * inline), then the messages since derived from their stored bodies, checked against the digest of what the workflow
 * holds.
 */
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../../contract/failures.ts';
import { recordsDigest } from '../../contract/context-delta.ts';
import { messageIdOf, messageKey, resultMarksKey } from '../../contract/keys.ts';
import type { AgentLife } from '../../contract/keys.ts';
import { unkeyedRecord } from '../../contract/records.ts';
import type { ContextRef } from '../../contract/compaction-activities.ts';
import type { ContextRecord, ResultMarks } from '../../contract/records.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import type { Counting } from '../../engine/models.ts';
import { contextReload } from '../tools.ts';
import type { CompactionShared } from './deps.ts';

/** Reading the context by reference (`readContext`) from the stored bodies and the marks beside them. */
export function createContextReading({ load, measure, store }: Pick<CompactionShared, 'load' | 'measure' | 'store'>) {
  /**
   * The working context's records by reference: the base's as stored (or inline), then the messages since, derived
   * from their bodies as they were stored (counted, a steer marked, a tool result with what `runTool` stored beside
   * it, a reloaded page marked). Undefined when what it derived differs from what the workflow holds (the digest):
   * the workflow sends them then.
   */
  async function readContext(
    agent: AgentLife,
    ref: ContextRef,
    counting: Counting | undefined,
  ): Promise<ContextRecord[] | undefined> {
    const base = ref.base ?? (ref.baseRecords ? await load<ContextRecord[]>(ref.baseRecords) : []);
    if (base.length < ref.baseLength) {
      throw ApplicationFailure.nonRetryable(
        `contextRef: ${ref.baseRecords ?? 'the inline base'} holds ${base.length} records, fewer than baseLength ` +
          `${ref.baseLength}`,
        FAILURE.missingObject,
      );
    }
    const head = base.slice(0, ref.baseLength);
    if (ref.tail) return [...head, ...ref.tail];
    if (!counting) throw ApplicationFailure.nonRetryable('contextRef: counting is required to read the tail');
    const steers = new Set(ref.steerIds ?? []);
    const length = Math.max(0, ref.lastSeq - ref.firstSeq + 1);
    const bodies = await Promise.all(
      Array.from({ length }, async (_, i) => {
        const id = messageIdOf(ref.firstSeq + i);
        const key = messageKey(agent, id);
        const message = await load<ChatMessage>(key);
        // A tool result runTool stored has its marks beside it; one the workflow answered has none.
        const marks = message.role === 'tool' ? await store.get(resultMarksKey(agent, id)) : undefined;
        return { id, key, message, ...(marks !== undefined ? { marks: JSON.parse(marks) as ResultMarks } : {}) };
      }),
    );
    const reloads = new Set(
      bodies.flatMap(({ message }) =>
        (message.tool_calls ?? []).filter((c) => c.function.name === contextReload.name).map((c) => c.id),
      ),
    );
    const tail = await Promise.all(
      bodies.map(async ({ id, key, message, marks }) => {
        const record = unkeyedRecord(agent, await measure(key, message, counting, { id }));
        if (marks) return { ...record, ...marks };
        if (steers.has(id)) return { ...record, steer: true as const };
        if (message.tool_call_id !== undefined && reloads.has(message.tool_call_id)) {
          return { ...record, reload: true as const };
        }
        return record;
      }),
    );
    return recordsDigest(tail) === ref.tailDigest ? [...head, ...tail] : undefined;
  }

  return readContext;
}
