/**
 * The `longrun` CLI. With `npm start` running it works from another terminal with no flags (standard ports);
 * against any other deployment through TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (and the rest of the temporal CLI's
 * variables and profiles) and the S3 variables.
 *
 * Exit codes: 0 ok · 1 error · 2 bad usage · 3 unknown agent · 4 agent closed.
 */
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { loadSettings, parseOrigins, readInt } from '../config/settings.ts';
import type { Settings } from '../config/settings.ts';
import { connectClient, loadTemporalTarget } from '../config/temporal.ts';
import { flushTracing } from '../config/tracing.ts';
import { ModelOverrideError, UnknownModelError } from '../engine/models.ts';
import { agentPrefix } from '../contract/keys.ts';
import { S3BlobStore, s3TargetFromEnv } from '../storage/s3.ts';
import {
  agentHandle,
  agentState,
  assertAgentId,
  closeAgent,
  closeAgentAndWait,
  InvalidAgentIdError,
  queueMessage,
  sendMessage,
  AgentClosedError,
  reopenAgent,
  startAgent,
  compactAgent,
  requestCompaction,
  revertAgent,
  approveDraft,
  discardDraft,
} from '../client/agents.ts';
import { listAgents, compactionHistory, agentProgress } from '../client/reads.ts';
import {
  renderAgents,
  renderCompaction,
  renderContext,
  renderDraft,
  renderEvents,
  renderRevert,
  renderState,
} from './render.ts';
import { watchAgent } from './watch.ts';
import { AgentUpdateError } from '../client/update-errors.ts';
import { DEFAULT_RECONNECT_TIMEOUT_MS, DEFAULT_WORKER_TIMEOUT_MS } from '../client/updates.ts';
import type { UpdateWaitOptions } from '../client/updates.ts';
import { MAX_REVIEW_SECONDS, PolicyError, STRATEGIES } from '../engine/policy.ts';
import { resolvePolicy } from '../engine/presets.ts';
import { isReplayedModel, REPLAYED_LABEL, SessionFormatError } from '../llm/replay.ts';
import type { StrategyName } from '../engine/policy.ts';
import {
  InvalidInputError,
  quoted,
  TURN_BUDGET_MAX,
  validateCompactInput,
  validateSendInput,
} from '../contract/agent.ts';
import type { SendResult, TurnBudget } from '../contract/agent.ts';
import { FAILURE } from '../contract/failures.ts';
import type { FailureType } from '../contract/failures.ts';

export const EXIT = { ok: 0, error: 1, usage: 2, unknownAgent: 3, closed: 4 } as const;

type Flag = keyof typeof OPTIONS;

/**
 * The commands and the flags each takes (`up` and `help` parse their own): a flag given to a command that does not
 * take it is a usage error, never silently ignored.
 */
const COMMAND_FLAGS: Record<string, readonly Flag[]> = {
  replay: ['preset', 'window', 'json'],
  list: ['json'],
  start: [
    'model',
    'system',
    'max-steps',
    'max-turn-tokens',
    'max-turn-seconds',
    'window',
    'preset',
    'background',
    'await-review',
    'on-review-timeout',
    'reopen',
  ],
  send: ['no-wait', 'expect-turn', 'json'],
  chat: [],
  state: ['json'],
  context: ['json'],
  reload: [],
  compact: ['instructions', 'strategy', 'if-due', 'review', 'no-wait', 'json'],
  approve: ['summary-file', 'json'],
  discard: ['json'],
  events: ['since', 'limit', 'json'],
  revert: ['to-event', 'json'],
  watch: ['interval', 'json'],
  close: ['wait', 'json'],
  'codec-server': ['port', 'host', 'origins', 'namespaces'],
};

/** The command's own flags, as usage errors list them. */
function ownFlags(command: string): string {
  const allowed = COMMAND_FLAGS[command] ?? [];
  return allowed.length ? allowed.map((f) => `--${f}`).join(', ') : 'none';
}

/** Rejects a flag the command does not take, naming the command's own flags. */
function checkFlags(command: string, given: readonly string[]): void {
  const allowed = COMMAND_FLAGS[command];
  if (!allowed) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  const foreign = given.filter((flag) => !(allowed as readonly string[]).includes(flag));
  if (foreign.length > 0) {
    throw new UsageError(
      `${command}: ${foreign.map((f) => `--${f}`).join(', ')} is not an option of this command ` +
        `(its options: ${ownFlags(command)})`,
    );
  }
}

