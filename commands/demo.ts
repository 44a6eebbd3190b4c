/**
 * The demo conversation of `npm start`: starts an agent and sends it the user messages of a recorded session,
 * printing each reply and where to watch the agent in the Temporal UI.
 */
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { isReplayedModel, parseSessionJsonl, REPLAYED_LABEL } from '../llm/replay.ts';
import { textOf } from '../engine/messages.ts';
import { agentWorkflowId } from '../contract/agent.ts';
import { agentState, closeAgent, sendMessage, startAgent } from '../client/agents.ts';

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
    `\n[demo] ${state.turns} turns, ${state.messages.length} messages stored in S3 under agents/${agentId}/messages/; ` +
      `context ${state.contextTokens} of ${state.modelInfo?.window ?? '?'} tokens`,
  );
  if (options.close) await closeAgent(client, agentId);
  return agentId;
}
