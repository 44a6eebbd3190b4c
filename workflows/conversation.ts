/**
 * An agent's conversation as its workflow holds it: the working context, its counters and the ids its messages take.
 * The one place workflow code changes the agent's state: the turn appends, a failed turn drops its unfinished tail,
 * a compaction swaps its context in, the loop marks the agent's life (reopened, handed over, closed).
 *
 * Pure: no Temporal API, no clock, no I/O (what the UI shows is workflows/visibility.ts), so it is unit-tested alone.
 */
import { contextCoverage } from '../engine/coverage.ts';
import { backgroundFires, countedMessages, gateAfterDiscard, gateFiresWith, NO_COOLDOWN } from '../engine/trigger.ts';
import type { Gate, GateCheck } from '../engine/trigger.ts';
import { updateLedger } from '../engine/ledger.ts';
import { agentLife, messageIdOf, seqOf } from '../contract/keys.ts';
import { CARRY_SCHEMA, endAtLastCompleteStep } from '../contract/state.ts';
import { summaryOfEvent } from '../contract/results.ts';
import type { CompactionStats } from '../contract/results.ts';
import type { AgentCarry, Prepared, Snapshot, WorkflowState } from '../contract/state.ts';
import type { AgentInput, ToolSelection } from '../contract/inputs.ts';
import { toolSelectionOf } from '../contract/inputs.ts';
import type { Draft } from '../contract/results.ts';
import type { ContextRecord, ViewRef } from '../contract/records.ts';
import type { ModelDescription, ModelReply } from '../contract/activities.ts';
import { addCall, noSpend } from '../engine/pricing.ts';
import type { ModelInfo } from '../engine/models.ts';
import { Progress } from './progress.ts';
import type { AgentLife } from '../contract/keys.ts';
import type { Pin } from '../contract/pins.ts';
import { compactInto, recountPinnedBlock, revertInto } from './context-swap.ts';
import type { Compacted, Reverted } from './context-swap.ts';

export class Conversation {
  /** Read it freely; change it only through this class's methods. */
  readonly state: WorkflowState;
  /** What the agent is doing now (this run only, not state: workflows/progress.ts). */
  readonly progress = new Progress();
  /**
   * The tool schemas the agent's model sees (its input's `delegation`, `tools`; absent: all but `delegate`): a summary
   * in conversation mode sends the same (compaction-pipeline.ts).
   */
  readonly tools: ToolSelection | undefined;

  private constructor(state: WorkflowState, tools: ToolSelection | undefined) {
    this.state = state;
    this.tools = tools;
  }

  /**
   * A new agent's conversation (its life named by `runId`), or the one a previous run carried over (continue-as-new,
   * or a reopen), with the shapes of earlier releases brought up to date.
   */
  static begin(input: AgentInput, carry: AgentCarry | undefined, runId: string): Conversation {
    checkCarrySchema(carry);
    const state: WorkflowState = carry?.state ?? {
      agentId: input.agentId,
      // A new life: its objects get keys no other life of this agent id shares (storage/keys.ts).
      life: runId,
      model: input.model,
      ...(input.systemPrompt !== undefined ? { systemPrompt: input.systemPrompt } : {}),
      status: 'running',
      turns: 0,
      messages: [],
      contextTokens: 0,
      contextTurns: 0,
      compactions: 0,
      events: [],
      cooldown: { consecutive: 0, lastTokensAfter: 0 },
    };
    // Carried beside the state before it was part of it (a run of an earlier release hands over this way).
    state.nextMessageSeq ??= carry?.nextMessageSeq ?? 1;
    renameEarlierFields(state);
    // A state of before the system prompt was kept in it: the start's (a configured one is always kept).
    if (state.systemPrompt === undefined && input.systemPrompt !== undefined) state.systemPrompt = input.systemPrompt;
    if (state.events) state.events = state.events.map(summaryOfEvent); // a run before event summaries kept it all
    if (typeof state.droppedSignals === 'number') state.droppedSignals = { earlier: state.droppedSignals };
    if (carry?.reopened) {
      state.status = 'running';
      state.runs = (state.runs ?? 1) + 1;
      state.lastHandOver = `reopened (the agent was ${carry.reopened.closedAs})`;
    }
    return new Conversation(state, toolSelectionOf(input));
  }

  /** What the next run starts from (continue-as-new); `nextMessageSeq` beside the state too, for an older worker. */
  carry(applied: AgentCarry['applied']): AgentCarry {
    return { schema: CARRY_SCHEMA, state: this.state, nextMessageSeq: this.nextSeq, applied };
  }

