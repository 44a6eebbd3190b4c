/** The replayed (offline) model: recorded replies by position, then an honest text reply for any number of turns. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../engine/messages.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { DEMO_SESSION } from '../../llm/endpoint.ts';
import { LEDGER_HEADER } from '../../engine/ledger.ts';
import {
  indexRecording,
  isCompactionMessage,
  isReplayedModel,
  locateRecordedReply,
  parseSessionJsonl,
  replayedModelName,
} from '../../llm/replayed-model.ts';
import { OFFLINE_QUOTE_CHARS, replayResponder } from '../../llm/offline-model.ts';

const demo = parseSessionJsonl(readFileSync(DEMO_SESSION, 'utf8'));
const recordedUsers = demo.filter((m) => m.role === 'user');
const recordedReplies = demo.filter((m) => m.role === 'assistant');

const request = (messages: ChatMessage[], model = 'gpt-4o-mini'): RecordedRequest => ({
  path: '/v1/chat/completions',
  headers: {},
  body: { model, messages },
});

/** The reply as text: fails the test on an HTTP error or a reset, which the offline model must never send. */
async function answer(responder: ReturnType<typeof replayResponder>, messages: ChatMessage[]) {
  const reply: ScriptedReply = await responder(request(messages), 0);
  if (!('content' in reply)) throw new Error(`not a reply: ${JSON.stringify(reply)}`);
  return reply;
}

