/**
 * The strategies that remove messages: whole steps (never a tool call without its result) dropped into the one
 * summary, which names what it covers. The summary of the unprotected span, of the turn in progress, of the older
 * turns down to their words and answers, the oldest rounds, and the emergency halving; and AgentScope Java's summaries
 * of one span in its place: a run of tool calls, a round's tools and answer, the steps of the round in progress.
 */
import { isUserTurn, kindOf } from '../messages.ts';
import { DEFAULT_TOOL_RUN_MESSAGES } from '../policy.ts';
import { opensTurn } from '../turns.ts';
import { isSummary } from './board.ts';
import type { Board, Planning, Slot, StepResult } from './board.ts';
import { RANK } from './protection.ts';
import type { Protection } from './protection.ts';
import { STUB_TOKENS } from './sizes.ts';

/**
 * The policy's summary of the unprotected steps (its oldest half, with `summary.span: 'oldest-half'`); without a
 * summary model, when the policy says so, or once the model failed, its fallback instead.
 */
export function summarize(p: Planning): StepResult {
  const { input } = p;
  const { policy } = input;
  const noModel =
    input.summarizer === 'failed' || (input.summarizer === 'none' && policy.summary.withoutModel === 'fallback');
  if (noModel) {
    const why = input.summarizer === 'failed' ? 'the summary model failed' : 'no summary model is configured';
    const fallback = policy.summary.fallback;
    const ids = fallback === 'halve' ? halve(p) : truncateRounds(p);
    return { ids, note: `${why}: ${fallback} instead, with an extractive summary of what it removed` };
  }
  const { span } = policy.summary;
  if (span === 'older-rounds') {
    const firstKept = Math.max(0, p.board.layout.turns.length - 1 - policy.keepTurns);
    return { ids: summarizeSpan(p, 'none', { beforeTurn: firstKept }) };
  }
  return { ids: summarizeSpan(p, 'none', { half: span === 'oldest-half' }) };
}

/**
 * AgentScope Java's strategy 6 (its README's "Compress Current Round": "Finds the latest user message and merges all
 * messages after it"): the steps of the turn in progress after its request, down to its newest step (never a result
 * the model has not read yet: AgentScope Java #1482), become one assistant message in their place, an earlier summary
 * of them folded in. The turns before it, their summaries in their places and the latest final answer stay as they
 * are. A span of one message, or one its summary would not shrink, is left alone.
 */
export function summarizeCurrentTurn({ board }: Planning): StepResult {
  const { opener } = board;
  if (!opener) return { ids: [] };
  // The steps after the request, in order, up to the first one that may not go (the newest step, a pinned one).
  const span: Slot[] = [];
  for (let s = opener.step + 1; s < board.stepSlots.length && movable(board.stepSlots[s]!); s++) {
    span.push(...board.stepSlots[s]!);
  }
  if (span.length < 2 || span.every(isSummary) || !shrinks(board, span)) return { ids: [] };
  const part = board.nextPart();
  for (const slot of span) board.summarize(slot, 'current-round', part);
  const ids = span.filter((slot) => !isSummary(slot)).map((slot) => slot.meta.id);
  return { ids, note: 'the steps of the turn in progress before its newest one, one assistant message in their place' };
}

/** Keeps only the user's text and the final reply of each completed, unprotected turn. */
export function compactTurns({ board }: Planning): StepResult {
  const ids: string[] = [];
  for (const [turn, found] of board.removableTurns('none')) {
    const inTurn = found.flatMap((s) => board.stepSlots[s]!).filter((x) => x.op.op !== 'drop');
    const finalReply = inTurn.findLast((x) => x.meta.role === 'assistant' && !(x.meta.toolCallIds?.length ?? 0));
    for (const slot of inTurn) {
      if (slot.protect === 'fixed' || slot === finalReply || opensTurn(slot.meta) || slot.turn !== turn) continue;
      board.summarize(slot);
      ids.push(slot.meta.id);
    }
  }
  return { ids };
}

/**
 * Summarizes the steps removable at `level`, oldest first; `half`: only the oldest half of them; `beforeTurn`: only
 * those of the turns before it.
 */
