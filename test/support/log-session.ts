/**
 * The scripted session the compaction e2e files share (compaction.test.ts, forced-compaction.test.ts): an agent that
 * reads a server log page by page through the `fetch_log` tool; a summary model that answers in JSON (in headings
 * to a provider without structured output for NO-SCHEMA, dropping the facts of deploy.yaml, failing while told to);
 * and a provider whose real window is smaller than the registry says for agents on {@link OVERFLOW_PROMPT}.
 */
import { defineTool } from '../../activities/tools.ts';
import { textOf } from '../../engine/messages.ts';
import type { RecordedRequest, Responder } from '../../llm/chat-server.ts';
import { isSummaryRequest, startHarness } from './harness.ts';
import type { Harness } from './harness.ts';

/** The agents' window in the long session. */
export const WINDOW = 8_192;

/** What the `fetch_log` tool returns for a call: deterministic, about 700 tokens, different per line number. */
export function logOf(line: number): string {
  return Array.from(
    { length: 40 },
    (_, i) => `line ${line}.${i}: GET /api/items/${line * 100 + i} 200 ${i * 7} ms`,
  ).join('\n');
}

export const fetchLog = defineTool({
  name: 'fetch_log',
  description: 'Fetch a page of the server log',
  parameters: { type: 'object', properties: { line: { type: 'integer' } }, required: ['line'] },
  run: (args) => Promise.resolve(logOf(Number(args.line))),
});

/** The system prompt of an agent whose provider refuses requests over 14 messages. */
export const OVERFLOW_PROMPT = 'overflow test';

/** The scripted model; the summary model answers 400 while `summaryFails()` says so. */
function logSession(summaryFails: () => boolean): Responder {
  return (request, index) => {
    if (isSummaryRequest(request)) {
      if (summaryFails()) return { status: 400, error: 'summaries are switched off for this test' };
      const prompt = textOf(request.body.messages.at(-1)!.content);
      const transcript = request.body.messages.map((m) => textOf(m.content)).join('\n');
      if (transcript.includes('NO-SCHEMA')) {
        if (request.body.response_format) return { status: 400, error: 'response_format is not supported' };
        return { content: '## Task overview\nCheck NO-SCHEMA.\n\n## Next steps\nGo on.' };
      }
      if (transcript.includes('deploy.yaml')) {
        // A summary that drops the path and the error, even when asked again.
        return {
          content: JSON.stringify({
            task_overview: 'Deployment checks.',
            current_state: 'A deploy failed.',
            important_discoveries: '',
            next_steps: 'Fix it.',
            context_to_preserve: '',
          }),
        };
      }
      return {
        content: JSON.stringify({
          task_overview: 'Read the server log page by page.',
          current_state: `Read pages so far (${prompt.length} characters of transcript).`,
          important_discoveries: 'All requests answered 200.',
          next_steps: 'Fetch the next page.',
          context_to_preserve: '/api/items',
          decisions: ['Read the pages in order'],
          done: [`Pages up to request ${index}`],
          pending: ['The remaining pages'],
        }),
        usage: { prompt_tokens: 900, completion_tokens: 80 },
      };
    }
    // A provider whose real window is smaller than the registry says: over 14 messages it refuses.
    if (request.body.messages[0]?.content === OVERFLOW_PROMPT && request.body.messages.length > 14) {
      return { status: 400, error: "This model's maximum context length is 4096 tokens. Please reduce the length." };
    }
    // The agent: a user message "page N" → call fetch_log(N); after the result → a short answer. "pages N to M": one
    // step per page, N to M in order, then the answer.
    const last = request.body.messages.at(-1)!;
    const next = nextPageOf(request.body.messages);
    if (next !== undefined) {
      return {
        content: null,
        toolCalls: [
          { id: `call_${index}`, type: 'function', function: { name: 'fetch_log', arguments: `{"line":${next}}` } },
        ],
      };
    }
    if (last.role === 'user') {
      const line = Number(/page (\d+)/.exec(textOf(last.content))?.[1] ?? 0);
      return {
        content: null,
        toolCalls: [
          { id: `call_${index}`, type: 'function', function: { name: 'fetch_log', arguments: `{"line":${line}}` } },
        ],
      };
    }
    return { content: `Page read: ${request.body.messages.length} messages in view.` };
  };
}

/**
 * The next page a request "Read pages N to M" asks for (undefined: none, or all read): the pages of the user's
 * latest message, less the tool results since it (a summary in their place stands for the steps it covers).
 */
function nextPageOf(messages: RecordedRequest['body']['messages']): number | undefined {
  const at = messages.findLastIndex((m) => m.role === 'user' && /pages \d+ to \d+/.test(textOf(m.content)));
  if (at === -1 || messages.slice(at + 1).some((m) => m.role === 'user')) return undefined;
  const [from, to] = /pages (\d+) to (\d+)/.exec(textOf(messages[at]!.content))!.slice(1).map(Number);
  const since = messages.slice(at + 1);
  const covered = Math.max(
    0,
    ...since.map((m) => Number(/steps 1–(\d+) of the request/.exec(textOf(m.content))?.[1] ?? 0)),
  );
  const page = from! + covered + since.filter((m) => m.role === 'tool').length;
  return page <= to! ? page : undefined;
}

/** A harness with the `fetch_log` tool on the scripted session. */
export function startLogHarness(options: { summaryFails?: () => boolean } = {}): Promise<Harness> {
  return startHarness(logSession(options.summaryFails ?? (() => false)), [fetchLog]);
}

/** The requests the agents made (not the summarizer's). */
export function agentRequests(h: Harness): RecordedRequest[] {
  return h.model.requests.filter((r) => !isSummaryRequest(r));
}
