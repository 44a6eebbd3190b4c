/**
 * `longrun replay FILE.jsonl`: runs a recorded session (OpenAI chat messages as JSONL, tool calls included) through
 * a real agent workflow, the recorded assistant messages standing in for the model and the recorded tool results
 * for the tools, under a chosen preset and window, and reports what compaction did. Users tune their settings
 * with it before going live. Runs against the servers stack/servers.ts picks: the configured ones, else embedded ones.
 *
 * Every recorded step is replayed: the agent's step budget covers the longest recorded turn, and each request is
 * answered by locating it in the recording (llm/replay.ts locateRecordedReply: by its newest step's tool call ids,
 * so compaction inside a turn does not shift it, and by its place in the request where the recording reuses ids),
 * its tool calls by the results recorded after that step (llm/replay.ts RecordingReplayer). The report says how many
 * recorded steps were replayed, which one answered each request and, for a turn cut short, why.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { readNamedFile } from './cli/parse.ts';
import type { Client } from '@temporalio/client';
import { ToolRegistry } from '../activities/tools.ts';
import { agentState, closeAgentAndWait, sendMessage, startAgent } from '../client/agents.ts';
import { pinMessage } from '../client/pins.ts';
import { storedCompactionEvents } from '../client/reads.ts';
import { agentCostOf, formatShare, formatUsd } from '../contract/state.ts';
import type { AgentCost, AgentState } from '../contract/state.ts';
import type { ModelPrice, ResolvedPrice } from '../engine/pricing.ts';
import type { PolicyOverrides } from '../engine/policy.ts';
import { replayCost, sharedPrefixLengths } from './replay-cost.ts';
import type { SendResult } from '../contract/results.ts';
import { loadSettings } from '../config/settings.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { countMessage, countRequest, countToolSchemas, loadTokenCounter } from '../engine/tokens.ts';
import { pairViewOf, toolPairViolations } from '../engine/tool-pairs.ts';
import { startChatServer } from '../llm/chat-server.ts';
import type { ScriptedReply } from '../llm/chat-server.ts';
import { createOpenAI } from '../llm/openai.ts';
import { indexRecording, parseSessionJsonl, RecordingReplayer, SessionFormatError } from '../llm/replay.ts';
import type { RecordedAnswer, RecordingIndex } from '../llm/replay.ts';
import { startServers } from '../stack/servers.ts';
import { S3BlobStore } from '../storage/s3.ts';
import { compactionKey } from '../contract/keys.ts';
import { deleteReplayAgent, renderDeletion } from './replay-cleanup.ts';
import type { AgentDeletion } from './replay-cleanup.ts';
import { startInProcessAgents } from '../worker/in-process.ts';
import { installRuntime } from '../worker/telemetry.ts';

export interface ReplayOptions {
  file: string;
  preset?: string;
  /** Policy overrides on top of the preset, as an agent's `compaction` setting takes them (`--policy FILE`). */
  policy?: PolicyOverrides;
  /** The model's window for this replay (default 128,000: gpt-4o-mini). */
  window?: number;
  /** The price to cost the replay at (default: gpt-4o-mini's list price in the model registry). */
  price?: ModelPrice;
  log?: (line: string) => void;
  /**
   * Pin the session's first user message (its task) once the first turn is done, and report whether its text reached
   * the model verbatim in every request after (`pins`): `npm run fidelity`'s pins column.
   */
  pin?: boolean;
  /** Called once the agent has closed, before its workflow is deleted: to read its history (bench/history-breakdown.ts). */
  inspect?: (client: Client, agentId: string) => Promise<void>;
}

/** What became of the pin a replay made ({@link ReplayOptions.pin}). */
export interface ReplayPins {
  /** The pinned message's id. */
  messageId: string;
  /** Requests after the pin, and those that held its text verbatim. */
  requests: number;
  verbatim: number;
  /** Compactions after the pin. */
  compactions: number;
}

/** Of `requests`, those that hold `text` verbatim in one of their messages (in place, or in the pinned block). */
export function requestsHolding(text: string, requests: readonly ChatMessage[][]): number {
  return requests.filter((messages) => messages.some((m) => textOf(m.content).includes(text))).length;
}

/**
 * Pins the agent's first user message (its goal) once its first turn has stored it: what the replay's pins figure
 * follows. Undefined when the pin is refused (a task over the pin budget), which the log says.
 */