function summarizeSpan(
  { board, input }: Planning,
  level: Protection,
  options: { half?: boolean; beforeTurn?: number } = {},
): string[] {
  const { beforeTurn } = options;
  let found =
    beforeTurn === undefined
      ? board.removableSteps(level)
      : board.removableSteps(level, (s) => board.layout.steps[s]!.turn < beforeTurn);
  if (options.half) found = found.slice(0, Math.ceil(found.length / 2));
  const candidates = found.flatMap((s) =>
    board.stepSlots[s]!.filter((x) => x.op.op !== 'drop' && x.protect !== 'fixed'),
  );
  if (candidates.length < 2) return [];
  const spanTokens = candidates.reduce((sum, x) => sum + x.tokens, 0);
  // Worth a summary only if it at most halves what it replaces (a forced compaction asked for it anyway).
  const estimate = board.summaryTokensFor(spanTokens);
  if (input.trigger !== 'forced' && spanTokens < 2 * estimate) return [];
  // The user's own words, newest first, up to the budget: they stay verbatim beside the summary.
  let budget = input.policy.summary.keepUserTokens;
  const keptUser = new Set<Slot>();
  for (const slot of [...candidates].reverse()) {
    if (!isUserTurn(slot.meta) || slot.tokens > budget) continue;
    keptUser.add(slot);
    budget -= slot.tokens;
  }
  const ids: string[] = [];
  for (const s of found) {
    for (const slot of board.stepSlots[s]!) {
      if (slot.op.op === 'drop' || slot.protect === 'fixed' || keptUser.has(slot)) continue;
      board.summarize(slot);
      ids.push(slot.meta.id);
    }
  }
  return ids;
}

/**
 * Drops the oldest rounds into the summary, `perStep` at a time, until the target is met: whole completed turns
 * first, then the unprotected steps of the turn in progress (inside a long agent loop, a round is a step).
 */
export function truncateRounds({ board, input, met }: Planning): string[] {
  const { perStep } = input.policy.truncateRounds;
  const ids: string[] = [];
  // Protection does not change while planning: the rounds removable now stay so until dropped.
  const rounds = [
    ...board.removableTurns('none').map(([, found]) => found),
    ...board.removableSteps('none', (s) => board.layout.steps[s]!.turn === board.currentTurn).map((s) => [s]),
  ];
  for (let r = 0; r < rounds.length && !met(); r += perStep) {
    ids.push(...board.summarizeSteps(rounds.slice(r, r + perStep).flat()));
  }
  return ids;
}

/**
 * Emergency: drops the oldest steps holding about half the tokens of the removable ones (recent ones included;
 * never the newest step or a fixed message) into the summary, and again until the target is met. A round it cuts
 * into keeps its request: inside a long tool round, the halving goes by tool calls with their results (AstrBot).
 */
export function halve({ board, met }: Planning): string[] {
  const ids: string[] = [];
  // Protection does not change while planning, and a step halving drops holds nothing removable after: the steps
  // removable now, less those dropped, are the removable ones at every round (one scan, not one per round).
  let found = board.removableSteps('recent');
  const turnOf = (s: number) => board.layout.steps[s]!.turn;
  const holds = (s: number) => board.stepSlots[s]!.some((x) => x.op.op !== 'drop');
  // The steps of each turn that still hold a message: a round cut into is one with some of them left.
  const holding = new Map<number, number>();
  board.stepSlots.forEach((_, s) => {
    if (holds(s)) holding.set(turnOf(s), (holding.get(turnOf(s)) ?? 0) + 1);
  });
  while (!met() && found.length > 0) {
    const total = found.reduce((sum, s) => sum + board.stepTokens(s), 0);
    let dropped = 0;
    const half: number[] = [];
    for (const s of found) {
      if (half.length > 0 && dropped >= total / 2) break;
      half.push(s);
      dropped += board.stepTokens(s);
    }
    // The request of a round cut into (some of its steps left) stays, while there is something else to drop.
    const dropping = new Map<number, number>();
    for (const s of half) dropping.set(turnOf(s), (dropping.get(turnOf(s)) ?? 0) + 1);
    const keeps = (turn: number) => (holding.get(turn) ?? 0) - (dropping.get(turn) ?? 0) > 0;
    const opens = (s: number) => {
      const first = board.stepSlots[s]![0];
      return first !== undefined && opensTurn(first.meta);
    };
    const cut = half.filter((s) => !(opens(s) && keeps(turnOf(s))));
    const chosen = cut.length > 0 ? cut : half;
    ids.push(...board.summarizeSteps(chosen));
    const gone = new Set(chosen);
    for (const s of chosen) if (!holds(s)) holding.set(turnOf(s), holding.get(turnOf(s))! - 1);
    found = found.filter((s) => !gone.has(s));
  }
  return ids;
}

