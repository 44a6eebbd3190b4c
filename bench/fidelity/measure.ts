/**
 * The pure half of `npm run fidelity`: fact matching, and one replay's figures from its report and what its
 * compactions left in the store (read by bench/fidelity.ts into {@link CompactionSnapshot}s).
 */
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';

/** Whitespace runs as one space, trimmed: facts and texts are compared this way. */
export function normalizeWhitespace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Everything of a message a fact could be found in: its text, and for each tool call its name and arguments (the
 * string values of the arguments when they are a JSON object, so that a path inside a command is found as written).
 */
export function messageText(message: ChatMessage): string {
  const parts = [textOf(message.content)];
  for (const call of message.tool_calls ?? []) {
    parts.push(call.function.name);
    let args: unknown;
    try {
      args = JSON.parse(call.function.arguments);
    } catch {
      args = undefined;
    }
    if (args && typeof args === 'object') {
      for (const value of Object.values(args)) parts.push(typeof value === 'string' ? value : JSON.stringify(value));
    } else parts.push(call.function.arguments);
  }
  return parts.join('\n');
}

/** The facts (case-sensitive, whitespace-normalised substrings) found in any of `texts`. */
export function factsFound(facts: readonly string[], texts: readonly string[]): Set<string> {
  const haystack = texts.map(normalizeWhitespace).join('\n');
  return new Set(facts.filter((fact) => haystack.includes(normalizeWhitespace(fact))));
}

/** What one compaction left, as read from the store. */
export interface CompactionSnapshot {
  seq: number;
  strategies: string[];
  /** The summary it wrote (text), or null. */
  summary: string | null;
  /** Texts of the context after it (context.json's bodies, the ledger and summary included when they are in it). */
  context: string[];
  /** Texts of the originals it removed (removed.jsonl). */
  removed: string[];
  /** Removed items that nothing replaced but a summary (dropped, or summarized), as opposed to a stub or a cut. */
  droppedCount: number;
  removedCount: number;
  /** Removed items whose stored original reloads byte-identical, of all removed items. */
  reload: { identical: number; total: number };
}

/** Facts kept after one compaction, of those that had appeared in the session by then. */
export interface FactsAfter {
  seq: number;
  appeared: number;
  kept: number;
  /** kept / appeared in %, null when no fact had appeared yet. */
  pct: number | null;
  missing: string[];
}

/**
 * For each compaction: the facts that had appeared so far (in anything removed up to it, or in the context or
 * summary after it) and those of them still present in its summary or the context after it.
 */
export function factsAfterEach(facts: readonly string[], snapshots: readonly CompactionSnapshot[]): FactsAfter[] {
  const appearedSoFar = new Set<string>();
  return snapshots.map((s) => {
    const kept = factsFound(facts, [...(s.summary === null ? [] : [s.summary]), ...s.context]);
    for (const fact of factsFound(facts, s.removed)) appearedSoFar.add(fact);
    for (const fact of kept) appearedSoFar.add(fact);
    const appeared = [...appearedSoFar];
    return {
      seq: s.seq,
      appeared: appeared.length,
      kept: kept.size,
      pct: appeared.length === 0 ? null : (100 * kept.size) / appeared.length,
      missing: appeared.filter((fact) => !kept.has(fact)),
    };
  });
}

/**
 * What bench/fidelity.ts takes from a replay report (commands/replay-report.ts ReplayReport, optional fields
 * tolerated).
 */
export interface ReplayFigures {
  window: number;
  modelCalls: number;
  recordedSteps: number;
  replayedSteps: number;
  maxRequestTokens: number;
  /** Each request's tokens, when the report carries them. */
  requestTokens?: number[];
  /** Each request's tokens without compaction, when the report carries them. */
  requestTokensWithoutCompaction?: number[];
  tokensSent: number;
  tokensSentWithoutCompaction: number;
  toolPairViolations: number;
  /** The agent's compaction plans, when the report carries them. */
  plans?: { made: number; empty: number; avoided: number };
  /** USD with caching, as sent and sending everything, and the cached share of input (commands/replay-cost.ts). */
  cost?: number | null;
  costWithoutCompaction?: number | null;
  costFloor?: number | null;
  cachedInputShare?: number | null;
  /** The workflow history of every run of the agent, summed (bytes), when the report carries it. */
  historyBytes?: number;
}

