/**
 * The working context's records: a message's metadata as the workflow holds it and the queries return it (the body
 * lives in S3 under its key), and the view sent to the model, by reference.
 */
import type { MessageMeta } from '../engine/messages.ts';
import { messageKey } from './keys.ts';
import type { AgentLife } from './keys.ts';

/**
 * The working context sent to the model, by reference: the first `baseLength` keys of the stored context manifest
 * `base` (what the last compaction left), then the messages with sequence numbers `firstSeq..lastSeq`. Its size in
 * history is constant however long the context is. A model call's input names a base that is compaction N's
 * `context.json` of the agent's own life by `baseCompaction: N` instead (contract/lean-calls.ts).
 */
export interface ViewRef {
  base?: string;
  baseCompaction?: number;
  baseLength?: number;
  firstSeq: number;
  lastSeq: number;
}

/** Metadata of a message of the working context (the body lives in S3 under `key`), as the queries return it. */
export interface MessageRecord extends MessageMeta {
  /** Its first line, or its tool calls (`→ read_file {"path":"a.ts"}`) when it has no text. */
  preview: string;
  /**
   * Characters of its tool calls' names and arguments (absent without calls, and in records of before): `state` and
   * `context` show them with `chars`, which counts the content only (what the planner cuts).
   */
  callChars?: number;
}

/**
 * A record as the workflow holds it and activities return it: `key` is left out when it is the message's own key
 * (agents/<id>/messages/<messageId>.json), about a third of a record; the state holds up to 2,000 of them and is
 * what the worker caches and continue-as-new carries. A replacement or a summary keeps its key.
 */
export type ContextRecord = Omit<MessageRecord, 'key'> & { key?: string };

/**
 * What the record of a tool result the `runTool` activity stored says beyond what its body does, stored beside it
 * (keys.ts `resultMarksKey`): the plan step adds it to the record it derives from the body, as the activity did.
 */
export type ResultMarks = Pick<
  MessageMeta,
  'kind' | 'ref' | 'tool' | 'resource' | 'neverMask' | 'resultPreview' | 'reload'
>;

/** A record's storage key: the one it names, or the message's own in the agent's life. */
export function recordKey(agent: AgentLife, record: ContextRecord): string {
  return record.key ?? messageKey(agent, record.id);
}

/** The record with its key, as the engine and the queries take it. */
export function keyedRecord(agent: AgentLife, record: ContextRecord): MessageRecord {
  return { ...record, key: recordKey(agent, record) };
}

/** The record without its key when that is the message's own. */
export function unkeyedRecord(agent: AgentLife, record: MessageRecord): ContextRecord {
  if (record.key !== messageKey(agent, record.id)) return record;
  const { key: _, ...rest } = record;
  return rest;
}