/** chatgpt-on-wechat's trimming on a provider overflow: results and user texts cut to this many characters… */
export const OVERFLOW_MAX_CHARS = 10_000;
/** …and at most this many turns kept, the turn in progress included. */
export const OVERFLOW_MAX_TURNS = 5;
/** From this many turns on, the token budget trims the oldest half of them; below it, each turn is compacted. */
export const TRIM_HALF_FROM_TURNS = 5;

/**
 * chatgpt-on-wechat's trimming, once per compaction (no second pass): over the turn limit, or over the token budget
 * with at least {@link TRIM_HALF_FROM_TURNS} turns, the oldest half of the turns (whole turns; the goal stays, for
 * its turn); over the budget with fewer, every completed turn down to its first user text and its last reply, its
 * tool chains into the summary (ours: the document writes none). Inside one long turn (ours), the oldest half of its
 * steps. On a provider overflow, {@link trimForOverflow}. Then, when the message bound fired,
 * {@link withinMessageBound}.
 */
export function trimTurns(p: Planning): StepResult {
  const trimmed = trimOnce(p);
  const bounded = withinMessageBound(p);
  if (bounded.length === 0) return trimmed;
  const note = `then the oldest rounds into the summary until ${p.board.countedMessages()} messages are left (the bound's target ${p.target.messages})`;
  return { ids: [...trimmed.ids, ...bounded], note: trimmed.note ? `${trimmed.note}; ${note}` : note };
}

/** {@link trimTurns}' one pass, as the document says it. */
function trimOnce(p: Planning): StepResult {
  const { board, input } = p;
  if (input.trigger === 'overflow') return trimForOverflow(p);
  const turns = board.layout.turns.length;
  const overTurnLimit = input.policy.maxTurns !== undefined && board.stats().turns > input.policy.maxTurns;
  if (turns >= 2 && (overTurnLimit || turns >= TRIM_HALF_FROM_TURNS)) {
    return {
      ids: dropOldestTurns(p, Math.floor(turns / 2)),
      note: `the oldest ${Math.floor(turns / 2)} of ${turns} turns trimmed`,
    };
  }
  // (Its document writes no summary here; ours does: nothing leaves a context without one, the coverage invariant.)
  if (turns >= 2) return { ...compactTurns(p), note: `${turns} turns: each keeps its first user text and last reply` };
  // One long turn (an agent loop under one message): the oldest half of its compactable steps.
  const steps = board.removableSteps('none');
  return { ids: board.summarizeSteps(steps.slice(0, Math.ceil(steps.length / 2))) };
}

/**
 * Ours, past the document's one pass: when the bound on the context's messages fired (`maxMessages`, the state's
 * 2,000 at most), the oldest rounds go into the summary until the messages meet its target, half the bound (a long
 * agent loop of 10,000 messages would keep 5,000 after halving its steps). Not for tokens: no second pass to a token
 * target.
 */
function withinMessageBound(p: Planning): string[] {
  const bound = p.target.messages;
  const { board } = p;
  if (bound === undefined || board.countedMessages() <= bound) return [];
  return truncateRounds({ ...p, met: () => board.countedMessages() <= bound });
}

/**
 * Drops the oldest `count` turns whole into the summary (never the turn in progress); returns the ids. The goal (the
 * user's first message) stays, standing for its turn, whose other messages go: the turns left are as many as if it
 * had gone with them.
 */
