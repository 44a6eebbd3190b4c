/** The replayed (offline) model: recorded replies by position, then an honest text reply for any number of turns. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../engine/messages.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { DEMO_SESSION } from '../../llm/endpoint.ts';
import {
  isReplayedModel,
  OFFLINE_QUOTE_CHARS,
  parseSessionJsonl,
  replayedModelName,
  replayResponder,
} from '../../llm/replay.ts';

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
    expect(recordedUsers.length).toBe(3);
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

describe('isReplayedModel', () => {
  it('holds for the names a replayed model serves, and for nothing else', () => {
    expect(isReplayedModel(replayedModelName('gpt-4o-mini'))).toBe(true);
    expect(isReplayedModel('gpt-4o-mini-2024-07-18')).toBe(false);
    expect(isReplayedModel('')).toBe(false);
    expect(isReplayedModel(undefined)).toBe(false); // a result recorded before results named their model
  });
});
