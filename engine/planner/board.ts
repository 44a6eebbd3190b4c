/**
 * The board a plan is made on: one slot per message of the context (its protection, its step and turn, the operation
 * planned for it) and the running totals, kept up to date by every change, so that each check of the target is O(1).
 * A message leaves the board in two ways: replaced in place ({@link Board.replace}), or dropped into the one summary
 * ({@link Board.summarize}), which then stands for it.
 */
import { isUserTurn, kindOf } from '../messages.ts';
import type { MessageMeta } from '../messages.ts';
import type { CompactionPolicy } from '../policy.ts';
import type { ContextStats } from '../trigger.ts';
import type { Target } from '../target.ts';
import { layoutSteps } from '../turns.ts';
import type { StepLayout } from '../turns.ts';
import { protectionOf, RANK } from './protection.ts';
import type { Protection } from './protection.ts';
import { GOAL_PLAN_TOKENS, LEDGER_FRAME_TOKENS, SUMMARY_FRAME_TOKENS, SUMMARY_WINDOW_SHARE } from './sizes.ts';
import type { Operation, PlanInput, SummaryForm, WrittenSizes } from './types.ts';

/** A message of the context on the board. */
export interface Slot {
  meta: MessageMeta;
  index: number;
  tokens: number;
  /** Index of its step in the layout. */
  step: number;
  /** Its turn (-1 before the first). */
  turn: number;
  protect: Protection;
  op: Operation;
  /** Dropped into the summary (as opposed to kept, replaced, or kept verbatim beside it). */
  summarized?: boolean;
  /** Which summary in its place it went into (0, 1, …), when the summary stands for spans in their places. */
  part?: number;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** Whether a slot holds a summary (of an earlier compaction). */
export const isSummary = (s: Slot): boolean => kindOf(s.meta) === 'summary';

/** Whether the policy's message limit leaves a slot out when it counts the working memory: system prompt, ledger. */
const outsideWorkingMemory = (s: Slot): boolean => s.meta.role === 'system' || kindOf(s.meta) === 'ledger';

export class Board {
  readonly layout: StepLayout;
  readonly slots: Slot[];
  /** The slots of each step of the layout, in order. */
  readonly stepSlots: Slot[][];
  readonly slotById: Map<string, Slot>;
  /** Index of the turn in progress (-1: none). */
  readonly currentTurn: number;
  /** The message that opened the turn in progress. */
  readonly opener: Slot | undefined;
  /** The summary's tokens at most, its frame aside. */
  readonly summaryBudget: number;
  /**
   * Tokens of the task ledger's message the first summary brings (the goal verbatim); 0 when the context holds one
   * already (later summaries replace it in place).
   */
  readonly firstLedger: number;
  private readonly fixedTokens: number;
  /** The running totals of the slots, kept up to date by {@link Board.replace}. */
  private readonly totals: ContextStats;
  /** Tokens and count of everything dropped into the summary (its estimate follows them). */
  private summarized = { tokens: 0, count: 0 };
  private prependedTo: Slot | undefined;
  /** The summary's and the ledger's tokens as they will be written, once the plan's span is final. */
  private written: { summary: number; ledger: number } | undefined;
  /**
   * The summary stands for spans in their places, one message each (set by the first drop, kept while every drop has
   * a form); each part's form in `partForms`.
   */
  private inPlace = false;
  /** Tokens dropped into each summary in its place, by part. */
  private readonly partTokens = new Map<number, number>();
  /** The form of each summary in its place, by part. */
  private readonly partForms = new Map<number, SummaryForm>();
  /** The next part number {@link Board.nextPart} hands out. */
  private partsNumbered = 0;
  /** The sum over the parts of {@link Board.summaryTokensFor} their tokens, kept with `partTokens` (O(1) stats). */
  private partSummaryTokens = 0;
  /**
   * The slots still on the board that the policy's message limit does not count (`countMessages: 'working-memory'`:
   * the system prompt and the task ledger), kept by {@link Board.replace} so that each check of the target is O(1).
   */
  private uncounted = 0;
  /** Earlier summaries are being folded into this one. */
  private folding = false;

  /** Messages pinned (contract/pins.ts): the emergency cut passes them by too. */
  readonly pinned: ReadonlySet<string>;

  private readonly policy: CompactionPolicy;

