/**
 * Bad input, table-driven, across the four ways in, a file each: the `longrun` CLI (test/e2e/bad-input-cli.test.ts),
 * the client library (bad-input-client), the temporal CLI (bad-input-temporal-cli) and the HTTP model boundary, what
 * a model's reply and a team's tools hand the worker (bad-input-model). Each row is one case: what is sent, the words
 * the error must hold (the field and the limit), the CLI's exit code, and the state afterwards:
 *
 * - `unchanged`: the agent's state (status, turns, messages, tokens, compactions, dropped signals) and its stored
 *   objects are what they were before the row;
 * - `dropped`: a Signal, which cannot be rejected: dropped and counted in `droppedSignals`, nothing else changed;
 * - `absent`: the agent the row would have started does not exist, and nothing is stored under its id;
 * - `answered`: a model reply or tool result the worker cannot use as it is: the turn ends with every tool call
 *   answered (the error is the call's result, for the model to read), the agent running and intact.
 *
 * Each file holds at least 8 rows of its surface, and together at least 40 (its floor: {@link describeRows}).
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import type { AgentState } from '../../contract/state.ts';
import { AGENT_ID_PATTERN, agentPrefix } from '../../contract/keys.ts';
import type { ToolDefinition } from '../../activities/tools.ts';
import type { Responder } from '../../llm/chat-server.ts';
import { startHarness } from './harness.ts';
import type { Harness } from './harness.ts';
import { cliEnv, runLongrun } from './longrun-cli.ts';

export type Surface = 'longrun CLI' | 'client library' | 'temporal CLI' | 'model boundary';

/** What a row produced: the error's text, and the exit code (CLI) or error type (library, workflow). */
export interface Outcome {
  text: string;
  exit?: number | null;
  type?: string;
}

export interface Row {
  surface: Surface;
  case: string;
  /** What is sent, as a reader would type it (long values abridged). */
  input: string;
  run: () => Promise<Outcome>;
  /** Words the error must hold: the field, and the limit or what is allowed. */
  error: (string | RegExp)[];
  /** The CLI's exit code (docs/cli.md: 2 bad usage, 3 unknown agent, 4 agent closed). */
  exit?: number;
  /** The error's class or failure type. */
  type?: string;
  state:
    | { unchanged: string }
    | { dropped: 'message' | 'compact'; agent: string }
    | { absent: string }
    /** The temporal CLI started the workflow: it failed at its start, before any activity or stored object. */
    | { failedAtStart: string }
    /** The model's reply was refused: the turn failed, the agent kept the user's message and nothing of the reply. */
    | { turnFailed: string }
    /** `longrun replay`: refused before it started anything (no server, no worker, no agent). */
    | { refusedBeforeStart: true }
    | { answered: true };
}

export const x = (n: number) => 'x'.repeat(n);
export const ID_10KB = `a${x(10_239)}`;
export const ID_RULE = 'must be 1 to 64 letters, digits, dots, underscores or hyphens';
export const STRATEGY_LIST = 'is not one of supersede-tool-results, truncate-tool-results, mask-tool-results';
export const PRESET_LIST = 'one of default, astrbot, chatgpt-on-wechat, agentscope, agentscope-java, octomind';

/**
 * The harness of a file's rows: started before them, with its agents (`open` with a first message, `closed` closed),
 * then `ready` run on it; closed after them. A model that answers plainly unless `responder` says otherwise.
 */
export function rowHarness(
  agents: { open: string[]; closed: string[] },
  options: { responder?: Responder; tools?: ToolDefinition[]; ready?: (h: Harness) => Promise<void> } = {},
): () => Harness {
  let h: Harness | undefined;
  beforeAll(async () => {
    const plain: Responder = (request) => ({ content: `got ${request.body.messages.length} messages` });
    h = await startHarness(options.responder ?? plain, options.tools);
    await startAgents(h, agents);
    await options.ready?.(h);
  });
  afterAll(async () => {
    await h?.close();
  });
  return () => h!;
}

/** Starts each agent of `open` (with a first message) and of `closed` (closed again, its workflow completed). */
async function startAgents(h: Harness, { open, closed }: { open: string[]; closed: string[] }): Promise<void> {
  const start = (agentId: string) => startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
  await Promise.all([...open, ...closed].map(start));
  await Promise.all(open.map((agentId) => sendMessage(h.client, agentId, 'hello')));
  await Promise.all(closed.map((agentId) => closeAgent(h.client, agentId)));
  await Promise.all(closed.map((agentId) => h.client.workflow.getHandle(agentWorkflowId(agentId)).result()));
}

/** The `longrun` CLI's outcome; a row's error is on stderr, and nothing is on stdout. */
export async function cliOutcome(h: Harness, ...args: string[]): Promise<Outcome> {
  const run = await runLongrun(args, { env: cliEnv(h), timeoutMs: 30_000 });
  expect(run.stdout, `stdout of longrun ${args.join(' ').slice(0, 200)}`).toBe('');
  return { text: run.stderr, exit: run.code };
}