/** parseArgs with a flag no command takes: the command's own flags named (an unknown command said so first). */
function parseCommandArgs(command: string, args: string[]) {
  try {
    return parseArgs({
      args: joinNegativeNumbers(args),
      allowPositionals: true,
      strict: true,
      options: OPTIONS,
      tokens: true,
    });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw error;
    if (!COMMAND_FLAGS[command]) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    const option = /'(-[^']*)'/.exec((error as Error).message)?.[1] ?? '';
    throw new UsageError(`${command}: Unknown option '${option}' (its options: ${ownFlags(command)})`);
  }
}

/** The exit code and wording of each failure an Update reports (contract/failures.ts); any other is an error. */
const UPDATE_FAILURES: Partial<Record<FailureType, { exit: number; prefix: string }>> = {
  [FAILURE.turnFailed]: { exit: EXIT.error, prefix: 'the turn failed' },
  [FAILURE.compactionFailed]: { exit: EXIT.error, prefix: 'the compaction failed' },
  [FAILURE.agentClosed]: { exit: EXIT.closed, prefix: 'rejected' },
  [FAILURE.invalidInput]: { exit: EXIT.error, prefix: 'rejected' },
};

const HELP = `longrun — durable long-running LLM agents on Temporal

Usage:
  longrun up [--once] [--no-demo] [--cluster]
                                              the main job: stack, worker and demo (same as npm start);
                                              --cluster: PostgreSQL, Temporal server, UI, MinIO, 2 workers
  longrun start <agent> [--model M] [--system TEXT] [--window TOKENS] [--preset NAME]
                [--background RATIO|off] [--await-review SECONDS [--on-review-timeout apply|discard]]
                [--max-steps N] [--max-turn-tokens N] [--max-turn-seconds N]
                                              start an agent (idempotent while it runs; an id whose
                                              agent has closed is refused); --window for a model
                                              the registry does not know; --preset: the compaction
                                              policy (default, astrbot, chatgpt-on-wechat, agentscope,
                                              agentscope-java, octomind); --background: the share of
                                              the window from which compaction runs in the background
                                              while the agent works (default 0.7 in the default preset),
                                              or off; --await-review: automatic compactions wait as
                                              drafts for approve or discard up to SECONDS (at most
                                              2,592,000), then are applied (or discarded); the turn
                                              budget: model calls (default 500, at most 1,000,000), tokens spent
                                              (at most 1,000,000,000) and seconds (at most 2,592,000)
                                              per message, after which the turn stops without a
                                              final answer (send another message to continue)
  longrun start <agent> --reopen             continue a closed agent: its messages, ids, summary and
                                              settings, under the same id
  longrun send <agent> <text...> [--expect-turn N] [--json]
                                              send a message, print the reply; --expect-turn: only
                                              if it opens turn N (nobody else sent meanwhile)
  longrun send <agent> <text...> --no-wait   queue a message (a signal) and return at once
  longrun chat <agent>                       interactive: each line is a message (/state, /quit)
  longrun state <agent> [--json]             status, turns and stored messages
  longrun context <agent> [--json]           the working context: previews and storage references
  longrun reload <agent> <reference>         print stored content (a message or offloaded segment)
  longrun compact <agent> [--instructions TEXT] [--strategy NAME] [--if-due] [--no-wait] [--json]
                                              force a compaction now and print what it did;
                                              --if-due: only if the automatic trigger fires
  longrun compact <agent> --review [--instructions TEXT] [--strategy NAME] [--json]
                                              plan and summarize but do not apply: print the draft
                                              (id, plan, summary text, tokens, facts)
  longrun approve <agent> <draft> [--summary-file F] [--json]
                                              apply the draft; --summary-file: an edited summary (the
                                              facts it lost are pinned); a stale draft is refused
  longrun discard <agent> <draft>            drop the draft
  longrun events <agent> [--since SEQ] [--limit N] [--json]
                                              compaction events, oldest first, and totals (each
                                              read in full from S3, removed items included)
  longrun revert <agent> --to-event N [--json]
                                              restore the working context as it was before event N
                                              (byte-identical; every message stored since follows it,
                                              raw) and the task ledger of then: an event of its own
  longrun watch <agent> [--interval MS] [--json]
                                              follow the agent live: each turn and compaction as it
                                              completes, and the step in progress (model call,
                                              compaction planning / summarizing chunk k of n /
                                              applying) on one updating line; ends on Ctrl-C or when
                                              the agent closes; --interval: between polls (default
                                              500, 100 to 60000); --json: one object per change
  longrun replay <FILE.jsonl> [--preset NAME] [--window TOKENS] [--json]
                                              run a recorded session (OpenAI chat messages as JSONL)
                                              through a real agent and report what compaction did
  longrun list [--json]                      agents in this namespace
  longrun close <agent> [--wait] [--json]    close the agent (--wait: until done, print the final state)
  longrun codec-server [--port N] [--host H] [--origins A,B] [--namespaces A,B]
                                              serve POST /encode and /decode with the encryption keys, for
                                              the Temporal UI and the temporal CLI (docs/encryption.md)
  longrun help                               this text

Connection: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default "default"),
TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE; AWS_ENDPOINT_URL_S3 and the AWS variables (default: the
embedded MinIO); LONGRUN_TASK_QUEUE, LONGRUN_MODEL, LONGRUN_S3_BUCKET.
Waiting (send, chat, compact, approve, revert, close --wait): progress on stderr after 3 s; nothing is sent until a worker polls
the agent's task queue. LONGRUN_WORKER_TIMEOUT_MS (default 60000): how long to wait for a worker before giving up
(exit 1); LONGRUN_RECONNECT_TIMEOUT_MS (default 120000): how long to keep asking again, with the same Update id,
while Temporal cannot be reached.
Exit codes: 0 ok, 1 error, 2 bad usage, 3 unknown agent, 4 agent closed.`;