  constructor(input: Pick<PlanInput, 'context' | 'policy' | 'window' | 'fixedTokens' | 'goalId' | 'pinnedIds'>) {
    const { context, policy, window } = input;
    this.policy = policy;
    this.layout = layoutSteps(context);
    this.pinned = new Set(input.pinnedIds ?? []);
    const protect = protectionOf(context, policy, window, input.goalId, this.layout, input.pinnedIds);
    this.slots = context.map((meta, i) => ({
      meta,
      index: i,
      tokens: meta.tokens,
      step: -1,
      turn: -1,
      protect: protect[i]!,
      op: { op: 'keep', id: meta.id },
    }));
    this.layout.steps.forEach((step, s) => {
      for (let i = step.start; i < step.end; i++) {
        this.slots[i]!.step = s;
        this.slots[i]!.turn = step.turn;
      }
    });
    this.stepSlots = this.layout.steps.map((step) => this.slots.slice(step.start, step.end));
    this.slotById = new Map(this.slots.map((slot) => [slot.meta.id, slot]));
    this.currentTurn = this.layout.turns.length - 1;
    this.opener = this.layout.turns.at(-1) ? this.slots[this.layout.turns.at(-1)!.start] : undefined;
    this.fixedTokens = input.fixedTokens;
    this.totals = {
      tokens: this.slots.reduce((sum, s) => sum + s.tokens, 0),
      messages: this.slots.length,
      turns: this.slots.filter((s) => isUserTurn(s.meta)).length,
    };
    this.uncounted = this.slots.filter(outsideWorkingMemory).length;
    this.summaryBudget = summaryBudgetOf(policy, window);
    this.firstLedger = this.slots.some((s) => kindOf(s.meta) === 'ledger')
      ? 0
      : LEDGER_FRAME_TOKENS + Math.min(GOAL_PLAN_TOKENS, this.slotById.get(input.goalId ?? '')?.tokens ?? 0);
  }

  /** Tokens of everything dropped into the summary. */
  get summarizedTokens(): number {
    return this.summarized.tokens;
  }

  /** Messages dropped into the summary (0: the plan makes none). */
  get summarizedCount(): number {
    return this.summarized.count;
  }

  /** The user message the summary is prepended to (policy `summary.placement`), once the plan placed it there. */
  get prependTo(): Slot | undefined {
    return this.prependedTo;
  }

  /** Places the summary at the head of `slot` (a kept user message) instead of in a message of its own. */
  prependSummaryTo(slot: Slot | undefined): void {
    this.prependedTo = slot;
  }

  /** The tokens a summary of `spanTokens` is planned at: a quarter of them within the budget, and its frame. */
  summaryTokensFor(spanTokens: number): number {
    return Math.min(this.summaryBudget, Math.max(64, Math.ceil(spanTokens * 0.25))) + SUMMARY_FRAME_TOKENS;
  }

  /**
   * The summary's planned tokens (0 while nothing is summarized): as it will be written, once known. Summaries of spans
   * in their places: each planned from its own span.
   */
  summaryEstimate(): number {
    if (this.summarized.count === 0) return 0;
    return this.written?.summary ?? this.plannedSummaryTokens();
  }

  /** The tokens of the summary (or of each summary in its place) planned from the spans, frames included. */
  private plannedSummaryTokens(): number {
    if (!this.inPlace) return this.summaryTokensFor(this.summarized.tokens);
    return this.partSummaryTokens;
  }

  /** How many summary messages the plan writes: one per span in its place, else one. */
  get summaryParts(): number {
    if (this.summarized.count === 0) return 0;
    return this.inPlace ? this.partTokens.size : 1;
  }

  /** Whether the plan's summaries stand for spans in their places ({@link SummaryForm}), one message each. */
  get inPlaceParts(): boolean {
    return this.summarized.count > 0 && this.inPlace;
  }

  /** The form of the summary in its place numbered `part`. */
  formOf(part: number): SummaryForm | undefined {
    return this.partForms.get(part);
  }

  /** A part number no summary in its place of this plan has yet: each span in its place takes its own. */
  nextPart(): number {
    return this.partsNumbered++;
  }

