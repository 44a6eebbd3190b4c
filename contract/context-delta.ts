/**
 * What a compaction changed in the working context, as its apply step returns it: the ranges of the old context it
 * kept, in order, and the records it made (summaries, ledgers, replacements) where they go. Its size grows with what
 * changed, not with the context: a compaction of a 2,000-message context that keeps most of it returns a few ranges.
 * The workflow rebuilds the new context from the one it holds ({@link applyDelta}); the apply step computes it from
 * the context the plan was made for and the new one ({@link deltaOf}). Pure, and unit-tested: old context + delta =
 * the new context.
 *
 * Also the digest of a run of records ({@link recordsDigest}): the plan step derives the records of the messages
 * stored since the last compaction from their bodies, and the workflow's digest of the records it holds tells it
 * whether they came out the same.
 */
import type { ContextRecord } from './records.ts';

/**
 * One piece of the new context: a range `[from, to)` of the old context kept as it was (with `every`: every
 * `every`-th record of it from `from`, as when a summary keeps each user message of a chat verbatim), or a record it
 * made.
 */
export type DeltaPiece = { keep: [from: number, to: number]; every?: number } | { record: ContextRecord };

export interface ContextDelta {
  /** The length of the context the delta applies to (the context the plan was made for). */
  from: number;
  pieces: DeltaPiece[];
}

/** Thrown when a delta does not fit the context it is applied to: a bug, never a user's input. */
export class DeltaMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeltaMismatchError';
  }
}

/**
 * The delta from `old` to `next`: each record of `next` that is `old`'s record of the same id (field by field, or as
 * `same` says) is kept from there, consecutive ones as one range; the others are new records (`toRecord` of them).
 */
export function deltaOf<T extends ContextRecord>(
  old: readonly T[],
  next: readonly T[],
  toRecord: (record: T) => ContextRecord = (record) => record,
  same: (a: T, b: T) => boolean = sameRecord,
): ContextDelta {
  const at = new Map<string, number>();
  old.forEach((record, i) => at.set(record.id, i));
  const pieces: DeltaPiece[] = [];
  for (const record of next) {
    const i = at.get(record.id);
    if (i === undefined || !same(old[i]!, record)) {
      pieces.push({ record: toRecord(record) });
      continue;
    }
    const last = pieces.at(-1);
    if (last && 'keep' in last && last.keep[1] === i) last.keep[1] = i + 1;
    else pieces.push({ keep: [i, i + 1] });
  }
  return { from: old.length, pieces: strided(pieces) };
}

/** Runs of single kept records at a constant distance, as one piece each (`every`). */
function strided(pieces: DeltaPiece[]): DeltaPiece[] {
  const single = (p: DeltaPiece | undefined): p is { keep: [number, number] } =>
    p !== undefined && 'keep' in p && p.keep[1] - p.keep[0] === 1;
  const out: DeltaPiece[] = [];
  for (let i = 0; i < pieces.length;) {
    const piece = pieces[i]!;
    const next = pieces[i + 1];
    if (!single(piece) || !single(next) || next.keep[0] - piece.keep[0] < 2) {
      out.push(piece);
      i++;
      continue;
    }
    const every = next.keep[0] - piece.keep[0];
    let j = i + 1;
    while (
      single(pieces[j + 1]) &&
      (pieces[j + 1] as { keep: [number, number] }).keep[0] - (pieces[j] as { keep: [number, number] }).keep[0] ===
        every
    )
      j++;
    const lastAt = (pieces[j] as { keep: [number, number] }).keep[0];
    out.push({ keep: [piece.keep[0], lastAt + 1], every });
    i = j + 1;
  }
  return out;
}

/** `old` with `delta` applied: the new context, its kept records the very objects of `old`. */
export function applyDelta<T extends ContextRecord>(old: readonly T[], delta: ContextDelta): (T | ContextRecord)[] {
  if (delta.from !== old.length) {
    throw new DeltaMismatchError(`the delta is for a context of ${delta.from} records, not ${old.length}`);
  }
  const next: (T | ContextRecord)[] = [];
  for (const piece of delta.pieces) {
    if ('record' in piece) {
      next.push(piece.record);
      continue;
    }
    const [from, to] = piece.keep;
    const every = piece.every ?? 1;
    if (
      !(Number.isInteger(from) && Number.isInteger(to) && from >= 0 && from < to && to <= old.length) ||
      !(Number.isInteger(every) && every >= 1)
    ) {
      throw new DeltaMismatchError(
        `the delta keeps [${from}, ${to})${every !== 1 ? ` every ${every}` : ''} of a context of ${old.length} records`,
      );
    }
    for (let i = from; i < to; i += every) next.push(old[i]!);
  }
  return next;
}

/** Whether two records are the same, field by field. */
export function sameRecord(a: ContextRecord, b: ContextRecord): boolean {
  return a === b || canonical(a) === canonical(b);
}

/** A record as JSON with its fields in one order, whatever order they were set in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * A digest of a run of records (FNV-1a, 32 bits, over each record's canonical JSON) with their count: equal for
 * records equal field by field. Deterministic and free of I/O: the workflow computes it too.
 */
export function recordsDigest(records: readonly ContextRecord[]): string {
  let hash = 0x811c9dc5;
  for (const record of records) {
    const text = canonical(record);
    for (let i = 0; i < text.length; i++) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    hash ^= 0x0a; // a separator: [ab, c] and [a, bc] differ
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `${records.length}:${hash.toString(16).padStart(8, '0')}`;
}
