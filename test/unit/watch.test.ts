/** `longrun watch`'s decisions (what changed, how it reads) and the workflow's progress it polls: pure, no server. */
import { describe, expect, it } from 'vitest';
import { changesOf, phaseOf, progressBar, renderChange, watchAgent, withChunkCarried } from '../../commands/watch.ts';
import type { AgentProgress } from '../../contract/progress.ts';
import type { StreamedItem } from '../../client/stream.ts';
import type { CompactionEventSummary } from '../../contract/results.ts';
import type { WorkflowState } from '../../contract/state.ts';
import { describeCompaction } from '../../contract/progress.ts';
import { Progress, progressOf } from '../../workflows/progress.ts';

const idle: AgentProgress = {
  agentId: 'a1',
  status: 'running',
  turns: 4,
  queued: 0,
  contextTokens: 6_000,
  window: 8_192,
  compactions: 1,
};

const event = {
  seq: 2,
  trigger: 'auto',
  tokensBefore: 6_600,
  tokensAfter: 3_100,
  strategies: ['mask-tool-results', 'summarize'],
  durationMs: 4_250,
} as CompactionEventSummary;

describe('the workflow keeps what it is doing', () => {
  it('a turn and its model call, a compaction and its step (its beginning kept across steps), then nothing', () => {
    const progress = new Progress();
    progress.turnBegan(5, '2026-01-01T00:00:00.000Z');
    progress.turnStep(3);
    progress.compactionAt(2, 'background', 'planning', '2026-01-01T00:00:01.000Z');
    progress.compactionAt(2, 'background', 'summarizing', '2026-01-01T00:00:02.000Z', 37);
    expect(progress.turn).toEqual({ turn: 5, step: 3, began: '2026-01-01T00:00:00.000Z' });
    expect(progress.compaction).toEqual({
      seq: 2,
      trigger: 'background',
      background: true,
      step: 'summarizing',
      began: '2026-01-01T00:00:01.000Z',
      since: '2026-01-01T00:00:02.000Z',
      spanMessages: 37,
    });
    progress.compactionAt(3, 'auto', 'planning', '2026-01-01T00:00:09.000Z');
    expect(progress.compaction).toMatchObject({ seq: 3, began: '2026-01-01T00:00:09.000Z', background: false });
    progress.compactionEnded();
    progress.turnEnded();
    expect([progress.turn, progress.compaction]).toEqual([undefined, undefined]);
  });

  it('answers the progress query from the state: counts, the last answer (not a tool call), the pause', () => {
    const state = {
      agentId: 'a1',
      status: 'running',
      turns: 2,
      contextTokens: 700,
      modelInfo: { window: 1_000 },
      compactions: 1,
      events: [event],
      cooldown: { consecutive: 1, lastTokensAfter: 600, ineffective: 3, pausedUntil: 800 },
      messages: [
        { id: 'm000002', role: 'assistant', preview: 'the answer', tokens: 5, chars: 10 },
        { id: 'm000003', role: 'user', preview: 'go on', tokens: 5, chars: 10 },
        { id: 'm000004', role: 'assistant', preview: '', toolCallIds: ['c1'], tokens: 5, chars: 10 },
      ],
    } as unknown as WorkflowState;
    const progress = new Progress();
    progress.turnBegan(3, '2026-01-01T00:00:00.000Z');
    expect(progressOf(state, progress, 2)).toEqual({
      agentId: 'a1',
      status: 'running',
      turns: 2,
      queued: 2,
      contextTokens: 700,
      window: 1_000,
      compactions: 1,
      turn: { turn: 3, step: 1, began: '2026-01-01T00:00:00.000Z' },
      lastReply: { id: 'm000002', preview: 'the answer' },
      lastCompaction: event,
      pausedUntil: 800,
    });
    expect(progressOf({ ...state, contextTokens: 800 }, new Progress(), 0).pausedUntil).toBeUndefined();
  });
});