  /**
   * Tokens the task ledger adds with the summary: the first one, or the growth of the one in the context (none for a
   * summary of one span in its place).
   */
  ledgerGrowth(): number {
    return this.summarized.count === 0 || this.inPlace ? 0 : (this.written?.ledger ?? this.firstLedger);
  }

  /** Whether the summary brings the context's first task ledger message. */
  private bringsLedger(): boolean {
    return this.summarized.count > 0 && !this.inPlace && this.firstLedger > 0;
  }

  /**
   * Takes the summary message and the ledger as they will be written (counted from the span's bodies) instead of the
   * estimates, for the plan's final figures and decisions. Only once the span is final: the strategies chose it by
   * the estimates, and a second pass over the same input must choose the same one.
   */
  useWritten(sizes: WrittenSizes): void {
    if (this.summarized.count === 0) return;
    const parts = this.summaryParts;
    const planned = this.plannedSummaryTokens();
    // A summary model writes the body: the frame as counted, the body at the planner's estimate, within the bound
    // the summary is cut to (never its frame); for summaries in their places, each.
    const body = planned - SUMMARY_FRAME_TOKENS * parts;
    const summary =
      sizes.summaryTokens ??
      Math.max(
        sizes.frameTokens,
        Math.min((this.summaryBudget + SUMMARY_FRAME_TOKENS) * parts, sizes.frameTokens + body),
      );
    const ledgerNow = this.slots.find((s) => kindOf(s.meta) === 'ledger')?.tokens ?? 0;
    this.written = { summary, ledger: sizes.ledgerTokens - ledgerNow };
  }

  /** The request as planned so far: the slots, the summary at its estimate and the first ledger it brings. */
  stats(): ContextStats {
    const { count } = this.summarized;
    return {
      tokens: this.fixedTokens + this.totals.tokens + this.summaryEstimate() + this.ledgerGrowth(),
      messages:
        this.totals.messages +
        (count > 0
          ? (this.inPlace ? this.partTokens.size : this.prependedTo ? 0 : 1) + (this.bringsLedger() ? 1 : 0)
          : 0),
      turns: this.totals.turns,
    };
  }

  /**
   * The messages the policy's message limit counts in the request as planned so far (policy `countMessages`): all of
   * them, or those of the working memory, without the system prompt and the task ledger (the first one a summary
   * brings included).
   */
  countedMessages(): number {
    const all = this.stats().messages;
    if (this.policy.countMessages !== 'working-memory') return all;
    return all - this.uncounted - (this.bringsLedger() ? 1 : 0);
  }

  /** Whether the request as planned so far meets `target` (tokens, and messages and turns when set). */
  meets(target: Target): boolean {
    const now = this.stats();
    return (
      now.tokens <= target.tokens &&
      (target.messages === undefined || this.countedMessages() <= target.messages) &&
      now.turns <= (target.turns ?? Infinity)
    );
  }

  /** Replaces a message (its planned size in `tokens`: an estimate the activity's count replaces) or drops it. */
  replace(slot: Slot, op: DistributiveOmit<Operation, 'tokens'>, tokens: number): void {
    if (slot.op.op === 'drop') return;
    slot.op = op.op === 'keep' || op.op === 'drop' ? op : { ...op, tokens };
    this.totals.tokens += tokens - slot.tokens;
    slot.tokens = tokens;
    if (op.op === 'drop') {
      this.totals.messages--;
      if (isUserTurn(slot.meta)) this.totals.turns--;
      if (outsideWorkingMemory(slot)) this.uncounted--;
    }
  }

  /**
   * Drops messages into the summary. The first drop also folds every earlier summary into it: the context holds one
   * summary, which covers everything that left it. With a `form`, the summary stands for one span in its place
   * ({@link SummaryForm}), `part` numbering the span (each its own summary message, of its own form:
   * {@link Board.nextPart}), and folds nothing in, as long as every drop into it has a form; a drop without one makes
   * it the one summary again, earlier summaries folded in.
   */
  summarize(slot: Slot, form?: SummaryForm, part = 0): void {
    if (slot.op.op === 'drop') return;
    if (!this.folding) {
      const first = this.summarized.count === 0;
      const mixed = !first && this.inPlace && form === undefined;
      if (first) this.inPlace = form !== undefined;
      if (mixed) {
        this.inPlace = false;
        this.partTokens.clear();
        this.partForms.clear();
        this.partSummaryTokens = 0;
        for (const s of this.slots) delete s.part;
      }
      if ((first && form === undefined) || mixed) this.foldEarlierSummaries(slot);
    }
    if (this.inPlace && !this.folding) {
      slot.part = part;
      this.partForms.set(part, form!);
      const before = this.partTokens.get(part);
      const tokens = (before ?? 0) + slot.meta.tokens;
      this.partTokens.set(part, tokens);
      this.partSummaryTokens +=
        this.summaryTokensFor(tokens) - (before === undefined ? 0 : this.summaryTokensFor(before));
    }
    this.summarized.tokens += slot.meta.tokens;
    this.summarized.count++;
    slot.summarized = true;
    this.replace(slot, { op: 'drop', id: slot.meta.id }, 0);
  }

