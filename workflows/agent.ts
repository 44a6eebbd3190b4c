/**
 * The agent workflow: one per agent, running until closed. It holds metadata and references only; message bodies
 * live in S3 and are read by activities, so the history grows with each turn's new content, not with the context.
 *
 * Handlers only enqueue; the main loop processes one input at a time.
 */
import {
  allHandlersFinished,
  setCurrentDetails,
  condition,
  continueAsNew,
  currentUpdateInfo,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type * as activities from '../activities/index.ts';
import type { ModelReply, NewMessage } from '../contract/activities.ts';
import { EMPTY_LEDGER, updateLedger } from '../engine/ledger.ts';
import { compact, compactionDue, gateCheckOf } from './compaction.ts';
import {
  closeSignal,
  closeUpdate,
  compactSignal,
  compactUpdate,
  compressionEventsQuery,
  agentLife,
  contextQuery,
  endAtLastCompleteStep,
  HANDLER_DESCRIPTIONS,
  ledgerQuery,
  messageIdOf,
  messageSignal,
  NO_COMPACTIONS,
  publicState,
  seqOf,
  sendUpdate,
  summaryOfEvent,
  stateQuery,
  statsQuery,
  turnBudgetOf,
  turnStoppedReply,
  validateAgentInput,
  validateCompactInput,
  validateSendInput,
} from '../contract/agent.ts';
import { agentClosed, FAILURE, invalidInput } from '../contract/failures.ts';
import type {
  AgentInput,
  AgentState,
  CompactInput,
  ContextRecord,
  CompactResult,
  SendInput,
  SendResult,
  TurnBudget,
  TurnStop,
  ViewRef,
  WorkflowState,
} from '../contract/agent.ts';
import { continueAsNewReason } from './continue-as-new.ts';
import { appliedFromCarry, appliedResult, rememberApplied } from './applied-updates.ts';
import type { AgentCarry, UpdateResult } from '../contract/agent.ts';
import { SEARCH_ATTRIBUTES } from '../contract/search-attributes.ts';

type Activities = ReturnType<typeof activities.createActivities>;

/** Storage writes: short, retried until they succeed. */
const STORE_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
};
/**
 * Model calls: retried with backoff on 429, 5xx, resets and timeouts (2 s, 4 s, 8 s, … up to 1 min; a Retry-After
 * header sets the next delay), at most 8 attempts; permanent errors (401, 403, 404, 400) are not retried.
 */
const MODEL_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds', // the activity heartbeats every 2 s while the request is out
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 8 },
};
/**
 * Tool calls: each may do real work; a tool's own input errors come back as results, not failures. Any other error
 * is retried (1 s, 2 s), then fails the turn, and the unanswered call leaves the context.
 */
const TOOL_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 3 },
};
const { runTool, describeModel, storeMessage } = proxyActivities<Activities>(STORE_OPTIONS);
const { callModel } = proxyActivities<Activities>(MODEL_OPTIONS);

/** Compactions after a context overflow before the turn fails (each aims at half the previous target). */
const MAX_OVERFLOW_ATTEMPTS = 3;

/**
 * Before turn budgets, a turn made at most `maxSteps` (default 8) model calls that could call tools, then one more
 * with tool_choice 'none'. A history recorded so replays that way: where the two rules first part in a run, the
 * workflow asks this patch (see {@link budgetRule}).
 */
const TURN_BUDGET_PATCH = 'turn-budget';
const LEGACY_DEFAULT_MAX_STEPS = 8;

/** AgentContextTokens is upserted when the context has moved by this share of the window since it was shown. */
const SEARCH_TOKENS_STEP = 0.02;

interface PendingSend {
  kind: 'send';
  input: SendInput;
  result?: SendResult;
  /** Why the turn failed (after the activity's own retries): the Update fails with it, the agent lives on. */
  failure?: string;
  /** The activity's failure: the Update's failure carries it as its cause. */
  cause?: ActivityFailure;
}

interface PendingCompact {
  kind: 'compact';
  input: CompactInput;
  result?: CompactResult;
  failure?: string;
  cause?: ActivityFailure;
}