async function pinTask(
  client: Client,
  agentId: string,
  text: string,
  requests: () => number,
  turnEnded: () => boolean,
  log: (line: string) => void,
): Promise<{ messageId: string; text: string; fromRequest: number; compactions: number } | undefined> {
  let state = await agentState(client, agentId);
  while (state.goalId === undefined) {
    if (turnEnded()) return undefined; // (a turn that failed before it stored its message: the send says why)
    await sleep(50);
    state = await agentState(client, agentId);
  }
  const messageId = state.goalId;
  const compactions = state.compactions ?? 0;
  try {
    await pinMessage(client, agentId, messageId);
  } catch (error) {
    log(`[replay] the task was not pinned: ${(error as Error).message}`);
    return undefined;
  }
  return { messageId, text, fromRequest: requests(), compactions };
}

/** A recorded turn whose assistant messages were not all replayed, and why. */
export interface CutShort {
  /** 1-based. */
  turn: number;
  recorded: number;
  replayed: number;
  reason: string;
}

export interface ReplayReport {
  file: string;
  /** The agent the replay ran (its workflow is agent-<agentId>). */
  agentId: string;
  /** Where the agent's objects are stored (messages, compactions): agents/<agentId>/<life>/. */
  storagePrefix: string;
  preset: string;
  /** The policy overrides it ran under on top of the preset (`--policy FILE`), when given. */
  policy?: PolicyOverrides;
  window: number;
  messages: number;
  turns: number;
  /** Requests the model server received. */
  modelCalls: number;
  /** Assistant messages in the recording. */
  recordedSteps: number;
  /** Model calls answered with a recorded assistant message (each recorded message counted once). */
  replayedSteps: number;
  /**
   * Per request, in the order the model server received them (as `requestTokens`): the recorded step that answered
   * it (turn and step 1-based, `message` its 1-based place in the recording, how it was placed), null for a request
   * the recording had no reply for. A step answering more than one request (a retried call) is counted once above.
   */
  answeredWith: (RecordedAnswer | null)[];
  /** The step budget the agent ran under: the longest recorded turn, plus a margin. */
  stepBudget: number;
  /** Turns not replayed in full (replayedSteps < recordedSteps), each with its reason. */
  cutShort: CutShort[];
  compactions: {
    seq: number;
    trigger: string;
    strategies: string[];
    tokensBefore: number;
    tokensAfter: number;
    /** Storage keys of the event, the removed segment (JSONL) and the context manifest it left. */
    keys: { event: string; removed: string; context: string };
    /** Messages that left the context. */
    removedCount: number;
    summary: string | null;
    facts: { found: number; missing: number; pinned: string[] } | null;
    offloaded: { key: string; reloadIdentical: boolean }[];
  }[];
  toolPairViolations: number;
  maxRequestTokens: number;
  /** Each request's tokens, in the order the model server received them. */
  requestTokens: number[];
  /**
   * Of each request's tokens, those a provider's prompt cache would serve (beside `requestTokens`): its longest
   * prefix of whole messages an earlier request began with, from 1,024 tokens in steps of 128 (commands/replay-cost.ts).
   */
  cachedTokens: number[];
  /** Each request's reply: the recorded answer's tokens (0 for a request the recording had no reply for). */
  replyTokens: number[];
  /** The price the costs are at (USD per million tokens; the agent's), null when none is known. */
  price: ResolvedPrice | null;
  /** USD of the requests as sent, with caching, plus the compactions' summary calls; null without a price. */
  cost: number | null;
  /** USD of sending everything with caching: each request the whole transcript, the previous one its cached prefix. */
  costWithoutCompaction: number | null;
  /**
   * The least any compaction that sends each recorded message whole could cost (commands/replay-cost.ts
   * `costFloorOf`): the replies, each message once uncached, the first request cached in every later one.
   */
  costFloor: number | null;
  /** Cached input tokens over input tokens (0 to 1), as sent, and when sending everything. */
  cachedInputShare: number | null;
  cachedInputShareWithoutCompaction: number | null;
  /**
   * The agent's own account (its state's `cost`): the usage the replay's model server reported (it caches prompts as
   * OpenAI does, counting tokens its own way: llm/prompt-cache.ts), at the same price.
   */
  agentCost: AgentCost | null;
  /** What each request would have carried without compaction: the whole recording up to its last message. */
  requestTokensWithoutCompaction: number[];
  tokensSent: number;
  tokensSentWithoutCompaction: number;
  historyBytes: number;
  /**
   * Compaction plans the agent made, those that found nothing to do, and masking passes it did not plan because it
   * could tell they would find nothing (the agent's `plans`; zeros for an agent of before they were counted).
   */
  plans: { made: number; empty: number; avoided: number };
  continueAsNew: number;
  finalView: ChatMessage[];
  /**
   * On a server the replay did not start: its agent's deletion from the namespace, reported gone only once the
   * namespace's list shows none of its runs. Null on the embedded server (it is removed with the server).
   */
  deletion: AgentDeletion | null;
  /** The pin's figures, when the replay pinned ({@link ReplayOptions.pin}). */
  pins?: ReplayPins;
}

