/**
 * What the agent's handlers hand to its loop: inputs queued in arrival order, Updates applied once (across
 * continue-as-new too), and the counts the handlers check (the turn a message would open, Updates this run). The
 * loop's work on an input goes through `run`, the one place that settles it: its result, or the failure its Update
 * answers with.
 */
import { context as traceContext } from '@opentelemetry/api';
import type { Context as TraceContext } from '@opentelemetry/api';
import { ActivityFailure, ApplicationFailure, condition, currentUpdateInfo, patched } from '@temporalio/workflow';
import type { AgentCarry, CarriedInput, InFlight, TurnCarry } from '../contract/state.ts';
import { FAILURE } from '../contract/failures.ts';
import { isHandedOver } from '../contract/results.ts';
import type {
  HandedOverResult,
  KeptResult,
  DiscardResult,
  CompactResult,
  ConfigureResult,
  InterruptResult,
  RevertResult,
  SendResult,
  SteerResult,
  UpdateResult,
} from '../contract/results.ts';
import type {
  ApproveInput,
  ConfigureInput,
  DiscardInput,
  CompactInput,
  InterruptInput,
  RevertInput,
  SendInput,
  SteerInput,
} from '../contract/inputs.ts';
import type { PinInput, PinResult, UnpinInput, UnpinResult } from '../contract/pins.ts';
import { appliedFromCarry, appliedResult, rememberApplied, storedReplyOf } from './applied-updates.ts';

/**
 * Agents recorded before it kept each `send`'s reply in its kept result; since, the reply is read back from the store
 * when the Update comes again (workflows/applied-updates.ts, docs/changing-workflows.md).
 */
const REPLY_BY_REFERENCE_PATCH = 'reply-by-reference';

/** Each kind of queued input: what it carries, and what the loop answers it with. */
interface Kinds {
  send: { input: SendInput; result: SendResult };
  compact: { input: CompactInput; result: CompactResult };
  revert: { input: RevertInput; result: RevertResult };
  approve: { input: ApproveInput; result: CompactResult };
  discard: { input: DiscardInput; result: DiscardResult };
  configure: { input: ConfigureInput; result: ConfigureResult };
  steer: { input: SteerInput; result: SteerResult };
  interrupt: { input: InterruptInput; result: InterruptResult };
  pin: { input: PinInput; result: PinResult };
  unpin: { input: UnpinInput; result: UnpinResult };
}

/**
 * What a turn in progress takes at its next step boundary (reachable turns, workflows/turn/control.ts): everything
 * but messages, which open the next turn, and `configure`, which waits for the turn to end.
 */
const AT_STEP_BOUNDARY: ReadonlySet<Kind> = new Set([
  'compact',
  'revert',
  'approve',
  'discard',
  'steer',
  'interrupt',
  'pin',
  'unpin',
]);
export type Kind = keyof Kinds;
export type InputOf<K extends Kind> = Kinds[K]['input'];
export type ResultOf<K extends Kind> = Kinds[K]['result'];

/** What every queued input carries besides its kind, input and result. */
interface Queued {
  failure?: string;
  failureType?: string;
  cause?: ActivityFailure;
  trace?: TraceContext;
  /** Set by {@link Inbox.done}: what an Update's handler waits on (see {@link Inbox.applyOnce}). */
  settled?: { done: boolean };
  /** The id of the Update that queued it. */
  updateId?: string;
  /**
   * Queued in an earlier run, which handed over inside a turn: its result is kept once done (for its client, which
   * sends the Update again) whether or not a handler of this run waits for it.
   */
  carried?: true;
  /** A `send` whose turn an earlier run began: where the turn goes on. */
  resume?: TurnCarry;
}

/**
 * An input waiting for the loop; an Update's handler waits for its `result` or `failure`. `trace` is the trace context
 * its handler ran in (with traces on, docs/metrics.md#traces): the loop does the work under it.
 */
export type PendingOf<K extends Kind> = Queued & { [P in K]: { kind: P; input: InputOf<P>; result?: ResultOf<P> } }[K];
export type Pending = PendingOf<Kind>;
/** An `approve` or `discard`: what a draft of an automatic compaction waits for. */
export type Decision = PendingOf<'approve' | 'discard'>;

/** A new input of kind `kind`, to queue. */
export function pendingOf<K extends Kind>(kind: K, input: InputOf<K>): Pending {
  return { kind, input } as Pending;
}

/** What the loop does for each kind of input ({@link dispatch}). */
export type DispatchTable = { [K in Kind]: (pending: PendingOf<K>) => unknown };

/** Hands `pending` to its kind's handler; returns what the handler returns (the loop awaits it). */
export function dispatch<K extends Kind>(table: DispatchTable, pending: PendingOf<K>): unknown {
  return (table[pending.kind] as (pending: PendingOf<K>) => unknown)(pending);
}