/** A usage mistake: exit code 2 with the message and a hint. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** An outcome with a specific exit code. */
class CliExit extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

const OPTIONS = {
  json: { type: 'boolean', default: false },
  'no-wait': { type: 'boolean', default: false },
  wait: { type: 'boolean', default: false },
  model: { type: 'string' },
  system: { type: 'string' },
  'max-steps': { type: 'string' },
  'max-turn-tokens': { type: 'string' },
  'max-turn-seconds': { type: 'string' },
  window: { type: 'string' },
  preset: { type: 'string' },
  background: { type: 'string' },
  'await-review': { type: 'string' },
  'on-review-timeout': { type: 'string' },
  instructions: { type: 'string' },
  strategy: { type: 'string' },
  since: { type: 'string' },
  limit: { type: 'string' },
  interval: { type: 'string' },
  'expect-turn': { type: 'string' },
  'to-event': { type: 'string' },
  review: { type: 'boolean', default: false },
  'summary-file': { type: 'string' },
  'if-due': { type: 'boolean', default: false },
  reopen: { type: 'boolean', default: false },
  port: { type: 'string' },
  host: { type: 'string' },
  origins: { type: 'string' },
  namespaces: { type: 'string' },
} as const;

/**
 * `--limit -1` as `--limit=-1`: parseArgs takes a value that starts with a dash for an option ("argument is
 * ambiguous"); a number is a value, so the flag's own check can say what is allowed.
 */
export function joinNegativeNumbers(args: string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const name = /^--([a-z-]+)$/.exec(args[i]!)?.[1];
    const next = args[i + 1];
    const takesValue = name !== undefined && (OPTIONS as Record<string, { type: string }>)[name]?.type === 'string';
    if (takesValue && next !== undefined && /^-\d/.test(next)) {
      joined.push(`--${name}=${next}`);
      i++;
    } else joined.push(args[i]!);
  }
  return joined;
}

/** An integer flag within [min, max], or a usage error naming the flag, the range and the value. */
function intFlag(name: string, raw: string | undefined, min = 0, max = Infinity): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    const range = Number.isFinite(max) ? `from ${min} to ${max}` : `≥ ${min}`;
    throw new UsageError(`--${name}: must be an integer ${range} (got ${JSON.stringify(raw)})`);
  }
  return value;
}

