/**
 * A summary in conversation mode (activities/compaction/conversation.ts): its request is the agent's own request up to
 * the end of the span (the tool schemas the agent's model sees, the messages as stored in the context's order, the
 * pinned block after the leading system messages, as the model call builds it: activities/agent-request.ts), then one
 * instruction; and it falls back to a transcript, saying why, when the models differ, the span is in chunks, the plan
 * does not hold the span, or the request would not fit the window.
 */
import { describe, expect, it } from 'vitest';
import { withPinnedBlock } from '../../activities/agent-request.ts';
import { createConversationRequests } from '../../activities/compaction/conversation.ts';
import { defineTool, ToolRegistry } from '../../activities/tools.ts';
import type { AgentRequestRef, SummarizeInput } from '../../contract/compaction-activities.ts';
import { PINNED_BLOCK_HEADING } from '../../contract/pins.ts';
import type { MessageRecord } from '../../contract/records.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { CONVERSATION_SUMMARY_TITLE, parseSummary } from '../../engine/summary.ts';
import { countRequest, loadTokenCounter } from '../../engine/tokens.ts';
import { asksForSummary } from '../../llm/chat-server.ts';

const readFile = defineTool({
  name: 'read_file',
  description: 'Read a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  run: () => Promise.resolve(''),
});
const tools = new ToolRegistry([readFile]);

const key = (id: string) => `agents/a/life/messages/${id}.json`;
const bodies: [string, ChatMessage][] = [
  ['m1', { role: 'system', content: 'You are a coding agent.' }],
  ['m2', { role: 'user', content: 'Read every module and tell me what is wrong.' }],
  ['s1', { role: 'user', content: '[Summary of earlier conversation]\n\n## Current state\nRead modules 1–3.' }],
  [
    'm3',
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c4', type: 'function', function: { name: 'read_file', arguments: '{"path":"m4.ts"}' } }],
    },
  ],
  ['m4', { role: 'tool', tool_call_id: 'c4', content: 'ERROR m4.ts:14: TypeError: x is undefined' }],
  [
    'm5',
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c5', type: 'function', function: { name: 'read_file', arguments: '{"path":"m5.ts"}' } }],
    },
  ],
  ['m6', { role: 'tool', tool_call_id: 'c5', content: 'ok' }],
];
const pinBody: ChatMessage = { role: 'user', content: 'Never touch src/vendor.' };
const objects = new Map<string, unknown>([
  ...bodies.map(([id, body]): [string, unknown] => [key(id), body]),
  ['agents/a/life/pins/pin-1.json', pinBody],
]);
const context: MessageRecord[] = bodies.map(([id, body]) => ({
  id,
  key: key(id),
  role: body.role,
  tokens: 20,
  chars: 80,
  preview: '',
  ...(id === 's1' ? { kind: 'summary' as const } : {}),
}));
objects.set('agents/a/life/compactions/2/plan.json', { context });
const load = <T>(k: string) => {
  if (!objects.has(k)) throw new Error(`no object ${k}`);
  return Promise.resolve(structuredClone(objects.get(k)) as T);
};

const agent: AgentRequestRef = {
  model: 'gpt-4o-mini',
  tools: { only: ['read_file'] },
  pinned: [{ key: 'agents/a/life/pins/pin-1.json', label: 'pin-1 (text)' }],
  window: 128_000,
};
/** The summary of s1..m4 (the earlier summary and the first step), the agent's own request up to m4. */
const input: SummarizeInput = {
  agentId: 'a',
  life: 'life',
  seq: 2,
  planKey: 'agents/a/life/compactions/2/plan.json',
  spanKeys: [key('s1'), key('m3'), key('m4')],
  maxTokens: 2_000,
  counting: { encoding: 'o200k_base', margin: 1 },
  instructions: 'keep the module numbers',
  conversation: agent,
};
const requests = createConversationRequests({ load, summaryModel: 'gpt-4o-mini', tools });