function dropOldestTurns({ board, input }: Planning, count: number): string[] {
  const goalTurn = board.slotById.get(input.goalId ?? '')?.turn;
  const dropping = new Set<number>();
  for (let t = 0, counted = 0; t < board.currentTurn && counted < count; t++) {
    dropping.add(t);
    if (t !== goalTurn) counted++;
  }
  const ids: string[] = [];
  for (const slot of board.slots) {
    if (!dropping.has(slot.turn) || slot.op.op === 'drop' || slot.protect === 'fixed') continue;
    board.summarize(slot);
    ids.push(slot.meta.id);
  }
  return ids;
}

/**
 * chatgpt-on-wechat on a provider overflow: tool results and user texts over {@link OVERFLOW_MAX_CHARS} cut to it (head
 * and tail, the stored original named), at most {@link OVERFLOW_MAX_TURNS} turns kept, the turn in progress included;
 * on a further attempt, the history cleared: every earlier turn and the older steps of the one in progress go into
 * the summary (all of it stored and reloadable).
 */
function trimForOverflow(p: Planning): StepResult {
  const { board, input } = p;
  const { headChars, tailChars } = input.policy.toolResults;
  const ids: string[] = [];
  for (const slot of board.slots) {
    const m = slot.meta;
    if (slot.op.op !== 'keep' || kindOf(m) !== 'normal' || m.chars <= OVERFLOW_MAX_CHARS) continue;
    if (m.role !== 'tool' && m.role !== 'user') continue;
    // User texts too, the goal's and the request's in progress: only a pinned message (its step) stays whole.
    if (slot.protect === 'fixed' && (m.role !== 'user' || board.pinned.has(m.id))) continue;
    const tokens = Math.ceil((slot.tokens * OVERFLOW_MAX_CHARS) / m.chars) + STUB_TOKENS;
    if (tokens >= slot.tokens) continue;
    const head = Math.round((OVERFLOW_MAX_CHARS * headChars) / Math.max(1, headChars + tailChars));
    const op = { op: 'truncate' as const, id: m.id, headChars: head, tailChars: OVERFLOW_MAX_CHARS - head };
    board.replace(slot, { ...op, maxTokens: tokens }, tokens);
    ids.push(m.id);
  }
  const turns = board.layout.turns.length;
  if (turns > OVERFLOW_MAX_TURNS) ids.push(...dropOldestTurns(p, turns - OVERFLOW_MAX_TURNS));
  if ((input.attempt ?? 1) < 2) {
    return {
      ids,
      note: `provider overflow: results and user texts cut to ${OVERFLOW_MAX_CHARS} characters, at most ${OVERFLOW_MAX_TURNS} turns`,
    };
  }
  // The last resort: the history cleared (into the summary), the request of the turn in progress and its newest step kept.
  ids.push(...dropOldestTurns(p, board.currentTurn));
  for (const slot of board.slots) {
    if (
      slot.op.op === 'drop' ||
      slot.turn !== board.currentTurn ||
      slot.protect === 'fixed' ||
      slot.protect === 'newest'
    )
      continue;
    board.summarize(slot);
    ids.push(slot.meta.id);
  }
  return {
    ids,
    note: `provider overflow (attempt ${input.attempt}): the history cleared into the summary, all of it stored`,
  };
}

/** Whether a message is a final answer of the assistant: no tool calls, and not a summary standing in its place. */
function isFinalAnswer(slot: Slot): boolean {
  return slot.meta.role === 'assistant' && !(slot.meta.toolCallIds?.length ?? 0) && kindOf(slot.meta) === 'normal';
}

/** Index of the latest final answer of the assistant in the context (-1: none). */
export function latestAnswerIndex(board: Board): number {
  return board.slots.findLastIndex(isFinalAnswer);
}

/**
 * Whether a step may go into a summary in its place: nothing of it dropped, fixed or of the newest step, but for an
 * earlier summary in its place (a compressed run inside a round is summarized with the round).
 */