describe('longrun watch', () => {
  it('says what changed between two polls: a compaction, then the turn it served, then the step now', () => {
    const now: AgentProgress = {
      ...idle,
      turns: 5,
      compactions: 2,
      contextTokens: 3_400,
      lastCompaction: event,
      lastReply: { id: 'm000020', preview: 'Page read.' },
      turn: { turn: 6, step: 1, began: '2026-01-01T00:00:00.000Z' },
    };
    const changes = changesOf(idle, now);
    expect(changes.map((c) => c.type)).toEqual(['compaction', 'turn', 'phase']);
    expect(changes.map((c) => renderChange(c, 'a1'))).toEqual([
      'compaction 2 (auto): 6,600 → 3,100 tokens (mask-tool-results, summarize) in 4.3 s',
      'turn 5 done · context 3,400 of 8,192 tokens (42%) · reply: "Page read."',
      'turn 6 · model call 1',
    ]);
    expect(changesOf(now, now)).toEqual([]); // nothing new: nothing printed
  });

  it('starts with where the agent stands, and ends with the agent closing', () => {
    expect(changesOf(undefined, { ...idle, queued: 1 }).map((c) => renderChange(c, 'a1'))).toEqual([
      'watching a1: 4 turns, context 6,000 of 8,192 tokens (73%), 1 compactions, 1 queued',
    ]);
    const closed = changesOf(idle, { ...idle, status: 'closed' });
    expect(closed.map((c) => renderChange(c, 'a1'))).toEqual(['agent a1 closed after 4 turns']);
  });

  it('shows the compaction step by step, the summary chunk by chunk with a bar', () => {
    const compaction = {
      seq: 3,
      trigger: 'auto' as const,
      background: false,
      step: 'summarizing' as const,
      began: '2026-01-01T00:00:00.000Z',
      since: '2026-01-01T00:00:01.000Z',
      spanMessages: 37,
    };
    expect(phaseOf({ compaction: { ...compaction, step: 'planning' } })).toBe('compaction 3 (auto): planning');
    expect(phaseOf({ compaction })).toBe('compaction 3 (auto): summarizing 37 messages');
    expect(phaseOf({ compaction: { ...compaction, chunk: 2, chunks: 4 } }, Date.parse('2026-01-01T00:00:12Z'))).toBe(
      'compaction 3 (auto): summarizing 37 messages: chunk 2 of 4 [█████░░░░░░░░░░░░░░░] · 12 s',
    );
    expect(describeCompaction({ ...compaction, step: 'applying', trigger: 'background', background: true })).toBe(
      'compaction 3 (background, in the background): applying',
    );
    expect(phaseOf({})).toBe('idle');
    // A new chunk is a change (a line in a pipe); the same chunk polled again is not.
    const at = (chunk: number): AgentProgress => ({ ...idle, compaction: { ...compaction, chunk, chunks: 4 } });
    expect(changesOf(at(1), at(2)).map((c) => c.type)).toEqual(['phase']);
    expect(changesOf(at(2), at(2))).toEqual([]);
    // The activity ended a moment before the workflow moved on: the chunk seen last stays, no line flickers.
    const none: AgentProgress = { ...idle, compaction };
    expect(withChunkCarried(at(4), none)).toEqual(at(4));
    expect(
      withChunkCarried(at(4), { ...idle, compaction: { ...compaction, seq: 4 } }).compaction!.chunk,
    ).toBeUndefined();
    expect(withChunkCarried(undefined, none)).toBe(none);
  });

  it('reports the loop guard on the compaction that tripped it', () => {
    const guarded = {
      ...event,
      tokensBefore: 14_866,
      tokensAfter: 14_070,
      strategies: ['offload-largest'],
      loopGuard: { ineffective: true, savedShare: 0.0535, inARow: 3, paused: true, pausedUntil: 15_477 },
    } as CompactionEventSummary;
    expect(renderChange({ type: 'compaction', event: guarded }, 'a1')).toBe(
      'compaction 2 (auto): 14,866 → 14,070 tokens (offload-largest) in 4.3 s · ineffective (5.3% saved, 3 in a row) ' +
        '· automatic compaction paused until 15,477 tokens',
    );
  });

  it('draws bars of the width asked, never past full', () => {
    expect(progressBar(0, 4, 8)).toBe('[░░░░░░░░]');
    expect(progressBar(2, 4, 8)).toBe('[████░░░░]');
    expect(progressBar(9, 4, 8)).toBe('[████████]');
    expect(progressBar(0, 0, 4)).toBe('[░░░░]');
  });

  it('on a terminal keeps the step in progress on one updating line; in a pipe prints a line per change', async () => {
    const polls: AgentProgress[] = [
      idle,
      { ...idle, turn: { turn: 5, step: 1, began: new Date().toISOString() } },
      { ...idle, turn: { turn: 5, step: 2, began: new Date().toISOString() } },
      { ...idle, turns: 5, lastReply: { id: 'm000030', preview: 'Done.' } },
      { ...idle, turns: 5, status: 'closed' },
    ];
    const run = async (isTTY: boolean) => {
      let i = 0;
      let out = '';
      const ended = await watchAgent(() => Promise.resolve(polls[Math.min(i++, polls.length - 1)]!), 'a1', {
        intervalMs: 1,
        json: false,
        write: (text) => (out += text),
        isTTY,
        note: () => undefined,
        signal: new AbortController().signal,
      });
      return { ended, out };
    };
    const pipe = await run(false);
    expect(pipe.ended).toBe('closed');
    expect(pipe.out.split('\n')).toEqual([
      'watching a1: 4 turns, context 6,000 of 8,192 tokens (73%), 1 compactions',
      'turn 5 · model call 1',
      'turn 5 · model call 2',
      'turn 5 done · context 6,000 of 8,192 tokens (73%) · reply: "Done."',
      'agent a1 closed after 5 turns',
      '',
    ]);
    const tty = await run(true);
    expect(tty.out).not.toContain('\nturn 5 · model call'); // never a line of its own: the updating line
    const clear = '\r\x1b[2K'; // back to the line's start, erase it
    expect(tty.out.split(clear)).toContainEqual(expect.stringMatching(/^turn 5 · model call 2 · \d+ s$/));
    expect(tty.out).toContain('\r\x1b[2Kturn 5 done · context 6,000 of 8,192 tokens (73%) · reply: "Done."\n');
    expect(tty.out.endsWith('agent a1 closed after 5 turns\n')).toBe(true);
  });

  it('ends when told to (Ctrl-C), and says once that the agent does not answer, then asks again', async () => {
    const stop = new AbortController();
    const notes: string[] = [];
    let calls = 0;
    const ended = await watchAgent(
      () => {
        calls++;
        if (calls <= 3) return Promise.reject(new Error('query timed out'));
        stop.abort();
        return Promise.resolve(idle);
      },
      'a1',
      {
        intervalMs: 1,
        json: true,
        write: () => undefined,
        isTTY: false,
        note: (l) => notes.push(l),
        signal: stop.signal,
      },
    );
    expect(ended).toBe('stopped');
    expect(notes).toEqual(['watch a1: no answer (query timed out); asking again']);
  });
});