/**
 * An input the loop refuses although its validator let it in: a draft that is not pending any more, or stale since
 * it was validated. {@link Inbox.run} fails its Update as invalid input; the agent goes on.
 */
export class DraftRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DraftRefused';
  }
}

/**
 * A `configure` the loop refuses although its validator let it in (the context would not fit the new window even
 * after compacting, or the model's description differs from the validator's): invalid input, as a stale draft is.
 */
export class SettingsRefused extends DraftRefused {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsRefused';
  }
}

export class Inbox {
  private readonly queue: Pending[] = [];
  private readonly applied;
  /** A close was asked for: the loop ends once the queue is empty. */
  closing = false;
  /** Updates this run has handled (the server refuses more than 2,000 per run). */
  updatesThisRun = 0;
  /** Messages queued or being answered. */
  private openSends = 0;
  /** The loop's work for each kind of input ({@link serve}). */
  private work: DispatchTable | undefined;

  /** A stored reply's text by its id (an activity), for a `send` answered again. */
  private readonly readReply: (replyId: string) => Promise<string>;

  /** The inputs an earlier run carried over (its turn in progress first), by the id of the Update that queued them. */
  private readonly carriedById = new Map<string, Pending>();

  /**
   * `inFlight`: what the last run carried when it handed over inside a turn: the turn, queued first to go on, then the
   * inputs that were queued, in their order.
   */
  constructor(
    carried: AgentCarry['applied'] | undefined,
    readReply: (replyId: string) => Promise<string>,
    inFlight?: InFlight,
  ) {
    this.applied = appliedFromCarry(carried);
    this.readReply = readReply;
    if (!inFlight) return;
    const { turn } = inFlight;
    const resumed = { kind: 'send', input: { text: turn.text }, resume: turn } as Pending;
    for (const { kind, input, updateId } of inFlight.queued) this.carry({ kind, input, updateId } as Pending);
    this.carry(resumed, turn.updateId, true);
    this.closing = inFlight.closing ?? false;
  }

  /** Queues an input carried from the last run (at the front: the turn that goes on), findable by its Update's id. */
  private carry(pending: Pending, updateId = pending.updateId, front = false): void {
    pending.carried = true;
    if (updateId !== undefined) {
      pending.updateId = updateId;
      pending.settled = { done: false };
      this.carriedById.set(updateId, pending);
    }
    if (front) this.pushFront(pending);
    else this.push(pending);
  }

  /** The turn a new message would open, the agent having finished `turns`. */
  nextTurn(turns: number): number {
    return turns + this.openSends + 1;
  }

  get waiting(): boolean {
    return this.queue.length > 0;
  }

  /** Inputs waiting for the loop (the one it is on not counted). */
  get queued(): number {
    return this.queue.length;
  }

  /** The result of the current Update if it was applied already (delivered again); throws if it was let go. */
  appliedResult(): KeptResult | undefined {
    return appliedResult(this.applied, currentUpdateInfo()?.id);
  }

  /** Whether the current Update is one the last run carried over (checked when it first came: not again). */
  carriesCurrent(): boolean {
    const updateId = currentUpdateInfo()?.id;
    return updateId !== undefined && this.carriedById.has(updateId);
  }

  /** Queues a Signal's input (checked by its handler), or an Update's (from `applyOnce`). */
  push(pending: Pending): void {
    if (pending.kind === 'send') this.openSends++;
    pending.trace = traceContext.active();
    this.queue.push(pending);
  }

  /**
   * Applies an Update once: one delivered again (to the next run, after continue-as-new) is answered with its
   * result; one the last run carried over (it handed over while the Update waited) waits for the carried input;
   * otherwise it is queued (`onQueued` is told) and awaited. A failure is the Update's, of `failureType`, with the
   * activity's failure as its cause. Answered {@link HandedOverResult} when this run hands over first.
   */
  async applyOnce<R extends UpdateResult | HandedOverResult>(
    given: Pending,
    failureType: string,
    onQueued?: () => void,
  ): Promise<R> {
    this.updatesThisRun++;
    const updateId = currentUpdateInfo()?.id;
    const done = appliedResult(this.applied, updateId);
    if (done) return (await this.whole(done)) as R;
    let pending = updateId !== undefined ? this.carriedById.get(updateId) : undefined;
    if (!pending) {
      pending = given;
      pending.updateId = updateId;
      pending.settled = { done: false };
      this.push(pending);
      onQueued?.();
    }
    // The wait's predicate holds a flag, not `pending`: the SDK keeps every condition's predicate (and what it
    // holds) until the run ends, and `pending` holds the message and its reply.
    const settled = pending.settled!;
    await condition(() => settled.done);
    if (pending.failure !== undefined) {
      throw ApplicationFailure.create({
        message: pending.failure,
        type: pending.failureType ?? failureType,
        cause: pending.cause,
      });
    }
    if (isHandedOver(pending.result)) return pending.result as R; // applied by the next run, not this one
    // (A carried input's result was kept by `done`, whether or not this handler waited for it.)
    if (updateId !== undefined && !pending.carried) this.remember(updateId, pending.result as UpdateResult);
    return pending.result as R;
  }