/**
 * The tokens sent by the best compaction that runs only when a request reaches `trigger` tokens: every request
 * below it goes whole, and each compaction leaves nothing at all (the context then grows by the recording's own
 * steps until it reaches the trigger again). No compaction at that trigger sends less.
 */
export function sentFloor(withoutCompaction: readonly number[], trigger: number): number {
  let sent = 0;
  let current = 0;
  let previous = 0;
  for (const whole of withoutCompaction) {
    current += whole - previous;
    previous = whole;
    if (current >= trigger) current = 0;
    sent += current;
  }
  return sent;
}

/** How far down `context_search`'s matches a missing fact's message may be to count as findable. */
export const FINDABLE_TOP = 5;

/** A match as the findable check reads it: what it is, and the text of the body it names. */
export interface FoundBody {
  kind: string;
  text: string;
}

/** Whether a fact's message is among `matches` (a stored message or whole original holding the fact as written). */
export function factInMatches(fact: string, matches: readonly FoundBody[]): boolean {
  const wanted = normalizeWhitespace(fact);
  return matches
    .slice(0, FINDABLE_TOP)
    .some(
      (match) =>
        (match.kind === 'message' || match.kind === 'original') && normalizeWhitespace(match.text).includes(wanted),
    );
}

/** The findable figures of a run: each compaction's missing facts, and which facts were found. */
export function findableOf(perCompaction: readonly FactsAfter[], found: ReadonlySet<string>) {
  const missing = perCompaction.flatMap((a) => a.missing);
  return { missing: missing.length, found: missing.filter((fact) => found.has(fact)).length };
}

/** One row of the fidelity table: a session replayed at a window under a preset. */
export interface RunResult {
  session: string;
  window: number;
  preset: string;
  durationMs: number;
  recordedSteps: number;
  replayedSteps: number;
  modelCalls: number;
  compactions: number;
  /** Compactions that used each strategy (a compaction with two strategies counts for both). */
  byStrategy: Record<string, number>;
  summaries: number;
  /** Compactions that dropped or summarized messages and wrote no summary. */
  removedWithoutSummary: number;
  facts: {
    total: number;
    /** Over compactions where some fact had appeared; null when there was no compaction. */
    minPct: number | null;
    meanPct: number | null;
    /** The compaction with the lowest share kept, and the facts it was missing. */
    worst: { seq: number; missing: string[] } | null;
    perCompaction: FactsAfter[];
  };
  maxRequestTokens: number;
  /**
   * Requests over the window. Without per-request tokens in the report it is known only when the largest request
   * fits (0); null means at least one (the largest) is over.
   */
  requestsOverWindow: number | null;
  /** Tokens sent against sending the whole recording so far each time. */
  tokensRatio: number;
  /**
   * The least `tokensRatio` any compaction that runs at the preset's trigger could reach ({@link sentFloor}), when
   * the report carries the requests without compaction.
   */
  tokensRatioFloor?: number;
  /** Compaction plans made, those that found nothing, masking passes not planned (absent: not reported). */
  plans?: { made: number; empty: number; avoided: number };
  /**
   * The agent's Temporal history (every run, summed) against the recording's own bytes (its JSONL file): issue 29's
   * target is at most 2× on long loops. Absent when the report or the run does not say.
   */
  history?: { bytes: number; sessionBytes: number; ratio: number };
  toolPairViolations: number;
  /**
   * USD of the replay with prompt caching (summaries included), of sending the whole recording so far each time
   * with caching, and the share of input tokens cached (0 to 1); null without a price or a report that has them.
   */
  cost: number | null;
  costWithoutCompaction: number | null;
  /** The least any compaction that sends each message whole could cost (commands/replay-cost.ts `costFloorOf`). */
  costFloor: number | null;
  cachedInputShare: number | null;
  reload: { identical: number; total: number };
  /**
   * The must-keep facts missing after a compaction (neither in its context nor in its summary), counted once per
   * compaction, and those of them whose message `context_search` with the fact's own words ranks in its first
   * {@link FINDABLE_TOP} (searched once the replay is over). Absent: not measured.
   */
  findable?: { missing: number; found: number };
  /**
   * The pin the replay made (the session's first user message, pinned after the first turn): the requests after it,
   * those that held its text verbatim, and the compactions after it. Absent: not measured.
   */
  pins?: { requests: number; verbatim: number; compactions: number };
  /** Set when the replay itself failed: the error message (the other figures are then zero). */
  error?: string;
}

