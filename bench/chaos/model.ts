/**
 * The chaos run's model: a scripted OpenAI-compatible responder whose answers depend only on the request, so a run
 * with faults and one without give the same transcript. A user message `a1 task 3: 4 steps` starts a task of four
 * `work` calls, one per model call; a tool result `step s of 4 (task 3 of a1)` asks for the next step, the last one
 * for the answer. A summary request gets a summary made from the request alone.
 *
 * Faults (F6), at `rate` of the requests, chosen by a seeded draw: 429 with Retry-After, 500, a reset connection, a
 * hang past the client's timeout, malformed JSON, an empty `choices`. Each is retried by the model-call activity; none
 * may change what the agent ends with.
 */
import { asksForSummary } from '../../llm/chat-server.ts';
import type { Responder, ScriptedReply } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';

export const MODEL_FAULTS = ['429', '500', 'reset', 'hang', 'malformed', 'empty'] as const;
export type ModelFault = (typeof MODEL_FAULTS)[number];

/** The user message that starts task `task` of agent `agent`, `steps` tool steps long. */
export const taskMessage = (agent: string, task: number, steps: number) => `${agent} task ${task}: ${steps} steps`;

const TASK = /^(\S+) task (\d+): (\d+) steps$/;
const STEP = /^step (\d+) of (\d+) \(task (\d+) of (\S+)\)/;

function workCall(agent: string, task: number, step: number, of: number): ScriptedReply {
  const id = `${agent}-t${task}-s${step}`;
  const args = JSON.stringify({ agent, task, step, of });
  return { content: null, toolCalls: [{ id, type: 'function', function: { name: 'work', arguments: args } }] };
}

/** The answer to a request without faults. */
export function scriptedReply(messages: { role: string; content?: unknown }[], summary: boolean): ScriptedReply {
  if (summary) {
    const text = `${messages.length} messages read`;
    return {
      content: JSON.stringify({
        task_overview: 'Chaos run: tasks of work steps.',
        current_state: text,
        important_discoveries: 'Every step returned its result.',
        next_steps: 'Go on with the next step.',
        context_to_preserve: 'task and step numbers',
      }),
      usage: { prompt_tokens: 800, completion_tokens: 80 },
    };
  }
  const last = messages.at(-1);
  const text = textOf(last?.content as never);
  const task = last?.role === 'user' ? TASK.exec(text) : null;
  if (task) return workCall(task[1]!, Number(task[2]), 1, Number(task[3]));
  const step = last?.role === 'tool' ? STEP.exec(text) : null;
  if (step) {
    const [s, of, n, agent] = [Number(step[1]), Number(step[2]), Number(step[3]), step[4]!];
    if (s < of) return workCall(agent, n, s + 1, of);
    return { content: `${agent} task ${n} done in ${of} steps` };
  }
  return { content: `noted: ${text.slice(0, 40)}` };
}

/** A seeded draw in [0, 1): the same seed gives the same faults. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

function faultReply(fault: ModelFault, hangMs: number): ScriptedReply {
  switch (fault) {
    case '429':
      return { status: 429, error: 'rate limited (chaos)', headers: { 'retry-after': '1' } };
    case '500':
      return { status: 500, error: 'internal error (chaos)' };
    case 'reset':
      return { reset: true };
    case 'hang':
      return { content: 'too late', delayMs: hangMs };
    case 'malformed':
      return { raw: '{"id": "chatcmpl-chaos", "choices": [' };
    case 'empty':
      return { raw: JSON.stringify({ id: 'chatcmpl-chaos', object: 'chat.completion', model: 'x', choices: [] }) };
  }
}

/**
 * The responder: each request answered as scripted, or, with probability `rate`, with one of the faults (in
 * turn), counted in `injected`.
 */
export function chaosResponder(options: { rate: number; seed: number; hangMs: number }): {
  responder: Responder;
  injected: Record<ModelFault, number>;
} {
  const draw = seededRandom(options.seed);
  const injected = Object.fromEntries(MODEL_FAULTS.map((f) => [f, 0])) as Record<ModelFault, number>;
  let next = 0;
  const responder: Responder = (request) => {
    if (options.rate > 0 && draw() < options.rate) {
      const fault = MODEL_FAULTS[next++ % MODEL_FAULTS.length]!;
      injected[fault]++;
      return faultReply(fault, options.hangMs);
    }
    return scriptedReply(request.body.messages, asksForSummary(request.body));
  };
  return { responder, injected };
}

/** The steer number `seq` to agent `agent` in the streaming fault (F9): its sequence number is in its text. */
export const steerMessage = (agent: string, seq: number) => `${agent} steer ${seq}`;
/** A steer's text: the agent and its sequence number. */
export const STEER = /^(\S+) steer (\d+)$/;

/** The text a streamed step writes before its tool call: about forty words that name the step. */
export function stepText(agent: string, task: number, step: number, of: number): string {
  const words = Array.from({ length: 36 }, (_, i) => `w${(agent.length * 31 + task * 7 + step * 3 + i) % 97}`);
  return `${agent} task ${task} step ${step} of ${of}: ${words.join(' ')}.`;
}

/** Where an agent's turn is, as its latest model request shows: the step asked for, of how many. */
export interface StreamPosition {
  task: number;
  step: number;
  of: number;
}

/**
 * A streamed reply: since when (ms since the epoch), how long its chunks take (ms), and which reply of the script it
 * is (`<agent> task <n> step <s>`, or the task's answer): the same for every attempt of one model call.
 */
export interface Streaming {
  since: number;
  ms: number;
  reply: string;
}

/**
 * The model of the streaming fault (F9): the same script as {@link scriptedReply}, steers skipped (a steer is a user
 * message after a step's tool results, and the task goes on), every step's reply written as text and a tool call and
 * streamed `chunkDelayMs` apart, so that a worker killed meanwhile is killed mid-output. It tells where each agent's
 * turn is (`positions`) and which replies are being streamed now (`streaming`).
 */
export function streamingResponder(options: { chunkDelayMs: number }): {
  responder: Responder;
  positions: Map<string, StreamPosition>;
  streaming: Streaming[];
} {
  const positions = new Map<string, StreamPosition>();
  const streaming: Streaming[] = [];
  const responder: Responder = (request) => {
    const messages = request.body.messages.filter(
      (m) => !(m.role === 'user' && STEER.test(textOf(m.content as never))),
    );
    const summary = asksForSummary(request.body);
    const reply = scriptedReply(messages, summary);
    if (summary || 'status' in reply || !('content' in reply)) return reply;
    const call = reply.toolCalls?.[0];
    let content = reply.content;
    let which = content ?? '';
    if (call) {
      const args = JSON.parse(call.function.arguments) as { agent: string; task: number; step: number; of: number };
      positions.set(args.agent, { task: args.task, step: args.step, of: args.of });
      content = stepText(args.agent, args.task, args.step, args.of);
      which = `${args.agent} task ${args.task} step ${args.step}`;
    }
    const ms = (content ?? '').split(' ').length * options.chunkDelayMs;
    if (request.body.stream === true) {
      const now = Date.now();
      streaming.push({ since: now, ms, reply: which });
      while (streaming.length > 64 || (streaming.length > 0 && streaming[0]!.since + streaming[0]!.ms < now - 60_000)) {
        streaming.shift();
      }
    }
    return { ...reply, content, chunkDelayMs: options.chunkDelayMs };
  };
  return { responder, positions, streaming };
}