/** Steps beyond the longest recorded turn the agent may take (it never needs them: past a turn's end it gets text). */
const STEP_MARGIN = 10;

/** Why a recorded turn was not replayed in full. */
function cutShortReason(
  recording: RecordingIndex,
  turn: number,
  replayed: Set<number>,
  result: SendResult,
  unplaced: number,
): string {
  if (result.stopped) {
    return `the turn stopped at its ${result.stopped.by} budget (${result.stopped.used} of ${result.stopped.limit})`;
  }
  const replies = recording.turns[turn]!.replies;
  const textAt = replies.findIndex((reply, i) => replayed.has(i) && !(reply.tool_calls?.length ?? 0));
  if (textAt !== -1 && textAt < replies.length - 1) {
    return (
      `recorded reply ${textAt + 1} of ${replies.length} has no tool calls, so the agent's turn ended there ` +
      '(the recording goes on without a user message)'
    );
  }
  if (unplaced > 0) return `${unplaced} request(s) could not be placed in the recording`;
  return "the agent's turn ended before the recording's";
}

export async function runReplay(options: ReplayOptions): Promise<ReplayReport> {
  const log = options.log ?? (() => {});
  const session = parseSessionJsonl(readNamedFile('replay', options.file));
  const recording = indexRecording(session);
  const turns = recording.turns;
  if (turns.length === 0) {
    throw new SessionFormatError(undefined, `${options.file}: the recording has no user message (each one is a turn)`);
  }
  const system = session.find((m) => m.role === 'system');
  const window = options.window ?? 128_000;
  const preset = options.preset ?? 'default';
  const stepBudget = Math.max(...turns.map((t) => t.replies.length)) + STEP_MARGIN;

  // The recorded replies answer the agent, each request placed in the recording by its newest step (a turn's first
  // call by the turn being sent); the recorded results of the step sent answer its tool calls.
  let turn = 0;
  const replayer = new RecordingReplayer(recording);
  const { replayed, unplaced } = replayer;
  // It reports usage as it counts it, with the prompt cache's hits: the agent's own cost figures come from it.
  const model = await startChatServer(
    (request, index): ScriptedReply => replayer.answer(request.body.messages, turn, index),
    { countUsage: true },
  );
  const tools = new ToolRegistry([], {
    fallback: (_args, context) => Promise.resolve(replayer.resultOf(context.callId)),
  });

  const settings = loadSettings();
  // The report is the output (the worker's INFO lines are noise); metrics served when LONGRUN_METRICS_ADDRESS is set.
  installRuntime(settings);
  // The same servers as the worker process would use (stack/servers.ts): the configured ones, else embedded ones in
  // a temporary folder.
  const servers = await startServers({ settings, mode: 'ephemeral', log });
  const { temporal } = servers;
  const store = new S3BlobStore(servers.s3);
  if (!servers.stack?.minio) await store.ensureBucket();
  const agents = await startInProcessAgents({
    temporal,
    taskQueue: `replay-${randomUUID().slice(0, 8)}`,
    deps: { store, openai: createOpenAI({ apiKey: 'replay', baseURL: model.baseURL, timeoutMs: 30_000 }), tools },
  });
  const { client, taskQueue } = agents;
  const agentId = `replay-${randomUUID().slice(0, 8)}`;
  // On a server this run did not start, the replay's agent leaves nothing behind (commands/replay-cleanup.ts): every
  // run of its workflow is deleted (terminated first if it still runs, after a failure), so `longrun list` never
  // shows it; the report calls it gone only once the namespace's list shows none of its runs.
  const onOwnServer = Boolean(servers.stack?.temporal);
  let deletion: Promise<AgentDeletion> | undefined;
  try {
    await startAgent(client, {
      agentId,
      model: 'gpt-4o-mini',
      turnBudget: { steps: stepBudget },
      ...(system?.content ? { systemPrompt: textOf(system.content) } : {}),
      taskQueue,
      modelOverride: { window, ...(options.price ? { price: options.price } : {}) },
      compaction: { ...options.policy, preset },
    });
    const cutShort: CutShort[] = [];
    let pinned: { messageId: string; text: string; fromRequest: number; compactions: number } | undefined;
    for (; turn < turns.length; turn++) {
      const sending = sendMessage(client, agentId, textOf(turns[turn]!.user.content));
      let sent = false;
      sending.then(
        () => (sent = true),
        () => (sent = true), // (its failure is awaited below)
      );
      // The task pinned as soon as the first turn has stored it (the pin lands at its next step boundary).
      if (options.pin && turn === 0) {
        const task = textOf(turns[0]!.user.content);
        pinned = await pinTask(
          client,
          agentId,
          task,
          () => model.requests.length,
          () => sent,
          log,
        );
      }
      const result = await sending;
      const recorded = turns[turn]!.replies.length;
      if (replayed[turn]!.size < recorded) {
        const reason = cutShortReason(recording, turn, replayed[turn]!, result, unplaced[turn]!);
        cutShort.push({ turn: turn + 1, recorded, replayed: replayed[turn]!.size, reason });
      }
      if ((turn + 1) % 10 === 0) log(`[replay] ${turn + 1} of ${turns.length} turns`);
    }
    const state = await closeAgentAndWait(client, agentId);
    await options.inspect?.(client, agentId);
    const before = session.findIndex((m) => m.role === 'user');
    const orphans = session.slice(0, before).filter((m) => m.role === 'assistant').length;
    if (orphans > 0) {
      cutShort.unshift({
        turn: 0,
        recorded: orphans,
        replayed: 0,
        reason: `${orphans} assistant message(s) come before the recording's first user message`,
      });
    }
    const measured = await report(client, store, agentId, state, {
      options,
      window,
      preset,
      stepBudget,
      cutShort,
      recordedSteps: session.filter((m) => m.role === 'assistant').length,
      replayedSteps: replayer.replayedSteps,
      answeredWith: model.requests.map((_, i) => replayer.answers[i] ?? null),
      requests: model.requests.map((r) => r.body.messages),
      session,
      schemas: tools.schemas(),
    });
    if (!onOwnServer) deletion = deleteReplayAgent(client, agentId, log);
    const after = model.requests.slice(pinned?.fromRequest ?? 0).map((r) => r.body.messages);
    const pins = pinned && {
      messageId: pinned.messageId,
      requests: after.length,
      verbatim: requestsHolding(pinned.text, after),
      compactions: (state.compactions ?? 0) - pinned.compactions,
    };
    return { ...measured, deletion: deletion ? await deletion : null, ...(pins ? { pins } : {}) };
  } finally {
    if (!onOwnServer) await (deletion ?? deleteReplayAgent(client, agentId, log));
    await agents.close();
    await model.close();
    await servers.stop();
  }
}

