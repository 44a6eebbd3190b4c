/**
 * A turn: the user's message, then model → tools → model … until a text answer, or until the turn's budget is
 * reached. Each model call is made to fit first (compaction before it when due, again when the provider says the
 * request overflows its window).
 */
import { ActivityFailure, ApplicationFailure, condition, patched } from '@temporalio/workflow';
import {
  callModel,
  MODEL_AND_TOOLS_OPTIONS,
  MODEL_OPTIONS,
  runTool,
  STORE_OPTIONS,
  storeMessage,
  TOOL_OPTIONS,
  UNTIL_CANCELLED,
} from './activities.ts';
import type {
  CallModelResult,
  ModelReply,
  NewMessage,
  NoteFigures,
  RunCalls,
  ToolFailure,
} from '../contract/activities.ts';
import { leanModelInput, leanToolInput, wholeModelResult, wholeToolResult } from '../contract/lean-calls.ts';
import type { CallOfReply } from '../engine/messages.ts';
import type { ToolLimits } from '../engine/policy.ts';
import { TOOL_RESULT_PREVIEW_CHARS } from '../contract/stream.ts';
import type { StreamAnnouncement } from '../contract/stream.ts';
import { DEFAULT_APPROVAL_SECONDS } from '../contract/inputs.ts';
import { interruptedReply } from '../contract/results.ts';
import type { InterruptResult, SteerResult } from '../contract/results.ts';
import type { ContextRecord } from '../contract/records.ts';
import type { PendingOf } from './inbox.ts';
import type { TurnControl } from './turn-control.ts';
import { shownArguments, wasCancelled } from './turn-control.ts';
import { resultIdsOf, seqOf } from '../contract/keys.ts';
import { turnBudgetOf, turnStoppedReply } from '../contract/inputs.ts';
import type { AgentInput, SendInput, TurnBudget, TurnStop } from '../contract/inputs.ts';
import type { SendResult } from '../contract/results.ts';
import type { ViewRef } from '../contract/records.ts';
import { FAILURE } from '../contract/failures.ts';
import type { Compactions } from './compaction.ts';
import type { Conversation } from './conversation.ts';
import { showProgress, showTurn } from './visibility.ts';
import { answerContextTool, CONTEXT_TOOLS_PATCH, noteFor, WORKFLOW_TOOLS } from './context-tools.ts';
import type { TurnUsage } from './context-tools.ts';
import { pinnedBlockOf, pinnedRefsOf } from '../contract/pins.ts';
import { toolSelectionOf } from '../contract/inputs.ts';
import type { DelegationSettings, ToolSelection } from '../contract/inputs.ts';
import { delegate, delegatesBuiltIn } from './delegation.ts';
import type { PinnedRef } from '../contract/pins.ts';

/**
 * Since this patch, a call that waits for approval because the agent's `toolApproval` names its tool goes through the
 * `runTool` activity first (approval `required`), which publishes `approval-asked` to the live stream, as a tool's own
 * rule always did. Histories of before waited with no activity (docs/changing-workflows.md).
 */
export const APPROVAL_ASKED_BY_NAME_PATCH = 'approval-asked-by-name';
/** What reaches a turn while it works (issue 28), from the agent's loop (agent.ts). */
export interface TurnReach {
  control: TurnControl;
  /** An input the turn takes at its next step boundary is queued. */
  boundaryQueued: () => boolean;
  /**
   * Does the inputs queued for a step boundary (forced compactions, reviews, reverts) in their order and returns the
   * turn's own: the steers to add to it, and an interrupt (taken first).
   */
  atBoundary: () => Promise<{ steers: PendingOf<'steer'>[]; interrupt?: PendingOf<'interrupt'> }>;
  interruptQueued: () => boolean;
  takeInterrupt: () => PendingOf<'interrupt'> | undefined;
  /** Answers a steer where it landed, or the interrupt once the turn has ended. */
  answer: (pending: PendingOf<'steer'> | PendingOf<'interrupt'>, result: SteerResult | InterruptResult) => void;
  /** Queues the interrupt's text as the next turn's message; returns the turn it opens. */
  openNext: (text: string) => number;
  /** The steer that opens this turn (it came to an idle agent). */
  opener?: PendingOf<'steer'>;
  /** The tools whose calls wait for approval by name, how long, and what then (the agent's `toolApproval`). */
  approval: { tools: ReadonlySet<string>; timeoutMs: number; onTimeout: 'deny' | 'approve' };
  /** The agent's `delegation` (the built-in `delegate` tool is on): what its children start with. */
  delegation?: DelegationSettings;
}

