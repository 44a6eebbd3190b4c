/**
 * The coverage invariant: every message reaches the model exactly once, raw (or as a reloadable stub under its own
 * id), inside a summary that names it, or as a reload reference. Checked when a compaction is applied (what its
 * context was made for against what it leaves and what it removed) and when the workflow commits it or sends a
 * request (the context it holds). Pure: the activities and the workflow both run it.
 */

interface Identified {
  id: string;
  kind?: string;
}

/** Kinds a compaction may add under new ids: the summary and the task ledger (they stand for what was removed). */
const ADDED_KINDS = new Set(['summary', 'ledger']);

/**
 * What breaks the invariant in one compaction: `before` is the context it was made for, `after` the context it
 * leaves, `removed` what left it (into the summary and the removed segment, reloadable by key). Empty when it holds.
 */
export function compactionCoverage(
  before: readonly Identified[],
  after: readonly Identified[],
  removed: readonly Pick<Identified, 'id'>[],
): string[] {
  const problems: string[] = [];
  const beforeIds = new Set(before.map((m) => m.id));
  const afterIds = new Set<string>();
  for (const m of after) {
    if (afterIds.has(m.id)) problems.push(`${m.id} is twice in the compacted context`);
    afterIds.add(m.id);
    if (!beforeIds.has(m.id) && !ADDED_KINDS.has(m.kind ?? 'normal')) {
      problems.push(`${m.id} is in the compacted context but was not in the context it was made for`);
    }
  }
  const removedIds = new Set<string>();
  for (const { id } of removed) {
    if (removedIds.has(id)) problems.push(`${id} was removed twice`);
    removedIds.add(id);
    if (!beforeIds.has(id)) problems.push(`${id} was removed but was not in the context`);
    if (afterIds.has(id)) problems.push(`${id} was removed and kept`);
  }
  for (const id of beforeIds) {
    if (!afterIds.has(id) && !removedIds.has(id)) problems.push(`${id} left the context without being removed`);
  }
  return problems;
}

/**
 * What breaks the invariant in a working context as the workflow holds it: every id once; the messages after the
 * last compaction's manifest (`baseLength` records) are the stored messages from `tailFromSeq` on, in order, without
 * a gap (what the request's view resolves them to). `seqOf` reads a message id's sequence number.
 */
export function contextCoverage(
  messages: readonly Identified[],
  base: { baseLength: number; tailFromSeq: number },
  seqOf: (id: string) => number,
): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const m of messages) {
    if (seen.has(m.id)) problems.push(`${m.id} is twice in the context`);
    seen.add(m.id);
  }
  let expected = base.tailFromSeq;
  for (const m of messages.slice(base.baseLength)) {
    const seq = seqOf(m.id);
    if (seq !== expected) {
      problems.push(`${m.id} follows message ${expected - 1} in the tail (expected sequence ${expected})`);
      break;
    }
    expected++;
  }
  return problems;
}
