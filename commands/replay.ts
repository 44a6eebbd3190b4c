/**
 * `longrun replay FILE.jsonl`, the CLI command: runs a recorded session (OpenAI chat messages as JSONL, tool calls
 * included) through a real agent workflow, the recorded assistant messages standing in for the model and the recorded
 * tool results for the tools, under a chosen preset and window, and reports what compaction did and what it cost.
 * Users tune their settings with it before going live. Runs against the servers stack/servers.ts picks: the
 * configured ones, else embedded ones. Its report is replay-report.ts's (the shape and its rendering), measured by
 * replay-measure.ts; its cost, replay-cost.ts's; its agent's deletion afterwards, replay-cleanup.ts's.
 *
 * Three things in longrun are called replay. This is the CLI command. llm/replayed-model.ts is the replayed model: it
 * answers requests from a recording, for this command and for a worker without OPENAI_API_KEY (the offline model).
 * Temporal's replay re-runs a workflow's recorded history against the workflow code to check it is deterministic
 * (test/unit/history-replay.test.ts, test/e2e/replay.test.ts); nothing here does that.
 *
 * Every recorded step is replayed: the agent's step budget covers the longest recorded turn, and each request is
 * answered by locating it in the recording (llm/replayed-model.ts locateRecordedReply: by its newest step's tool call
 * ids, so compaction inside a turn does not shift it, and by its place in the request where the recording reuses ids),
 * its tool calls by the results recorded after that step (llm/replayed-model.ts RecordingReplayer). The report says
 * how many recorded steps were replayed, which one answered each request and, for a turn cut short, why.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { readNamedFile } from './cli/parse.ts';
import type { Client } from '@temporalio/client';
import { ToolRegistry } from '../activities/tools.ts';
import { agentState, closeAgentAndWait, sendMessage, startAgent } from '../client/agents.ts';
import { pinMessage } from '../client/pins.ts';
import type { ModelPrice } from '../engine/pricing.ts';
import type { PolicyOverrides } from '../engine/policy.ts';
import type { SendResult } from '../contract/results.ts';
import { loadSettings } from '../config/settings.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { startChatServer } from '../llm/chat-server.ts';
import type { ScriptedReply } from '../llm/chat-server.ts';
import { createOpenAI } from '../llm/openai.ts';
import { indexRecording, parseSessionJsonl, RecordingReplayer, SessionFormatError } from '../llm/replayed-model.ts';
import type { RecordingIndex } from '../llm/replayed-model.ts';
import { startServers } from '../stack/servers.ts';
import { S3BlobStore } from '../storage/s3.ts';
import { deleteReplayAgent } from './replay-cleanup.ts';
import type { AgentDeletion } from './replay-cleanup.ts';
import { measureReplay } from './replay-measure.ts';
import type { CutShort, ReplayReport } from './replay-report.ts';
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
  // The report is the output (the worker's INFO lines are noise). No metrics: LONGRUN_METRICS_ADDRESS is the
  // worker's, and a replay beside a running worker would find its address taken.
  installRuntime({});
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
    const measured = await measureReplay(client, store, agentId, state, {
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