/** The agent's approval settings as a turn uses them. */
export function approvalOf(input: AgentInput): TurnReach['approval'] {
  const settings = input.toolApproval;
  return {
    tools: new Set(settings?.tools ?? []),
    timeoutMs: (settings?.timeoutSeconds ?? DEFAULT_APPROVAL_SECONDS) * 1000,
    onTimeout: settings?.onTimeout ?? 'deny',
  };
}

/** The model was not called: an interrupt came first (at the step boundary, or after a compaction the call needed). */
class InterruptedBeforeCall extends Error {}

/** Compactions after a context overflow before the turn fails (each aims at half the previous target). */
const MAX_OVERFLOW_ATTEMPTS = 3;

/**
 * Before turn budgets, a turn made at most `maxSteps` (default 8) model calls that could call tools, then one more
 * with tool_choice 'none'. A history recorded so replays that way: where the two rules first part in a run, the
 * workflow asks this patch (see {@link StepRule}). Release 0.1.0 (docs/changing-workflows.md).
 */
const TURN_BUDGET_PATCH = 'turn-budget';
const LEGACY_DEFAULT_MAX_STEPS = 8;

/** What a turn's next step may do: `stop` (the budget is reached), a `forceText` call (the old cap), or go on. */
export class StepRule {
  readonly budget: TurnBudget & { steps: number };
  /**
   * Whether this run follows the step cap of before turn budgets (its history was recorded under it): decided once
   * per run, by the patch marker, at the first point where the two rules part; undefined until then.
   */
  private legacyCap: boolean | undefined;

  private readonly input: AgentInput;

  constructor(input: AgentInput) {
    this.input = input;
    this.budget = turnBudgetOf(input);
  }

  next(step: number, stop: TurnStop | undefined): 'stop' | 'forceText' | 'go' {
    const oldCap = this.input.maxSteps ?? LEGACY_DEFAULT_MAX_STEPS;
    if (this.legacyCap === undefined && (stop !== undefined || step > oldCap)) {
      this.legacyCap = !patched(TURN_BUDGET_PATCH);
    }
    if (this.legacyCap) return step > oldCap ? 'forceText' : 'go';
    return stop ? 'stop' : 'go';
  }
}

/**
 * Runs one turn of `conversation` for the user's message `send`. The context stays a valid conversation to continue
 * whatever the budget cuts: every tool call is answered before the turn ends.
 */
