/**
 * The replayed model: answers from a recorded session (OpenAI chat messages as JSONL) instead of a provider: the
 * recording read and indexed, and which recorded reply answers a request. The offline model (llm/offline-model.ts,
 * what the worker talks to without OPENAI_API_KEY) and `longrun replay` both answer by these rules.
 *
 * Three things in longrun are called replay. This file is the replayed model. `longrun replay` (commands/replay.ts) is
 * the CLI command that runs a recorded session through an agent, answered by this model (RecordingReplayer below), and
 * reports what compaction did and what it cost. Temporal's replay re-runs a workflow's recorded history against the
 * workflow code to check it is deterministic (test/unit/history-replay.test.ts, test/e2e/replay.test.ts).
 *
 * Which recorded reply answers a request is read from the request itself, so a retried request gets the same answer
 * and compaction inside a turn (older steps dropped or summarized, a summary and the task ledger inserted as user
 * messages) does not shift it ({@link locateRecordedReply}): a request that continues a turn is placed by the tool
 * call ids of its newest step, and gets the next assistant message recorded in that turn (where the recording makes
 * an id more than once, as providers that number calls per turn or per reply do, by that step's place among the
 * request's messages, {@link placeCaller}); a turn's first call is placed by the user's message, matched against the
 * recording's user messages in order ({@link turnOfUserMessage}). What is answered where the recording has no reply
 * is the offline model's (llm/offline-model.ts) or `longrun replay`'s ({@link RecordingReplayer}) to say.
 *
 * Every completion names its model `replayed:<requested model>` ({@link replayedModelName}), so a client in
 * another process can tell a replayed reply from a real one by the model that served it ({@link isReplayedModel}).
 *
 * @example
 * const located = locateRecordedReply(indexRecording(parseSessionJsonl(text)), request.body.messages, () => 0);
 */
import type { ChatMessage } from '../engine/messages.ts';
import { textOf } from '../engine/messages.ts';
import { LEDGER_HEADER } from '../engine/ledger.ts';
import type { ScriptedReply } from './chat-server.ts';

const ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/** Thrown for a recording that is not OpenAI chat messages as JSONL; names the line (when one line is at fault). */
export class SessionFormatError extends Error {
  constructor(line: number | undefined, message: string) {
    super(line === undefined ? message : `line ${line}: ${message}`);
    this.name = 'SessionFormatError';
  }
}

/**
 * What is wrong with an assistant message's `tool_calls`, if anything: a list of function calls, each with a
 * non-empty string `id`, and a `function` with a string `name` and string `arguments` (the JSON text), as the Chat
 * Completions API has them.
 */
function toolCallsProblem(calls: unknown): string | undefined {
  if (!Array.isArray(calls)) return 'tool_calls must be an array of function calls';
  for (const [i, call] of calls.entries()) {
    const what = `tool_calls[${i}]`;
    if (typeof call !== 'object' || call === null || Array.isArray(call)) return `${what} must be an object`;
    const { id, type, function: fn } = call as { id?: unknown; type?: unknown; function?: unknown };
    if (typeof id !== 'string' || id === '') return `${what}.id must be a non-empty string`;
    if (type !== undefined && type !== 'function') return `${what}.type must be "function"`;
    if (typeof fn !== 'object' || fn === null) return `${what}.function must be an object {name, arguments}`;
    const { name, arguments: args } = fn as { name?: unknown; arguments?: unknown };
    if (typeof name !== 'string') return `${what}.function.name must be a string`;
    if (typeof args !== 'string') return `${what}.function.arguments must be a string (the arguments as JSON text)`;
  }
  return undefined;
}

/**
 * What is wrong with an array content, if anything: each part must be an object with a string `type`; a text part
 * needs a string `text`, an image part an `image_url` with a string `url`. Other types are taken as they are.
 */
function partProblem(parts: unknown[]): string | undefined {
  for (const [i, part] of parts.entries()) {
    const what = `content part ${i + 1}`;
    if (typeof part !== 'object' || part === null || Array.isArray(part)) return `${what} must be an object`;
    const { type, text, image_url: image } = part as { type?: unknown; text?: unknown; image_url?: unknown };
    if (typeof type !== 'string') return `${what} must have a string type`;
    if (type === 'text' && typeof text !== 'string') return `${what} (text) must have a string text`;
    if (
      type === 'image_url' &&
      (typeof image !== 'object' || image === null || typeof (image as { url?: unknown }).url !== 'string')
    ) {
      return `${what} (image_url) must have an image_url with a string url`;
    }
  }
  return undefined;
}

