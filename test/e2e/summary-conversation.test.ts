/**
 * A summary that rides the agent's prompt cache (policy `summary.request: 'conversation'`, the default preset's): when
 * the summary model is the agent's own, the summary request is the agent's own request up to the end of the span, then
 * one instruction, so the provider serves that prefix from its cache. Two agents run the same long tool loop side by
 * side, through the real `openai` client, the loopback server with its prompt cache (usage counted, cached tokens
 * reported as OpenAI does) and a real Temporal and MinIO: one asks its summaries in conversation mode, the other as a
 * transcript. The same compaction costs less in conversation mode, its cached tokens at least 80% of its prompt, and
 * its summary keeps the span's facts as the transcript's does.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionStats, storedCompactionEvents } from '../../client/reads.ts';
import type { CompactionEvent } from '../../contract/results.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { registryPrice } from '../../engine/models.ts';
import { isConversationSummaryInstruction } from '../../engine/summary.ts';
import { asksForSummary } from '../../llm/chat-server.ts';
import type { RecordedRequest } from '../../llm/chat-server.ts';
import { renderEvents } from '../../commands/render.ts';
import { nextStep, readFile } from '../support/files.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const MODEL = 'gpt-4o-mini';
const STEPS = 60;
const WINDOW = 32_768;

/** The error lines and paths a request shows (its transcript, or its messages): what a careful summary keeps. */
function factsShown(messages: readonly ChatMessage[]): string[] {
  const text = messages.map((m) => textOf(m.content)).join('\n');
  return [...new Set(text.split('\n').filter((line) => line.includes('ERROR src/')))];
}

/** The summary model's answer: JSON to structured output, the five headings otherwise; every error line kept. */
function summaryOf(request: RecordedRequest): string {
  const kept = factsShown(request.body.messages).join('\n');
  const fields = {
    task_overview: 'Read every module and say what is wrong; modify no file.',
    current_state: 'Reading the modules one by one.',
    important_discoveries: 'Each module has one TypeError line.',
    next_steps: 'Read the next module.',
    context_to_preserve: kept,
  };
  if (request.body.response_format) return JSON.stringify({ ...fields, decisions: [], done: [], pending: [] });
  return [
    `## Task overview\n${fields.task_overview}`,
    `## Current state\n${fields.current_state}`,
    `## Important discoveries\n${fields.important_discoveries}`,
    `## Next steps\n${fields.next_steps}`,
    `## Context to preserve\n${fields.context_to_preserve}`,
  ].join('\n\n');
}

/** The model: the loop's next step; a summary that keeps every error line it was shown. */
const responder = (request: RecordedRequest) =>
  asksForSummary(request.body) ? { content: summaryOf(request) } : nextStep(request.body.messages, STEPS);

const harnesses: Harness[] = [];

afterAll(async () => {
  for (const h of harnesses) await h.close();
});

/**
 * Runs the loop on a new agent whose policy asks summaries as `request`, on a worker and model server of its own (the
 * two agents' requests are alike: one server's cache would serve the second what the first sent); returns its first
 * LLM compaction's event, the requests its model got, and its harness.
 */
async function loopUntilSummary(request: 'conversation' | 'transcript') {
  // The summary model is the agent's own; the server counts every request's tokens and its prompt cache's share.
  const h = await startHarness(responder, [readFile], { summaryModel: MODEL, countUsage: true });
  harnesses.push(h);
  const agentId = newAgentId(`sum-${request}`);
  await startAgent(h.client, {
    agentId,
    model: MODEL,
    taskQueue: h.taskQueue,
    systemPrompt: 'You are a coding agent. Read every module, then answer.',
    modelOverride: { window: WINDOW },
    // The default preset, blocking, summarizing without masking first: a masked result's stub names its stored
    // original, whose key holds the agent's id and life, so two agents' contexts would differ by a few tokens and
    // could reach the trigger a step apart. So both compact first at the same step, with the same context.
    compaction: {
      backgroundRatio: null,
      mask: { fromRatio: null },
      strategies: ['summarize', 'truncate-rounds', 'halve'],
      ...(request === 'transcript' ? { summary: { request } } : {}),
    },
  });
  const result = await sendMessage(
    h.client,
    agentId,
    `Read src/module_1.ts to src/module_${STEPS}.ts one by one and tell me what is wrong. Do not modify any file.`,
  );
  expect(result.toolCalls).toBe(STEPS);
  const state = await agentState(h.client, agentId);
  const events = await storedCompactionEvents(
    h.store,
    state,
    Array.from({ length: state.compactions ?? 0 }, (_, i) => i + 1),
  );
  const summarized = events.filter((e) => (e.llm?.promptTokens ?? 0) > 0);
  expect(summarized.length, `${agentId}: an LLM compaction`).toBeGreaterThanOrEqual(1);
  return { h, agentId, event: summarized[0]!, requests: h.model.requests };
}