describe('replayResponder', () => {
  it('answers the recorded turns by position, as before, naming itself replayed', async () => {
    expect(recordedUsers.length).toBe(6);
    const responder = replayResponder(demo, { source: 'demo/session.jsonl' });
    const conversation: ChatMessage[] = [{ role: 'system', content: 'You plan trips.' }];
    for (const [turn, user] of recordedUsers.entries()) {
      conversation.push(user);
      const reply = await answer(responder, conversation);
      expect(reply.content).toBe(recordedReplies[turn]!.content);
      expect(reply.toolCalls).toBeUndefined();
      expect(reply.model).toBe('replayed:gpt-4o-mini');
      // A retried request gets the same answer.
      expect(await answer(responder, conversation)).toEqual(reply);
      conversation.push({ role: 'assistant', content: reply.content });
    }
  });

  it('past the end of the recording, answers every further turn honestly: text, no tools, the message quoted', async () => {
    const responder = replayResponder(demo, { source: 'demo/session.jsonl' });
    const conversation: ChatMessage[] = [];
    for (const user of recordedUsers) conversation.push(user, { role: 'assistant', content: 'recorded' });
    for (let extra = 1; extra <= 6; extra++) {
      const text = `Extra question number ${extra}: can we add a fourth day?`;
      conversation.push({ role: 'user', content: text });
      const reply = await answer(responder, conversation);
      expect(reply.toolCalls).toBeUndefined();
      expect(reply.model).toBe('replayed:gpt-4o-mini');
      expect(reply.content).toMatch(/^\[offline model\] I am longrun's replayed model, not a real one/);
      expect(reply.content).toContain('demo/session.jsonl');
      expect(reply.content).toContain(`You said: "${text}".`);
      expect(reply.content).toContain('OPENAI_API_KEY');
      conversation.push({ role: 'assistant', content: reply.content });
    }
  });

  it('quotes a long or multi-line message on one line, cut to its first characters', async () => {
    const responder = replayResponder([]);
    const long = `${'word '.repeat(100)}\n\nend 🙂 ${'x'.repeat(500)}`;
    const reply = await answer(responder, [{ role: 'user', content: long }]);
    const quote = /You said: "(.*)"\./.exec(reply.content!)![1]!;
    expect(Array.from(quote)).toHaveLength(OFFLINE_QUOTE_CHARS);
    expect(quote.endsWith('…')).toBe(true);
    expect(quote).not.toContain('\n');
    expect(long.replace(/\s+/g, ' ').startsWith(quote.slice(0, -1))).toBe(true);
    expect(reply.content).toContain('a recorded session'); // no source given
  });

  it('a step past the recorded replies of a turn (after a tool result) gets the honest reply too', async () => {
    const call = { id: 'c1', type: 'function' as const, function: { name: 'lookup', arguments: '{}' } };
    const session: ChatMessage[] = [
      { role: 'user', content: 'look it up' },
      { role: 'assistant', content: null, tool_calls: [call] },
    ];
    const responder = replayResponder(session);
    const first = await answer(responder, [session[0]!]);
    expect(first.toolCalls).toEqual([call]); // recorded: tool calls replayed as before
    const second = await answer(responder, [...session, { role: 'tool', tool_call_id: 'c1', content: '42' }]);
    expect(second.toolCalls).toBeUndefined();
    expect(second.content).toContain('You said: "look it up".');
  });

  it('with no user message to quote, still answers', async () => {
    const reply = await answer(replayResponder(demo), [{ role: 'system', content: 'only a system prompt' }]);
    expect(reply.content).toMatch(/^\[offline model\]/);
    expect(reply.content).not.toContain('You said');
  });
});

/** A recorded agent loop: turn 1 makes `steps` tool calls then answers; turn 2 says "continue" and does it again. */
function loopRecording(steps: number): ChatMessage[] {
  const session: ChatMessage[] = [{ role: 'system', content: 'You fix bugs.' }];
  for (const [turn, text] of ['Fix the failing test in src/parse.ts', 'continue', 'continue'].entries()) {
    session.push({ role: 'user', content: text });
    for (let step = 1; step <= steps; step++) {
      const id = `t${turn + 1}s${step}`;
      const call = { id, type: 'function' as const, function: { name: 'run', arguments: `{"step":${step}}` } };
      session.push({ role: 'assistant', content: `step ${step}`, tool_calls: [call] });
      session.push({ role: 'tool', tool_call_id: id, content: `output of ${id}` });
    }
    session.push({ role: 'assistant', content: `turn ${turn + 1} done` });
  }
  return session;
}

const SUMMARY: ChatMessage = {
  role: 'user',
  content: '[Summary of earlier conversation]\n\n## Progress\nSteps 1 to 3 ran the tests.',
};
const LEDGER: ChatMessage = { role: 'user', content: `${LEDGER_HEADER}\n## Goal\nFix the failing test` };

describe('replayResponder inside a compacted turn', () => {
  const session = loopRecording(6);
  const turnOne = session.slice(0, session.findIndex((m) => m.content === 'turn 1 done') + 1);

  it('answers with the step after the newest one, when older steps of the turn were summarized or dropped', async () => {
    const responder = replayResponder(session);
    // Steps 1 to 3 of the turn left the context: a summary (a user message) stands for them, and the ledger came in.
    const step4 = turnOne.findIndex((m) => m.tool_calls?.[0]?.id === 't1s4');
    const request = [session[0]!, LEDGER, session[1]!, SUMMARY, ...turnOne.slice(step4, step4 + 2)];
    const reply = await answer(responder, request);
    expect(reply.content).toBe('step 5');
    expect(reply.toolCalls?.[0]?.id).toBe('t1s5');
    // Only the newest step left (the summary last among user messages, the turn's request dropped): the same.
    expect(await answer(responder, [SUMMARY, ...turnOne.slice(step4, step4 + 2)])).toEqual(reply);
    // After the turn's last tool step, the final answer.
    const step6 = turnOne.findIndex((m) => m.tool_calls?.[0]?.id === 't1s6');
    const last = await answer(responder, [session[1]!, SUMMARY, ...turnOne.slice(step6, step6 + 2)]);
    expect(last).toMatchObject({ content: 'turn 1 done' });
    expect(last.toolCalls).toBeUndefined();
  });

  it("places a turn's first call by the user's message, past a summary and the ledger; repeated texts in order", async () => {
    const responder = replayResponder(session);
    expect((await answer(responder, [session[0]!, session[1]!])).toolCalls?.[0]?.id).toBe('t1s1');
    // Turn 1 summarized away except its last step; the user's "continue" opens turn 2.
    const step6 = turnOne.findIndex((m) => m.tool_calls?.[0]?.id === 't1s6');
    const second = [
      session[0]!,
      LEDGER,
      SUMMARY,
      ...turnOne.slice(step6),
      { role: 'user' as const, content: 'continue' },
    ];
    expect((await answer(responder, second)).toolCalls?.[0]?.id).toBe('t2s1');
    // The second "continue": the newest recorded step before it (turn 2's) says it is turn 3.
    const turnTwoLast = session.findIndex((m) => m.tool_calls?.[0]?.id === 't2s6');
    const third = [
      SUMMARY,
      ...session.slice(turnTwoLast, turnTwoLast + 3),
      { role: 'user' as const, content: 'continue' },
    ];
    expect((await answer(responder, third)).toolCalls?.[0]?.id).toBe('t3s1');
    // Without any step to go by, two "continue" messages in the request: the second recorded one.
    const plain = [
      session[1]!,
      { role: 'user' as const, content: 'continue' },
      { role: 'user' as const, content: 'continue' },
    ];
    expect((await answer(responder, plain)).toolCalls?.[0]?.id).toBe('t3s1');
    // A message the recording does not have: the honest offline reply, quoting it (not the summary).
    const unknown = await answer(responder, [SUMMARY, { role: 'user', content: 'something else' }]);
    expect(unknown.content).toContain('You said: "something else".');
  });

  it('locateRecordedReply with a counter for first calls (longrun replay) says how it placed each request', () => {
    const index = indexRecording(session);
    expect(index.turns.map((t) => t.replies.length)).toEqual([7, 7, 7]);
    expect(locateRecordedReply(index, [session[0]!, session[1]!], () => 0)).toMatchObject({
      at: { turn: 0, step: 0 },
      placedBy: 'first-call',
    });
    const step2 = turnOne.findIndex((m) => m.tool_calls?.[0]?.id === 't1s2');
    expect(locateRecordedReply(index, [SUMMARY, ...turnOne.slice(step2, step2 + 2)], () => 2)).toMatchObject({
      at: { turn: 0, step: 2 },
      placedBy: 'tool-calls',
      reply: { content: 'step 3' },
    });
    // Tool call ids the recording does not have: counted after the user's last message, in the counter's turn.
    const foreign = { id: 'x1', type: 'function' as const, function: { name: 'run', arguments: '{}' } };
    const counted = locateRecordedReply(
      index,
      [
        session[1]!,
        { role: 'assistant', content: null, tool_calls: [foreign] },
        { role: 'tool', tool_call_id: 'x1', content: '' },
      ],
      () => 1,
    );
    expect(counted).toMatchObject({ at: { turn: 1, step: 1 }, placedBy: 'count', reply: { content: 'step 2' } });
    expect(isCompactionMessage(SUMMARY)).toBe(true);
    expect(isCompactionMessage(LEDGER)).toBe(true);
    expect(isCompactionMessage(session[1]!)).toBe(false);
  });
});

describe('isReplayedModel', () => {
  it('holds for the names a replayed model serves, and for nothing else', () => {
    expect(isReplayedModel(replayedModelName('gpt-4o-mini'))).toBe(true);
    expect(isReplayedModel('gpt-4o-mini-2024-07-18')).toBe(false);
    expect(isReplayedModel('')).toBe(false);
    expect(isReplayedModel(undefined)).toBe(false); // a result recorded before results named their model
  });
});
