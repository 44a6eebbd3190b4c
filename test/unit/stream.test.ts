/**
 * The live stream's pure parts: segment keys and offsets (contract/stream.ts), a streamed reply assembled into the
 * completion the call that is not streamed returns (activities/model-stream.ts), batching (activities/stream.ts),
 * the superseded bookkeeping, and where an SSE stream opens (commands/stream-server.ts).
 */
import { describe, expect, it } from 'vitest';
import { assembleCompletion, CompletionAssembler } from '../../activities/model-stream.ts';
import { coalesce, ModelCallStream, userMessageItems } from '../../activities/stream.ts';
import { readModelReply } from '../../activities/model-reply.ts';
import { startOffset } from '../../commands/stream-server.ts';
import { streamOutputOf } from '../../commands/watch.ts';
import {
  currentText,
  parseSegment,
  segmentKey,
  segmentsOf,
  segmentStartOf,
  MESSAGE_PREVIEW_CHARS,
  SEGMENT_MAX_ITEMS,
  startAtOrBefore,
  SupersededCalls,
} from '../../contract/stream.ts';
import type { StreamItemBody } from '../../contract/stream.ts';
import { completionChunks } from '../../llm/chat-stream.ts';

const agent = { agentId: 'trip', life: 'run-1' };

describe('segments and offsets', () => {
  it('a segment key names its start, zero-padded so keys sort by offset', () => {
    expect(segmentKey(agent, 42)).toBe('agents/trip/run-1/stream/000000000042.json');
    expect(segmentStartOf(segmentKey(agent, 42))).toBe(42);
    expect(segmentStartOf('agents/trip/run-1/stream/head.json')).toBeUndefined();
    expect(() => segmentKey(agent, -1)).toThrow(/offset >= 0/);
    const keys = [5, 40, 300, 1000].map((n) => segmentKey(agent, n));
    expect([...keys].sort()).toEqual(keys);
  });

  it('the segment that may hold an offset is the greatest start at or before it', () => {
    expect(startAtOrBefore([0, 3, 4, 265], 0)).toBe(0);
    expect(startAtOrBefore([0, 3, 4, 265], 2)).toBe(0);
    expect(startAtOrBefore([265, 4, 0, 3], 264)).toBe(4);
    expect(startAtOrBefore([10], 9)).toBeUndefined();
  });

  it('items become segments of at most SEGMENT_MAX_ITEMS with consecutive offsets', () => {
    const bodies = Array.from({ length: SEGMENT_MAX_ITEMS + 3 }, (_, i) => ({ kind: 'turn-end' as const, turn: i }));
    const segments = segmentsOf(10, bodies, 'now');
    expect(segments.map((s) => [s.start, s.items.length])).toEqual([
      [10, SEGMENT_MAX_ITEMS],
      [10 + SEGMENT_MAX_ITEMS, 3],
    ]);
    expect(segments.flatMap((s) => s.items.map((item) => item.offset))).toEqual(bodies.map((_, i) => 10 + i));
  });

  it('a stored segment is read only when its offsets are the ones its key says', () => {
    const [segment] = segmentsOf(7, [{ kind: 'turn-end', turn: 1 }], 'now');
    expect(parseSegment(JSON.stringify(segment), 7, 'k')).toEqual(segment);
    expect(() => parseSegment(JSON.stringify(segment), 8, 'k')).toThrow(/not a segment of offsets from 8/);
    expect(() => parseSegment(JSON.stringify({ start: 7, items: [] }), 7, 'k')).toThrow(/k/);
  });
});