/** One run's figures. */
export function runResult(
  run: { session: string; preset: string; durationMs: number; triggerTokens?: number; sessionBytes?: number },
  report: ReplayFigures & { pins?: { requests: number; verbatim: number; compactions: number } },
  facts: readonly string[],
  snapshots: readonly CompactionSnapshot[],
): RunResult {
  const byStrategy: Record<string, number> = {};
  for (const s of snapshots)
    for (const strategy of new Set(s.strategies)) byStrategy[strategy] = (byStrategy[strategy] ?? 0) + 1;
  const after = factsAfterEach(facts, snapshots);
  const measured = after.filter((a) => a.pct !== null);
  const worst = measured.reduce<FactsAfter | undefined>(
    (w, a) => (w === undefined || a.pct! < w.pct! ? a : w),
    undefined,
  );
  return {
    session: run.session,
    window: report.window,
    preset: run.preset,
    durationMs: run.durationMs,
    recordedSteps: report.recordedSteps,
    replayedSteps: report.replayedSteps,
    modelCalls: report.modelCalls,
    compactions: snapshots.length,
    byStrategy,
    summaries: snapshots.filter((s) => s.summary !== null).length,
    removedWithoutSummary: snapshots.filter((s) => s.summary === null && s.droppedCount > 0).length,
    facts: {
      total: facts.length,
      minPct: worst ? worst.pct : null,
      meanPct: measured.length ? measured.reduce((sum, a) => sum + a.pct!, 0) / measured.length : null,
      worst: worst ? { seq: worst.seq, missing: worst.missing } : null,
      perCompaction: after,
    },
    maxRequestTokens: report.maxRequestTokens,
    requestsOverWindow: report.requestTokens
      ? report.requestTokens.filter((t) => t > report.window).length
      : report.maxRequestTokens > report.window
        ? null
        : 0,
    tokensRatio: report.tokensSentWithoutCompaction > 0 ? report.tokensSent / report.tokensSentWithoutCompaction : 0,
    ...(report.requestTokensWithoutCompaction &&
    run.triggerTokens !== undefined &&
    report.tokensSentWithoutCompaction > 0
      ? {
          tokensRatioFloor:
            sentFloor(report.requestTokensWithoutCompaction, run.triggerTokens) / report.tokensSentWithoutCompaction,
        }
      : {}),
    toolPairViolations: report.toolPairViolations,
    ...(report.plans ? { plans: report.plans } : {}),
    ...(report.historyBytes !== undefined && run.sessionBytes
      ? {
          history: {
            bytes: report.historyBytes,
            sessionBytes: run.sessionBytes,
            ratio: report.historyBytes / run.sessionBytes,
          },
        }
      : {}),
    ...(report.pins
      ? {
          pins: {
            requests: report.pins.requests,
            verbatim: report.pins.verbatim,
            compactions: report.pins.compactions,
          },
        }
      : {}),
    cost: report.cost ?? null,
    costWithoutCompaction: report.costWithoutCompaction ?? null,
    costFloor: report.costFloor ?? null,
    cachedInputShare: report.cachedInputShare ?? null,
    reload: snapshots.reduce(
      (sum, s) => ({ identical: sum.identical + s.reload.identical, total: sum.total + s.reload.total }),
      { identical: 0, total: 0 },
    ),
  };
}

/** A row for a replay that failed: its error, every figure zero. */
export function failedRun(
  run: { session: string; window: number; preset: string; durationMs: number },
  error: string,
): RunResult {
  return {
    ...run,
    recordedSteps: 0,
    replayedSteps: 0,
    modelCalls: 0,
    compactions: 0,
    byStrategy: {},
    summaries: 0,
    removedWithoutSummary: 0,
    facts: { total: 0, minPct: null, meanPct: null, worst: null, perCompaction: [] },
    maxRequestTokens: 0,
    requestsOverWindow: null,
    tokensRatio: 0,
    toolPairViolations: 0,
    cost: null,
    costWithoutCompaction: null,
    costFloor: null,
    cachedInputShare: null,
    reload: { identical: 0, total: 0 },
    error,
  };
}