async function report(
  client: Client,
  store: S3BlobStore,
  agentId: string,
  state: AgentState,
  run: {
    options: ReplayOptions;
    window: number;
    preset: string;
    stepBudget: number;
    cutShort: CutShort[];
    recordedSteps: number;
    replayedSteps: number;
    answeredWith: (RecordedAnswer | null)[];
    requests: ChatMessage[][];
    session: ChatMessage[];
    schemas: unknown[];
  },
): Promise<Omit<ReplayReport, 'deletion'>> {
  const counter = await loadTokenCounter(state.modelInfo!.encoding);
  const tokensOf = (messages: ChatMessage[]) => countRequest(counter, messages, run.schemas, state.modelInfo!.margin);
  const requestTokens = run.requests.map(tokensOf);
  // Each distinct message counted once: the prefixes below sum the same messages request after request.
  const counts = new Map<string, number>();
  const counted = (message: ChatMessage) => {
    const key = JSON.stringify(message);
    let tokens = counts.get(key);
    if (tokens === undefined) counts.set(key, (tokens = countMessage(counter, message, state.modelInfo!.margin)));
    return tokens;
  };
  const schemaTokens = countToolSchemas(counter, run.schemas, state.modelInfo!.margin);
  // Without compaction, each request would have carried the whole recording up to its last message (found by
  // walking the recording forward, so that repeated texts match in order).
  const same = (a: ChatMessage, b: ChatMessage) =>
    a.role === b.role && (a.content ?? '') === (b.content ?? '') && (a.tool_call_id ?? '') === (b.tool_call_id ?? '');
  let position = 0;
  const withoutCompaction = run.requests.map((request) => {
    const last = request.at(-1)!;
    const at = run.session.findIndex((m, i) => i >= position && same(m, last));
    if (at !== -1) position = at;
    const system = request[0]?.role === 'system' && run.session[0]?.role !== 'system' ? [request[0]] : [];
    return tokensOf([...system, ...run.session.slice(0, position + 1)]);
  });
  // Cost with caching (commands/replay-cost.ts): each request's prefix shared with an earlier one, its reply.
  const shared = sharedPrefixLengths(run.requests);
  const prefixTokens = run.requests.map((request, i) =>
    shared[i]! === 0 ? 0 : schemaTokens + request.slice(0, shared[i]).reduce((sum, m) => sum + counted(m), 0),
  );
  const replyTokens = run.answeredWith.map((answer) => (answer ? counted(run.session[answer.message - 1]!) : 0));
  const costs = replayCost(
    { requestTokens, prefixTokens, fullTokens: withoutCompaction, replyTokens },
    state.modelInfo?.price,
    state.spend?.summaryCost ?? 0,
  );
  const events = await storedCompactionEvents(
    store,
    state,
    Array.from({ length: state.compactions ?? 0 }, (_, i) => i + 1),
  );
  const compactions = await Promise.all(
    events.map(async (event) => {
      const lines = ((await store.get(event.keys.removed)) ?? '').split('\n').filter(Boolean);
      const offloaded = await Promise.all(
        lines.map(async (line) => {
          const item = JSON.parse(line) as { key: string; message: ChatMessage };
          return { key: item.key, reloadIdentical: (await store.get(item.key)) === JSON.stringify(item.message) };
        }),
      );
      const summaryBody = event.summaryTokens
        ? await store.get(compactionKey(state, event.seq, 'summary.json'))
        : undefined;
      return {
        seq: event.seq,
        trigger: event.trigger,
        strategies: event.strategies as string[],
        tokensBefore: event.tokensBefore,
        tokensAfter: event.tokensAfter,
        keys: event.keys,
        removedCount: event.removedCount,
        summary: summaryBody ? textOf((JSON.parse(summaryBody) as ChatMessage).content) : null,
        facts: event.facts
          ? { found: event.facts.found, missing: event.facts.missing, pinned: event.facts.pinned }
          : null,
        offloaded,
      };
    }),
  );
  // History of every run of the workflow, summed.
  let historyBytes = 0;
  let runs = 0;
  for await (const execution of client.workflow.list({ query: `WorkflowId = "agent-${agentId}"` })) {
    const description = await client.workflow.getHandle(execution.workflowId, execution.runId).describe();
    historyBytes += description.historySize ?? 0;
    runs++;
  }
  return {
    file: run.options.file,
    agentId,
    storagePrefix: state.storagePrefix ?? '',
    preset: run.preset,
    ...(run.options.policy !== undefined ? { policy: run.options.policy } : {}),
    window: run.window,
    messages: run.session.length,
    turns: state.turns,
    modelCalls: run.requests.length,
    recordedSteps: run.recordedSteps,
    replayedSteps: run.replayedSteps,
    answeredWith: run.answeredWith,
    stepBudget: run.stepBudget,
    cutShort: run.cutShort,
    compactions,
    toolPairViolations: run.requests.reduce((n, r) => n + toolPairViolations(r.map(pairViewOf)).length, 0),
    maxRequestTokens: Math.max(0, ...requestTokens),
    requestTokens,
    cachedTokens: costs.cachedTokens,
    replyTokens: costs.replyTokens,
    tokensSent: requestTokens.reduce((a, b) => a + b, 0),
    requestTokensWithoutCompaction: withoutCompaction,
    tokensSentWithoutCompaction: withoutCompaction.reduce((a, b) => a + b, 0),
    price: costs.price,
    cost: costs.cost,
    costWithoutCompaction: costs.costWithoutCompaction,
    costFloor: costs.costFloor,
    cachedInputShare: costs.cachedInputShare,
    cachedInputShareWithoutCompaction: costs.cachedInputShareWithoutCompaction,
    agentCost: state.cost ?? (state.spend ? agentCostOf(state.spend) : null),
    historyBytes,
    plans: { made: state.plans?.made ?? 0, empty: state.plans?.empty ?? 0, avoided: state.plans?.avoided ?? 0 },
    continueAsNew: Math.max(0, runs - 1),
    finalView: run.requests.at(-1) ?? [],
  };
}