describe('a streamed reply assembled', () => {
  const head = { id: 'chatcmpl-1', model: 'gpt-4o-mini-2024' };
  const usage = { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 };

  it('text and tool calls come back exactly as the completion that is not streamed has them', () => {
    const toolCalls = [
      { id: 'c1', type: 'function' as const, function: { name: 'forecast', arguments: '{"city":"Tromsø, Norway"}' } },
      { id: 'c2', type: 'function' as const, function: { name: 'tides', arguments: '' } },
    ];
    for (const reply of [
      { content: 'Light rain tomorrow, 8 °C. Supercalifragilisticexpialidocious.', usage },
      { content: null, toolCalls, usage },
      { content: 'Checking both.', toolCalls, usage },
      { content: '', usage },
    ]) {
      const assembled = assembleCompletion(completionChunks(head, reply, true));
      expect(assembled.usage).toEqual(usage);
      expect(assembled.model).toBe('gpt-4o-mini-2024');
      const message = readModelReply(assembled.choices[0]!.message, 'm');
      expect(message.content).toBe(reply.content);
      expect(message.toolCalls).toEqual(reply.toolCalls ?? []);
    }
  });

  it('hands out each delta as it comes: text pieces, a tool call first with its id and name', () => {
    const assembler = new CompletionAssembler();
    const chunks = completionChunks(
      head,
      {
        content: 'Two calls.',
        toolCalls: [{ id: 'c1', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":22}' } }],
        usage,
      },
      false,
    );
    const deltas = chunks.flatMap((chunk) => assembler.add(chunk));
    expect(deltas.filter((d) => d.kind === 'text').map((d) => (d.kind === 'text' ? d.text : ''))).toEqual([
      'Two ',
      'calls.',
    ]);
    const calls = deltas.filter((d) => d.kind === 'tool-call-delta');
    expect(calls[0]).toEqual({ kind: 'tool-call-delta', index: 0, callId: 'c1', name: 'add', arguments: '' });
    expect(calls.map((d) => (d.kind === 'tool-call-delta' ? d.arguments : '')).join('')).toBe('{"a":1,"b":22}');
    expect(assembler.completion().usage).toBeUndefined();
  });

  it('what a provider breaks is kept as sent, so the reply checks refuse it as they refuse a plain completion', () => {
    const broken = (chunks: unknown[]) => () => readModelReply(assembleCompletion(chunks).choices[0]!.message, 'm');
    const chunk = (delta: unknown) => ({ choices: [{ index: 0, delta }] });
    expect(broken([chunk({ content: '' }), chunk({ content: 42 })])).toThrow(/content that is a number/);
    expect(broken([chunk({ tool_calls: 'rm -rf /' })])).toThrow(/tool_calls that is a string/);
    expect(broken([chunk({ tool_calls: [{ index: 0, id: 'x', function: { arguments: '{}' } }] })])).toThrow(
      /function.name that is undefined/,
    );
    // Arguments sent as the JSON value itself: read as its JSON text, as for a plain completion.
    const value = readModelReply(
      assembleCompletion([
        chunk({ tool_calls: [{ index: 0, id: 'j', type: 'function', function: { name: 'add', arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: { a: 2 } } }] }),
      ]).choices[0]!.message,
      'm',
    );
    expect(value.toolCalls[0]!.function.arguments).toBe('{"a":2}');
    // No chunk with a choice: no choices (an empty reply).
    expect(assembleCompletion([{ choices: [], usage }]).choices).toEqual([]);
  });
});

describe('batching and superseded output', () => {
  it('consecutive text of one attempt, and one tool call’s argument pieces, merge into one item', () => {
    const ref = { call: 'm1', attempt: 1 };
    expect(
      coalesce([
        { kind: 'text', text: 'a', ...ref },
        { kind: 'text', text: 'b', ...ref },
        { kind: 'tool-call-delta', index: 0, callId: 'c', name: 'f', arguments: '', ...ref },
        { kind: 'tool-call-delta', index: 0, arguments: '{"x"', ...ref },
        { kind: 'tool-call-delta', index: 0, arguments: ':1}', ...ref },
        { kind: 'tool-call-delta', index: 1, callId: 'd', name: 'g', arguments: '', ...ref },
        { kind: 'text', text: 'c', call: 'm1', attempt: 2 },
      ]),
    ).toEqual([
      { kind: 'text', text: 'ab', ...ref },
      { kind: 'tool-call-delta', index: 0, callId: 'c', name: 'f', arguments: '{"x":1}', ...ref },
      { kind: 'tool-call-delta', index: 1, callId: 'd', name: 'g', arguments: '', ...ref },
      { kind: 'text', text: 'c', call: 'm1', attempt: 2 },
    ]);
  });

  it('the first piece is written at once, the rest in batches; a failed write is retried, nothing dropped', async () => {
    const writes: StreamItemBody[][] = [];
    let fail = 0;
    const stream = new ModelCallStream(
      async (bodies) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (fail-- > 0) throw new Error('S3 said 503');
        writes.push(bodies);
      },
      { call: 'm7', attempt: 2 },
      30,
    );
    stream.start('gpt');
    for (const word of ['one ', 'two ', 'three ']) stream.delta({ kind: 'text', text: word });
    await new Promise((resolve) => setTimeout(resolve, 10)); // the first write is done, the next one waits
    fail = 1; // the next write fails once
    stream.delta({ kind: 'text', text: 'four' });
    stream.end({ toolCalls: 0 });
    await stream.flush();
    // A retry: superseded before its own output; the start waited for the first piece, which went at once.
    expect(writes[0]).toEqual([
      { kind: 'superseded', call: 'm7', attempt: 2 },
      { kind: 'model-start', model: 'gpt', call: 'm7', attempt: 2 },
      { kind: 'text', text: 'one ', call: 'm7', attempt: 2 },
    ]);
    const items = writes.flat();
    // The failed batch was written with the next one: merged, in order, once.
    expect(items.map((item) => item.kind)).toEqual(['superseded', 'model-start', 'text', 'text', 'model-end']);
    expect(currentText(items, 'm7')).toBe('one two three four');
    expect(writes.length).toBeLessThanOrEqual(4);
  });

  it('the start waits for what follows it: a call answered within the batch time is one write, after its lead', async () => {
    const writes: { bodies: StreamItemBody[]; at: number }[] = [];
    const began = Date.now();
    const stream = new ModelCallStream(
      (bodies) => {
        writes.push({ bodies, at: Date.now() - began });
        return Promise.resolve();
      },
      { call: 'm3', attempt: 1 },
      40,
    );
    stream.start('gpt', [{ kind: 'user-message', id: 'user-message:m2', messageId: 'm2', text: 'hi', chars: 2 }]);
    stream.end({ toolCalls: 0 });
    await stream.flush();
    expect(writes.map((w) => w.bodies.map((b) => b.kind))).toEqual([['user-message', 'model-start', 'model-end']]);
    // Nothing after the start: it is written alone once the batch time has passed.
    const alone = new ModelCallStream(
      (bodies) => {
        writes.push({ bodies, at: Date.now() - began });
        return Promise.resolve();
      },
      { call: 'm5', attempt: 1 },
      40,
    );
    alone.start('gpt');
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(writes[1]!.bodies.map((b) => b.kind)).toEqual(['model-start']);
    expect(writes[1]!.at).toBeGreaterThanOrEqual(35);
  });

  it('a reader drops an earlier attempt’s output, including what arrives after the retry began', () => {
    const calls = new SupersededCalls();
    const seen = (item: StreamItemBody) => calls.see(item);
    expect(seen({ kind: 'model-start', model: 'x', call: 'm1', attempt: 1 })).toBe(false);
    expect(seen({ kind: 'text', text: 'old', call: 'm1', attempt: 1 })).toBe(false); // not known yet
    expect(seen({ kind: 'superseded', call: 'm1', attempt: 2 })).toBe(false);
    expect(seen({ kind: 'text', text: 'late', call: 'm1', attempt: 1 })).toBe(true); // a zombie's write
    expect(seen({ kind: 'text', text: 'new', call: 'm1', attempt: 2 })).toBe(false);
    expect(seen({ kind: 'text', text: 'other', call: 'm2', attempt: 1 })).toBe(false);
    expect(seen({ kind: 'turn-end', turn: 1 })).toBe(false);
    expect(
      currentText(
        [
          { kind: 'text', text: 'old', call: 'm1', attempt: 1 },
          { kind: 'superseded', call: 'm1', attempt: 2 },
          { kind: 'text', text: 'late', call: 'm1', attempt: 1 },
          { kind: 'text', text: 'new', call: 'm1', attempt: 2 },
        ],
        'm1',
      ),
    ).toBe('new');
  });
});

describe('the user message that opens a turn', () => {
  it('is one item per user message of the step that is not a steer, its text cut to a preview, with its length', () => {
    const long = 'é'.repeat(MESSAGE_PREVIEW_CHARS + 10);
    const items = userMessageItems(
      [
        { messageId: 'm000001', message: { role: 'system', content: 'You plan hikes.' } },
        { messageId: 'm000002', message: { role: 'user', content: long } },
        { messageId: 'm000003', message: { role: 'user', content: 'use km' }, steer: true },
      ],
      1,
    );
    expect(items).toEqual([
      {
        kind: 'user-message',
        id: 'user-message:m000002',
        messageId: 'm000002',
        turn: 1,
        text: 'é'.repeat(MESSAGE_PREVIEW_CHARS),
        chars: MESSAGE_PREVIEW_CHARS + 10,
      },
    ]);
    expect(userMessageItems([{ messageId: 'm000004', message: { role: 'user', content: 'hi' } }])).toEqual([
      { kind: 'user-message', id: 'user-message:m000004', messageId: 'm000004', text: 'hi', chars: 2 },
    ]);
  });
});

describe('readers', () => {
  it('an SSE stream opens after Last-Event-ID, else at ?from=, else at 0; bad ones are errors naming them', () => {
    expect(startOffset('41', '3')).toBe(42);
    expect(startOffset(undefined, '3')).toBe(3);
    expect(startOffset(undefined, 'end')).toBe('end');
    expect(startOffset(undefined, null)).toBe(0);
    expect(String(startOffset('x', null))).toMatch(/Last-Event-ID must be an offset, got x/);
    expect(String(startOffset(undefined, '1.5'))).toMatch(/from must be an offset/);
  });

  it('longrun watch writes text on one open line, other items on lines of their own, superseded ones not', () => {
    const at = { offset: 0, at: 'now' };
    expect(streamOutputOf({ ...at, kind: 'text', text: 'Hi', call: 'm1', attempt: 1 })).toEqual({
      text: 'Hi',
      open: '» ',
    });
    expect(streamOutputOf({ ...at, kind: 'text', text: 'Hi', call: 'm1', attempt: 1, superseded: true })).toBe(
      undefined,
    );
    expect(streamOutputOf({ ...at, kind: 'steer', text: 'use metric', turn: 3, step: 4 })).toEqual({
      line: 'steer at turn 3 step 4: use metric',
    });
    expect(streamOutputOf({ ...at, kind: 'turn-end', turn: 3 })).toBeUndefined();
  });
});