  private remember(updateId: string, result: UpdateResult): void {
    rememberApplied(this.applied, updateId, result, { replyStored: patched(REPLY_BY_REFERENCE_PATCH) });
  }

  /** A kept result as the Update answered it: a `send`'s reply read back from the store when it was left out. */
  private async whole(kept: KeptResult): Promise<UpdateResult> {
    const replyId = storedReplyOf(kept);
    if (replyId === undefined) return kept as UpdateResult;
    const { replyStored: _, ...result } = kept as Omit<SendResult, 'reply'> & { replyStored: true };
    const whole: SendResult = { ...result, reply: await this.readReply(replyId) };
    return whole;
  }

  /** The next input, in arrival order. */
  take(): Pending | undefined {
    return this.queue.shift();
  }

  /** Queues `pending` ahead of every other input (the text of an interrupt: the next turn). */
  pushFront(pending: Pending): void {
    if (pending.kind === 'send') this.openSends++;
    this.queue.unshift(pending);
  }

  /** An input a turn takes at its next step boundary is queued. */
  get boundaryQueued(): boolean {
    return this.queue.some((pending) => AT_STEP_BOUNDARY.has(pending.kind));
  }

  /** An interrupt is queued. */
  get interruptQueued(): boolean {
    return this.queue.some((pending) => pending.kind === 'interrupt');
  }

  /**
   * Takes the first queued input a turn takes at a step boundary, in arrival order (messages and `configure` stay in
   * their place); an interrupt first, whatever came before it.
   */
  private takeAtBoundary(): Pending | undefined {
    let at = this.queue.findIndex((pending) => pending.kind === 'interrupt');
    if (at === -1) at = this.queue.findIndex((pending) => AT_STEP_BOUNDARY.has(pending.kind));
    return at === -1 ? undefined : this.queue.splice(at, 1)[0];
  }

  /**
   * A turn's step boundary (every tool call answered): the inputs queued for it are taken in their order (an
   * interrupt first). The queued work (forced compactions, reviews, reverts, pins) is done now, each through the
   * loop's work for its kind ({@link serve}, settled by {@link run}); what is the turn's own is handed to it: the
   * steers that join the step's request, and an interrupt, which ends the turn here.
   */
  async atBoundary(): Promise<{ steers: PendingOf<'steer'>[]; interrupt?: PendingOf<'interrupt'> }> {
    const steers: PendingOf<'steer'>[] = [];
    for (let pending = this.takeAtBoundary(); pending; pending = this.takeAtBoundary()) {
      if (pending.kind === 'interrupt') return { steers, interrupt: pending };
      if (pending.kind === 'steer') steers.push(pending);
      else await dispatch(this.work!, pending);
    }
    return { steers };
  }

  /** Takes the queued interrupt, if there is one (it ends the turn in progress). */
  takeInterrupt(): PendingOf<'interrupt'> | undefined {
    const pending = this.interruptQueued ? this.takeAtBoundary() : undefined;
    return pending as PendingOf<'interrupt'> | undefined;
  }

  /**
   * Answers a steer where it landed (its turn and step), or an interrupt once its turn has ended: settled as
   * {@link runNow} settles any input, while the turn goes on.
   */
  answer<K extends 'steer' | 'interrupt'>(pending: PendingOf<K>, result: ResultOf<K>): void {
    this.runNow(pending, () => result, cannotFail);
  }

  /**
   * Queues an interrupt's text as the next turn's message, ahead of every other input; returns the turn it opens,
   * the agent having finished `turns`.
   */
  openNext(text: string, turns: number): number {
    this.pushFront(pendingOf('send', { text }));
    return turns + 1;
  }

  /** The loop's work for each kind of input, which {@link atBoundary} does for the inputs a turn takes. */
  serve(work: DispatchTable): void {
    this.work = work;
  }

  /** An `approve` or `discard` is queued (the decision a draft of an automatic compaction waits for). */
  get decisionQueued(): boolean {
    return this.queue.some(isDecision);
  }

  /**
   * Takes the first queued `approve` or `discard` out of its turn: the draft of an automatic compaction waits for it
   * while the inputs before it (messages, a turn blocked on the draft) wait for the draft.
   */
  takeDecision(): Decision | undefined {
    const at = this.queue.findIndex(isDecision);
    return at === -1 ? undefined : (this.queue.splice(at, 1)[0] as Decision);
  }