describe('longrun watch, its live stream', () => {
  it('opens the stream again after it stopped, from the item after the last one shown: said once, nothing twice or lost', async () => {
    const stop = new AbortController();
    const notes: string[] = [];
    const opened: (number | undefined)[] = [];
    const steer = (offset: number): StreamedItem => ({
      kind: 'steer',
      text: `steer ${offset}`,
      turn: 1,
      step: offset,
      offset,
      at: '2026-11-29T10:00:00.000Z',
    });
    async function* stream(signal: AbortSignal, from?: number): AsyncGenerator<StreamedItem> {
      opened.push(from);
      if (opened.length <= 2) throw new Error('agent a1 cannot be asked: no worker polls task queue q');
      if (opened.length === 3) {
        yield steer(5);
        yield steer(6);
        throw new Error('storage out of reach');
      }
      yield steer(7);
      stop.abort();
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    }
    let out = '';
    await watchAgent(() => Promise.resolve(idle), 'a1', {
      intervalMs: 1,
      json: false,
      write: (text) => (out += text),
      isTTY: false,
      note: (l) => notes.push(l),
      signal: stop.signal,
      stream,
    });
    expect(opened).toEqual([undefined, undefined, undefined, 7]);
    expect(out.match(/steer \d/g)).toEqual(['steer 5', 'steer 6', 'steer 7']);
    expect(notes).toEqual([
      'watch a1: the live stream stopped (agent a1 cannot be asked: no worker polls task queue q); opening it again',
      'watch a1: the live stream stopped (storage out of reach); opening it again',
    ]);
  });
});