type Pending = PendingSend | PendingCompact;

export async function agentWorkflow(input: AgentInput, carry?: AgentCarry): Promise<AgentState> {
  // A new agent's input is checked before anything happens (the client checks it too); a running or reopened agent
  // keeps the input it was started with.
  if (!carry) {
    asInvalidInput(() => validateAgentInput(input));
  }
  const state: WorkflowState = carry?.state ?? {
    agentId: input.agentId,
    // A new life: its objects get keys no other life of this agent id shares (storage/keys.ts).
    life: workflowInfo().runId,
    model: input.model,
    status: 'running',
    turns: 0,
    messages: [],
    contextTokens: 0,
    contextTurns: 0,
    compressions: 0,
    events: [],
    cooldown: { consecutive: 0, lastTokensAfter: 0 },
  };
  let nextMessageSeq = carry?.nextMessageSeq ?? 1;
  const life = agentLife(state);
  const applied = appliedFromCarry(carry?.applied);
  if (state.events) state.events = state.events.map(summaryOfEvent); // a run before event summaries kept it all
  if (typeof state.droppedSignals === 'number') state.droppedSignals = { earlier: state.droppedSignals };
  if (carry?.reopened) {
    state.status = 'running';
    state.runs = (state.runs ?? 1) + 1;
    state.lastHandOver = `reopened (the agent was ${carry.reopened.closedAs})`;
  }
  const queue: Pending[] = [];
  let closing = false;
  let updatesThisRun = 0;
  /** Messages queued or being answered: the turn a new message would open is state.turns + openSends + 1. */
  let openSends = 0;
  const nextTurn = () => state.turns + openSends + 1;
  /** The result of an Update already applied (delivered again after continue-as-new); throws if it was let go. */
  const appliedResultOf = (updateId: string | undefined) => appliedResult(applied, updateId);

  if (!carry || carry.reopened) {
    upsertSearchAttributes([
      { key: SEARCH_ATTRIBUTES.status, value: 'running' },
      { key: SEARCH_ATTRIBUTES.model, value: input.model },
    ]);
  }

  /** Counts a Signal dropped for invalid input, by its name (a Signal cannot be rejected). */
  const dropped = (signal: 'message' | 'compact') => {
    state.droppedSignals = { ...state.droppedSignals, [signal]: (state.droppedSignals?.[signal] ?? 0) + 1 };
  };

  /**
   * Applies an Update once, for both Update handlers: one delivered again (to the next run, after continue-as-new)
   * is answered with its result; otherwise it is queued (`onQueued` first) and awaited. A failure is the Update's,
   * of `failureType`, with the activity's failure as its cause.
   */
  const applyOnce = async <R extends UpdateResult>(
    pending: (PendingSend | PendingCompact) & { result?: R },
    failureType: string,
    onQueued?: () => void,
  ): Promise<R> => {
    updatesThisRun++;
    const updateId = currentUpdateInfo()?.id;
    const done = appliedResultOf(updateId);
    if (done) return done as R;
    onQueued?.();
    queue.push(pending);
    await condition(() => pending.result !== undefined || pending.failure !== undefined);
    if (pending.failure !== undefined) {
      throw ApplicationFailure.create({ message: pending.failure, type: failureType, cause: pending.cause });
    }
    if (updateId !== undefined) remember(updateId, pending.result!);
    return pending.result!;
  };
  setHandler(stateQuery, () => publicState(state), { description: HANDLER_DESCRIPTIONS.state });
  setHandler(
    closeSignal,
    () => {
      closing = true;
    },
    { description: HANDLER_DESCRIPTIONS.closeSignal },
  );
  setHandler(
    closeUpdate,
    async () => {
      updatesThisRun++;
      closing = true;
      await condition(() => state.status === 'closed');
      return publicState(state);
    },
    { description: HANDLER_DESCRIPTIONS.closeUpdate },
  );
  setHandler(
    messageSignal,
    (send: SendInput) => {
      // A signal cannot be rejected: invalid input is dropped here, and counted, rather than failing the agent.
      try {
        validateSend(send, state, closing, nextTurn());
      } catch {
        dropped('message');
        return;
      }
      openSends++;
      queue.push({ kind: 'send', input: send });
    },
    { description: HANDLER_DESCRIPTIONS.message },
  );
  setHandler(
    compactSignal,
    (request: CompactInput = {}) => {
      try {
        validateCompact(request, state, closing);
      } catch {
        dropped('compact');
        return;
      }
      queue.push({ kind: 'compact', input: request });
    },
    { description: HANDLER_DESCRIPTIONS.compactSignal },
  );
  setHandler(
    compactUpdate,
    (request: CompactInput = {}): Promise<CompactResult> =>
      // Delivered again to the next run after continue-as-new: answered with its result, not compacted twice.
      applyOnce<CompactResult>({ kind: 'compact', input: request }, FAILURE.compactionFailed),
    {
      description: HANDLER_DESCRIPTIONS.compactUpdate,
      validator: (request: CompactInput = {}) => {
        if (appliedResultOf(currentUpdateInfo()?.id)) return; // delivered again: answered with its result
        validateCompact(request, state, closing);
      },
    },
  );
  setHandler(
    compressionEventsQuery,
    (query) => {
      // The temporal CLI and the UI send `null` for no input.
      const since = query?.since ?? 0;
      const events = (state.events ?? []).filter((event) => event.seq > since);
      return query?.limit != null ? events.slice(0, query.limit) : events;
    },
    { description: HANDLER_DESCRIPTIONS.compressionEvents },
  );
  setHandler(statsQuery, () => state.stats ?? NO_COMPACTIONS, {
    description: HANDLER_DESCRIPTIONS.stats,
  });
  setHandler(contextQuery, () => publicState(state).messages, { description: HANDLER_DESCRIPTIONS.context });
  setHandler(ledgerQuery, () => state.ledger ?? EMPTY_LEDGER, { description: HANDLER_DESCRIPTIONS.ledger });
  setHandler(
    sendUpdate,
    (send: SendInput): Promise<SendResult> =>
      applyOnce<SendResult>({ kind: 'send', input: send }, FAILURE.turnFailed, () => openSends++),
    {
      description: HANDLER_DESCRIPTIONS.send,
      validator: (send: SendInput) => {
        // Delivered again after continue-as-new: already applied, answered from `applied` whatever the state now.
        if (appliedResultOf(currentUpdateInfo()?.id)) return;
        validateSend(send, state, closing, nextTurn());
      },
    },
  );

  // The model's window and counting, resolved once by an activity (so a registry change never breaks replay).
  if (!state.modelInfo) {
    const description = await describeModel.executeWithOptions(
      { ...STORE_OPTIONS, summary: `describe model ${input.model}` },
      [
        {
          model: input.model,
          ...(input.modelOverride ? { override: input.modelOverride } : {}),
          ...(input.compression ? { compression: input.compression } : {}),
        },
      ],
    );
    state.modelInfo = description.info;
    state.fixedTokens = description.fixedTokens;
    state.contextTokens = description.fixedTokens;
    state.policy = description.policy;
    state.gate = description.gate;
  }
  const counting = { encoding: state.modelInfo.encoding, margin: state.modelInfo.margin };
  /** Appends to the working context; each message's count was made once, when it was stored. */
  const append = (...records: ContextRecord[]) => {
    state.messages.push(...records);
    for (const record of records) {
      state.contextTokens += record.tokens;
      if (record.role === 'user') {
        state.contextTurns = (state.contextTurns ?? 0) + 1;
        state.goalId ??= record.id;
        state.cooldown = { ...(state.cooldown ?? { lastTokensAfter: 0 }), consecutive: 0 }; // a user message resets it
      }
    }
  };

  /** Why this run should hand over to a new one now (continue-as-new), if it should. */
  const handOver = () => {
    const info = workflowInfo();
    return continueAsNewReason({
      suggested: info.continueAsNewSuggested,
      historyLength: info.historyLength,
      historySize: info.historySize,
      updates: updatesThisRun,
      runAgeMs: Date.now() - info.runStartTime.getTime(),
    });
  };

  const remember = (updateId: string, result: UpdateResult) => rememberApplied(applied, updateId, result);

  const budget = turnBudgetOf(input);
  /**
   * Whether this run follows the step cap of before turn budgets (its history was recorded under it): decided once
   * per run, by the patch marker, at the first point where the two rules part; undefined until then.
   */
  let legacyCap: boolean | undefined;
  /** What the turn's next step may do: `stop` (the budget is reached), a `forceText` call (the old cap), or go on. */
  const budgetRule = (step: number, stop: TurnStop | undefined): 'stop' | 'forceText' | 'go' => {
    const oldCap = input.maxSteps ?? LEGACY_DEFAULT_MAX_STEPS;
    if (legacyCap === undefined && (stop !== undefined || step > oldCap)) legacyCap = !patched(TURN_BUDGET_PATCH);
    if (legacyCap) return step > oldCap ? 'forceText' : 'go';
    return stop ? 'stop' : 'go';
  };

  const newMessageId = () => messageIdOf(nextMessageSeq++);
  /** The last compression's manifest (if any), then every message stored since. */
  const currentView = (): ViewRef => ({
    ...(state.base ? { base: state.base, baseLength: state.baseLength ?? 0 } : {}),
    firstSeq: state.tailFromSeq ?? 1,
    lastSeq: nextMessageSeq - 1,
  });

  for (;;) {
    await condition(() => queue.length > 0 || closing || handOver() !== undefined);
    const pending = queue.shift();
    if (pending?.kind === 'compact') {
      try {
        // `force: false` asks for a compaction only if the automatic trigger fires now (cooldown included).
        const trigger = pending.input.force === false ? 'auto' : 'forced';
        pending.result = await compact(state, trigger, nextMessageSeq, pending.input);
      } catch (error) {
        if (!(error instanceof ActivityFailure)) throw error;
        pending.failure = failureMessage(error);
        pending.cause = error;
        state.lastError = pending.failure;
      }
      continue;
    }
    if (pending) {
      try {
        pending.result = await runTurn(pending.input);
        state.lastError = undefined;
      } catch (error) {
        // A turn that cannot finish (a rejected API key, an unknown model, retries exhausted) fails its Update,
        // not the agent: the stored messages stay, and the next input can succeed once the cause is fixed.
        if (!(error instanceof ActivityFailure)) throw error;
        pending.failure = failureMessage(error);
        pending.cause = error;
        state.lastError = pending.failure;
        nextMessageSeq = endAtLastCompleteStep(state);
      } finally {
        openSends--;
      }
      continue;
    }
    if (closing) break;
    // The server suggests continue-as-new: only once every Update has been answered. An input that arrives
    // meanwhile is processed first (its handler cannot finish before the loop answers it).
    await condition(() => allHandlersFinished() || queue.length > 0 || closing);
    if (queue.length === 0 && !closing) {
      state.runs = (state.runs ?? 1) + 1;
      state.lastHandOver = handOver();
      await continueAsNew<typeof agentWorkflow>(input, { state, nextMessageSeq, applied: [...applied] });
    }
  }

  state.status = 'closed';
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.status, value: 'closed' },
    { key: SEARCH_ATTRIBUTES.contextTokens, value: state.contextTokens },
  ]);
  await condition(allHandlersFinished);
  return publicState(state);

  /**
   * Calls the model, first storing the turn's new messages (`fresh`) in the same activity. When they make compression
   * due, the activity does not call the model: the workflow compacts and calls again. When the provider says the
   * context is over its window (our count was short, e.g. a model of another vendor), compacts with the overflow
   * trigger and calls again, each attempt aiming lower, at most {@link MAX_OVERFLOW_ATTEMPTS} times: never a loop.
   */
  async function callModelFitting(firstView: ViewRef, replyId: string, forceText: boolean, fresh: NewMessage[] = []) {
    let view = firstView;
    let unstored = fresh;
    /** The view again after a compaction: its tail ends before the reply, whose id is already taken. */
    const viewAfterCompaction = () => ({ ...currentView(), lastSeq: seqOf(replyId) - 1 });
    for (let attempt = 1; ;) {
      let result: Awaited<ReturnType<typeof callModel>>;
      try {
        result = await callModel.executeWithOptions(
          {
            ...MODEL_OPTIONS,
            summary:
              `${input.model}: ${state.messages.length + unstored.length} msgs → reply ${replyId}` +
              (unstored.length ? ` (stores ${unstored.map((m) => m.messageId).join(', ')})` : ''),
          },
          [
            {
              ...life,
              model: input.model,
              view,
              replyId,
              counting,
              window: state.modelInfo!.window,
              ...(forceText ? { toolChoice: 'none' as const } : {}),
              ...(unstored.length ? { newMessages: unstored, gateCheck: gateCheckOf(state) } : {}),
            },
          ],
        );
      } catch (error) {
        // The user's message stays in the context whatever happened to the call: stored on its own now.
        if (unstored.length) append(...(await storeNew(unstored)));
        unstored = [];
        const overflow =
          error instanceof ActivityFailure &&
          error.cause instanceof ApplicationFailure &&
          error.cause.type === FAILURE.contextOverflow;
        if (!overflow || attempt > MAX_OVERFLOW_ATTEMPTS) throw error;
        await compact(state, 'overflow', seqOf(replyId), {}, attempt++);
        view = viewAfterCompaction();
        continue;
      }
      append(...result.stored);
      unstored = [];
      if (result.reply) {
        state.callsSinceCompression = (state.callsSinceCompression ?? 0) + 1;
        return result.reply;
      }
      // The new messages made compression due: compact, then call with them in the compacted context.
      await compact(state, 'auto', seqOf(replyId));
      view = viewAfterCompaction();
    }
  }

  /** Stores and counts messages on their own (when the model call that was to store them failed). */
  function storeNew(messages: NewMessage[]) {
    return Promise.all(
      messages.map(({ messageId, message }) =>
        storeMessage.executeWithOptions(
          { ...STORE_OPTIONS, summary: `store ${message.role} ${messageId} (${(message.content ?? '').length} chars)` },
          [{ ...life, messageId, message, counting }],
        ),
      ),
    );
  }

  async function runTurn(send: SendInput): Promise<SendResult> {
    const turn = state.turns + 1;
    // Model → tools → model … until a text answer, or until the turn's budget is reached: then the turn ends before
    // another model call, with every tool call answered (the context stays a valid conversation to continue).
    const began = Date.now(); // workflow time
    let reply!: ModelReply;
    let messageId = '';
    let toolCalls = 0;
    let steps = 0;
    let tokens = 0;
    let stopped: TurnStop | undefined;
    for (let step = 1; ; step++) {
      let forceText = false;
      if (step > 1) {
        const reached = budgetReached(budget, { steps, tokens, ms: Date.now() - began });
        const rule = budgetRule(step, reached);
        if (rule === 'stop') {
          stopped = reached;
          break;
        }
        forceText = rule === 'forceText';
      }
      // Make it fit: the gate is a comparison of counters; the plan and its steps run as activities. The first
      // call checks it again once the turn's new messages are counted.
      if (compactionDue(state) !== undefined) await compact(state, 'auto', nextMessageSeq);
      // The turn's new messages, stored and counted by its first model call: the system prompt on the agent's
      // first turn, then the user's message.
      const fresh: NewMessage[] = [];
      if (step === 1) {
        if (state.messages.length === 0 && input.systemPrompt) {
          fresh.push({ messageId: newMessageId(), message: { role: 'system', content: input.systemPrompt } });
        }
        messageId = newMessageId();
        fresh.push({ messageId, message: { role: 'user', content: send.text } });
        // The goal is the user's first message: the ledger names it from the start, whatever compaction does.
        if (state.goalId === undefined) state.ledger ??= updateLedger(undefined, { goal: send.text, userMessages: [] });
      }
      const view = currentView(); // the context so far, with the new messages, before the reply's id is taken
      const replyId = newMessageId();
      reply = await callModelFitting(view, replyId, forceText, fresh);
      steps = step;
      // The request as sent is the context now (the new messages appended, any compaction applied).
      tokens += spentTokens(reply, state.contextTokens);
      append(reply.record);
      if (reply.toolCalls.length === 0) break;
      toolCalls += reply.toolCalls.length;
      const results = await Promise.all(
        reply.toolCalls.map((call) => {
          const resultId = newMessageId();
          return runTool.executeWithOptions(
            { ...TOOL_OPTIONS, summary: `tool ${call.function.name} (${call.id}) → ${resultId}` },
            [{ ...life, call, resultId, counting }],
          );
        }),
      );
      append(...results);
      if (forceText) break; // a provider that ignores tool_choice 'none': the calls are answered, the turn ends
    }
    state.turns = turn;
    // The search attribute follows the context in steps of 2% of the window (each upsert is a visibility write,
    // measured: see BENCHMARKS.md, The agent, session 3); compressions and the details below show every change.
    const shown = workflowInfo().typedSearchAttributes.get(SEARCH_ATTRIBUTES.contextTokens);
    if (shown === undefined || Math.abs(state.contextTokens - shown) >= SEARCH_TOKENS_STEP * state.modelInfo!.window) {
      upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.contextTokens, value: state.contextTokens }]);
    }
    setCurrentDetails(currentDetails(state));
    const servedBy = reply.servedBy ? { servedBy: reply.servedBy } : {};
    return {
      turn,
      reply: stopped ? turnStoppedReply(stopped) : reply.content,
      messageId,
      replyId: reply.record.id,
      toolCalls,
      steps,
      ...(stopped ? { stopped } : {}),
      ...servedBy,
    };
  }
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