export async function runTurn(
  conversation: Conversation,
  compactions: Compactions,
  input: AgentInput,
  rule: StepRule,
  send: SendInput,
  reach: TurnReach,
): Promise<SendResult> {
  const { state } = conversation;
  const turn = state.turns + 1;
  const began = Date.now(); // workflow time
  // Runs recorded before reachable turns go on as they were recorded (workflows/turn-control.ts).
  const reachable = reach.control.reachableTurns;
  let reply: ModelReply | undefined;
  let messageId = '';
  let toolCalls = 0;
  let steps = 0;
  let tokens = 0;
  let stopped: TurnStop | undefined;
  let interrupt: { pending: PendingOf<'interrupt'> | undefined; step: number } | undefined;
  conversation.progress.turnBegan(turn, new Date(began).toISOString());
  /** The tool schemas the model sees (the agent's `delegation`, `tools`). */
  const tools = toolSelectionOf(input);
  /** The turn's budget and what it has used, for the budget note and `context_budget`. */
  const usage = (): TurnUsage => ({
    steps: { used: steps, limit: rule.budget.steps },
    turnTokens: { used: tokens, ...(rule.budget.tokens !== undefined ? { limit: rule.budget.tokens } : {}) },
  });
  for (let step = 1; ; step++) {
    let forceText = false;
    if (step > 1) {
      const reached = budgetReached(rule.budget, { steps, tokens, ms: Date.now() - began });
      const next = rule.next(step, reached);
      if (next === 'stop') {
        stopped = reached;
        break;
      }
      forceText = next === 'forceText';
      conversation.progress.turnStep(step);
    }
    showProgress(state, conversation.progress); // the current details: this turn's model call
    // A step boundary (every tool call answered): a compaction that ended in the background is committed here.
    await compactions.background.commitIfFinished();
    // A draft of an automatic compaction waiting for review meanwhile (policy `review.automatic`): decided or timed out.
    await compactions.reviews.settleWaiting(false);
    // Make it fit: the gate is a comparison of counters; the plan and its steps run as activities. The first
    // call checks it again once the turn's new messages are counted. Past the soft threshold, a compaction starts
    // in the background instead, and the agent goes on.
    if (conversation.compactionDue() !== undefined) await compactions.compact('auto', conversation.tailSeq);
    else compactions.startIfDue();
    // What was sent to the agent meanwhile: forced compactions, reviews and reverts are done now, steers join the
    // step's request, an interrupt ends the turn here.
    const steers: PendingOf<'steer'>[] = [];
    if (reachable && reach.boundaryQueued()) {
      const taken = await reach.atBoundary();
      steers.push(...taken.steers);
      if (taken.interrupt) interrupt = { pending: taken.interrupt, step };
    }
    // The turn's new messages, stored and counted by its first model call: the system prompt on the agent's
    // first turn, then the user's message; then the steers that came since the last step.
    const fresh: NewMessage[] = [];
    if (step === 1) {
      // (`state.systemPrompt` is the start's unless `configure` set one; a set one waits for this turn.)
      const prompt = state.systemPrompt ?? input.systemPrompt;
      if ((state.messages.length === 0 || state.systemPromptPending) && prompt) {
        fresh.push({
          messageId: conversation.newMessageId(),
          message: { role: 'system', content: prompt },
        });
        if (state.systemPromptPending) conversation.systemPromptSent();
      }
      messageId = conversation.newMessageId();
      fresh.push({ messageId, message: { role: 'user', content: send.text } });
      conversation.startGoal(send.text);
      if (reach.opener) reach.answer(reach.opener, { turn, step, messageId, opened: true });
    }
    const steerIds = new Set<string>();
    const announce: StreamAnnouncement[] = [];
    for (const steer of steers) {
      const id = conversation.newMessageId();
      steerIds.add(id);
      fresh.push({ messageId: id, message: { role: 'user', content: steer.input.text }, steer: true });
      announce.push({ kind: 'steer', id: `steer-${id}`, text: steer.input.text, turn, step });
      reach.answer(steer, { turn, step, messageId: id, opened: false });
    }
    if (interrupt) {
      if (fresh.length) conversation.append(...steered(await storeNew(conversation, fresh), steerIds));
      break;
    }
    const view = conversation.view(); // the context so far, with the new messages, before the reply's id is taken
    const replyId = conversation.newMessageId();
    // The model as the agent has it now: the start's, or the last `configure`'s.
    const call = { view, replyId, forceText, fresh, steerIds, at: { turn, step }, announce, usage, tools };
    /** What the model call's activity answered of the reply's tool calls itself (reachable turns). */
    let ran: Ran | undefined;
    if (!reachable) ({ reply } = await callModelFitting(conversation, compactions, state.model, call));
    else {
      try {
        // The reply's plain tool calls run in the model call's activity (a forced text answer calls none).
        const runCalls = forceText ? undefined : runCallsOf(conversation, reach);
        ({ reply, ran } = await callModelFitting(conversation, compactions, state.model, { ...call, runCalls }, reach));
      } catch (error) {
        if (!wasCancelled(error) && !(error instanceof InterruptedBeforeCall)) throw error;
        const pending = reach.takeInterrupt();
        if (pending === undefined && !(error instanceof InterruptedBeforeCall)) throw error; // the workflow's own
        conversation.replyNotStored(replyId);
        interrupt = { pending, step };
        break;
      }
    }
    steps = step;
    // The request as sent is the context now (the new messages appended, any compaction applied).
    tokens += spentTokens(reply, state.contextTokens);
    conversation.append(reply.record);
    if (reply.toolCalls.length === 0) break;
    toolCalls += reply.toolCalls.length;
    if (!reachable) {
      const results = await Promise.all(
        reply.toolCalls.map((call) => {
          const resultId = conversation.newMessageId();
          return runTool.executeWithOptions(
            { ...TOOL_OPTIONS, summary: `tool ${call.function.name} (${call.id}) → ${resultId}` },
            [
              {
                ...conversation.life,
                call,
                ...callIn(call, reply!.record.id),
                resultId,
                counting: conversation.counting,
                ...toolLimits(conversation, call),
              },
            ],
          );
        }),
      );
      conversation.append(...(results as ContextRecord[]));
    } else {
      const answers = await answerCalls(conversation, reach, reply.toolCalls, reply.record.id, step, usage, ran);
      conversation.append(...answers);
      if (reach.interruptQueued()) {
        interrupt = { pending: reach.takeInterrupt(), step };
        break;
      }
    }
    if (forceText) break; // a provider that ignores tool_choice 'none': the calls are answered, the turn ends
  }
  conversation.turnDone(turn);
  conversation.progress.turnEnded();
  showTurn(state, conversation.progress);
  if (interrupt?.pending) {
    const text = interrupt.pending.input?.text;
    const opens = text !== undefined ? reach.openNext(text) : undefined;
    reach.answer(interrupt.pending, {
      interrupted: true,
      turn,
      step: interrupt.step,
      reason: `turn ${turn} interrupted at step ${interrupt.step}`,
      ...(opens !== undefined ? { opens } : {}),
    });
  }
  return {
    turn,
    reply: interrupt ? interruptedReply(turn, interrupt.step) : stopped ? turnStoppedReply(stopped) : reply!.content,
    messageId,
    replyId: reply?.record.id ?? '',
    toolCalls,
    steps,
    ...(stopped ? { stopped } : {}),
    ...(interrupt ? { interrupted: { step: interrupt.step } } : {}),
    ...(reply?.servedBy ? { servedBy: reply.servedBy } : {}),
  };
}

