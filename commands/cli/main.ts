/**
 * The `longrun` CLI. With `npm start` running it works from another terminal with no flags (standard ports);
 * against any other deployment through TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (and the rest of the temporal CLI's
 * variables and profiles) and the S3 variables.
 *
 * The commands, their flags and their help are one table (cli/table.ts); this file reads the command line against
 * it, runs the command and exits with its code: 0 ok · 1 error · 2 bad usage · 3 unknown agent · 4 agent closed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadSettings, PROJECT_ROOT } from '../../config/settings.ts';
import { flushTracing } from '../../config/tracing.ts';
import { ModelOverrideError, UnknownModelError } from '../../engine/models.ts';
import { PriceError } from '../../engine/pricing.ts';
import { PolicyError } from '../../engine/policy.ts';
import { SessionFormatError } from '../../llm/replayed-model.ts';
import { InvalidAgentIdError } from '../../client/agents.ts';
import { classify } from './connection.ts';
import { AgentNotAnsweringError } from '../../client/agent-reads.ts';
import { renderSnapshot } from '../render.ts';
import { commandHelp, overview } from './help.ts';
import { CliExit, EXIT, parseCommandLine, UsageError } from './parse.ts';
import type { Command } from './parse.ts';
import { COMMANDS } from './table.ts';

export { EXIT, joinNegativeNumbers, UsageError } from './parse.ts';

/** The table's row of `name`, if it is a command. */
function commandOf(name: string): Command | undefined {
  return Object.hasOwn(COMMANDS, name) ? (COMMANDS as Record<string, Command>)[name] : undefined;
}

/** This package's version, from its package.json (a clone's, or the installed package's). */
function version(): string {
  return (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** Runs the command `argv` names; resolves to its exit code, or throws what the exit code is made from. */
export async function run(argv: string[], out: (line: string) => void = console.log): Promise<number> {
  const [name, ...rest] = argv;
  if ((name === '--version' || name === '-v') && rest.length === 0) {
    out(`longrun ${version()}`);
    return EXIT.ok;
  }
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    const topic = name === 'help' ? rest[0] : undefined;
    if (topic === undefined) {
      out(overview(COMMANDS));
      return name ? EXIT.ok : EXIT.usage;
    }
    const command = commandOf(topic);
    if (!command) throw new UsageError(`unknown command ${JSON.stringify(topic)}`);
    out(commandHelp(topic, command));
    return EXIT.ok;
  }
  const known = commandOf(name);
  if (known && (rest.includes('--help') || rest.includes('-h'))) {
    out(commandHelp(name, known));
    return EXIT.ok;
  }
  const { command, ...line } = parseCommandLine(name, known, rest);
  const call = { ...line, settings: loadSettings(), out };
  const agentId = line.args.agent;
  if (agentId === undefined) return command.run(call);
  try {
    return await command.run(call);
  } catch (error) {
    if (error instanceof AgentNotAnsweringError) {
      // What Temporal knows without a worker, on stdout as the answer would be; why, and what to do, on stderr.
      const { reason, snapshot } = error;
      out(
        line.values.json
          ? JSON.stringify({ answered: false, reason, ...snapshot }, null, 2)
          : renderSnapshot(snapshot, reason),
      );
      throw new CliExit(EXIT.error, error.message);
    }
    throw await classify(error, agentId);
  }
}

/**
 * Runs the CLI on process.argv and exits with its code once its output is out. Called by bin/longrun.js.
 *
 * Written to a pipe, stdout is asynchronous: what the pipe's buffer (64 KiB) cannot take at once waits in the
 * process, and process.exit would drop it. So the exit waits until every write has been handed over; it still exits
 * (an open Temporal connection or worker runtime would keep the process alive). A reader that goes away early
 * (`longrun … | head`) ends the process quietly.
 */
export function cliMain(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? EXIT.error);
      throw error;
    });
  }
  run(process.argv.slice(2)).then(
    (code) => exitAfterOutput(code),
    (error: unknown) => {
      const usage =
        error instanceof UsageError ||
        error instanceof UnknownModelError ||
        error instanceof ModelOverrideError ||
        error instanceof PriceError ||
        error instanceof PolicyError ||
        error instanceof SessionFormatError ||
        (error instanceof TypeError && 'code' in error);
      if (usage) console.error(`longrun: ${error.message}\nRun \`longrun help\` for usage.`);
      else if (error instanceof InvalidAgentIdError) console.error(`longrun: ${error.message}`);
      else console.error(`longrun: ${error instanceof Error ? error.message : String(error)}`);
      const code =
        usage || error instanceof InvalidAgentIdError ? EXIT.usage : error instanceof CliExit ? error.code : EXIT.error;
      return exitAfterOutput(code);
    },
  );
}

/** Exits with `code` after everything written to stdout and stderr so far, and the pending spans, are out. */
async function exitAfterOutput(code: number): Promise<never> {
  process.exitCode = code;
  await Promise.all([flushed(process.stdout), flushed(process.stderr), flushTracing()]);
  process.exit(code);
}

/** Resolves when the stream has handed over every earlier write (its callbacks run in order). */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.writableLength === 0 || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => stream.write('', () => resolve()));
}

if (import.meta.main) cliMain();