  get life(): AgentLife {
    return agentLife(this.state);
  }

  /** The model's window (known once {@link describedAs} ran). */
  get window(): number {
    return this.state.modelInfo!.window;
  }

  get counting() {
    return { encoding: this.state.modelInfo!.encoding, margin: this.state.modelInfo!.margin };
  }

  private get nextSeq(): number {
    return this.state.nextMessageSeq ?? 1;
  }

  /** Takes the id of the next message to store. */
  newMessageId(): string {
    const seq = this.nextSeq;
    this.state.nextMessageSeq = seq + 1;
    return messageIdOf(seq);
  }

  /**
   * The last compaction's manifest (if any), then every message stored since, up to the last id taken, or up to the
   * message before `before` (a reply whose id is taken, not yet stored).
   */
  view(before?: string): ViewRef {
    return {
      ...(this.state.base ? { base: this.state.base, baseLength: this.state.baseLength ?? 0 } : {}),
      firstSeq: this.state.tailFromSeq ?? 1,
      lastSeq: (before === undefined ? this.nextSeq : seqOf(before)) - 1,
    };
  }

  /** The sequence number the next message takes (a compaction's tail starts there). */
  get tailSeq(): number {
    return this.nextSeq;
  }

  /** Records what the model-description activity resolved once, at the agent's start. */
  describedAs(description: ModelDescription): void {
    this.state.modelInfo = description.info;
    this.state.fixedTokens = description.fixedTokens;
    this.state.contextTokens = description.fixedTokens;
    this.state.policy = description.policy;
    this.state.gate = description.gate;
  }

  /**
   * `configure` changed the agent's settings: the model, its description (window, and the gate for it), the system
   * prompt (sent before the next message when the context holds messages already).
   */
  configured(settings: { model?: string; info?: ModelInfo; gate?: Gate; systemPrompt?: string }): void {
    const state = this.state;
    if (settings.model !== undefined) state.model = settings.model;
    if (settings.info !== undefined) state.modelInfo = settings.info;
    if (settings.gate !== undefined) state.gate = settings.gate;
    if (settings.systemPrompt !== undefined) {
      state.systemPrompt = settings.systemPrompt;
      if (state.messages.length > 0) state.systemPromptPending = true;
    }
  }

  /** The model's description and gate as they are, to put back if a `configure` does not go through. */
  modelSettings(): { info: ModelInfo; gate: Gate | undefined } {
    return { info: this.state.modelInfo!, gate: this.state.gate };
  }

  /** The system prompt a `configure` set was sent (it is in the context now). */
  systemPromptSent(): void {
    delete this.state.systemPromptPending;
  }

  /** Appends to the working context; each message's count was made once, when it was stored. */
  append(...records: ContextRecord[]): void {
    const state = this.state;
    state.messages.push(...records);
    for (const record of records) {
      state.contextTokens += record.tokens;
      if (record.role === 'user' && record.steer !== true) {
        state.contextTurns = (state.contextTurns ?? 0) + 1;
        state.goalId ??= record.id;
        state.cooldown = { ...(state.cooldown ?? { lastTokensAfter: 0 }), consecutive: 0 }; // a user message resets it
      }
    }
  }

  /** The goal is the user's first message: the ledger names it from the start, whatever compaction does. */
  startGoal(text: string): void {
    if (this.state.goalId === undefined)
      this.state.ledger ??= updateLedger(undefined, { goal: text, userMessages: [] });
  }

  /**
   * A model call answered (the pace the cost decision prices), and what it spent: its reported usage at the model's
   * price, or, without one, the request as counted (the context now) and the reply.
   */
  called(reply: ModelReply): void {
    const state = this.state;
    state.callsSinceCompaction = (state.callsSinceCompaction ?? 0) + 1;
    const price = state.modelInfo?.price;
    state.spend = addCall(
      state.spend ?? noSpend(price),
      reply.usage,
      { promptTokens: state.contextTokens, completionTokens: reply.record.tokens },
      price,
    );
  }

  turnDone(turn: number): void {
    this.state.turns = turn;
    this.state.lastError = undefined;
  }

  /**
   * A turn failed after its activities' retries: the agent lives on with the messages stored so far, ended at its
   * last complete step (never an unanswered tool call), and the next message takes the id after it.
   */
  turnFailed(why: string): void {
    this.state.lastError = why;
    this.state.nextMessageSeq = endAtLastCompleteStep(this.state);
  }

  compactionFailed(why: string): void {
    this.state.lastError = why;
  }

