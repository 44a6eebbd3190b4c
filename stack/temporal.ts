/** The Temporal dev server (`temporal server start-dev`) with the Temporal UI, on loopback. */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTE_TYPES } from '../contract/search-attributes.ts';
import type { SearchAttributeTypeName } from '../contract/search-attributes.ts';
import { LOOPBACK } from './ports.ts';
import { ServerProcess } from './process.ts';

export type DynamicConfig = Readonly<Record<string, string | number | boolean>>;

export interface TemporalDevServerOptions {
  binary: string;
  port: number;
  uiPort: number;
  /** A SQLite file keeps workflows across restarts (the main job); without it the server is in memory (tests). */
  dbFile?: string;
  /** Server dynamic config, e.g. lower continue-as-new thresholds in tests. */
  dynamicConfig?: DynamicConfig;
  logPath: string;
  namespace: string;
  /** The codec server the UI asks to decode payloads (encryption on), as the browser reaches it. */
  uiCodecEndpoint?: string;
  /** The search attributes registered at its start (default: longrun's; tests leave some out). */
  searchAttributes?: Readonly<Record<string, SearchAttributeTypeName>>;
}

const START_TIMEOUT_MS = 60_000;

/**
 * Dynamic config the embedded server always runs with, measured with the zero-latency model (`npm run bench`; what
 * each setting gained: see BENCHMARKS.md, The agent, session 3):
 * - Eager activity execution hands an activity scheduled by a workflow task straight back to the worker that
 *   completed it, skipping a poll: the largest cut of a turn's median.
 * - The transfer queue (what hands a workflow task to matching after an activity completes) is read at most 20
 *   times a second per shard by default, and the dev server has one shard: every agent's turn then waits for the
 *   next read, and a run of quick turns settles at one read interval each. 1,000 reads a second lifts that floor
 *   (measured on an echo Update + activity round trip); reads happen only when tasks are written.
 */
export const DEFAULT_DYNAMIC_CONFIG: DynamicConfig = {
  'system.enableActivityEagerExecution': true,
  'history.transferProcessorMaxPollRPS': 1000,
};

/** The command line for `opts`; exported for tests. */
export function temporalArgs(options: TemporalDevServerOptions): string[] {
  const args = ['server', 'start-dev', '--ip', LOOPBACK, '--port', String(options.port)];
  args.push('--ui-port', String(options.uiPort), '--namespace', options.namespace, '--log-level', 'warn');
  if (options.dbFile) args.push('--db-filename', options.dbFile, '--sqlite-pragma', 'journal_mode=WAL');
  if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  for (const [name, type] of Object.entries(options.searchAttributes ?? SEARCH_ATTRIBUTE_TYPES)) {
    args.push('--search-attribute', `${name}=${type}`);
  }
  for (const [key, value] of Object.entries({ ...DEFAULT_DYNAMIC_CONFIG, ...options.dynamicConfig })) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }
  return args;
}

async function answers(address: string, namespace: string): Promise<boolean> {
  const connection = await Connection.connect({ address, connectTimeout: 1_000 });
  try {
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } finally {
    await connection.close();
  }
}

async function uiAnswers(url: string): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
  return response.ok;
}

export interface RunningTemporal {
  address: string;
  uiUrl: string;
  /** The UI's codec server, when it has one. */
  uiCodecEndpoint?: string;
  namespace: string;
  process: ServerProcess;
}

export async function startTemporal(options: TemporalDevServerOptions): Promise<RunningTemporal> {
  const address = `${LOOPBACK}:${options.port}`;
  const uiUrl = `http://${LOOPBACK}:${options.uiPort}`;
  if (options.dbFile) mkdirSync(dirname(options.dbFile), { recursive: true });
  const process = await ServerProcess.start({
    name: 'Temporal dev server',
    command: options.binary,
    args: temporalArgs(options),
    logPath: options.logPath,
    startTimeoutMs: START_TIMEOUT_MS,
    healthy: async () => (await answers(address, options.namespace)) && (await uiAnswers(uiUrl)),
  });
  return {
    address,
    uiUrl,
    ...(options.uiCodecEndpoint ? { uiCodecEndpoint: options.uiCodecEndpoint } : {}),
    namespace: options.namespace,
    process,
  };
}

export function temporalDbFile(dataDir: string): string {
  return join(dataDir, 'temporal', 'temporal.db');
}