/** `--background`: a share of the window (the policy checks its range), or `off`. */
function backgroundFlag(raw: string): number | null {
  if (raw === 'off') return null;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) {
    throw new UsageError(
      `--background: must be a share of the window such as 0.7, or off (got ${JSON.stringify(raw)})`,
    );
  }
  return value;
}

/**
 * `--await-review SECONDS` (automatic compactions wait for review that long) and `--on-review-timeout apply|discard`
 * (what then; default apply): the policy's `review` (its ranges checked by the policy).
 */
function reviewFlags(values: { 'await-review'?: string; 'on-review-timeout'?: string }): {
  review?: { automatic: true; timeoutSeconds: number; onTimeout?: 'apply' | 'discard' };
} {
  const onTimeout = values['on-review-timeout'];
  if (values['await-review'] === undefined) {
    if (onTimeout !== undefined) throw new UsageError('--on-review-timeout goes with --await-review SECONDS');
    return {};
  }
  const timeoutSeconds = intFlag('await-review', values['await-review'], 1, MAX_REVIEW_SECONDS)!;
  if (onTimeout !== undefined && onTimeout !== 'apply' && onTimeout !== 'discard') {
    throw new UsageError(`--on-review-timeout: must be apply or discard (got ${JSON.stringify(onTimeout)})`);
  }
  return { review: { automatic: true, timeoutSeconds, ...(onTimeout ? { onTimeout } : {}) } };
}