  /**
   * The reply `replyId` was never stored (an interrupt cancelled its model call): the next message takes its id, so
   * the context's ids stay consecutive.
   */
  replyNotStored(replyId: string): void {
    if (seqOf(replyId) === this.nextSeq - 1) this.state.nextMessageSeq = seqOf(replyId);
  }

  /** Counts a Signal dropped for invalid input, by its name (a Signal cannot be rejected). */
  dropped(signal: 'message' | 'compact' | 'steer' | 'interrupt'): void {
    const counts = this.state.droppedSignals;
    this.state.droppedSignals = { ...counts, [signal]: (counts?.[signal] ?? 0) + 1 };
  }

  handedOver(reason: string | undefined): void {
    this.state.runs = (this.state.runs ?? 1) + 1;
    this.state.lastHandOver = reason;
  }

  closed(): void {
    this.state.status = 'closed';
  }

  /** The gate and the counters it compares: what the model call checks again once the turn's message is counted. */
  gateCheck(): GateCheck | undefined {
    const state = this.state;
    if (!state.gate) return undefined;
    return {
      gate: state.gate,
      stats: {
        tokens: state.contextTokens,
        messages: countedMessages(state.gate, state.messages),
        turns: state.contextTurns ?? 0,
      },
      consecutive: state.cooldown?.consecutive ?? 0,
    };
  }

  /**
   * Whether compaction is due now (engine/trigger.ts `compactionDue`, the one decision): a comparison of a few
   * numbers the last activity returned, and a look at the newest tool results.
   */
  compactionDue(): string | undefined {
    const check = this.gateCheck();
    return check ? gateFiresWith(check, [], this.state.messages)?.reason : undefined;
  }

  /**
   * Whether a compaction should start in the background now (the soft threshold, engine/trigger.ts
   * `backgroundFires`), when the blocking trigger has not fired.
   */
  backgroundDue(): string | undefined {
    const check = this.gateCheck();
    if (!check || this.compactionDue() !== undefined) return undefined;
    return backgroundFires(check.gate, check.stats, check.consecutive === 0);
  }

  /** The context as it is now, for a compaction made for it. */
  snapshot(): Snapshot {
    const messages = this.state.messages;
    return { messages: messages.length, lastId: messages.at(-1)?.id, compactions: this.state.compactions ?? 0 };
  }

  /** Why a compaction made for `made` cannot be committed now (the context it was made for has changed), if so. */
  staleFor(made: Snapshot): string | undefined {
    if ((this.state.compactions ?? 0) !== made.compactions) {
      return `it was made after compaction ${made.compactions}; the agent has had ${this.state.compactions ?? 0} since`;
    }
    const messages = this.state.messages;
    if (messages.length < made.messages || messages[made.messages - 1]?.id !== made.lastId) {
      return 'the messages it was made for are no longer the start of the context (a turn failed and dropped them)';
    }
    return undefined;
  }

  /** A compaction started in the background (`since`: workflow time, ISO). */
  backgroundStarted(seq: number, reason: string, since: string): void {
    this.state.backgroundCompaction = { seq, since, reason };
  }

  /** The background compaction ended (committed, skipped, failed or found stale). */
  backgroundEnded(): void {
    delete this.state.backgroundCompaction;
  }

  /** Records a break of the coverage invariant (reported too, and fatal to the call in strict mode). */
  violated(what: string): void {
    this.state.violations = { count: (this.state.violations?.count ?? 0) + 1, last: what };
  }

  /** What breaks the coverage invariant in the context as held now (engine/coverage.ts); empty when it holds. */
  coverage(): string[] {
    const state = this.state;
    return contextCoverage(
      state.messages,
      { baseLength: state.baseLength ?? 0, tailFromSeq: state.tailFromSeq ?? 1 },
      seqOf,
    );
  }

  /** A compaction was planned; `empty`: the plan found nothing to do. */
  planned(empty: boolean): void {
    const plans = this.state.plans ?? { made: 0, empty: 0 };
    this.state.plans = { ...plans, made: plans.made + 1, empty: plans.empty + (empty ? 1 : 0) };
  }

  /** A masking pass that would find nothing was not planned (compaction-pipeline.ts `nothingToMask`): its gate. */
  planAvoided(gate: Gate | undefined): void {
    const plans = this.state.plans ?? { made: 0, empty: 0 };
    this.state.plans = { ...plans, avoided: (plans.avoided ?? 0) + 1 };
    this.skipped(gate);
  }