/**
 * How the requests were answered: with a recorded step (how many distinct, how many again: a retried call or a
 * request placed where an earlier one was) or with none.
 */
export function answersLine(r: Pick<ReplayReport, 'answeredWith' | 'modelCalls'>): string {
  const answered = r.answeredWith.filter((a) => a !== null);
  const distinct = new Set(answered.map((a) => a.message)).size;
  return (
    `requests answered with a recorded step: ${answered.length} of ${r.modelCalls} ` +
    `(${distinct} distinct, ${answered.length - distinct} again); ${r.modelCalls - answered.length} with none`
  );
}

/** The cost line of the report: with caching, against sending everything with caching, and the cached shares. */
export function costLineOf(
  r: Pick<
    ReplayReport,
    'price' | 'cost' | 'costWithoutCompaction' | 'costFloor' | 'cachedInputShare' | 'cachedInputShareWithoutCompaction'
  >,
): string {
  if (!r.price || r.cost === null || r.costWithoutCompaction === null) {
    return `cost unknown (no price for the model: give one with --price); cached input ${formatShare(r.cachedInputShare)}`;
  }
  const p = r.price;
  const ratio = r.costWithoutCompaction > 0 ? ` (${(r.cost / r.costWithoutCompaction).toFixed(2)}×)` : '';
  const floor =
    r.costFloor === null || r.costFloor === undefined
      ? ''
      : `, floor ${formatUsd(r.costFloor)}` +
        (r.costWithoutCompaction > 0 ? ` (${(r.costFloor / r.costWithoutCompaction).toFixed(2)}×)` : '');
  return (
    `cost ${formatUsd(r.cost)} vs ${formatUsd(r.costWithoutCompaction)} sending everything with caching${ratio}${floor}; ` +
    `cached input ${formatShare(r.cachedInputShare)} vs ${formatShare(r.cachedInputShareWithoutCompaction)} ` +
    `(USD per 1M tokens: input ${p.inputPerMillion}, cached ${p.cachedInputPerMillion}, output ${p.outputPerMillion})`
  );
}