/** Marks the records of steers (user messages inside a turn: not the start of a turn). */
function steered(records: ContextRecord[], steerIds: ReadonlySet<string>): ContextRecord[] {
  if (steerIds.size === 0) return records;
  return records.map((record) => (steerIds.has(record.id) ? { ...record, steer: true as const } : record));
}

/** What the model call's activity answered of its reply's tool calls (`runCalls`), as its result says. */
type Ran = Pick<CallModelResult, 'toolResults' | 'toolErrors' | 'toolFailed'>;

/** What the model call's activity needs to answer the reply's plain tool calls itself (contract/activities.ts). */
function runCallsOf(conversation: Conversation, reach: TurnReach): RunCalls {
  const limits = conversation.state.policy?.tools;
  return {
    ...(reach.approval.tools.size ? { approval: [...reach.approval.tools] } : {}),
    ...(limits && Object.keys(limits).length ? { limits } : {}),
  };
}

/**
 * Answers a step's tool calls, in parallel, each run in the turn's cancellable scope: a call that waits for approval
 * waits first (denied: answered with the denial); a call an interrupt cancelled (or that was waiting when it came)
 * is answered as interrupted. Every call is answered, so the tool pairs stay whole. Any other failure fails the turn.
 * The calls the model call's activity answered (`ran`) are answered by their records; of the others, when the
 * interrupt cancelled that activity, each is answered as interrupted.
 */
