/**
 * The coverage invariant: every message reaches the model exactly once, raw (or as a reloadable stub under its own
 * id), inside a summary that names it, or as a reload reference. Checked when a compaction is applied (what its
 * context was made for against what it leaves and what it removed) and when the workflow commits it or sends a
 * request (the context it holds). Pure: the activities and the workflow both run it.
 */

interface Identified {
  id: string;
  kind?: string;
  /** A replacement's original (a reloadable stub: masked, truncated, offloaded). */
  ref?: string;
}

/** Kinds a compaction may add under new ids: the summary (it stands for what was removed). */
const ADDED_KINDS = new Set(['summary']);

/**
 * What breaks the invariant in one compaction: `before` is the context it was made for, `after` the context it
 * leaves, `removed` the originals that left it (into the summary, or replaced by a reloadable stub under the same
 * id; all in the removed segment, reloadable by key). Empty when it holds.
 */
export function compactionCoverage(
  before: readonly Identified[],
  after: readonly Identified[],
  removed: readonly Pick<Identified, 'id'>[],
): string[] {
  const problems: string[] = [];
  // The task ledger is the agent's notes, not a message: each summary's ledger replaces the one before.
  const beforeIds = new Set(before.filter((m) => m.kind !== 'ledger').map((m) => m.id));
  const afterIds = new Set<string>();
  /** Kept raw: the body itself reaches the model (a stub under the same id stands for its removed original). */
  const raw = new Set<string>();
  for (const m of after) {
    if (m.kind === 'ledger') continue;
    if ((m.kind ?? 'normal') === 'normal' && m.ref === undefined) raw.add(m.id);
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
    if (raw.has(id)) problems.push(`${id} was removed and kept raw`);
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