describe('a summary in conversation mode', () => {
  it("is the agent's own request up to the span's end (same tools, same messages, the pinned block), then the instruction", async () => {
    const counter = await loadTokenCounter('o200k_base');
    const request = await requests(input, 1, counter);
    expect(request.mode).toBe('conversation');
    if (request.mode !== 'conversation') return;
    // The agent's last request, as its model call builds it from the same view (all of the context, then a note).
    const agentRequest = await withPinnedBlock(
      bodies.map(([, body]) => structuredClone(body)),
      agent.pinned,
      load,
    );
    const prefix = request.messages.slice(0, -1);
    expect(prefix).toEqual(agentRequest.slice(0, prefix.length));
    expect(JSON.stringify(prefix)).toBe(JSON.stringify(agentRequest.slice(0, prefix.length)));
    expect(prefix.map((m) => m.content)).toEqual([
      'You are a coding agent.',
      `${PINNED_BLOCK_HEADING}\n\n[pin-1 (text)]\nNever touch src/vendor.`,
      bodies[1]![1].content,
      bodies[2]![1].content,
      null,
      'ERROR m4.ts:14: TypeError: x is undefined',
    ]);
    expect(request.tools).toEqual(tools.schemas(agent.tools));
    expect(request.tools.map((t) => t.function.name)).toContain('read_file');
    // The instruction: one user message, the span by position (1 is the system prompt; the pinned block is 2).
    const instruction = request.messages.at(-1)!;
    expect(instruction.role).toBe('user');
    const text = instruction.content as string;
    expect(text.startsWith(CONVERSATION_SUMMARY_TITLE)).toBe(true);
    expect(text).toContain('Messages 4–6 of this conversation');
    expect(text).toContain('An earlier summary among them is folded into this one.');
    expect(text).toContain('## Instructions for this compaction (follow them)\nkeep the module numbers');
    expect(text).toContain('## Task overview, ## Current state, ## Important discoveries, ## Next steps');
    expect(asksForSummary({ model: 'gpt-4o-mini', messages: request.messages })).toBe(true);
    expect(asksForSummary({ model: 'gpt-4o-mini', messages: agentRequest })).toBe(false);
    // Its answer is read by the headings, as the plain-text fallback is.
    expect(parseSummary('## Task overview\nFix it.\n\n## Next steps\nRead m5.').parsedAs).toBe('headings');
  });

  it("takes the plan's context its caller read (summarizeSpan reads the plan once) without reading the plan", async () => {
    const counter = await loadTokenCounter('o200k_base');
    const read: string[] = [];
    const counting = <T>(k: string) => {
      read.push(k);
      return load<T>(k);
    };
    const given = createConversationRequests({ load: counting, summaryModel: 'gpt-4o-mini', tools });
    const fromContext = await given(input, 1, counter, context);
    expect(read).not.toContain(input.planKey);
    expect(fromContext).toEqual(await requests(input, 1, counter));
  });

  it('a policy that asks a transcript: a transcript, no reason given', async () => {
    const counter = await loadTokenCounter('o200k_base');
    const transcript: SummarizeInput = { ...input };
    delete transcript.conversation;
    expect(await requests(transcript, 1, counter)).toEqual({ mode: 'transcript' });
  });

  it('falls back to a transcript, saying why: another summary model, chunks, a span the plan lacks, the window', async () => {
    const counter = await loadTokenCounter('o200k_base');
    const other = createConversationRequests({ load, summaryModel: 'summary-model', tools });
    expect(await other(input, 1, counter)).toEqual({
      mode: 'transcript',
      because: "the summary model summary-model is not the agent's gpt-4o-mini",
    });
    expect(await requests(input, 3, counter)).toEqual({
      mode: 'transcript',
      because: 'the span is summarized in 3 chunks',
    });
    expect(await requests({ ...input, spanKeys: [key('m9')] }, 1, counter)).toEqual({
      mode: 'transcript',
      because: "the plan's stored context does not hold the span",
    });
    const fits = await requests(input, 1, counter);
    if (fits.mode !== 'conversation') throw new Error('expected conversation mode');
    const tokens = countRequest(counter, fits.messages, fits.tools, 1);
    // Exactly at the window with the summary's budget: sent; one token less of window: a transcript.
    const at = { ...input, conversation: { ...agent, window: tokens + input.maxTokens } };
    expect((await requests(at, 1, counter)).mode).toBe('conversation');
    const over = { ...input, conversation: { ...agent, window: tokens + input.maxTokens - 1 } };
    expect(await requests(over, 1, counter)).toEqual({
      mode: 'transcript',
      because:
        `the agent's request up to the span's end and the instruction count ${tokens} tokens, with the summary's ` +
        `2000 over the window of ${tokens + input.maxTokens - 1}`,
    });
  });
});