/** Parses JSONL chat messages; content is a string, null or an array of parts; blank lines are skipped. */
export function parseSessionJsonl(text: string): ChatMessage[] {
  const messages: ChatMessage[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new SessionFormatError(index + 1, `not JSON (${(error as Error).message})`);
    }
    const message = value as Partial<ChatMessage>;
    if (typeof message !== 'object' || message === null || !ROLES.has(message.role as string)) {
      throw new SessionFormatError(index + 1, 'role must be one of system, user, assistant, tool');
    }
    const content: unknown = message.content;
    if (Array.isArray(content)) {
      const problem = partProblem(content);
      if (problem) throw new SessionFormatError(index + 1, problem);
    } else if (content !== null && content !== undefined && typeof content !== 'string') {
      throw new SessionFormatError(index + 1, 'content must be a string, an array of parts or null');
    }
    // What the replay sends back as a model's reply, and answers tool calls by.
    if (message.role === 'assistant' && message.tool_calls !== undefined && message.tool_calls !== null) {
      const problem = toolCallsProblem(message.tool_calls);
      if (problem) throw new SessionFormatError(index + 1, problem);
    }
    if (message.role === 'tool' && (typeof message.tool_call_id !== 'string' || message.tool_call_id === '')) {
      throw new SessionFormatError(index + 1, 'tool_call_id must be a non-empty string (the call it answers)');
    }
    messages.push({ ...message, content: message.content ?? null } as ChatMessage);
  });
  return messages;
}

/**
 * A recorded assistant message as the reply a completion carries: its text (a reply recorded as parts is sent as
 * its text parts, since a completion's message content is text) and its tool calls.
 */
export function replyOf(message: ChatMessage): { content: string | null; toolCalls?: ChatMessage['tool_calls'] } {
  const content = Array.isArray(message.content) ? textOf(message.content) : message.content;
  return { content, ...(message.tool_calls ? { toolCalls: message.tool_calls } : {}) };
}

/** What a replayed model calls itself in a completion: the requested model's name behind this prefix. */
export const REPLAYED_MODEL_PREFIX = 'replayed:';

/** The model name a replayed completion carries, e.g. `replayed:gpt-4o-mini`. */
export function replayedModelName(requested: string): string {
  return `${REPLAYED_MODEL_PREFIX}${requested}`;
}

/**
 * Whether a model that served a reply (a `SendResult`'s `servedBy`) is a replayed one. The one rule for labelling
 * replies: the CLI and the demo print "(replayed model)" where it holds. A missing name (a result recorded before
 * results named their model, or a provider that names none) is not replayed.
 */
export function isReplayedModel(servedBy: string | undefined): boolean {
  return servedBy?.startsWith(REPLAYED_MODEL_PREFIX) ?? false;
}

/** How a reply from a replayed model is labelled where it is printed. */
export const REPLAYED_LABEL = '(replayed model)';

/** How a summary that compaction put in the context begins (engine/summary.ts renderSummary). */
export const SUMMARY_PREFIX = '[Summary of earlier conversation';

/** A user message that compaction put in the context (a summary, the task ledger), not one the user sent. */
export function isCompactionMessage(message: ChatMessage): boolean {
  if (message.role !== 'user') return false;
  const text = textOf(message.content);
  return text.startsWith(SUMMARY_PREFIX) || text.startsWith(LEDGER_HEADER);
}

/** A place in a recording: a turn (0-based) and an assistant message of it (0-based, among the turn's replies). */
export interface RecordedStep {
  turn: number;
  step: number;
}

/** A recorded turn: its user message, the assistant messages recorded after it, and what answered their calls. */
export interface RecordedTurn {
  user: ChatMessage;
  replies: ChatMessage[];
  /** Per reply: the tool results recorded after it (before the next assistant or user message), by call id. */
  results: Map<string, ChatMessage>[];
  /** Per reply: where it is in the recording (0-based, among all its messages). */
  positions: number[];
}

