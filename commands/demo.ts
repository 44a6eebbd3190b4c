/**
 * The demo conversation of `npm start`: starts an agent and sends it the user messages of a recorded session,
 * printing each reply and where to watch the agent in the Temporal UI.
 */
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { toolDemoTask } from '../llm/endpoint.ts';
import { isReplayedModel, parseSessionJsonl, REPLAYED_LABEL } from '../llm/replayed-model.ts';
import { textOf } from '../engine/messages.ts';
import { agentWorkflowId } from '../contract/agent.ts';
import { agentPrefix } from '../contract/keys.ts';
import {
  AgentClosedError,
  agentState,
  closeAgent,
  closeAgentAndWait,
  sendMessage,
  startAgent,
} from '../client/agents.ts';

export interface DemoOptions {
  taskQueue: string;
  model: string;
  sessionPath: string;
  namespace: string;
  uiUrl?: string;
  /** The model is replayed from the recording: every reply is labelled so (as is any a replayed model served). */
  replayed: boolean;
  /** Close the agent at the end (for --once). */
  close: boolean;
  /** Told the agent's id once it is started (the main job closes it when it stops). */
  onStarted?: (agentId: string) => void;
  log: (line: string) => void;
}

export function workflowUiUrl(uiUrl: string, namespace: string, workflowId: string): string {
  return `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

export async function runDemo(client: Client, options: DemoOptions): Promise<string> {
  const { log } = options;
  const userMessages = parseSessionJsonl(readFileSync(options.sessionPath, 'utf8'))
    .filter((message) => message.role === 'user')
    .map((message) => textOf(message.content));
  const agentId = `demo-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-')}`;
  await startAgent(client, {
    agentId,
    model: options.model,
    systemPrompt: 'You are a helpful trip-planning assistant. Keep track of the plan and the constraints.',
    taskQueue: options.taskQueue,
  });
  options.onStarted?.(agentId);
  const workflowId = agentWorkflowId(agentId);
  log(`[demo] agent ${agentId} (workflow ${workflowId})`);
  if (options.uiUrl)
    log(`[demo] watch it in the Temporal UI: ${workflowUiUrl(options.uiUrl, options.namespace, workflowId)}`);
  for (const text of userMessages) {
    log(`\nyou   > ${text}`);
    const started = Date.now();
    const { reply, turn, servedBy } = await sendMessage(client, agentId, text);
    log(`${options.replayed || isReplayedModel(servedBy) ? `agent ${REPLAYED_LABEL}` : 'agent'} > ${reply}`);
    log(`        (turn ${turn}, ${Date.now() - started} ms)`);
  }
  const state = await agentState(client, agentId);
  log(
    `\n[demo] ${state.turns} turns, ${state.messages.length} messages stored in S3 under ${state.storagePrefix ?? agentPrefix(agentId)}messages/; ` +
      `context ${state.contextTokens} of ${state.modelInfo?.window ?? '?'} tokens`,
  );
  for (const hint of demoHints({ replayed: options.replayed, once: options.close })) log(hint);
  if (options.close) await closeAgent(client, agentId);
  return agentId;
}

/** What the offline demo's hint steers the tool loop with: any text works, the offline model notes it and goes on. */
export const DEMO_STEER = 'Only the stages that need care, please.';
/** What the offline demo's hint interrupts the tool loop with: the next turn opens with it and goes on. */
export const DEMO_INTERRUPT = 'Go on, but keep it short.';

/**
 * What the demo suggests trying next, printed after its conversation: offline, the recorded tool loop and how to
 * watch, steer, interrupt and compact it while the servers run; with --once (`once`), the servers stop right after,
 * so it says that instead and how to keep them up.
 */
export function demoHints({ replayed, once }: { replayed: boolean; once: boolean }): string[] {
  if (once) {
    return [
      '\n[demo] --once: the demo agent is closed and the servers stop now; run `npm start` without --once to keep ' +
        'them up and drive agents from another terminal (`npx longrun --help`, docs/cli.md)',
    ];
  }
  if (!replayed) return [];
  // Offline, the replayed model also knows a tool loop: a dozen steps to watch, reach and compact.
  return [
    `\n[demo] offline, try a tool-using agent: \`npx longrun start hike\`, then \`npx longrun send hike ` +
      `${shellQuoted(toolDemoTask())}\` (12 steps calling trail_report) and, meanwhile in another terminal, ` +
      '`npx longrun watch hike`; then `npx longrun compact hike`',
    `[demo] while it works, reach it from a third terminal: \`npx longrun steer hike ${shellQuoted(DEMO_STEER)}\` ` +
      `(the loop notes it and goes on), or \`npx longrun interrupt hike ${shellQuoted(DEMO_INTERRUPT)}\` (the turn ` +
      'ends; the next one opens with your text and goes on with the remaining stages)',
  ];
}

/**
 * Closes the demo's agent as the main job stops (its worker still running): each `npm start` makes a new one, and
 * none is left running in the persistent stack. One the person is still using is closed all the same: the demo's
 * agents are for the demo; `longrun start <agent> --reopen` opens it again.
 */
export async function closeDemoAgent(client: Client, agentId: string, log: (line: string) => void): Promise<void> {
  log(`[demo] closing agent ${agentId}`);
  try {
    await closeAgentAndWait(client, agentId, { workerTimeoutMs: DEMO_CLOSE_WAIT_MS });
    log(`[demo] closed agent ${agentId}`);
  } catch (error) {
    if (error instanceof AgentClosedError) return; // closed already (by a person, or --once)
    throw error;
  }
}

/** How long the demo's close waits for the worker (the main job gives its stop steps 15 s in all). */
const DEMO_CLOSE_WAIT_MS = 10_000;

/** `text` single-quoted for a POSIX shell. */
function shellQuoted(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
