/**
 * The handlers of the commands that start, talk to, read and close an agent (the table, table.ts, says which flags
 * each takes). A handler checks its input before it connects: what the workflow would refuse or drop is never sent.
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { agentPrefix } from '../../contract/keys.ts';
import { S3BlobStore, s3TargetFromEnv } from '../../storage/s3.ts';
import { renderMatches, SEARCH_LIMITS, SearchInputError, validateSearch } from '../../storage/search-index.ts';
import { searchAgent } from '../../client/search.ts';
import { agentProgress, listAgents } from '../../client/reads.ts';
import { interruptAgent } from '../../client/control.ts';
import { retriedActivities, taskQueuePolled } from '../../client/agent-observation.ts';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { updateStage } from '../../client/updates.ts';
import type { UpdateStage } from '../../client/updates.ts';
import {
  agentHandle,
  agentState,
  closeAgent,
  configureAgent,
  closeAgentAndWait,
  queueMessage,
  sendMessage,
  startAgent,
} from '../../client/agents.ts';
import { AgentSettingsDifferError } from '../../client/setting-differences.ts';
import { reopenAgent } from '../../client/agent-reopen.ts';
import { isReplayedModel, REPLAYED_LABEL } from '../../llm/replayed-model.ts';
import { InvalidInputError, quoted, WINDOW_RANGE } from '../../contract/inputs.ts';
import { validateConfigureInput, validateSendInput } from '../../contract/input-checks.ts';
import { FAILURE } from '../../contract/failures.ts';
import { AgentUpdateError } from '../../client/update-errors.ts';
import type { ConfigureInput } from '../../contract/inputs.ts';
import type { InterruptResult, SendResult } from '../../contract/results.ts';
import { ChatKeys } from './chat-keys.ts';
import { renderAgents, renderConfigured, renderContext, renderState } from '../render.ts';
import { watchAgent } from '../watch.ts';
import { streamAgent } from '../../client/stream.ts';
import { listenForStop } from '../../worker/stopping.ts';
import { classify, waitOptions, withClient } from './connection.ts';
import { CliExit, EXIT, intFlag, UsageError } from './parse.ts';
import { startSettings } from './start-flags.ts';
import type { Invocation } from './parse.ts';

export async function start({ args, values, given, settings, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  if (values.reopen) {
    // Every setting of a new agent: what a reopened one keeps as it was.
    const settingsGiven = given.filter((name) => name !== 'reopen');
    if (settingsGiven.length > 0) {
      throw new UsageError(
        `--reopen continues the agent as it was: it cannot go with ${settingsGiven.map((n) => `--${n}`).join(', ')}`,
      );
    }
    const store = new S3BlobStore(s3TargetFromEnv(settings));
    await withClient((client) => reopenAgent(client, store, agentId));
    out(`reopened agent ${agentId}`);
    return EXIT.ok;
  }
  const flagged = startSettings(values); // a bad flag: exit 2, naming it, before anything starts
  await withClient((client) =>
    startAgent(client, {
      agentId,
      model: values.model ?? settings.model,
      taskQueue: settings.taskQueue,
      ...(values.system ? { systemPrompt: values.system } : {}),
      ...flagged,
    }).catch((error: unknown) => {
      // Running with other settings: exit 2 naming them, unless the only one is the model no --model asked for
      // (LONGRUN_MODEL's default, not a wish: the agent may have been configured since).
      if (!(error instanceof AgentSettingsDifferError)) throw error;
      const asked = error.differences.filter((d) => d.setting !== 'model' || values.model !== undefined);
      if (asked.length > 0) throw new CliExit(EXIT.usage, new AgentSettingsDifferError(agentId, asked).message);
    }),
  );
  out(`started agent ${agentId}`);
  return EXIT.ok;
}

/** `configure`: the running agent's model, window or system prompt, changed (an Update); what changed. */
export async function configure({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const window = intFlag('window', values.window, WINDOW_RANGE.min, WINDOW_RANGE.max);
  const request: ConfigureInput = {
    ...(values.model !== undefined ? { model: values.model } : {}),
    ...(window !== undefined ? { window } : {}),
    ...(values.system !== undefined ? { systemPrompt: values.system } : {}),
  };
  if (Object.keys(request).length === 0) {
    throw new UsageError('configure: give at least one of --model, --window, --system');
  }
  validateConfigureInput(request); // what the workflow would refuse for its shape is never sent
  const result = await withClient((client) => configureAgent(client, agentId, request, waitOptions()));
  out(values.json ? JSON.stringify(result, null, 2) : renderConfigured(result, agentId));
  return EXIT.ok;
}

/**
 * `send <agent> -`: the message is stdin, whole (one argument holds at most 128 KiB on Linux, a message up to 200,000
 * characters), its last line break dropped as a shell's `$(cat file)` drops it.
 */
function stdinText(): string {
  return readFileSync(0, 'utf8').replace(/\r?\n$/, '');
}

export async function send({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const text = args.text === '-' ? stdinText() : args.text!;
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
  const result = await withClient(async (client) => {
    const interrupted = interruptedSend(client, agentId);
    try {
      return await sendMessage(client, agentId, text, {
        ...waitOptions(),
        onSent: interrupted.sent,
        ...(expectedTurn !== undefined ? { expectedTurn } : {}),
      });
    } finally {
      interrupted.off();
    }
  });
  out(values.json ? JSON.stringify(result) : shownReply(result));
  const note = stoppedNote(result);
  if (note) console.error(note);
  return EXIT.ok;
}

export async function chat({ args, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const lines = createInterface({ input: process.stdin, terminal: false });
  // The iterator buffers lines from now on, so input piped in by a script is not lost while we connect.
  const input = lines[Symbol.asyncIterator]();
  const prompt = () => process.stdout.write('you   > ');
  out(`chatting with ${agentId}; Ctrl-C interrupts a turn, /state shows the state, /quit (or Ctrl-D) leaves`);
  let keys: ChatKeys | undefined;
  try {
    return await withClient(async (client) => {
      keys = new ChatKeys({
        interrupt: () => interruptAgent(client, agentId, waitOptions()),
        note: (line) => console.error(`longrun: ${line}`),
        leave: () => {
          out('');
          process.exit(EXIT.interrupted);
        },
      }).listen();
      prompt();
      for (let next = await input.next(); !next.done; next = await input.next()) {
        const text = next.value.trim();
        if (text === '/quit') break;
        if (text === '/state') out(renderState(await agentState(client, agentId)));
        else if (text !== '') {
          const started = Date.now();
          keys.sending();
          const result = await sendMessage(client, agentId, text, {
            ...waitOptions(),
            onSent: () => keys!.sent(),
          }).catch(async (error: unknown) => {
            // A line the agent refused (too long, empty) or a turn that failed: said, and the chat reads on.
            if (!lineRefused(error)) throw error;
            console.error(`longrun: ${((await classify(error, agentId)) as Error).message}`);
            return undefined;
          });
          await reportInterrupt(keys.turnEnded(), agentId);
          if (!result) {
            prompt();
            continue;
          }
          // As the demo shows it; a turn stopped at its budget or interrupted is longrun speaking, not the model.
          const speaker =
            result.stopped || result.interrupted
              ? 'longrun'
              : isReplayedModel(result.servedBy)
                ? `agent ${REPLAYED_LABEL}`
                : 'agent';
          const how = result.interrupted
            ? `turn ${result.turn} interrupted at step ${result.interrupted.step}`
            : `turn ${result.turn}`;
          out(
            `${speaker} > ${result.reply}\n        (${how}, ${result.steps} model call(s), ` +
              `${Date.now() - started} ms)`,
          );
        }
        prompt();
      }
      out('');
      return EXIT.ok;
    });
  } finally {
    keys?.dispose();
    lines.close();
  }
}

/** What the interrupt sent by Ctrl-C during a turn did, when it did not end that turn (it had ended), or failed. */
async function reportInterrupt(interrupting: Promise<unknown> | undefined, agentId: string): Promise<void> {
  if (!interrupting) return;
  try {
    const result = (await interrupting) as InterruptResult;
    if (!result.interrupted) console.error(`longrun: nothing was interrupted: ${result.reason}`);
  } catch (error) {
    console.error(`longrun: the interrupt failed: ${((await classify(error, agentId)) as Error).message}`);
  }
}

/** Did the agent refuse this one line (its input, or the turn it ran), leaving the chat able to go on? */
function lineRefused(error: unknown): boolean {
  if (error instanceof InvalidInputError) return true;
  return (
    error instanceof AgentUpdateError && (error.type === FAILURE.invalidInput || error.type === FAILURE.turnFailed)
  );
}

export async function state({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  if (values.json) {
    out(JSON.stringify(await withClient((client) => agentState(client, agentId)), null, 2));
    return EXIT.ok;
  }
  // Whether a worker polls its task queue, and the activities that failed and are retried (a model endpoint that is
  // down), beside the state (unknown when the look fails: the state is what counts).
  const [shown, seen] = await withClient((client) =>
    Promise.all([
      agentState(client, agentId),
      agentHandle(client, agentId)
        .describe()
        .then(async (description) => ({
          worker: await taskQueuePolled(client, description.taskQueue),
          retried: retriedActivities(description, Date.now()),
        }))
        .catch(() => undefined),
    ]),
  );
  out(renderState(shown, { ...seen, now: Date.now() }));
  return EXIT.ok;
}

export async function context({ args, values, out }: Invocation): Promise<number> {
  const state = await withClient((client) => agentState(client, args.agent!));
  out(values.json ? JSON.stringify(state.messages, null, 2) : renderContext(state));
  return EXIT.ok;
}

/** Prints a stored object, read only under the agent's own prefix. */
export async function reload({ args, settings, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  // The model's form of a reference (`context_reload("agents/…")`, as a search result shows it) is the key inside.
  const reference = /^context_reload\(\s*"(.*)"\s*\)$/s.exec(args.reference!)?.[1] ?? args.reference!;
  if (!reference.startsWith(agentPrefix(agentId)) || reference.includes('..')) {
    throw new UsageError(`reload: reference ${quoted(reference)} is outside ${agentPrefix(agentId)}`);
  }
  const body = await new S3BlobStore(s3TargetFromEnv(settings)).get(reference);
  if (body === undefined) {
    // Nothing there: for an agent Temporal does not know either, say so with its exit code, as every command does.
    const unknown = await withClient((client) => agentHandle(client, agentId).describe()).then(
      () => false,
      (error: unknown) => error instanceof WorkflowNotFoundError,
    );
    if (unknown) {
      throw new CliExit(
        EXIT.unknownAgent,
        `unknown agent ${agentId}: no such workflow, and nothing stored under ${quoted(reference)}`,
      );
    }
    throw new CliExit(EXIT.error, `nothing is stored under ${quoted(reference)}`);
  }
  out(body);
  return EXIT.ok;
}

/** Searches what the agent stored (its search index in S3: a closed agent's too). */
export async function search({ args, values, settings, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const text = args.query ?? '';
  const { min, max } = SEARCH_LIMITS.limit;
  const limit = intFlag('limit', values.limit, min, max);
  try {
    validateSearch(text, limit);
  } catch (error) {
    if (error instanceof SearchInputError) throw new UsageError(`search: ${error.message}`);
    throw error;
  }
  const store = new S3BlobStore(s3TargetFromEnv(settings));
  const matches = await withClient((client) =>
    searchAgent(client, agentId, text, { store, ...(limit !== undefined ? { limit } : {}) }),
  );
  out(
    values.json
      ? JSON.stringify(matches, null, 2)
      : renderMatches(text, matches, (key) => `longrun reload ${agentId} ${key}`),
  );
  return EXIT.ok;
}

export async function watch({ args, values, settings }: Invocation): Promise<number> {
  const agentId = args.agent!;
  const intervalMs = intFlag('interval', values.interval, 100, 60_000) ?? 500;
  const stop = new AbortController();
  const signals = listenForStop(); // the first Ctrl-C ends the watch; a second, later one exits at once
  void signals.first.then(() => stop.abort());
  try {
    const store = new S3BlobStore(s3TargetFromEnv(settings));
    const ended = await withClient((client) =>
      watchAgent(() => agentProgress(client, agentId), agentId, {
        intervalMs,
        json: values.json,
        write: (text) => process.stdout.write(text),
        isTTY: process.stdout.isTTY === true,
        note: (line) => console.error(`longrun: ${line}`),
        signal: stop.signal,
        // The model's output as it is written, from now on (docs/streaming.md).
        stream: (signal, from) => streamAgent(client, store, agentId, { from: from ?? 'end', signal }),
      }),
    );
    return ended === 'was-closed' ? EXIT.closed : EXIT.ok;
  } finally {
    signals.dispose();
  }
}

export async function list({ values, out }: Invocation): Promise<number> {
  const agents = await withClient((client) => listAgents(client));
  out(values.json ? JSON.stringify(agents, null, 2) : renderAgents(agents));
  return EXIT.ok;
}

export async function close({ args, values, out }: Invocation): Promise<number> {
  const agentId = args.agent!;
  if (values.wait) {
    const state = await withClient((client) => closeAgentAndWait(client, agentId, waitOptions()));
    out(values.json ? JSON.stringify(state, null, 2) : `closed agent ${agentId} after ${state.turns} turns`);
    return EXIT.ok;
  }
  await withClient((client) => closeAgent(client, agentId));
  out(`closing agent ${agentId}`);
  return EXIT.ok;
}

/**
 * Ctrl-C while `send` waits for the reply: says what became of the message before exiting (130), so nobody sends it
 * twice. Once sent, the Update's id and whether the agent has it; before, that nothing was sent.
 */
function interruptedSend(client: Client, agentId: string): { sent: (updateId: string) => void; off: () => void } {
  let updateId: string | undefined;
  const signals = listenForStop(); // a second Ctrl-C (not npm's copy of the first) exits at once
  void signals.first.then(async () => {
    if (updateId === undefined) {
      console.error(`longrun: interrupted before the message was sent: nothing was delivered to ${agentId}`);
    } else {
      const stage = await updateStage(client, agentId, updateId, INTERRUPT_CHECK_MS);
      console.error(`longrun: interrupted; ${sentMessageFate(agentId, updateId, stage)}`);
    }
    process.exit(EXIT.interrupted);
  });
  return {
    sent: (id) => (updateId = id),
    off: () => signals.dispose(),
  };
}

/** How long an interrupted `send` asks the server about its Update before it exits. */
const INTERRUPT_CHECK_MS = 2_000;

/** What became of a message whose `send` was interrupted, in words (with the Update's id). */
export function sentMessageFate(agentId: string, updateId: string, stage: UpdateStage): string {
  const read = `\`longrun state ${agentId}\` shows the reply when the turn ends`;
  switch (stage) {
    case 'completed':
    case 'accepted':
      return `the message was delivered to ${agentId} (update ${updateId}) and its turn goes on: do not send it again; ${read}`;
    case 'not accepted yet':
      return (
        `the message was sent to ${agentId} (update ${updateId}) and waits for the agent to take it: do not send it ` +
        `again while it waits; ${read}`
      );
    case 'not found':
      return `the message sent as update ${updateId} is not on the server: ${agentId} did not get it; send it again`;
    case 'unknown':
      return (
        `the message was sent to ${agentId} as update ${updateId}; Temporal did not say whether the agent has it: ` +
        `read \`longrun state ${agentId}\` before sending it again`
      );
  }
}

/** A reply as `send` prints it: labelled when a replayed model served it (the worker has no OPENAI_API_KEY). */
export function shownReply(result: SendResult): string {
  if (result.stopped || result.interrupted) return result.reply; // longrun's own message, not the model's
  return isReplayedModel(result.servedBy) ? `${REPLAYED_LABEL} ${result.reply}` : result.reply;
}

/**
 * The note on stderr when a turn stopped at its budget or was interrupted (the reply on stdout says it in full).
 */
export function stoppedNote(result: SendResult): string | undefined {
  if (result.interrupted) {
    return (
      `longrun: turn ${result.turn} was interrupted at step ${result.interrupted.step} (longrun interrupt, or ` +
      'Ctrl-C in longrun chat); send another message to go on'
    );
  }
  const stop = result.stopped;
  if (!stop) return undefined;
  const unit = { steps: 'model calls', tokens: 'tokens', seconds: 's' }[stop.by];
  return (
    `longrun: turn ${result.turn} stopped at its ${stop.by} budget (${stop.used} of ${stop.limit} ${unit}) ` +
    'without a final answer; send another message to continue'
  );
}