/** A recording indexed for replay. */
export interface RecordingIndex {
  /** Each user message, in order, with the assistant messages recorded after it and before the next one. */
  turns: RecordedTurn[];
  /**
   * Where each tool call id was made: every recorded assistant message that asked for it, in recording order. An id
   * is made more than once where the provider numbers its calls per turn or per reply (`call_0` again and again).
   */
  calls: Map<string, RecordedStep[]>;
}

/**
 * Indexes a recording by turn and by tool call id (assistant messages before the first user message are left out,
 * and so are tool results not recorded after a reply that made their call).
 */
export function indexRecording(session: ChatMessage[]): RecordingIndex {
  const turns: RecordedTurn[] = [];
  const calls = new Map<string, RecordedStep[]>();
  for (const [position, message] of session.entries()) {
    if (message.role === 'user') turns.push({ user: message, replies: [], results: [], positions: [] });
    else if (message.role === 'assistant' && turns.length > 0) {
      const turn = turns.at(-1)!;
      const at = { turn: turns.length - 1, step: turn.replies.length };
      for (const id of new Set((message.tool_calls ?? []).map((call) => call.id))) {
        calls.set(id, [...(calls.get(id) ?? []), at]);
      }
      turn.replies.push(message);
      turn.results.push(new Map());
      turn.positions.push(position);
    } else if (message.role === 'tool' && turns.length > 0) {
      const turn = turns.at(-1)!;
      const made = turn.replies.at(-1)?.tool_calls?.some((call) => call.id === message.tool_call_id);
      const results = turn.results.at(-1);
      if (made && results && !results.has(message.tool_call_id!)) results.set(message.tool_call_id!, message);
    }
  }
  return { turns, calls };
}

/** What identifies a step's calls beyond their ids: each call's function name and arguments, in order. */
function callsSignature(message: ChatMessage): string {
  return JSON.stringify((message.tool_calls ?? []).map((call) => [call.function.name, call.function.arguments]));
}

/** Whether `a` comes after `b` in the recording (`b` absent: everything does). */
function isAfter(a: RecordedStep, b: RecordedStep | undefined): boolean {
  return b === undefined || a.turn > b.turn || (a.turn === b.turn && a.step > b.step);
}

/**
 * The recorded step an assistant message with tool calls of a request stands for, given where the request's earlier
 * messages placed it (`after`) and the turn it is known to be in (`turnHint`, if any). With unique ids, the step
 * that made them. An id made more than once (ids numbered per turn or per reply) is placed by position: among the
 * steps that made the same ids, those with the same calls (names and arguments), then those whose recorded results
 * are the request's `answers` (the tool messages right after it; a result cut or masked since matches none, and is
 * passed over), then those after `after` (a request's steps are in recording order), then those in `turnHint`; the
 * first one left (each filter applies only where it leaves one). Undefined when the recording never made these ids.
 * The same calls with the same results, with nothing before them in the request to tell them apart, take the first.
 */
function placeCaller(
  index: RecordingIndex,
  message: ChatMessage,
  answers: ChatMessage[],
  after: RecordedStep | undefined,
  turnHint: number | undefined,
): RecordedStep | undefined {
  const ids = [...new Set(message.tool_calls!.map((call) => call.id))];
  const stepOf = (at: RecordedStep) => index.turns[at.turn]!.replies[at.step]!;
  const sameIds = (at: RecordedStep) => {
    const made = new Set(stepOf(at).tool_calls!.map((call) => call.id));
    return made.size === ids.length && ids.every((id) => made.has(id));
  };
  // The steps that made the first id the recording has (as before), those that made exactly these ids first.
  const made = ids.map((id) => index.calls.get(id)).find(Boolean);
  if (!made) return undefined;
  if (made.length === 1) return made[0];
  let candidates = made;
  const narrow = (keep: (at: RecordedStep) => boolean) => {
    const kept = candidates.filter(keep);
    if (kept.length > 0) candidates = kept;
  };
  narrow(sameIds);
  const signature = callsSignature(message);
  narrow((at) => callsSignature(stepOf(at)) === signature);
  // The same calls made again (the same command run twice) may have had different results.
  narrow((at) =>
    answers.every((answer) => {
      const result = index.turns[at.turn]!.results[at.step]!.get(answer.tool_call_id!);
      return result !== undefined && textOf(result.content) === textOf(answer.content);
    }),
  );
  narrow((at) => isAfter(at, after));
  if (turnHint !== undefined) narrow((at) => at.turn === turnHint);
  return candidates[0];
}

