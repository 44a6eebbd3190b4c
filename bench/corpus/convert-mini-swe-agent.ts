/**
 * Converts a mini-swe-agent trajectory recorded with a tool-calling model (`*.traj.json`, trajectory format
 * `mini-swe-agent-1.1`: a `messages` list in the Chat Completions shape) into a session file for `longrun replay`:
 * one chat message per line.
 *
 * The conversion is mechanical and drops nothing the model saw:
 *
 * - `system`, `user`, `assistant` and `tool` messages keep their role and their `content` byte for byte;
 * - an assistant's `tool_calls` keep `id`, `type` and `function` (`name`, `arguments` as recorded); the streaming
 *   `index` of each call is left out, as are the recorder's own fields (`extra`: the raw provider response, costs,
 *   timestamps; `function_call: null`; `provider_specific_fields`);
 * - a tool message keeps its `tool_call_id`;
 * - the run's closing record (`role: "exit"`, whose content is what the agent submitted: the output of its final
 *   command after the submission sentinel) becomes the tool result of that final command, the one call the recorder
 *   leaves unanswered (mini-swe-agent stops the run instead of recording the command's output). It is refused when
 *   it does not follow exactly one unanswered call.
 *
 * Usage: node bench/corpus/convert-mini-swe-agent.ts IN.traj.json OUT.jsonl
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { ChatMessage, ToolCall } from '../../engine/messages.ts';

interface RecordedCall {
  id: string;
  type?: string;
  function: { name: string; arguments: string };
}

interface RecordedMessage {
  role: string;
  content?: unknown;
  tool_calls?: RecordedCall[] | null;
  tool_call_id?: string;
}

/** Thrown for a trajectory this conversion does not cover; names the message. */
export class TrajectoryFormatError extends Error {
  constructor(index: number, message: string) {
    super(`message ${index}: ${message}`);
    this.name = 'TrajectoryFormatError';
  }
}

function contentOf(index: number, content: unknown): string | null {
  if (content === null || content === undefined || typeof content === 'string') return content ?? null;
  throw new TrajectoryFormatError(index, 'content is neither text nor null');
}

/** The chat messages of a mini-swe-agent tool-calling trajectory (see the module comment for what is kept). */
export function sessionOfTrajectory(trajectory: { messages?: RecordedMessage[] }): ChatMessage[] {
  const recorded = trajectory.messages;
  if (!Array.isArray(recorded)) throw new Error('the trajectory has no messages list');
  const session: ChatMessage[] = [];
  const unanswered = new Set<string>();
  recorded.forEach((message, index) => {
    const content = contentOf(index, message.content);
    switch (message.role) {
      case 'system':
      case 'user':
        session.push({ role: message.role, content });
        return;
      case 'assistant': {
        const calls: ToolCall[] = (message.tool_calls ?? []).map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.function.name, arguments: call.function.arguments },
        }));
        for (const call of calls) unanswered.add(call.id);
        session.push({ role: 'assistant', content, ...(calls.length ? { tool_calls: calls } : {}) });
        return;
      }
      case 'tool':
        if (!message.tool_call_id) throw new TrajectoryFormatError(index, 'tool message without tool_call_id');
        unanswered.delete(message.tool_call_id);
        session.push({ role: 'tool', tool_call_id: message.tool_call_id, content });
        return;
      case 'exit': {
        if (index !== recorded.length - 1) throw new TrajectoryFormatError(index, 'exit record is not the last');
        if (unanswered.size === 0) return; // the run ended on a text answer: the record adds nothing the model saw
        if (unanswered.size !== 1) {
          throw new TrajectoryFormatError(index, `exit record after ${unanswered.size} unanswered calls`);
        }
        const [id] = unanswered;
        unanswered.clear();
        session.push({ role: 'tool', tool_call_id: id!, content });
        return;
      }
      default:
        throw new TrajectoryFormatError(index, `unknown role ${JSON.stringify(message.role)}`);
    }
  });
  return session;
}

/** One JSON chat message a line. */
export function sessionJsonl(session: ChatMessage[]): string {
  return session.map((message) => JSON.stringify(message)).join('\n') + '\n';
}

if (import.meta.main) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) {
    console.error('usage: node bench/corpus/convert-mini-swe-agent.ts IN.traj.json OUT.jsonl');
    process.exit(2);
  }
  const session = sessionOfTrajectory(JSON.parse(readFileSync(input, 'utf8')) as { messages?: RecordedMessage[] });
  writeFileSync(output, sessionJsonl(session));
  const steps = session.filter((m) => m.role === 'assistant').length;
  console.log(`${output}: ${session.length} messages, ${steps} assistant messages (steps)`);
}