describe("a summary in conversation mode rides the agent's prompt cache", () => {
  it('costs less than the same compaction as a transcript, ≥ 80% of its prompt cached, keeping the same facts', async () => {
    const conversation = await loopUntilSummary('conversation');
    const transcript = await loopUntilSummary('transcript');
    const c = conversation.event;
    const t = transcript.event;

    // The same compaction, side by side: the same loop, the same context before it, the same messages leave.
    expect(c.seq).toBe(t.seq);
    expect(c.trigger).toBe(t.trigger);
    expect(c.strategies).toEqual(t.strategies);
    expect(c.tokensBefore).toBe(t.tokensBefore);
    expect(c.messagesBefore).toBe(t.messagesBefore);
    expect(c.removedCount).toBe(t.removedCount);

    // Conversation mode: the agent's own request up to the span's end, then the instruction.
    expect(c.llm, c.llm?.transcriptBecause).toMatchObject({ model: MODEL, request: 'conversation' });
    expect(c.llm!.transcriptBecause).toBeUndefined();
    expect(c.responseFormat).toBe('text');
    expect(c.summaryParsedAs).toBe('headings');
    const summaryAt = conversation.requests.findIndex((r) => isConversationSummaryInstruction(r.body.messages.at(-1)));
    expect(summaryAt).toBeGreaterThan(0);
    const asked = conversation.requests[summaryAt]!.body;
    expect(asked.response_format).toBeUndefined();
    expect(asked.tool_choice).toBe('none');
    const last = conversation.requests.slice(0, summaryAt).findLast((r) => !asksForSummary(r.body))!.body;
    expect(asked.tools).toEqual(last.tools);
    const prefix = asked.messages.slice(0, -1);
    expect(prefix.length).toBeGreaterThan(4);
    expect(JSON.stringify(prefix)).toBe(JSON.stringify(last.messages.slice(0, prefix.length)));

    // Its prompt served from the cache: ≥ 80% of it (the server counts as OpenAI does: 1,024, then steps of 128).
    expect(c.llm!.cachedTokens).toBeGreaterThanOrEqual(0.8 * c.llm!.promptTokens);
    // Transcript mode: its own prompt, structured output first, none of it in the cache.
    expect(t.llm).toMatchObject({ model: MODEL, request: 'transcript' });
    expect(t.responseFormat).toBe('json_schema');
    expect(t.llm!.cachedTokens ?? 0).toBeLessThan(0.2 * t.llm!.promptTokens);
    // The cost at the model's price: cached input at its cached price. The same compaction costs less.
    const price = registryPrice(MODEL)!;
    const costOf = (llm: NonNullable<CompactionEvent['llm']>) =>
      ((llm.promptTokens - (llm.cachedTokens ?? 0)) * price.inputPerMillion +
        (llm.cachedTokens ?? 0) * price.cachedInputPerMillion +
        llm.completionTokens * price.outputPerMillion) /
      1e6;
    expect(c.llm!.cost).toBeCloseTo(costOf(c.llm!), 12);
    expect(t.llm!.cost).toBeCloseTo(costOf(t.llm!), 12);
    expect(c.llm!.cost!).toBeLessThan(t.llm!.cost!);
    console.log(
      `summary call: conversation ${c.llm!.promptTokens} prompt tokens, ${c.llm!.cachedTokens} cached, ` +
        `$${c.llm!.cost!.toFixed(6)}; transcript ${t.llm!.promptTokens} prompt tokens, ${t.llm!.cachedTokens ?? 0} ` +
        `cached, $${t.llm!.cost!.toFixed(6)}`,
    );

    // The facts judged as before: each summary keeps every must-keep fact of the span, the same ones.
    expect(c.facts).toMatchObject({ missing: 0, pinned: [] });
    expect(t.facts).toMatchObject({ missing: 0, pinned: [] });
    expect(c.facts!.found).toBe(t.facts!.found);
    expect(c.facts!.found).toBeGreaterThan(0);

    // `longrun events` shows how each was asked and its cached share beside its cost.
    const shown = renderEvents([c], await compactionStats(conversation.h.client, conversation.agentId));
    expect(shown).toMatch(/conversation, \d+% cached/);
    expect(renderEvents([t], await compactionStats(transcript.h.client, transcript.agentId))).toMatch(
      /transcript, \d+% cached/,
    );
  }, 300_000);
});