/** The innermost cause of an activity failure, with the activity's name: what a user needs to fix it. */
function failureMessage(error: ActivityFailure): string {
  let cause: Error = error;
  while (cause.cause instanceof Error) cause = cause.cause;
  return `${error.activityType ?? 'activity'} failed: ${cause.message}`;
}

/** What the Temporal UI shows as the agent's current details (no message content). */
function currentDetails(state: WorkflowState): string {
  const window = state.modelInfo?.window ?? 0;
  const percent = window > 0 ? ` (${Math.round((100 * state.contextTokens) / window)}%)` : '';
  const last = state.events?.at(-1);
  return [
    `**${state.status}** · model ${state.model} · preset ${state.policy?.preset ?? 'default'}`,
    `context: ${state.contextTokens} of ${window} tokens${percent}`,
    `turns: ${state.turns} · messages in context: ${state.messages.length}`,
    `compressions: ${state.compressions ?? 0}` +
      (last ? ` · last: ${last.tokensBefore} → ${last.tokensAfter} tokens` : ''),
    ...(last ? [`last strategies: ${last.strategies.join(', ')}`] : []),
  ].join('\n\n');
}

/** Rejects a compaction request with a clear error naming the field (the input's rules are the contract's). */
function validateCompact(request: CompactInput, state: WorkflowState, closing: boolean): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  asInvalidInput(() => validateCompactInput(request));
}

/** Runs a contract check; what it rejects is thrown as an {@link FAILURE.invalidInput} failure, message kept. */
function asInvalidInput(check: () => void): void {
  try {
    check();
  } catch (error) {
    throw invalidInput((error as Error).message);
  }
}

/**
 * Rejects bad input before it enters history; each message names the field and the limit. `nextTurn` is the turn
 * this message would open, checked against the sender's `expectedTurn`.
 */
function validateSend(send: SendInput, state: WorkflowState, closing: boolean, nextTurn: number): void {
  if (state.status === 'closed' || closing) throw agentClosed(state.agentId);
  asInvalidInput(() => validateSendInput(send));
  if (send.expectedTurn !== undefined && send.expectedTurn !== nextTurn) {
    throw invalidInput(
      `expectedTurn: this message would open turn ${nextTurn}, not ${send.expectedTurn} ` +
        '(another message came first; read the state and try again)',
    );
  }
}