/** A client call that must fail: its error's message and type (failure type, else class name). */
export async function library(call: () => Promise<unknown>): Promise<Outcome> {
  const error = await call().then(
    () => undefined,
    (error: unknown) => error as Error & { type?: string },
  );
  expect(error, 'the call must fail').toBeDefined();
  return { text: error!.message, type: error!.type ?? error!.name };
}

/** What a row must leave as it was: the state without run bookkeeping, and the agent's stored objects. */
async function fingerprint(h: Harness, agentId: string) {
  const state: AgentState = await agentState(h.client, agentId);
  const { status, turns, messages, contextTokens, compactions, lastError, nextMessageSeq, droppedSignals } = state;
  const keys = await h.store.list(agentPrefix(agentId));
  return {
    state: { status, turns, messages, contextTokens, compactions, lastError, nextMessageSeq },
    droppedSignals: droppedSignals ?? {},
    keys,
  };
}

/** The agent `agentId` was never started, and nothing is stored under its id. */
async function expectAbsent(h: Harness, agentId: string) {
  const described = await h.client.workflow
    .getHandle(agentWorkflowId(agentId))
    .describe()
    .then(
      () => 'exists',
      (error: unknown) => (error instanceof WorkflowNotFoundError ? 'not found' : 'not a workflow id'),
    );
  expect(described).not.toBe('exists');
  // Only an id of the agent id pattern can name a prefix (S3 refuses a `..` segment, and keys over 1,024 bytes).
  if (AGENT_ID_PATTERN.test(agentId)) expect(await h.store.list(agentPrefix(agentId))).toEqual([]);
}

/** Runs a row and checks its outcome: the error's words, the exit code or type, and the state it left. */
async function checkRow(h: Harness, row: Row): Promise<void> {
  const target =
    'unchanged' in row.state
      ? row.state.unchanged
      : 'dropped' in row.state
        ? row.state.agent
        : 'turnFailed' in row.state
          ? row.state.turnFailed
          : undefined;
  const before = target ? await fingerprint(h, target) : undefined;

  const outcome = await row.run();

  for (const words of row.error) {
    if (typeof words === 'string') expect(outcome.text, row.input).toContain(words);
    else expect(outcome.text, row.input).toMatch(words);
  }
  if (row.surface === 'longrun CLI') {
    expect(outcome.exit, outcome.text).toBe(row.exit);
    expect(outcome.text).not.toMatch(/\n\s+at /); // no stack trace
    expect(outcome.text.length).toBeLessThan(1_000); // not the input echoed back
  }
  if (row.type !== undefined) expect(outcome.type, outcome.text).toBe(row.type);

  if ('unchanged' in row.state) expect(await fingerprint(h, row.state.unchanged)).toEqual(before);
  if ('absent' in row.state) await expectAbsent(h, row.state.absent);
  if ('failedAtStart' in row.state) {
    const history = await h.client.workflow.getHandle(agentWorkflowId(row.state.failedAtStart)).fetchHistory();
    expect(history.events?.some((event) => event.activityTaskScheduledEventAttributes)).toBe(false);
    expect(await h.store.list(agentPrefix(row.state.failedAtStart))).toEqual([]);
  }
  if ('turnFailed' in row.state) {
    const after = await fingerprint(h, row.state.turnFailed);
    expect(after.state).toMatchObject({ status: 'running', turns: before!.state.turns, lastError: outcome.text });
    expect(after.state.messages.slice(before!.state.messages.length).map((m) => m.role)).toEqual(['user']);
  }
  // Nothing but the error was printed: no server, worker or agent was started (each of them logs a line).
  if ('refusedBeforeStart' in row.state) {
    expect(outcome.text.split('\n').filter((line) => line !== '' && !line.startsWith('Run `longrun help`'))).toEqual([
      expect.stringMatching(/^longrun: /),
    ]);
  }
  if ('dropped' in row.state) {
    const signal = row.state.dropped;
    expect(outcome.text).toBe(''); // a Signal is accepted by the server, then dropped by the agent
    await expect
      .poll(async () => (await fingerprint(h, target!)).droppedSignals[signal] ?? 0, { timeout: 10_000 })
      .toBe((before!.droppedSignals[signal] ?? 0) + 1);
    const after = await fingerprint(h, target!);
    expect({ ...after, droppedSignals: undefined }).toEqual({ ...before, droppedSignals: undefined });
  }
}

/**
 * The suite of one surface's rows: at least `floor` of them (at least 8; the four files' floors add up to 40), each
 * a test. `h` gives the file's harness ({@link rowHarness}).
 */
export function describeRows(surface: Surface, floor: number, table: Row[], h: () => Harness): void {
  describe(`bad input (${surface}): each a clear error naming the field and the limit, the state unchanged`, () => {
    it(`has at least ${floor} rows, all of this surface`, () => {
      expect(floor).toBeGreaterThanOrEqual(8);
      expect(table.length).toBeGreaterThanOrEqual(floor);
      expect(table.filter((row) => row.surface !== surface)).toEqual([]);
    });

    it.each(table.map((row) => [`${row.surface}: ${row.case}`, row] as const))('%s', async (_name, row) => {
      await checkRow(h(), row);
    });
  });
}
