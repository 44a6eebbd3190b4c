/**
 * The scale benchmark's model: a scripted OpenAI-compatible responder that answers each request after 1–5 s (drawn
 * from the request, so the same seed gives the same latencies), with a reply of 1–10 KB. A user message opens a
 * turn; a share of turns first asks for one `lookup` tool call (the worker's tool returns 1–10 KB), then answers. A
 * summary request (structured output asked for, or the conversation-mode instruction last: chat-server.ts
 * `asksForSummary`) gets a five-field summary.
 *
 * Every request is told apart by the tag of the newest user message it holds (workload.ts `messageTag`), so the
 * time the model held each agent's requests is known: the driver subtracts it from the turn's latency.
 */
import { asksForSummary } from '../../llm/chat-server.ts';
import type { Responder, ScriptedReply } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { bytesFor, drawFor, filler, readTag, uniformFor } from './workload.ts';

export const LOOKUP_TOOL = 'lookup';

export interface ScaleModelOptions {
  seed: number;
  /** Model latency per request, in ms: uniform in [min, max]. */
  latencyMs: { min: number; max: number };
  /** Share of turns whose first model call asks for a tool. */
  toolShare: number;
}

/** What the model saw of one agent: its requests, the summaries among them, and the time it held them. */
export interface AgentModelTally {
  requests: number;
  summaries: number;
  modelMs: number;
}

/** The newest tag in the request (searching from the last message back), and whether it came from a tool result. */
function newestTag(messages: readonly { role: string; content?: unknown }[]) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const tag = readTag(textOf(messages[i]!.content as never));
    if (tag) return tag;
  }
  return undefined;
}

/** The reply to a request, and how long to hold it; `summary`: the request asks for a summary. */
export function scaleReply(
  options: ScaleModelOptions,
  messages: readonly ChatMessage[],
  summary: boolean,
): { reply: Exclude<ScriptedReply, { status: number } | { reset: true } | { raw: string }>; agent?: string } {
  const tag = newestTag(messages);
  const last = messages.at(-1);
  // The step within the turn: tool results after the newest user message.
  const stepKey = `${tag?.agent ?? '?'}/${tag?.n ?? 0}/${summary ? 'summary' : last?.role}/${messages.length}`;
  const delayMs = Math.round(uniformFor(options.latencyMs.min, options.latencyMs.max, options.seed, stepKey, 'ms'));
  if (summary) {
    return {
      reply: {
        content: JSON.stringify({
          task_overview: `Scale benchmark agent ${tag?.agent ?? ''}: answer each message.`,
          current_state: `${messages.length} messages read; the last tagged message is #${tag?.n ?? 0}.`,
          important_discoveries: filler(`${options.seed}/${stepKey}/summary`, 600),
          next_steps: 'Answer the next message.',
          context_to_preserve: 'message numbers',
        }),
        delayMs,
      },
      ...(tag ? { agent: tag.agent } : {}),
    };
  }
  // Only the tagged message that opens a turn may ask for the tool: a steer (untagged) last in the request is answered
  // with text, or the tool would be asked for again with the same call id in the same turn.
  const opensTurn = last?.role === 'user' && readTag(textOf(last.content)) !== undefined;
  if (tag && opensTurn && drawFor(options.seed, tag.agent, tag.n, 'tool') < options.toolShare) {
    const args = JSON.stringify({
      agent: tag.agent,
      n: tag.n,
      bytes: bytesFor(options.seed, tag.agent, tag.n, 'tool'),
    });
    return {
      reply: {
        content: null,
        toolCalls: [
          { id: `${tag.agent}-${tag.n}`, type: 'function', function: { name: LOOKUP_TOOL, arguments: args } },
        ],
        delayMs,
      },
      agent: tag.agent,
    };
  }
  const bytes = bytesFor(options.seed, tag?.agent ?? '?', tag?.n ?? 0, 'reply');
  return {
    reply: { content: filler(`${options.seed}/${stepKey}/reply`, bytes), delayMs },
    ...(tag ? { agent: tag.agent } : {}),
  };
}

/** The responder, and what it saw of each agent (`tally`). */
export function scaleResponder(options: ScaleModelOptions): {
  responder: Responder;
  tally: Map<string, AgentModelTally>;
} {
  const tally = new Map<string, AgentModelTally>();
  const responder: Responder = (request) => {
    const summary = asksForSummary(request.body);
    const { reply, agent } = scaleReply(options, request.body.messages, summary);
    if (agent !== undefined) {
      const seen = tally.get(agent) ?? { requests: 0, summaries: 0, modelMs: 0 };
      seen.requests++;
      if (summary) seen.summaries++;
      seen.modelMs += reply.delayMs ?? 0;
      tally.set(agent, seen);
    }
    return reply;
  };
  return { responder, tally };
}
