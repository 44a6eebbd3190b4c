/**
 * The offline model inside its recorded tool loop (demo/trail-session.jsonl) when a person reaches the turn: a steer
 * after a step's results, or an interrupt's text after a call answered as interrupted. The loop goes on through every
 * recorded step, the aside acknowledged where it lands and named in the final answer.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { trailReport } from '../../activities/demo-tool.ts';
import { INTERRUPTED_CALL_TAG } from '../../contract/results.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import type { ScriptedReply } from '../../llm/chat-server.ts';
import { DEMO_SESSION, DEMO_TOOL_SESSION } from '../../llm/endpoint.ts';
import { asidesOf, replayResponder } from '../../llm/offline-model.ts';
import { parseSessionJsonl } from '../../llm/replayed-model.ts';

const demo = parseSessionJsonl(readFileSync(DEMO_SESSION, 'utf8'));
const trail = parseSessionJsonl(readFileSync(DEMO_TOOL_SESSION, 'utf8'));
const task = trail[0]!;
const recordedAnswer = textOf(trail.at(-1)!.content);
const STEER = 'Only tell me about the stages that need care, please.';

async function answer(responder: ReturnType<typeof replayResponder>, messages: ChatMessage[]) {
  const reply: ScriptedReply = await responder(
    { path: '/v1/chat/completions', headers: {}, body: { model: 'm', messages } },
    0,
  );
  if (!('content' in reply)) throw new Error(`not a reply: ${JSON.stringify(reply)}`);
  return reply;
}

type Reply = Awaited<ReturnType<typeof answer>>;

/**
 * Runs the trail turn as a worker would (each call answered by trail_report), calling `reach` after each step's
 * results with the context and the step: it may change the context (add a steer, stand in for results). Returns the
 * context and every reply in order.
 */
async function runLoop(reach: (context: ChatMessage[], step: number) => void) {
  const responder = replayResponder([...demo, ...trail]);
  const context: ChatMessage[] = [{ role: 'system', content: 'You plan hikes.' }, task];
  const replies: Reply[] = [];
  for (let step = 1; step <= 30; step++) {
    const reply = await answer(responder, context);
    replies.push(reply);
    if (!reply.toolCalls?.length) return { context, replies };
    context.push({ role: 'assistant', content: reply.content ?? null, tool_calls: reply.toolCalls });
    for (const call of reply.toolCalls) {
      const { stage } = JSON.parse(call.function.arguments) as { stage: number };
      context.push({ role: 'tool', tool_call_id: call.id, content: trailReport(stage) });
    }
    reach(context, step);
  }
  throw new Error('the loop did not end in 30 steps');
}

/** The stages reported in the context, in order (their results' first lines), interrupted calls left out. */
const reportedStages = (context: ChatMessage[]) =>
  context
    .filter((m) => m.role === 'tool' && !textOf(m.content).startsWith(INTERRUPTED_CALL_TAG))
    .map((m) => Number(/^Stage (\d+) of 12/.exec(textOf(m.content))?.[1]));

describe('the offline model reached inside its recorded tool loop', () => {
  it('a steer after step 6: the loop goes on with stages 7 to 12, noting the steer, and the answer names it', async () => {
    const { context, replies } = await runLoop((context, step) => {
      if (step === 6) context.push({ role: 'user', content: STEER });
    });
    expect(reportedStages(context)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const afterSteer = replies[6]!;
    expect(afterSteer.toolCalls?.[0]?.function.arguments).toBe('{"stage":7}');
    expect(afterSteer.content).toBe(
      `[offline model] Noted: "${STEER}". I am the replayed model and cannot change the recorded plan: I go on with ` +
        'its remaining steps and come back to what you said in my answer.',
    );
    // Noted once: the steps after it are the recorded ones.
    for (const reply of replies.slice(7, -1)) expect(reply.content).toBeNull();
    const final = replies.at(-1)!;
    expect(final.toolCalls).toBeUndefined();
    expect(final.content!.startsWith(recordedAnswer)).toBe(true);
    expect(final.content).toContain(`[offline model] You said during this turn: "${STEER}".`);
  });

  it("an interrupt's text after a call answered as interrupted: that stage again, then on to the end", async () => {
    const text = 'Go on, but keep it short.';
    const { context, replies } = await runLoop((context, step) => {
      if (step !== 6) return;
      const result = context.at(-1)!;
      result.content = `${INTERRUPTED_CALL_TAG} This call of trail_report was interrupted at step 6 before it returned.`;
      context.push({ role: 'user', content: text });
    });
    // Stage 6's call never returned: it is made again (the same recorded call), then 7 to 12.
    expect(replies[6]!.toolCalls?.[0]?.function.arguments).toBe('{"stage":6}');
    expect(replies[6]!.content).toContain(`Noted: "${text}".`);
    expect(reportedStages(context)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(replies.at(-1)!.content).toContain(`You said during this turn: "${text}".`);
  });

  it('a steer while the recorded answer is due: the answer, with the steer named once', async () => {
    const { replies } = await runLoop((context, step) => {
      if (step === 12) context.push({ role: 'user', content: STEER });
    });
    expect(replies).toHaveLength(13);
    const final = replies.at(-1)!.content!;
    expect(final.startsWith(recordedAnswer)).toBe(true);
    expect(final.split(STEER)).toHaveLength(2);
  });

  it('asides are user messages after tool results; a message after an answer opens a turn and is not one', () => {
    const call = { id: 'c', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    const messages: ChatMessage[] = [
      { role: 'user', content: 'task' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: 'c', content: 'r' },
      { role: 'user', content: 'steer one' },
      { role: 'user', content: 'steer two' },
      { role: 'assistant', content: 'done' },
      { role: 'user', content: 'next task' },
    ];
    expect(asidesOf(messages)).toEqual([3, 4]);
  });

  it('a message the recording does not have after an answer still gets the honest offline reply', async () => {
    const { context, replies } = await runLoop(() => {});
    context.push({ role: 'assistant', content: replies.at(-1)!.content! }, { role: 'user', content: 'Thanks!' });
    const reply = await answer(replayResponder([...demo, ...trail]), context);
    expect(reply.toolCalls).toBeUndefined();
    expect(reply.content).toMatch(/^\[offline model\] I am longrun's replayed model/);
  });
});
