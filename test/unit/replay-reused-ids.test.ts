/**
 * Replaying a recording whose tool call ids repeat (providers that number calls per turn or per reply: `call_0`,
 * `call_1`, … again): every recorded step answers exactly one request, in order, with or without compaction inside
 * the turn, through the offline model (replayResponder) and `longrun replay`'s side of it (RecordingReplayer).
 */
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../engine/messages.ts';
import { LEDGER_HEADER } from '../../engine/ledger.ts';
import { textOf } from '../../engine/messages.ts';
import type { ScriptedReply } from '../../llm/chat-server.ts';
import { replayResponder } from '../../llm/offline-model.ts';
import { indexRecording, locateRecordedReply, RecordingReplayer } from '../../llm/replayed-model.ts';
import { answersLine } from '../../commands/replay-report.ts';

type Call = NonNullable<ChatMessage['tool_calls']>[number];
const call = (id: string, name: string, args: object): Call => ({
  id,
  type: 'function',
  function: { name, arguments: JSON.stringify(args) },
});

/**
 * Three turns of an agent loop. Turn 1 numbers its calls per turn (`call_0` … `call_4`, one step making two calls);
 * turns 2 and 3 number them per reply (every step's call is `call_0`), and turn 2 lists the same directory twice
 * (the same call, the same arguments, different output). Turn 3's user message is turn 2's again ("continue").
 */
function reusedIdsRecording(): ChatMessage[] {
  const session: ChatMessage[] = [{ role: 'system', content: 'You fix bugs.' }];
  const step = (calls: Call[], outputs: string[], content: string | null = null) => {
    session.push({ role: 'assistant', content, tool_calls: calls });
    calls.forEach((c, i) => session.push({ role: 'tool', tool_call_id: c.id, content: outputs[i]! }));
  };
  session.push({ role: 'user', content: 'Fix the failing test in src/parse.ts' });
  step([call('call_0', 'bash', { cmd: 'ls' })], ['src test']);
  step(
    [call('call_1', 'bash', { cmd: 'cat src/parse.ts' }), call('call_2', 'bash', { cmd: 'cat test/a.ts' })],
    ['parse source', 'test source'],
  );
  step([call('call_3', 'bash', { cmd: 'npm test' })], ['1 failing']);
  step([call('call_4', 'edit', { file: 'src/parse.ts' })], ['edited']);
  session.push({ role: 'assistant', content: 'Turn 1 done: fixed the parser.' });
  for (const turn of [2, 3]) {
    session.push({ role: 'user', content: 'continue' });
    step([call('call_0', 'bash', { cmd: 'ls' })], [`turn ${turn}: src test`]);
    step([call('call_0', 'bash', { cmd: 'npm test' })], [`turn ${turn}: 0 failing`]);
    if (turn === 2) step([call('call_0', 'bash', { cmd: 'ls' })], ['turn 2: src test dist']);
    step([call('call_0', 'bash', { cmd: `git diff --stat ${turn}` })], [`turn ${turn}: 1 file changed`]);
    session.push({ role: 'assistant', content: `Turn ${turn} done.` });
  }
  return session;
}

const SUMMARY: ChatMessage = {
  role: 'user',
  content: '[Summary of earlier conversation]\n\n## Progress\nEarlier steps.',
};
const LEDGER: ChatMessage = { role: 'user', content: `${LEDGER_HEADER}\n## Goal\nFix the failing test` };

/**
 * An agent loop against `answer`, as the worker runs it: each recorded user message starts a turn; each reply with
 * tool calls gets their results (from `resultOf`) and another request, up to `budget` requests a turn. With
 * `compact`, every request after a turn's first step carries only the system prompt, the ledger, a summary and the
 * turn's newest step (older steps and the turn's user message left the context), as compaction inside a turn does.
 */
async function runLoop(
  session: ChatMessage[],
  answer: (messages: ChatMessage[], turn: number) => ScriptedReply | Promise<ScriptedReply>,
  resultOf: (callId: string) => string,
  compact = false,
  budget = 20,
) {
  const context: ChatMessage[] = [session[0]!];
  const users = session.filter((m) => m.role === 'user');
  const sent: ChatMessage[] = [];
  const results: string[] = [];
  for (const [turn, user] of users.entries()) {
    context.push(user);
    for (let request = 0; request < budget; request++) {
      let messages = context;
      if (compact && context.at(-1)!.role === 'tool') {
        const newest = context.findLastIndex((m) => m.role === 'assistant');
        messages = [context[0]!, LEDGER, SUMMARY, ...context.slice(newest)];
      }
      const reply = await answer(messages, turn);
      if (!('content' in reply)) throw new Error('not a reply');
      const message: ChatMessage = {
        role: 'assistant',
        content: reply.content,
        ...(reply.toolCalls ? { tool_calls: reply.toolCalls } : {}),
      };
      sent.push(message);
      context.push(message);
      if (!reply.toolCalls?.length) break;
      for (const c of reply.toolCalls) {
        const output = resultOf(c.id);
        results.push(output);
        context.push({ role: 'tool', tool_call_id: c.id, content: output });
      }
    }
  }
  return { sent, results };
}