function movable(inStep: readonly Slot[]): boolean {
  return inStep.every(
    (x) =>
      x.op.op !== 'drop' &&
      (RANK[x.protect] <= RANK.recent || (isSummary(x) && x.meta.role === 'assistant' && x.protect !== 'newest')),
  );
}

/** Whether a summary of `slots` in their place would be smaller than they are. */
function shrinks(board: Board, slots: readonly Slot[]): boolean {
  const tokens = slots.reduce((sum, x) => sum + x.tokens, 0);
  return tokens > board.summaryTokensFor(tokens);
}

/** Runs of tool calls AgentScope Java compresses in one check, at most (its strategy 1 tries 5 times). */
export const TOOL_RUNS_PER_CHECK = 5;

/**
 * AgentScope Java's strategy 1: a run of more than `toolRunMessages` (6) consecutive tool messages (the calls and their
 * results, whole steps) before the latest final answer and outside the last `keepMessages` (50) messages becomes one
 * assistant message, the summary model's account of the calls and their key results (the extractive one offline), in
 * the run's place: the oldest runs first, up to {@link TOOL_RUNS_PER_CHECK}. A run its summary would not shrink is
 * left alone.
 */
export function compressToolRuns({ board, input }: Planning): StepResult {
  const { policy } = input;
  const more = policy.toolRunMessages ?? DEFAULT_TOOL_RUN_MESSAGES;
  const latest = latestAnswerIndex(board);
  if (latest === -1) return { ids: [] };
  const end = Math.min(latest, board.slots.length - policy.keepMessages);
  const runs: Slot[][] = [];
  let run: Slot[] = [];
  const close = () => {
    if (run.length > more && shrinks(board, run)) runs.push(run);
    run = [];
  };
  for (const inStep of board.stepSlots) {
    if (runs.length === TOOL_RUNS_PER_CHECK) break;
    const first = inStep[0]!;
    const toolStep = first.meta.role === 'assistant' && (first.meta.toolCallIds?.length ?? 0) > 0;
    const within = inStep.at(-1)!.index < end;
    if (toolStep && within && movable(inStep)) {
      run.push(...inStep);
      continue;
    }
    close();
    if (!within) break;
  }
  if (runs.length < TOOL_RUNS_PER_CHECK) close();
  for (const found of runs) {
    const part = board.nextPart();
    for (const slot of found) board.summarize(slot, 'tool-run', part);
  }
  const ids = runs.flat().map((slot) => slot.meta.id);
  return ids.length === 0
    ? { ids }
    : {
        ids,
        note:
          `${runs.length} run(s) of more than ${more} consecutive tool messages (${runs.map((r) => r.length).join(', ')}) ` +
          'compressed, each into one assistant message in its place',
      };
}

/**
 * AgentScope Java's strategy 4: each round before the latest final answer (a user message, the tool calls, its final
 * answer) summarized on its own: the user's message kept verbatim, the tools and the answer after it become one
 * assistant message in their place. A round of only its answer, or one its summary would not shrink, is left alone.
 */
export function summarizeRounds({ board }: Planning): StepResult {
  const latest = latestAnswerIndex(board);
  if (latest === -1) return { ids: [] };
  const ids: string[] = [];
  let rounds = 0;
  for (const turn of board.layout.turns) {
    if (turn.start >= latest) break;
    const answer = board.slots.slice(turn.start + 1, turn.end).find(isFinalAnswer);
    if (!answer || answer.index >= latest || answer.index === turn.start + 1) continue;
    const round = board.slots.slice(turn.start + 1, answer.index + 1);
    const steps = [...new Set(round.map((slot) => slot.step))].map((s) => board.stepSlots[s]!);
    if (!steps.every(movable) || !shrinks(board, round)) continue;
    const part = board.nextPart();
    for (const slot of round) board.summarize(slot, 'round', part);
    ids.push(...round.map((slot) => slot.meta.id));
    rounds++;
  }
  return ids.length === 0
    ? { ids }
    : { ids, note: `${rounds} round(s) summarized, each on its own in its place, the user's messages kept verbatim` };
}