  /** A compaction's plan skipped: it may have moved the gate. */
  skipped(gate: Gate | undefined): void {
    if (gate) this.state.gate = gate;
  }

  /** A draft is kept for review (the next id taken); one at a time. */
  drafted(info: Omit<Draft, 'summary'>, prepared: Prepared): void {
    this.state.drafts = (this.state.drafts ?? 0) + 1;
    this.state.draft = { info, prepared };
    delete this.state.lastDraft;
  }

  /** The pending draft is gone (approved, discarded, refused, replaced): what became of it. */
  draftEnded(what: string): void {
    delete this.state.draft;
    this.state.lastDraft = what;
  }

  /**
   * The draft of an automatic compaction was discarded (by a person or the review timeout: `what`): nothing
   * automatic fires again until the context has grown by the cooldown's first step (engine/trigger.ts
   * `gateAfterDiscard`). Returns the tokens the pause lasts until.
   */
  pausedAfterDiscard(what: string): number {
    const state = this.state;
    const messages = countedMessages(state.gate ?? {}, state.messages);
    const stats = { tokens: state.contextTokens, messages, turns: state.contextTurns ?? 0 };
    const { gate, until } = gateAfterDiscard(state.policy!, state.gate!, stats);
    state.gate = gate;
    state.cooldown = { ...(state.cooldown ?? NO_COOLDOWN), pausedUntil: until, pausedFor: what };
    return until;
  }

  /** A pin was made (contract/pins.ts): kept, and the pinned block counted again. */
  pinned(pin: Pin): void {
    this.state.pins = [...(this.state.pins ?? []), pin];
    recountPinnedBlock(this.state);
  }

  /** Takes the id of the next pin (taken even when the pin is refused: a text stored under it is never reused). */
  newPinId(): string {
    this.state.pinsMade = (this.state.pinsMade ?? 0) + 1;
    return `pin-${this.state.pinsMade}`;
  }

  /** A pin was removed; returns it. */
  unpinned(pinId: string): Pin | undefined {
    const pin = this.state.pins?.find((p) => p.id === pinId);
    if (!pin) return undefined;
    this.state.pins = this.state.pins!.filter((p) => p.id !== pinId);
    recountPinnedBlock(this.state);
    return pin;
  }

  /** The budget note was sent: the compactions it told of. */
  noted(): void {
    this.state.notedCompactions = this.state.compactions ?? 0;
  }

  /** A revert's restored context replaces the context (see {@link revertInto}). */
  reverted(done: Reverted): void {
    revertInto(this.state, done);
  }

  /**
   * The compacted context replaces the part it was made for (`made`) in one step (no await can come between):
   * the messages, their counts, the manifest the view starts from (`tailFromSeq`: the first message after it), the
   * event, the stats, the cooldown, the gate and the ledger. The messages added since `made` (a compaction prepared
   * in the background while the agent worked) stay after it, as they were.
   */
  compacted(done: Compacted): void {
    compactInto(this.state, done);
  }
}

/** State fields under the names they had before "compaction" became the one noun (a run of an earlier release). */
interface EarlierNames {
  compressions?: number;
  callsSinceCompression?: number;
}

/** The stats under the name the size ratio had before (`averageReduction`, the same ratio). */
type EarlierStats = Partial<CompactionStats> & { averageReduction?: number };

function renameEarlierFields(state: WorkflowState & EarlierNames): void {
  const stats = state.stats as EarlierStats | undefined;
  if (stats?.averageReduction !== undefined) {
    stats.averageSizeRatio ??= stats.averageReduction;
    delete stats.averageReduction;
  }
  if (state.compressions !== undefined) {
    state.compactions ??= state.compressions;
    delete state.compressions;
  }
  if (state.callsSinceCompression !== undefined) {
    state.callsSinceCompaction ??= state.callsSinceCompression;
    delete state.callsSinceCompression;
  }
}

/**
 * Refuses a carry written by a newer release than this worker's (its schema above {@link CARRY_SCHEMA}): thrown in
 * workflow code, a plain error fails the workflow task, which Temporal retries, so the run waits for a worker that
 * reads it and nothing is read wrongly.
 */
export function checkCarrySchema(carry: Pick<AgentCarry, 'schema'> | undefined): void {
  const schema = carry?.schema ?? 1;
  if (schema <= CARRY_SCHEMA) return;
  throw new Error(
    `this run's state was carried by a newer release (carry schema ${schema}; this worker reads up to ` +
      `${CARRY_SCHEMA}): run that release's workers (docs/changing-workflows.md)`,
  );
}