async function answerCalls(
  conversation: Conversation,
  reach: TurnReach,
  calls: CallOfReply[],
  replyId: string,
  step: number,
  usage: () => TurnUsage,
  ran?: Ran,
): Promise<ContextRecord[]> {
  const answered = calls.map((call) => ({ call, resultId: conversation.newMessageId() }));
  // The activity stored its results under the ids after the reply's: the ones taken here.
  const expected = resultIdsOf(replyId, calls.length);
  if (ran?.toolResults && answered.some(({ resultId }, i) => resultId !== expected[i])) {
    throw new Error(`the results of reply ${replyId} took ids other than ${expected.join(', ')}`);
  }
  const outcomes = await Promise.allSettled(
    answered.map(({ call, resultId }, i) => {
      const lean = ran?.toolResults?.[i];
      if (lean) return Promise.resolve(wholeToolResult(lean, { resultId, callId: call.id }) as ContextRecord);
      if (ran && reach.interruptQueued()) {
        return standIn(conversation, call, resultId, interruptedResult(call, step), step);
      }
      const toolErrors = ran?.toolErrors?.[call.id];
      const failed = ran?.toolFailed?.[call.id];
      return answerCall(conversation, reach, call, replyId, resultId, { step, n: i + 1, toolErrors, failed }, usage);
    }),
  );
  const failure = outcomes.find(
    (outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected' && !wasCancelled(outcome.reason),
  );
  if (failure) throw failure.reason;
  return Promise.all(
    outcomes.map((outcome, i) =>
      outcome.status === 'fulfilled'
        ? Promise.resolve(outcome.value)
        : standIn(
            conversation,
            answered[i]!.call,
            answered[i]!.resultId,
            interruptedResult(answered[i]!.call, step),
            step,
          ),
    ),
  );
}

/** Answers `call` with `content` (a denial, an interrupt), and says so in the live stream. */
function standIn(conversation: Conversation, call: CallOfReply, resultId: string, content: string, step: number) {
  const items = standInItems(call, content, step, conversation.progress.turn?.turn);
  return storeStandIn(conversation, call, resultId, content, items);
}

/** Where `runTool` reads a call's arguments when the reply came without them: the stored reply. */
function callIn(call: CallOfReply, replyId: string): { replyId?: string } {
  return call.function.arguments === undefined ? { replyId } : {};
}

/** The policy's limits for a call's tool (`tools`), for `runTool`: none (nothing added) when it sets none. */
function toolLimits(conversation: Conversation, call: CallOfReply): { limits?: ToolLimits } {
  const limits = conversation.state.policy?.tools?.[call.function.name];
  return limits ? { limits } : {};
}

/** One tool call of a reachable turn: approval first when it needs one, then the tool, cancellable. */
async function answerCall(
  conversation: Conversation,
  reach: TurnReach,
  call: CallOfReply,
  replyId: string,
  resultId: string,
  {
    step,
    n,
    toolErrors,
    failed,
  }: { step: number; n: number; toolErrors?: number | undefined; failed?: ToolFailure | undefined },
  usage: () => TurnUsage,
): Promise<ContextRecord> {
  // `context_pin` and `context_budget`: answered here, from the agent's state (workflows/context-tools.ts).
  if (WORKFLOW_TOOLS.has(call.function.name) && patched(CONTEXT_TOOLS_PATCH)) {
    const content = await answerContextTool(conversation, call, usage());
    return storeStandIn(conversation, call, resultId, content, [resultItem(call, content)]);
  }
  // `delegate` (and a team's `delegateTo` tools, below): a child agent workflow (workflows/delegation.ts).
  const answer = (content: string) => storeStandIn(conversation, call, resultId, content, [resultItem(call, content)]);
  const place = { turn: conversation.state.turns + 1, step, n };
  if (delegatesBuiltIn(call, reach.delegation)) {
    return delegate(conversation, reach.control, call, resultId, place, reach.delegation!, answer);
  }
  const run = async (approval: 'ask' | 'required' | 'granted') => {
    const payload = await reach.control.run(() =>
      runTool.executeWithOptions(
        { ...TOOL_OPTIONS, ...UNTIL_CANCELLED, summary: `tool ${call.function.name} (${call.id}) → ${resultId}` },
        [
          // What the activity can tell itself left out of the history (contract/lean-calls.ts).
          leanToolInput({
            ...conversation.life,
            call,
            ...callIn(call, replyId),
            resultId,
            counting: conversation.counting,
            ...toolLimits(conversation, call),
            approval,
            // Attempts the tool failed in the model call's activity count toward its limit.
            ...(toolErrors ? { toolErrors } : {}),
            // A tool that failed for good there fails here, not run again.
            ...(failed ? { failed } : {}),
            // An approved call says so in the live stream as it runs.
            ...(approval === 'granted'
              ? {
                  announce: [
                    {
                      kind: 'approval-answered' as const,
                      id: `approval-answered:${call.id}`,
                      callId: call.id,
                      approved: true,
                    },
                  ],
                }
              : {}),
          }),
        ],
      ),
    );
    return wholeToolResult(payload, { resultId, callId: call.id });
  };
  const byName = reach.approval.tools.has(call.function.name);
  // A call the agent's `toolApproval` names asks through the activity too, which says so in the live stream; runs of
  // before this waited without it (APPROVAL_ASKED_BY_NAME_PATCH).
  const asks = !byName || patched(APPROVAL_ASKED_BY_NAME_PATCH);
  let result = asks ? await run(byName ? 'required' : 'ask') : undefined;
  if (result === undefined || 'approvalNeeded' in result) {
    const decided = await approvalFor(conversation, reach, call, result?.arguments);
    if (decided !== true) return standIn(conversation, call, resultId, decided, step);
    result = await run('granted');
  }
  if ('approvalNeeded' in result) throw new Error(`tool ${call.function.name} asked for approval twice`);
  if ('delegate' in result) {
    // The call's arguments as `runTool` read them (a lean reply's call comes without them).
    const whole = { ...call, function: { name: call.function.name, arguments: result.arguments } };
    return delegate(conversation, reach.control, whole, resultId, place, result.delegate, answer);
  }
  return result;
}

/**
 * Waits for a person to approve or deny `call` (or the timeout, or an interrupt). Resolves to true (run it), or the
 * result that answers it instead (the denial, or that the turn was interrupted).
 */
async function approvalFor(
  conversation: Conversation,
  reach: TurnReach,
  call: CallOfReply,
  /** The call's arguments as `runTool` answered them (the reply's call came without them). */
  args = call.function.arguments ?? '',
): Promise<true | string> {
  const { control, approval } = reach;
  const now = Date.now();
  const waiting = {
    callId: call.id,
    tool: call.function.name,
    arguments: shownArguments(args),
    since: new Date(now).toISOString(),
    until: new Date(now + approval.timeoutMs).toISOString(),
    onTimeout: approval.onTimeout,
  };
  control.waitFor(waiting);
  conversation.progress.approvalsWaiting(control.awaiting());
  showProgress(conversation.state, conversation.progress);
  const entry = control.waiting.get(call.id)!;
  await condition(() => entry.decision !== undefined || reach.interruptQueued(), approval.timeoutMs);
  control.stopWaiting(call.id);
  conversation.progress.approvalsWaiting(control.awaiting());
  showProgress(conversation.state, conversation.progress);
  const decision = entry.decision;
  if (decision === undefined && reach.interruptQueued())
    return interruptedResult(call, conversation.progress.turn?.step);
  const approved = decision ? decision.approved : approval.onTimeout === 'approve';
  if (approved) return true;
  if (decision === undefined) {
    return (
      `[denied] Nobody approved this call of ${call.function.name} within ${approval.timeoutMs / 1000} s, so it ` +
      'was not run.'
    );
  }
  const why = decision.reason ? `: ${decision.reason}` : ' (no reason given)';
  return `[denied] A person denied this call of ${call.function.name}, so it was not run${why}`;
}

/** The result of a call the turn's interrupt left unanswered. */
function interruptedResult(call: CallOfReply, step: number | undefined): string {
  return (
    `[interrupted] This call of ${call.function.name} was interrupted${step !== undefined ? ` at step ${step}` : ''} ` +
    'before it returned: a person interrupted the turn. It may have had effects; what it returns later is kept ' +
    'apart, not here.'
  );
}

/** Answers `call` with `content` instead of the tool's result (a denial, an interrupt), stored under its result id. */
async function storeStandIn(
  conversation: Conversation,
  call: CallOfReply,
  resultId: string,
  content: string,
  announce: StreamAnnouncement[],
): Promise<ContextRecord> {
  const [record] = await storeNew(
    conversation,
    [{ messageId: resultId, message: { role: 'tool', tool_call_id: call.id, content } }],
    announce,
  );
  return record!;
}

/** What the live stream says of a call's result. */
function resultItem(call: CallOfReply, content: string): StreamAnnouncement {
  return {
    kind: 'tool-result',
    id: `tool-result:${call.id}`,
    callId: call.id,
    name: call.function.name,
    preview: content.slice(0, TOOL_RESULT_PREVIEW_CHARS),
    chars: content.length,
  };
}

/** What the live stream says of a call answered without running: denied, or interrupted. */
function standInItems(call: CallOfReply, content: string, step: number | undefined, turn: number | undefined) {
  const items: StreamAnnouncement[] = [];
  if (content.startsWith('[denied]')) {
    items.push({
      kind: 'approval-answered',
      id: `approval-answered:${call.id}`,
      callId: call.id,
      approved: false,
      reason: content,
    });
  } else {
    items.push({
      kind: 'interrupted',
      id: `interrupted:${call.id}`,
      ...(turn !== undefined ? { turn } : {}),
      ...(step !== undefined ? { step } : {}),
      reason: `tool call ${call.id} (${call.function.name}) interrupted`,
    });
  }
  items.push(resultItem(call, content));
  return items;
}

/**
 * Calls the model, first storing the turn's new messages (`fresh`) in the same activity. When they make compaction
 * due, the activity does not call the model: the workflow compacts and calls again. When the provider says the
 * context is over its window (our count was short, e.g. a model of another vendor), compacts with the overflow
 * trigger and calls again, each attempt aiming lower, at most {@link MAX_OVERFLOW_ATTEMPTS} times: never a loop.
 */
async function callModelFitting(
  conversation: Conversation,
  compactions: Compactions,
  model: string,
  call: {
    view: ViewRef;
    replyId: string;
    forceText: boolean;
    fresh: NewMessage[];
    steerIds: ReadonlySet<string>;
    /** The turn and step (the reply that ends the turn publishes it), and what the call publishes first. */
    at: { turn: number; step: number };
    announce: StreamAnnouncement[];
    /** The turn's budget and use, for the budget note. */
    usage: () => TurnUsage;
    tools?: ToolSelection | undefined;
    /** The reply's plain tool calls run in the activity too (reachable turns). */
    runCalls?: RunCalls | undefined;
  },
  reach?: TurnReach,
): Promise<{ reply: ModelReply; ran?: Ran }> {
  const { state } = conversation;
  const { replyId, forceText } = call;
  let view = call.view;
  let unstored = call.fresh;
  let announce = call.announce; // (published by the first attempt only)
  /** The tail after a compaction starts at the reply, whose id is already taken. */
  const replySeq = seqOf(replyId);
  for (let attempt = 1; ;) {
    await compactions.checkBeforeCall(replyId);
    let result: CallModelResult;
    // The pinned block and the budget note as the context is now (after any compaction this call needed).
    const extras = requestExtras(conversation, call.usage);
    const calling = () =>
      callModel.executeWithOptions(
        {
          ...(call.runCalls ? MODEL_AND_TOOLS_OPTIONS : MODEL_OPTIONS),
          ...(reach ? UNTIL_CANCELLED : {}),
          summary:
            `${model}: ${state.messages.length + unstored.length} msgs → reply ${replyId}` +
            (call.runCalls ? ' + tools' : '') +
            (unstored.length ? ` (stores ${unstored.map((m) => m.messageId).join(', ')})` : ''),
        },
        [
          // What the activity can tell itself left out of the history (contract/lean-calls.ts).
          leanModelInput({
            ...conversation.life,
            model,
            view,
            replyId,
            counting: conversation.counting,
            ...(state.modelInfo?.price ? { price: state.modelInfo.price } : {}),
            window: conversation.window,
            ...(forceText ? { toolChoice: 'none' as const } : {}),
            ...(unstored.length ? { newMessages: unstored, gateCheck: conversation.gateCheck() } : {}),
            turn: call.at,
            ...(announce.length ? { announce } : {}),
            ...extras,
            ...(call.tools ? { tools: call.tools } : {}),
            ...(call.runCalls ? { runCalls: call.runCalls } : {}),
          }),
        ],
      );
    try {
      // (A reachable turn: an interrupt that came while the call was being made to fit stops it here.)
      if (reach?.interruptQueued()) throw new InterruptedBeforeCall();
      // The result whole again: a lean one's defaults restored (contract/lean-calls.ts).
      result = wholeModelResult(await (reach ? reach.control.run(calling) : calling()), { model, replyId });
      announce = [];
    } catch (error) {
      announce = [];
      // The user's message stays in the context whatever happened to the call: stored on its own now.
      if (unstored.length) conversation.append(...steered(await storeNew(conversation, unstored), call.steerIds));
      unstored = [];
      const overflow =
        error instanceof ActivityFailure &&
        error.cause instanceof ApplicationFailure &&
        error.cause.type === FAILURE.contextOverflow;
      if (!overflow || attempt > MAX_OVERFLOW_ATTEMPTS) throw error;
      await compactions.compact('overflow', replySeq, {}, attempt++);
      view = conversation.view(replyId);
      continue;
    }
    conversation.append(...steered(result.stored, call.steerIds));
    unstored = [];
    if (result.reply) {
      if (extras.budget !== undefined) conversation.noted();
      conversation.called(result.reply);
      const { toolResults, toolErrors, toolFailed } = result;
      return {
        reply: result.reply,
        ...(call.runCalls
          ? {
              ran: {
                ...(toolResults ? { toolResults } : {}),
                ...(toolErrors ? { toolErrors } : {}),
                ...(toolFailed ? { toolFailed } : {}),
              },
            }
          : {}),
      };
    }
    // The new messages made compaction due: compact, then call with them in the compacted context.
    await compactions.compact('auto', replySeq);
    view = conversation.view(replyId);
  }
}

/** What a model call adds to its view: the pinned block's pins, the budget note (nothing, for agents without). */
function requestExtras(
  conversation: Conversation,
  usage: () => TurnUsage,
): { pinned?: PinnedRef[]; budget?: NoteFigures } {
  const { state } = conversation;
  const block = pinnedBlockOf(conversation.life, state.pins, state.messages);
  const note = noteFor(conversation, usage());
  return {
    ...(block.length ? { pinned: pinnedRefsOf(block) } : {}),
    ...(note !== undefined ? { budget: note } : {}),
  };
}

/** Stores and counts messages on their own (when the model call that was to store them failed). */
function storeNew(conversation: Conversation, messages: NewMessage[], announce?: StreamAnnouncement[]) {
  return Promise.all(
    messages.map(({ messageId, message }, i) =>
      storeMessage.executeWithOptions(
        { ...STORE_OPTIONS, summary: `store ${message.role} ${messageId} (${(message.content ?? '').length} chars)` },
        [
          {
            ...conversation.life,
            messageId,
            message,
            counting: conversation.counting,
            ...(i === 0 && announce?.length ? { announce } : {}),
          },
        ],
      ),
    ),
  );
}

/**
 * Tokens a model call spent: the provider's reported usage (prompt + completion), or, when it reports none (or a
 * zero prompt, which no real request has), the request as longrun counted it and the stored reply.
 */
function spentTokens(reply: ModelReply, requestTokens: number): number {
  if (reply.usage && reply.usage.promptTokens > 0) return reply.usage.promptTokens + reply.usage.completionTokens;
  return requestTokens + reply.record.tokens;
}

/** The first budget the turn has reached (steps, then tokens, then time), if any. */
function budgetReached(
  budget: TurnBudget & { steps: number },
  used: { steps: number; tokens: number; ms: number },
): TurnStop | undefined {
  if (used.steps >= budget.steps) return { by: 'steps', limit: budget.steps, used: used.steps };
  if (budget.tokens !== undefined && used.tokens >= budget.tokens) {
    return { by: 'tokens', limit: budget.tokens, used: used.tokens };
  }
  const seconds = Math.floor(used.ms / 1000);
  if (budget.seconds !== undefined && seconds >= budget.seconds) {
    return { by: 'seconds', limit: budget.seconds, used: seconds };
  }
  return undefined;
}