/** `--origins`: the browser origins, each checked as LONGRUN_CODEC_ORIGINS is. */
function flagOrigins(raw: string): string[] {
  try {
    return parseOrigins(raw, '--origins');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
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

/**
 * Maps Temporal errors about a missing or finished agent to exit codes a script can trust. An Update to a completed
 * workflow also reports "not found", so a not-found agent is described to tell the two apart.
 */
async function classify(error: unknown, agentId: string): Promise<unknown> {
  if (error instanceof AgentClosedError) return new CliExit(EXIT.closed, error.message);
  // Input the workflow would refuse or drop, found before anything was sent.
  if (error instanceof InvalidInputError) return new UsageError(error.message);
  if (error instanceof WorkflowNotFoundError) {
    const status = await withClient((client) => agentHandle(client, agentId).describe()).then(
      (description) => description.status.name,
      () => undefined,
    );
    if (status && status !== 'RUNNING') {
      return new CliExit(EXIT.closed, `agent ${agentId} is closed (${status.toLowerCase()})`);
    }
    return new CliExit(EXIT.unknownAgent, `unknown agent ${agentId}: no such workflow (start it with longrun start)`);
  }
  if (error instanceof AgentUpdateError) {
    const known = UPDATE_FAILURES[error.type as FailureType];
    return new CliExit(known?.exit ?? EXIT.error, `${known?.prefix ?? 'rejected'}: ${error.message}`);
  }
  return error;
}

/** How the CLI waits for an Update: progress lines on stderr, the timeouts from the environment (see HELP). */
function waitOptions(): UpdateWaitOptions {
  return {
    onProgress: (line) => console.error(`longrun: ${line}`),
    workerTimeoutMs: readInt(process.env, 'LONGRUN_WORKER_TIMEOUT_MS', DEFAULT_WORKER_TIMEOUT_MS, 1_000, 86_400_000),
    reconnectTimeoutMs: readInt(
      process.env,
      'LONGRUN_RECONNECT_TIMEOUT_MS',
      DEFAULT_RECONNECT_TIMEOUT_MS,
      1_000,
      86_400_000,
    ),
  };
}

/** A reply as `send` prints it: labelled when a replayed model served it (the worker has no OPENAI_API_KEY). */
function shownReply(result: SendResult): string {
  if (result.stopped) return result.reply; // longrun's own message, not the model's
  return isReplayedModel(result.servedBy) ? `${REPLAYED_LABEL} ${result.reply}` : result.reply;
}

/** The note on stderr when a turn stopped at its budget (the reply on stdout says it in full). */
function stoppedNote(result: SendResult): string | undefined {
  const stop = result.stopped;
  if (!stop) return undefined;
  const unit = { steps: 'model calls', tokens: 'tokens', seconds: 's' }[stop.by];
  return (
    `longrun: turn ${result.turn} stopped at its ${stop.by} budget (${stop.used} of ${stop.limit} ${unit}) ` +
    'without a final answer; send another message to continue'
  );
}

/** The turn budget flags of `start`, each checked against its range. */
function turnBudgetFlags(values: {
  'max-steps'?: string;
  'max-turn-tokens'?: string;
  'max-turn-seconds'?: string;
}): TurnBudget | undefined {
  const steps = intFlag('max-steps', values['max-steps'], 1, TURN_BUDGET_MAX.steps);
  const tokens = intFlag('max-turn-tokens', values['max-turn-tokens'], 1, TURN_BUDGET_MAX.tokens);
  const seconds = intFlag('max-turn-seconds', values['max-turn-seconds'], 1, TURN_BUDGET_MAX.seconds);
  const budget: TurnBudget = {
    ...(steps !== undefined ? { steps } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
    ...(seconds !== undefined ? { seconds } : {}),
  };
  return Object.keys(budget).length > 0 ? budget : undefined;
}

async function chat(agentId: string, out: (line: string) => void): Promise<number> {
  const lines = createInterface({ input: process.stdin, terminal: false });
  // The iterator buffers lines from now on, so input piped in by a script is not lost while we connect.
  const input = lines[Symbol.asyncIterator]();
  const prompt = () => process.stdout.write('you   > ');
  out(`chatting with ${agentId}; /state shows the state, /quit (or Ctrl-D) leaves`);
  try {
    return await withClient(async (client) => {
      prompt();
      for (let next = await input.next(); !next.done; next = await input.next()) {
        const text = next.value.trim();
        if (text === '/quit') break;
        if (text === '/state') out(renderState(await agentState(client, agentId)));
        else if (text !== '') {
          const started = Date.now();
          const result = await sendMessage(client, agentId, text, waitOptions());
          // As the demo shows it; a turn stopped at its budget is longrun speaking, not the model.
          const speaker = result.stopped
            ? 'longrun'
            : isReplayedModel(result.servedBy)
              ? `agent ${REPLAYED_LABEL}`
              : 'agent';
          out(
            `${speaker} > ${result.reply}\n        (turn ${result.turn}, ${result.steps} model call(s), ` +
              `${Date.now() - started} ms)`,
          );
        }
        prompt();
      }
      out('');
      return EXIT.ok;
    });
  } finally {
    lines.close();
  }
}

async function reload(settings: Settings, agentId: string, reference: string): Promise<string> {
  if (!reference.startsWith(agentPrefix(agentId)) || reference.includes('..')) {
    throw new UsageError(`reload: reference ${quoted(reference)} is outside ${agentPrefix(agentId)}`);
  }
  const body = await new S3BlobStore(s3TargetFromEnv(settings)).get(reference);
  if (body === undefined) throw new CliExit(EXIT.error, `nothing is stored under ${quoted(reference)}`);
  return body;
}

export async function run(argv: string[], out: (line: string) => void = console.log): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    out(HELP);
    return command ? EXIT.ok : EXIT.usage;
  }
  if (command === 'up') {
    // Loaded only here: the worker's native runtime is not for `longrun state` and the other client commands.
    const { main: runMainJob } = await import('./up.ts');
    await runMainJob(rest);
    return EXIT.ok;
  }
  const { values, positionals, tokens } = parseCommandArgs(command, rest);
  checkFlags(command, [...new Set(tokens.filter((t) => t.kind === 'option').map((t) => t.name))]);
  const settings = loadSettings();
  if (command === 'replay') {
    const file = positionals[0];
    if (!file) throw new UsageError('replay: missing <FILE.jsonl>');
    if (values.preset !== undefined) resolvePolicy({ preset: values.preset }); // a bad preset: exit 2 before anything starts
    const window = intFlag('window', values.window, 1);
    const { runReplay, renderReplay } = await import('./replay.ts');
    const report = await runReplay({
      file,
      ...(values.preset ? { preset: values.preset } : {}),
      ...(window !== undefined ? { window } : {}),
      log: (line) => console.error(line),
    });
    out(values.json ? JSON.stringify(report, null, 2) : renderReplay(report));
    return EXIT.ok;
  }
  if (command === 'codec-server') {
    const { runCodecServer } = await import('./codec-server.ts');
    const port = intFlag('port', values.port, 1, 65_535);
    const origins = values.origins === undefined ? undefined : flagOrigins(values.origins);
    const namespaces = values.namespaces
      ?.split(',')
      .map((namespace) => namespace.trim())
      .filter(Boolean);
    await runCodecServer({
      settings,
      ...(port !== undefined ? { port } : {}),
      ...(values.host ? { host: values.host } : {}),
      ...(origins ? { origins } : {}),
      ...(namespaces ? { namespaces } : {}),
      log: out,
    });
    return EXIT.ok;
  }
  if (command === 'list') {
    const agents = await withClient((client) => listAgents(client));
    out(values.json ? JSON.stringify(agents, null, 2) : renderAgents(agents));
    return EXIT.ok;
  }
  const agentId = positionals[0];
  if (!agentId) throw new UsageError(`${command}: missing <agent>`);
  assertAgentId(agentId);
  try {
    switch (command) {
      case 'start': {
        if (values.reopen) {
          // Every setting of a new agent: what a reopened one keeps as it was.
          const given = COMMAND_FLAGS.start!.filter((name) => name !== 'reopen' && name in values);
          if (given.length > 0) {
            throw new UsageError(
              `--reopen continues the agent as it was: it cannot go with ${given.map((n) => `--${n}`).join(', ')}`,
            );
          }
          const store = new S3BlobStore(s3TargetFromEnv(settings));
          await withClient((client) => reopenAgent(client, store, agentId));
          out(`reopened agent ${agentId}`);
          return EXIT.ok;
        }
        const turnBudget = turnBudgetFlags(values);
        const window = intFlag('window', values.window, 1);
        const compaction = {
          ...(values.preset ? { preset: values.preset } : {}),
          ...(values.background !== undefined ? { backgroundRatio: backgroundFlag(values.background) } : {}),
          ...reviewFlags(values),
        };
        resolvePolicy(compaction); // a bad preset or ratio: exit 2, naming it, before anything starts
        await withClient((client) =>
          startAgent(client, {
            agentId,
            model: values.model ?? settings.model,
            taskQueue: settings.taskQueue,
            ...(values.system ? { systemPrompt: values.system } : {}),
            ...(turnBudget ? { turnBudget } : {}),
            ...(window !== undefined ? { modelOverride: { window } } : {}),
            ...(Object.keys(compaction).length > 0 ? { compaction } : {}),
          }),
        );
        out(`started agent ${agentId}`);
        return EXIT.ok;
      }
      case 'send': {
        const text = positionals.slice(1).join(' ');
        if (!text) throw new UsageError('send: missing <text>');
        validateSendInput({ text }); // what the workflow would refuse or drop is never sent
        if (values['no-wait']) {
          if (values['expect-turn'] !== undefined) {
            throw new UsageError('--expect-turn needs a reply to report a conflict: it cannot go with --no-wait');
          }
          await withClient((client) => queueMessage(client, agentId, text));
          out(`queued for ${agentId}`);
          return EXIT.ok;
        }
        const expectedTurn = intFlag('expect-turn', values['expect-turn'], 1);
        const result = await withClient((client) =>
          sendMessage(client, agentId, text, {
            ...waitOptions(),
            ...(expectedTurn !== undefined ? { expectedTurn } : {}),
          }),
        );
        out(values.json ? JSON.stringify(result) : shownReply(result));
        const note = stoppedNote(result);
        if (note) console.error(note);
        return EXIT.ok;
      }
      case 'chat':
        return await chat(agentId, out);
      case 'state': {
        const state = await withClient((client) => agentState(client, agentId));
        out(values.json ? JSON.stringify(state, null, 2) : renderState(state));
        return EXIT.ok;
      }
      case 'context': {
        const state = await withClient((client) => agentState(client, agentId));
        out(values.json ? JSON.stringify(state.messages, null, 2) : renderContext(state));
        return EXIT.ok;
      }
      case 'reload': {
        const reference = positionals[1];
        if (!reference) throw new UsageError('reload: missing <reference>');
        out(await reload(settings, agentId, reference));
        return EXIT.ok;
      }
      case 'compact': {
        if (values.strategy !== undefined && !(STRATEGIES as readonly string[]).includes(values.strategy)) {
          throw new UsageError(`--strategy: ${JSON.stringify(values.strategy)} is not one of ${STRATEGIES.join(', ')}`);
        }
        const request = {
          ...(values.instructions ? { instructions: values.instructions } : {}),
          ...(values.strategy ? { strategy: values.strategy as StrategyName } : {}),
          ...(values['if-due'] ? { force: false } : {}),
        };
        if (values.review) {
          if (values['no-wait'] || values['if-due']) {
            throw new UsageError('--review returns a draft to read: it cannot go with --no-wait or --if-due');
          }
          const reviewed = await withClient((client) =>
            compactAgent(client, agentId, { ...request, review: true }, waitOptions()),
          );
          out(values.json ? JSON.stringify(reviewed, null, 2) : renderDraft(reviewed));
          return EXIT.ok;
        }
        validateCompactInput(request); // what the workflow would refuse or drop is never sent
        if (values['no-wait']) {
          await withClient((client) => requestCompaction(client, agentId, request));
          out(`compaction requested for ${agentId}`);
          return EXIT.ok;
        }
        const result = await withClient((client) => compactAgent(client, agentId, request, waitOptions()));
        out(values.json ? JSON.stringify(result, null, 2) : renderCompaction(result));
        return EXIT.ok;
      }
      case 'events': {
        const since = intFlag('since', values.since);
        const limit = intFlag('limit', values.limit);
        const store = new S3BlobStore(s3TargetFromEnv(settings));
        const { events, stats } = await withClient((client) =>
          compactionHistory(client, store, agentId, {
            ...(since !== undefined ? { since } : {}),
            ...(limit !== undefined ? { limit } : {}),
          }),
        );
        out(values.json ? JSON.stringify({ events, stats }, null, 2) : renderEvents(events, stats));
        return EXIT.ok;
      }
      case 'approve':
      case 'discard': {
        const draft = positionals[1];
        if (!draft) throw new UsageError(`${command}: missing <draft> (the id compact --review printed)`);
        if (command === 'discard') {
          const dropped = await withClient((client) => discardDraft(client, agentId, draft, waitOptions()));
          const paused =
            dropped.pausedUntil !== undefined
              ? `; automatic compaction paused until the context reaches ${dropped.pausedUntil} tokens`
              : '';
          out(values.json ? JSON.stringify(dropped) : `discarded ${dropped.discarded}${paused}`);
          return EXIT.ok;
        }
        const file = values['summary-file'];
        const summary = file === undefined ? undefined : await readFile(file, 'utf8');
        const result = await withClient((client) =>
          approveDraft(client, agentId, draft, { ...(summary !== undefined ? { summary } : {}), ...waitOptions() }),
        );
        out(values.json ? JSON.stringify(result, null, 2) : renderCompaction(result));
        return EXIT.ok;
      }
      case 'revert': {
        const toEvent = intFlag('to-event', values['to-event'], 1);
        if (toEvent === undefined) throw new UsageError('revert: missing --to-event N (the event to go back before)');
        const result = await withClient((client) => revertAgent(client, agentId, { toEvent }, waitOptions()));
        out(values.json ? JSON.stringify(result, null, 2) : renderRevert(result));
        return EXIT.ok;
      }
      case 'watch': {
        const intervalMs = intFlag('interval', values.interval, 100, 60_000) ?? 500;
        const stop = new AbortController();
        const onSignal = () => stop.abort();
        process.once('SIGINT', onSignal);
        process.once('SIGTERM', onSignal);
        try {
          const ended = await withClient((client) =>
            watchAgent(() => agentProgress(client, agentId), agentId, {
              intervalMs,
              json: values.json,
              write: (text) => process.stdout.write(text),
              isTTY: process.stdout.isTTY === true,
              note: (line) => console.error(`longrun: ${line}`),
              signal: stop.signal,
            }),
          );
          return ended === 'was-closed' ? EXIT.closed : EXIT.ok;
        } finally {
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
        }
      }
      case 'close': {
        if (values.wait) {
          const state = await withClient((client) => closeAgentAndWait(client, agentId, waitOptions()));
          out(values.json ? JSON.stringify(state, null, 2) : `closed agent ${agentId} after ${state.turns} turns`);
          return EXIT.ok;
        }
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