  /** Folds every earlier summary in the context (not one prepended to a user message) into the one being made. */
  private foldEarlierSummaries(except: Slot): void {
    this.folding = true;
    for (const s of this.slots) {
      if (isSummary(s) && s.op.op !== 'drop' && s !== except && s.meta.ref === undefined) this.summarize(s);
    }
    this.folding = false;
  }

  /** Drops whole steps into the summary; returns the ids dropped (never a fixed message). */
  summarizeSteps(stepIds: readonly number[]): string[] {
    const ids: string[] = [];
    for (const s of stepIds) {
      for (const slot of this.stepSlots[s]!) {
        if (slot.op.op === 'drop' || slot.protect === 'fixed') continue;
        this.summarize(slot);
        ids.push(slot.meta.id);
      }
    }
    return ids;
  }

  /** Steps whose non-fixed messages are all at or below `level` and still hold something, oldest first. */
  removableSteps(level: Protection, where: (s: number) => boolean = () => true): number[] {
    const found: number[] = [];
    this.stepSlots.forEach((inStep, s) => {
      if (!where(s)) return;
      const removable = inStep.filter((slot) => slot.op.op !== 'drop' && slot.protect !== 'fixed');
      if (removable.length > 0 && removable.every((slot) => RANK[slot.protect] <= RANK[level])) found.push(s);
    });
    return found;
  }

  /** Completed turns (not the one in progress) whose non-fixed messages are all removable at `level`, oldest first. */
  removableTurns(level: Protection): [turn: number, steps: number[]][] {
    const byTurn = new Map<number, number[]>();
    const blocked = new Set<number>();
    this.stepSlots.forEach((inStep, s) => {
      const turn = this.layout.steps[s]!.turn;
      if (turn < 0 || turn === this.currentTurn) return;
      const removable = inStep.filter((slot) => slot.op.op !== 'drop' && slot.protect !== 'fixed');
      if (removable.some((slot) => RANK[slot.protect] > RANK[level])) blocked.add(turn);
      else if (removable.length > 0) {
        const steps = byTurn.get(turn);
        if (steps) steps.push(s);
        else byTurn.set(turn, [s]);
      }
    });
    return [...byTurn.entries()].filter(([turn]) => !blocked.has(turn));
  }

  /** Tokens a step still holds on the board. */
  stepTokens(s: number): number {
    return this.stepSlots[s]!.reduce((sum, slot) => sum + (slot.op.op === 'drop' ? 0 : slot.tokens), 0);
  }
}

/** The summary's tokens at most, its frame aside: the policy's bound within its share of the window. */
function summaryBudgetOf(policy: CompactionPolicy, window: number): number {
  return Math.max(
    64,
    Math.min(policy.summary.maxTokens, Math.floor(SUMMARY_WINDOW_SHARE * window)) - SUMMARY_FRAME_TOKENS,
  );
}

/** What the steps of a plan work with: the board, the plan's input, and whether the board meets the target. */
export interface Planning {
  readonly board: Board;
  readonly input: PlanInput;
  /** Why, when this plan is the masking pass below the trigger (it masks every old tool result at once). */
  readonly maskPass: string | undefined;
  /** Whether the board meets the plan's target now. */
  readonly met: () => boolean;
  /** The plan's target (what {@link Planning.met} compares with). */
  readonly target: Target;
}

/** What a step of the plan did: the messages it changed or removed (none: it records no step), and a note. */
export interface StepResult {
  ids: string[];
  note?: string;
}
