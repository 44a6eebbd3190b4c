/**
 * Which model the worker talks to: the endpoint named by OPENAI_API_KEY / OPENAI_BASE_URL when a key is set,
 * otherwise a replayed model (a recorded session served by the loopback chat server, see replay.ts), clearly labelled.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { PROJECT_ROOT } from '../config/settings.ts';
import type { Env } from '../config/settings.ts';
import { startChatServer } from './chat-server.ts';
import type { ModelEndpoint } from './openai.ts';
import { parseSessionJsonl, replayResponder } from './replay.ts';

/** The recorded conversation of the demo, also the replayed model's answers. */
export const DEMO_SESSION = join(PROJECT_ROOT, 'demo', 'session.jsonl');

export interface ResolvedModel {
  endpoint: ModelEndpoint;
  /** Human-readable: what answers the agent. */
  label: string;
  replayed: boolean;
  close(): Promise<void>;
}

/** Whether a worker in this environment answers from the replayed model (no OPENAI_API_KEY). */
export function usesReplayedModel(env: Env): boolean {
  return !env.OPENAI_API_KEY;
}

export async function resolveModel(env: Env, timeoutMs: number, sessionPath = DEMO_SESSION): Promise<ResolvedModel> {
  if (!usesReplayedModel(env)) {
    return {
      endpoint: { timeoutMs },
      label: `OpenAI-compatible endpoint ${env.OPENAI_BASE_URL || 'https://api.openai.com/v1'}`,
      replayed: false,
      close: async () => {},
    };
  }
  const inProject = relative(PROJECT_ROOT, sessionPath);
  const source = inProject.startsWith('..') || isAbsolute(inProject) ? sessionPath : inProject;
  const session = parseSessionJsonl(readFileSync(sessionPath, 'utf8'));
  const server = await startChatServer(replayResponder(session, { source }));
  return {
    endpoint: { apiKey: 'replay', baseURL: server.baseURL, timeoutMs },
    label:
      `REPLAYED model (recorded answers from ${sessionPath}; past their end it says it cannot answer; ` +
      'set OPENAI_API_KEY to use a real one)',
    replayed: true,
    close: () => server.close(),
  };
}