  /**
   * Does the loop's `work` for `pending`, in the trace of the handler that queued it, and settles it: its `result`, or
   * the failure its Update answers with. A {@link DraftRefused} is invalid input; an activity that failed for good (a
   * rejected API key, an unknown model, retries exhausted) fails the Update, not the agent, with its innermost cause,
   * and `failed` records it in the agent. Anything else is a bug: it fails the workflow task. Resolves to the result,
   * or undefined once failed.
   *
   * `work` is awaited once, and {@link runNow} awaits nothing: the loop and a compaction in the background can resume
   * in one activation, and the order of their commands, which recorded histories pin, follows the microtask ticks each
   * path takes. An extra `await` or `async` wrapper on these paths can reorder them.
   */
  async run<R>(
    pending: Queued & { kind: Kind; result?: R },
    work: () => Promise<R>,
    failed: (why: string) => void,
  ): Promise<R | undefined> {
    try {
      return (pending.result = await inTraceOf(pending, work));
    } catch (error) {
      this.failWith(pending, error, failed);
      return undefined;
    } finally {
      this.done(pending);
    }
  }

  /** As {@link run}, for work done at once (a discard): settled before this returns, without a tick. */
  runNow<R>(pending: Queued & { kind: Kind; result?: R }, work: () => R, failed: (why: string) => void): R | undefined {
    let result: R | undefined;
    try {
      result = pending.result = inTraceOf(pending, work);
    } catch (error) {
      this.failWith(pending, error, failed);
    } finally {
      this.done(pending);
    }
    return result;
  }

  /** The one failure mapping of the loop's work (see {@link run}). */
  private failWith(pending: Queued, error: unknown, failed: (why: string) => void): void {
    if (error instanceof DraftRefused) {
      pending.failure = error.message;
      pending.failureType = FAILURE.invalidInput;
      return;
    }
    if (!(error instanceof ActivityFailure)) throw error;
    pending.failure = failureMessage(error);
    pending.cause = error;
    failed(pending.failure);
  }

  /** The loop is done with `pending` (answered or failed). */
  done(pending: Queued & { kind: Kind; result?: unknown }): void {
    if (pending.settled) pending.settled.done = true;
    if (pending.kind === 'send') this.openSends--;
    // Its Update's client may send it again only later (or never): its result is kept now.
    if (pending.carried && pending.updateId !== undefined && pending.result !== undefined) {
      if (!isHandedOver(pending.result)) this.remember(pending.updateId, pending.result as UpdateResult);
    }
  }

  /**
   * The run hands over inside a turn: the turn's own Update (`turn`, if one opened it) and every queued Update still
   * waiting are answered `handedOver` (their clients send them again to the next run). Call it again for the ones
   * that come while the run finishes ({@link unanswered}).
   */
  handOver(handedOver: HandedOverResult, turn: Queued | undefined): void {
    for (const pending of turn ? [turn, ...this.queue] : this.queue) {
      if (!pending.settled || pending.settled.done) continue;
      (pending as Queued & { result?: unknown }).result = handedOver;
      pending.settled.done = true;
    }
  }

  /** An Update queued while the run hands over waits for its answer ({@link handOver}). */
  get unanswered(): boolean {
    return this.queue.some((pending) => pending.settled && !pending.settled.done);
  }

  /** The queued inputs, in their order, as the next run takes them over. */
  queuedInputs(): CarriedInput[] {
    return this.queue.map(({ kind, input, updateId }) => ({
      kind,
      input,
      ...(updateId !== undefined ? { updateId } : {}),
    }));
  }

  /** The applied Updates the next run carries. */
  carried(): AgentCarry['applied'] {
    return [...this.applied];
  }
}

/**
 * Does the loop's work for `pending` in the trace of the handler that queued it: with traces on, a message's turn (its
 * activities, the model calls) is under the client's `send`, not under the workflow run. Without, it just runs `work`.
 */
function inTraceOf<T>(pending: Queued, work: () => T): T {
  return pending.trace ? traceContext.with(pending.trace, work) : work();
}

/** What {@link Inbox.answer} settles cannot fail: its result is given. */
function cannotFail(): void {}

function isDecision(pending: Pending): boolean {
  return pending.kind === 'approve' || pending.kind === 'discard';
}

/** The innermost cause of an activity failure, with the activity's name: what a user needs to fix it. */
export function failureMessage(error: ActivityFailure): string {
  let cause: Error = error;
  while (cause.cause instanceof Error) cause = cause.cause;
  return `${error.activityType ?? 'activity'} failed: ${cause.message}`;
}
