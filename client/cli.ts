/**
 * The `longrun` CLI. With `npm start` running it works from another terminal with no flags (standard ports);
 * against any other deployment through TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (and the rest of the temporal CLI's
 * variables and profiles).
 *
 * Exit codes: 0 ok · 1 error · 2 bad usage · 3 unknown agent · 4 agent closed.
 */
import { parseArgs } from 'node:util';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { loadSettings } from '../config/settings.ts';
import { loadTemporalTarget } from '../config/temporal.ts';
import { main as runMainJob } from '../worker/main.ts';
import type { AgentState } from '../workflows/contract.ts';
import {
  agentHandle,
  agentState,
  assertAgentId,
  closeAgent,
  connectClient,
  InvalidAgentIdError,
  sendMessage,
  startAgent,
} from './agents.ts';

export const EXIT = { ok: 0, error: 1, usage: 2, unknownAgent: 3, closed: 4 } as const;

const HELP = `longrun — durable long-running LLM agents on Temporal

Usage:
  longrun up [--once] [--no-demo]          the main job: stack, worker and demo (same as npm start)
  longrun start <agent> [--model M] [--system TEXT]
                                            start an agent (idempotent)
  longrun send <agent> <text...> [--json]  send a message and print the reply
  longrun state <agent> [--json]           show the agent's state
  longrun close <agent>                    close the agent
  longrun help                             this text

Connection: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default "default"),
TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE; LONGRUN_TASK_QUEUE, LONGRUN_MODEL.
Exit codes: 0 ok, 1 error, 2 bad usage, 3 unknown agent, 4 agent closed.`;

/** A usage mistake: exit code 2 with the message and a hint. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

class CliExit extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

function renderState(state: AgentState): string {
  const lines = [
    `agent    ${state.agentId}`,
    `status   ${state.status}`,
    `model    ${state.model}`,
    `turns    ${state.turns}`,
    `messages ${state.messages.length}`,
    '',
    `${'ID'.padEnd(9)}${'ROLE'.padEnd(11)}${'CHARS'.padStart(7)}  PREVIEW`,
    ...state.messages.map(
      (m) => `${m.id.padEnd(9)}${m.role.padEnd(11)}${String(m.chars).padStart(7)}  ${m.preview.slice(0, 80)}`,
    ),
  ];
  return lines.join('\n');
}

/**
 * Maps Temporal errors about a missing or finished agent to exit codes a script can trust. An Update to a completed
 * workflow also reports "not found", so a not-found agent is described to tell the two apart.
 */
async function classify(error: unknown, agentId: string): Promise<unknown> {
  if (error instanceof WorkflowNotFoundError) {
    const status = await withClient((client) => agentHandle(client, agentId).describe()).then(
      (description) => description.status.name,
      () => undefined,
    );
    if (status && status !== 'RUNNING')
      return new CliExit(EXIT.closed, `agent ${agentId} is closed (${status.toLowerCase()})`);
    return new CliExit(EXIT.unknownAgent, `unknown agent ${agentId}: no such workflow (start it with longrun start)`);
  }
  if (error instanceof WorkflowUpdateFailedError && error.cause instanceof Error) {
    const closed = /is closed/.test(error.cause.message);
    return new CliExit(closed ? EXIT.closed : EXIT.error, `rejected: ${error.cause.message}`);
  }
  return error;
}

async function withClient<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const target = loadTemporalTarget();
  const address = String(target.connectionOptions.address ?? '127.0.0.1:7233');
  const client = await connectClient(target).catch((error: unknown) => {
    throw new CliExit(
      EXIT.error,
      `cannot reach Temporal at ${address} (${error instanceof Error ? error.message : String(error)}). ` +
        'Is `npm start` running? Otherwise set TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE) to your server.',
    );
  });
  try {
    return await fn(client);
  } finally {
    await client.connection.close();
  }
}

export async function run(argv: string[], out: (line: string) => void = console.log): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    out(HELP);
    return command ? EXIT.ok : EXIT.usage;
  }
  if (command === 'up') {
    await runMainJob(rest);
    return EXIT.ok;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    strict: true,
    options: { json: { type: 'boolean', default: false }, model: { type: 'string' }, system: { type: 'string' } },
  });
  const agentId = positionals[0];
  if (!agentId) throw new UsageError(`${command}: missing <agent>`);
  assertAgentId(agentId);
  const settings = loadSettings();
  try {
    switch (command) {
      case 'start': {
        await withClient((client) =>
          startAgent(client, {
            agentId,
            model: values.model ?? settings.model,
            taskQueue: settings.taskQueue,
            ...(values.system ? { systemPrompt: values.system } : {}),
          }),
        );
        out(`started agent ${agentId}`);
        return EXIT.ok;
      }
      case 'send': {
        const text = positionals.slice(1).join(' ');
        if (!text) throw new UsageError('send: missing <text>');
        const result = await withClient((client) => sendMessage(client, agentId, text));
        out(values.json ? JSON.stringify(result) : result.reply);
        return EXIT.ok;
      }
      case 'state': {
        const state = await withClient((client) => agentState(client, agentId));
        out(values.json ? JSON.stringify(state, null, 2) : renderState(state));
        return EXIT.ok;
      }
      case 'close': {
        await withClient((client) => closeAgent(client, agentId));
        out(`closing agent ${agentId}`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (error) {
    throw await classify(error, agentId);
  }
}

/** Runs the CLI on process.argv and exits with its code. Called by bin/longrun.js. */
export function cliMain(): void {
  run(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      if (error instanceof UsageError || (error instanceof TypeError && 'code' in error)) {
        console.error(`longrun: ${error.message}\nRun \`longrun help\` for usage.`);
        process.exit(EXIT.usage);
      }
      if (error instanceof InvalidAgentIdError) {
        console.error(`longrun: ${error.message}`);
        process.exit(EXIT.usage);
      }
      if (error instanceof CliExit) {
        console.error(`longrun: ${error.message}`);
        process.exit(error.code);
      }
      console.error(`longrun: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(EXIT.error);
    },
  );
}

if (import.meta.main) cliMain();