/**
 * Places a request's messages in the recording, walking them in order (a request's messages keep the recording's
 * order; compaction only drops some and inserts its own): a user message of the user's own at the next recorded turn
 * after the walk's place with the same text (`step` -1: before the turn's first reply; undefined for a text the
 * recording has no further turn of), an assistant message with tool calls at the step that made its calls
 * ({@link placeCaller}), a text reply at the step after the walk's place. Other messages are not placed.
 */
export function placeRequest(
  index: RecordingIndex,
  messages: ChatMessage[],
  turnHint?: number,
): (RecordedStep | undefined)[] {
  let at: RecordedStep | undefined;
  return messages.map((message, i): RecordedStep | undefined => {
    if (message.role === 'user' && !isCompactionMessage(message)) {
      const text = textOf(message.content);
      const turn = index.turns.findIndex((t, i) => i > (at?.turn ?? -1) && textOf(t.user.content) === text);
      if (turn === -1) return undefined;
      at = { turn, step: -1 };
      return at;
    }
    if (message.role !== 'assistant') return undefined;
    if ((message.tool_calls?.length ?? 0) > 0) {
      const answers = [];
      for (const next of messages.slice(i + 1)) {
        if (next.role !== 'tool') break;
        answers.push(next);
      }
      const placed = placeCaller(index, message, answers, at, turnHint);
      if (placed) at = placed;
      return placed;
    }
    if (at) at = { turn: at.turn, step: at.step + 1 };
    return undefined;
  });
}

/** Where a request sits in the recording, the reply it gets (if the recording has one), and how it was placed. */
export interface LocatedReply {
  at: RecordedStep;
  reply?: ChatMessage;
  /** `tool-calls`: by its newest step's calls; `first-call`: a turn's first call; `count`: ids not recorded. */
  placedBy: 'tool-calls' | 'first-call' | 'count';
}

/**
 * The recorded reply that answers a request, robust to compaction inside the turn and to tool call ids that repeat
 * across turns and replies. Compaction may drop or summarize older steps of the turn in progress and insert a
 * summary and the task ledger as user messages, so neither counting user messages nor counting assistant messages
 * after the last one places a request. The newest step is always kept, so:
 *
 * - when the request's last assistant message with tool calls comes after its last user message of the user's own
 *   (not a summary or the ledger, {@link isCompactionMessage}), the request continues a turn: the recorded assistant
 *   message that made the same tool calls is found, and the next assistant message recorded in its turn answers
 *   (`reply` absent when the turn has no further one). Where the recording made those ids more than once, the
 *   request's messages, walked in order, say which one ({@link placeCaller}): the one after the steps and the user
 *   message before it, in the turn `firstCallTurn` names when nothing before it places it;
 * - otherwise it is a turn's first call (no assistant message after the turn's user message, or that message is the
 *   last one): `firstCallTurn` says which turn, and the turn's first recorded reply answers;
 * - tool call ids the recording does not have: the turn from `firstCallTurn`, the step by counting the assistant
 *   messages after the user's last message (the rule before compaction inside turns).
 *
 * Undefined when `firstCallTurn` cannot place the request.
 */
export function locateRecordedReply(
  index: RecordingIndex,
  messages: ChatMessage[],
  firstCallTurn: () => number | undefined,
): LocatedReply | undefined {
  const lastUser = messages.findLastIndex((m) => m.role === 'user' && !isCompactionMessage(m));
  const lastCaller = messages.findLastIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
  const located = (at: RecordedStep, placedBy: LocatedReply['placedBy']): LocatedReply => {
    const reply = index.turns[at.turn]?.replies[at.step];
    return { at, placedBy, ...(reply ? { reply } : {}) };
  };
  if (lastCaller > lastUser) {
    const ids = messages[lastCaller]!.tool_calls!.map((call) => call.id);
    const reused = ids.some((id) => (index.calls.get(id)?.length ?? 0) > 1);
    const made = placeRequest(index, messages, reused ? firstCallTurn() : undefined)[lastCaller];
    if (made) return located({ turn: made.turn, step: made.step + 1 }, 'tool-calls');
    const turn = firstCallTurn();
    if (turn === undefined) return undefined;
    const step = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
    return located({ turn, step }, 'count');
  }
  const turn = firstCallTurn();
  return turn === undefined ? undefined : located({ turn, step: 0 }, 'first-call');
}

