/**
 * Which model the worker talks to: the endpoint named by OPENAI_API_KEY / OPENAI_BASE_URL when a key is set,
 * otherwise a replayed model (a recorded session served by the loopback chat server, see replayed-model.ts), clearly
 * labelled.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { PROJECT_ROOT } from '../config/settings.ts';
import type { Env } from '../config/settings.ts';
import { startChatServer } from './chat-server.ts';
import type { ModelEndpoint } from './openai.ts';
import { replayResponder } from './offline-model.ts';
import { parseSessionJsonl } from './replayed-model.ts';
import { textOf } from '../engine/messages.ts';

/** The recorded conversation of the demo, also the replayed model's answers. */
export const DEMO_SESSION = join(PROJECT_ROOT, 'demo', 'session.jsonl');
/**
 * A recorded tool loop the replayed model also answers from: one message (its first user message, `TOOL_DEMO_TASK`)
 * and twelve steps calling `trail_report` (activities/demo-tool.ts), which the main job offers with this model.
 */
export const DEMO_TOOL_SESSION = join(PROJECT_ROOT, 'demo', 'trail-session.jsonl');

export interface ResolvedModel {
  endpoint: ModelEndpoint;
  /** Human-readable: what answers the agent. */
  label: string;
  replayed: boolean;
  close(): Promise<void>;
}

/** The user message that opens the recorded tool loop: send it to any agent to watch a dozen tool steps offline. */
export function toolDemoTask(): string {
  const first = parseSessionJsonl(readFileSync(DEMO_TOOL_SESSION, 'utf8'))[0];
  return textOf(first?.content);
}

/** Whether a worker in this environment answers from the replayed model (no OPENAI_API_KEY). */
export function usesReplayedModel(env: Env): boolean {
  return !env.OPENAI_API_KEY;
}

export async function resolveModel(
  env: Env,
  timeoutMs: number,
  sessionPaths: readonly string[] = [DEMO_SESSION, DEMO_TOOL_SESSION],
): Promise<ResolvedModel> {
  if (!usesReplayedModel(env)) {
    return {
      endpoint: { timeoutMs },
      label: `OpenAI-compatible endpoint ${env.OPENAI_BASE_URL || 'https://api.openai.com/v1'}`,
      replayed: false,
      close: async () => {},
    };
  }
  const shown = sessionPaths.map((path) => {
    const inProject = relative(PROJECT_ROOT, path);
    return inProject.startsWith('..') || isAbsolute(inProject) ? path : inProject;
  });
  // Each recording starts with a user message: one after the other, they are one session of more turns.
  const session = sessionPaths.flatMap((path) => parseSessionJsonl(readFileSync(path, 'utf8')));
  const server = await startChatServer(replayResponder(session, { source: shown.join(' and ') }));
  return {
    endpoint: { apiKey: 'replay', baseURL: server.baseURL, timeoutMs },
    label:
      `REPLAYED model (recorded answers from ${shown.join(' and ')}; past their end it says it cannot answer; ` +
      'set OPENAI_API_KEY to use a real one)',
    replayed: true,
    close: () => server.close(),
  };
}