/** The overrides a replay ran under, as the report's first line names them: ` with maxTokens 8000, …`. */
function policyNote(policy: PolicyOverrides | undefined): string {
  const entries = Object.entries(policy ?? {});
  if (entries.length === 0) return '';
  return ` with ${entries.map(([field, value]) => `${field} ${JSON.stringify(value)}`).join(', ')}`;
}

/** The report as a few readable lines. */
export function renderReplay(r: ReplayReport): string {
  const lines = [
    `${r.file}: ${r.messages} messages, ${r.turns} turns, ${r.modelCalls} model calls (preset ${r.preset}${policyNote(r.policy)}, window ${r.window})`,
    r.replayedSteps < r.recordedSteps
      ? `CUT SHORT: replayed ${r.replayedSteps} of ${r.recordedSteps} recorded steps (assistant messages); ` +
        `step budget ${r.stepBudget}`
      : `replayed all ${r.recordedSteps} recorded steps (assistant messages)`,
    ...r.cutShort.map(
      (c) =>
        `  ${c.turn === 0 ? 'before turn 1' : `turn ${c.turn}`}: ${c.replayed} of ${c.recorded} steps replayed: ${c.reason}`,
    ),
    answersLine(r),
    `largest request ${r.maxRequestTokens} tokens of ${r.window}; tokens sent ${r.tokensSent} vs ${r.tokensSentWithoutCompaction} without compaction`,
    costLineOf(r),
    `tool-pair violations: ${r.toolPairViolations}; history ${r.historyBytes} bytes over ${r.continueAsNew + 1} run(s)`,
    `compaction plans: ${r.plans.made} made, ${r.plans.empty} found nothing; ${r.plans.avoided} masking passes not planned (they would have found nothing)`,
  ];
  for (const c of r.compactions) {
    const reloads = c.offloaded.filter((o) => o.reloadIdentical).length;
    lines.push(
      `compaction ${c.seq} (${c.trigger}): ${c.tokensBefore} → ${c.tokensAfter} tokens; ${c.strategies.join(', ')}; ` +
        `${c.offloaded.length} removed, ${reloads} reload byte-identical` +
        (c.facts ? `; facts found ${c.facts.found}, missing ${c.facts.missing}, pinned ${c.facts.pinned.length}` : ''),
    );
  }
  if (r.compactions.length === 0) lines.push('no compaction (the session fits the window under this preset)');
  if (r.deletion) lines.push(renderDeletion(r.deletion));
  return lines.join('\n');
}