/**
 * The recorded turn a request's first call belongs to, without a counter (the offline model serves any client): its
 * last user message of the user's own, matched against the recording's user messages in order. The request's
 * messages are walked in order: each user message takes the next recorded turn with its text, each step the
 * recording made moves the walk to it, so where the recording has a text more than once, the steps and messages
 * before it say which one. Undefined for a message the recording does not have there.
 */
export function turnOfUserMessage(index: RecordingIndex, messages: ChatMessage[]): number | undefined {
  const last = messages.findLastIndex((m) => m.role === 'user' && !isCompactionMessage(m));
  if (last === -1) return undefined;
  return placeRequest(index, messages)[last]?.turn;
}

/** Which recorded step answered a request (`longrun replay --json`, per request): 1-based, as a reader counts. */
export interface RecordedAnswer {
  /** The recorded turn (1-based). */
  turn: number;
  /** The assistant message of that turn (1-based). */
  step: number;
  /** The assistant message's place in the recording (1-based, among its messages: its line, without blank lines). */
  message: number;
  /** How the request was placed ({@link LocatedReply}). */
  placedBy: LocatedReply['placedBy'];
}

/**
 * The recording's side of `longrun replay` (commands/replay.ts), apart from the servers so it can be tested alone:
 * it answers each request the model server gets with the recorded reply at its place ({@link locateRecordedReply},
 * the turn of a first call by the turn the replay is sending), answers the tool calls of that reply with the tool
 * results recorded after it (by call id within that step, so ids that repeat across steps get their own step's
 * results), and keeps count: the steps of each turn replayed, the requests it could not place, and which recorded
 * step answered each request.
 */
export class RecordingReplayer {
  /** The steps of each recorded turn that answered a request (0-based). */
  readonly replayed: Set<number>[];
  /** Requests that could not be placed in the recording, by turn. */
  readonly unplaced: number[];
  /** Per request, by the model server's count (0-based): the recorded step that answered it, null for none. */
  readonly answers: (RecordedAnswer | null)[] = [];
  /** The tool results recorded after the step last sent. */
  private results = new Map<string, ChatMessage>();

  readonly index: RecordingIndex;

  constructor(index: RecordingIndex) {
    this.index = index;
    this.replayed = index.turns.map(() => new Set<number>());
    this.unplaced = index.turns.map(() => 0);
  }

  /** The reply to the `request`-th request (0-based) of `messages`, sent while the replay sends turn `turn`. */
  answer(messages: ChatMessage[], turn: number, request = this.answers.length): ScriptedReply {
    const located = locateRecordedReply(this.index, messages, () => turn);
    if (!located?.reply) {
      if (located?.placedBy === 'count') this.unplaced[turn] = (this.unplaced[turn] ?? 0) + 1;
      this.answers[request] = null;
      return { content: '(the recording has no further reply in this turn)' };
    }
    const { at, placedBy } = located;
    const recorded = this.index.turns[at.turn]!;
    this.replayed[at.turn]!.add(at.step);
    this.results = recorded.results[at.step]!;
    this.answers[request] = {
      turn: at.turn + 1,
      step: at.step + 1,
      message: recorded.positions[at.step]! + 1,
      placedBy,
    };
    return replyOf(located.reply);
  }

  /** The recorded result of call `callId` of the step last sent; an error text the model can read when none. */
  resultOf(callId: string | undefined): string {
    const result = this.results.get(callId ?? '');
    return result ? textOf(result.content) : 'error: no recorded result';
  }

  /** Recorded steps that answered a request, each counted once. */
  get replayedSteps(): number {
    return this.replayed.reduce((n, steps) => n + steps.size, 0);
  }
}