describe('replaying a recording whose tool call ids repeat', () => {
  const session = reusedIdsRecording();
  const recorded = session.filter((m) => m.role === 'assistant');
  const recordedResults = session.filter((m) => m.role === 'tool').map((m) => textOf(m.content));

  it('indexes every step that made an id, in order', () => {
    const index = indexRecording(session);
    expect(index.turns.map((t) => t.replies.length)).toEqual([5, 5, 4]);
    expect(index.calls.get('call_0')).toEqual([
      { turn: 0, step: 0 },
      { turn: 1, step: 0 },
      { turn: 1, step: 1 },
      { turn: 1, step: 2 },
      { turn: 1, step: 3 },
      { turn: 2, step: 0 },
      { turn: 2, step: 1 },
      { turn: 2, step: 2 },
    ]);
    expect(index.turns[1]!.results[2]!.get('call_0')?.content).toBe('turn 2: src test dist');
  });

  for (const compact of [false, true]) {
    const how = compact ? 'with compaction inside each turn' : 'with the whole context';
    it(`the offline model answers every recorded step once, in order (${how})`, async () => {
      const responder = replayResponder(session);
      const index = indexRecording(session);
      // The offline model has no tool results of its own: the loop answers with the recorded ones in order.
      let next = 0;
      const { sent } = await runLoop(
        session,
        (messages) => responder({ path: '/v1/chat/completions', headers: {}, body: { model: 'm', messages } }, 0),
        () => recordedResults[next++] ?? 'none',
        compact,
      );
      expect(sent.map((m) => m.content)).toEqual(recorded.map((m) => m.content));
      expect(sent.map((m) => m.tool_calls)).toEqual(recorded.map((m) => m.tool_calls));
      expect(index.turns.flatMap((t) => t.replies)).toEqual(recorded);
    });

    it(`longrun replay's replayer replays every recorded step with its own results (${how})`, async () => {
      const replayer = new RecordingReplayer(indexRecording(session));
      const { sent, results } = await runLoop(
        session,
        (messages, turn) => replayer.answer(messages, turn),
        (id) => replayer.resultOf(id),
        compact,
      );
      expect(sent.map((m) => m.content)).toEqual(recorded.map((m) => m.content));
      expect(results).toEqual(recordedResults);
      expect(replayer.replayedSteps).toBe(recorded.length);
      expect(replayer.unplaced).toEqual([0, 0, 0]);
      // Which recorded step answered each request: every one once, in the recording's order.
      const positions = recorded.map((m) => session.indexOf(m) + 1);
      expect(replayer.answers.map((a) => a?.message)).toEqual(positions);
      expect(replayer.answers.slice(5, 7)).toEqual([
        { turn: 2, step: 1, message: positions[5], placedBy: 'first-call' },
        { turn: 2, step: 2, message: positions[6], placedBy: 'tool-calls' },
      ]);
    });
  }

  it("places each request at the next recorded step with the replay's turn counter (locateRecordedReply)", async () => {
    const index = indexRecording(session);
    const placed: string[] = [];
    let next = 0;
    const { sent } = await runLoop(
      session,
      (messages, turn) => {
        const located = locateRecordedReply(index, messages, () => turn);
        placed.push(located ? `${located.at.turn}.${located.at.step}` : 'none');
        return located?.reply
          ? { content: located.reply.content as string | null, toolCalls: located.reply.tool_calls }
          : { content: '(none)' };
      },
      () => recordedResults[next++] ?? 'none',
    );
    expect(sent).toHaveLength(recorded.length);
    expect(placed).toEqual(index.turns.flatMap((t, turn) => t.replies.map((_, step) => `${turn}.${step}`)));
  });

  it('the text report counts the requests answered with a recorded step, distinct and again', () => {
    const at = (message: number) => ({ turn: 1, step: message, message, placedBy: 'tool-calls' as const });
    expect(answersLine({ modelCalls: 5, answeredWith: [at(2), at(3), at(3), null, at(5)] })).toBe(
      'requests answered with a recorded step: 4 of 5 (3 distinct, 1 again); 1 with none',
    );
  });

  it('places a step whose ids and calls repeat by the steps before it in the request', () => {
    const index = indexRecording(session);
    const turnTwo = session.findIndex((m, i) => i > 1 && m.content === 'continue');
    const at = (messages: ChatMessage[], turn?: number) => locateRecordedReply(index, messages, () => turn)?.at;
    // The second `ls` of turn 2: after the user message and the two steps before it.
    const secondLs = session.findIndex((m) => m.role === 'tool' && m.content === 'turn 2: src test dist');
    expect(at(session.slice(0, secondLs + 1))).toEqual({ turn: 1, step: 3 });
    // The first `ls` of turn 2 (the same call as the second): the one right after the user message.
    expect(at(session.slice(0, turnTwo + 3))).toEqual({ turn: 1, step: 1 });
    // Turn 3's first step (the same call again), its "continue" placed after turn 2's steps.
    const turnThree = session.findLastIndex((m) => m.content === 'continue');
    expect(at(session.slice(0, turnThree + 3))).toEqual({ turn: 2, step: 1 });
    // Only the newest step left, no user message: the turn the replay is sending says which one.
    expect(at([SUMMARY, ...session.slice(turnThree + 1, turnThree + 3)], 2)).toEqual({ turn: 2, step: 1 });
  });
});
