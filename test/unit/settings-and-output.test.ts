/**
 * The settings of a running agent (what `configure` accepts, what `start` compares) and what the human output shows
 * (`state`, `list`, `configure`, the current details): pure functions, on made-up states.
 */
import { describe, expect, it } from 'vitest';
import { settingDifferences } from '../../client/setting-differences.ts';
import { listedStatus } from '../../client/reads.ts';
import { recordOf } from '../../activities/stored.ts';
import { renderAgents, renderConfigured, renderContext, renderEvents, renderState } from '../../commands/render.ts';
import { validateConfigureInput } from '../../contract/input-checks.ts';
import { shownStatusOf } from '../../contract/state.ts';
import type { AgentState, WorkflowState } from '../../contract/state.ts';
import type { CompactionEventSummary, Draft } from '../../contract/results.ts';
import { configuredModel, countingRefusal } from '../../workflows/inputs.ts';
import { resolveModelInfo } from '../../engine/models.ts';
import { Progress } from '../../workflows/progress.ts';
import { brokenAt, currentDetails, DETAILS_LINE_CHARS } from '../../workflows/visibility.ts';

const MINI = { window: 128_000, encoding: 'o200k_base', margin: 1, exact: true } as const;

const DRAFT: Omit<Draft, 'summary'> = {
  id: 'draft-1',
  seq: 2,
  steps: [{ strategy: 'summarize', tokensSaved: 900 }],
  tokensBefore: 1200,
  tokensAfter: 300,
  summaryPreview: 'The deploy config is at /srv/app/deploy.yaml and the tests pass on the second try after a fix.',
  waits: { until: '2026-01-01T00:10:00.000Z', timeoutSeconds: 600, onTimeout: 'apply' },
} as unknown as Omit<Draft, 'summary'>;

function agent(overrides: Partial<AgentState> = {}): AgentState {
  return {
    agentId: 'trip-planner-7',
    model: 'gpt-4o-mini',
    status: 'running',
    turns: 3,
    messages: [],
    contextTokens: 1234,
    modelInfo: { ...MINI },
    ...overrides,
  };
}

describe('configure input', () => {
  it('takes at least one setting, each in its range, naming the field', () => {
    expect(() => validateConfigureInput({ model: 'gpt-4o', window: 64_000, systemPrompt: 'Be brief.' })).not.toThrow();
    expect(() => validateConfigureInput({})).toThrow('configure: give at least one of model, window, systemPrompt');
    expect(() => validateConfigureInput({ window: 512 })).toThrow(
      'window: 512 is not allowed (an integer from 1,024 to 10,000,000 tokens)',
    );
    expect(() => validateConfigureInput({ model: ' ' })).toThrow('model: must be a non-empty string');
    expect(() => validateConfigureInput({ systemPrompt: '' })).toThrow('systemPrompt: must be a non-empty string');
    expect(() => validateConfigureInput({ temperature: 1 } as never)).toThrow(
      'temperature: not a setting configure changes (one of model, window, systemPrompt)',
    );
    expect(() => validateConfigureInput(null as never)).toThrow('configure: input must be an object');
  });

  it('asks for the model: a window alone keeps its counting; another model must count as the agent does', () => {
    const state = { model: 'gpt-4o-mini', modelInfo: { ...MINI } };
    expect(configuredModel({ window: 8_192 }, state)).toEqual({
      model: 'gpt-4o-mini',
      override: { window: 8_192, encoding: 'o200k_base', margin: 1 },
    });
    expect(configuredModel({ model: 'gpt-4o' }, state)).toEqual({ model: 'gpt-4o', override: {} });
    expect(configuredModel({ model: 'gpt-4.1', window: 200_000 }, state).override).toEqual({ window: 200_000 });
    // What the describeModel activity answers for them (the registry), against the agent's counting.
    expect(countingRefusal('gpt-4o', resolveModelInfo('gpt-4o'), MINI)).toBeUndefined();
    expect(countingRefusal('gpt-4', resolveModelInfo('gpt-4'), MINI)).toBe(
      'model: "gpt-4" counts tokens as cl100k_base × 1, this agent\'s messages were counted as o200k_base × 1: ' +
        'configure cannot change how tokens are counted (start a new agent for that model)',
    );
    expect(countingRefusal('claude-sonnet-4', resolveModelInfo('claude-sonnet-4'), MINI)).toContain(
      'counts tokens as o200k_base × 1.2',
    );
  });
});

describe('start on a running agent', () => {
  it('compares the model always, the window and system prompt when asked for', () => {
    const running = { model: 'gpt-4o-mini', modelInfo: { ...MINI, window: 8_192 }, systemPrompt: 'Be brief.' };
    expect(settingDifferences({ model: 'gpt-4o-mini' }, running)).toEqual([]);
    expect(
      settingDifferences({ model: 'gpt-4o', modelOverride: { window: 4_096 }, systemPrompt: 'Be long.' }, running),
    ).toEqual([
      { setting: 'model', running: 'gpt-4o-mini', asked: 'gpt-4o' },
      { setting: 'window', running: 8_192, asked: 4_096 },
      { setting: 'systemPrompt', running: 'Be brief.', asked: 'Be long.' },
    ]);
  });
});

describe('the status everything shows', () => {
  it('is decided in one place: closed, compacting, awaiting-review, running', () => {
    const waiting = { status: 'running', draft: { info: DRAFT } } as unknown as WorkflowState;
    expect(shownStatusOf(waiting, false)).toBe('awaiting-review');
    expect(shownStatusOf(waiting, true)).toBe('compacting');
    expect(shownStatusOf({ status: 'closed' }, true)).toBe('closed');
    expect(shownStatusOf({ status: 'running' }, false)).toBe('running');
    expect(listedStatus('awaiting-review', 'RUNNING')).toBe('awaiting-review');
    expect(listedStatus(undefined, 'RUNNING')).toBe('running');
    expect(listedStatus('running', 'TERMINATED')).toBe('terminated'); // no longer running, whatever it last said
    expect(listedStatus('closed', 'COMPLETED')).toBe('closed');
  });
});

describe('renderState', () => {
  it('shows the status as list does, the worker, the last error and a waiting draft with its commands', () => {
    const text = renderState(
      agent({
        shownStatus: 'awaiting-review',
        lastError: 'callModel failed: HTTP 401: Incorrect API key provided',
        draft: { info: DRAFT, prepared: {} as never },
      }),
      {
        worker: {
          taskQueue: 'longrun-agents',
          polled: true,
          text: 'a worker polls task queue longrun-agents (last polled 2 s ago by 1@host)',
        },
        now: Date.parse('2026-01-01T00:05:00.000Z'),
      },
    );
    expect(text).toContain('status   awaiting-review\n');
    expect(text).toContain('worker   a worker polls task queue longrun-agents (last polled 2 s ago by 1@host)');
    expect(text).toContain('error    callModel failed: HTTP 401: Incorrect API key provided');
    expect(text).toContain(
      'review   draft-1 (automatic compaction 2, 1200 → 300 tokens) waits: 300 s left, then applied as made',
    );
    expect(text).toContain('approve: longrun approve trip-planner-7 draft-1 [--summary-file F]');
    expect(text).toContain('discard: longrun discard trip-planner-7 draft-1');
  });

  it("shows a sub-agent's task once it ended: its parent, how it ended, its answer", () => {
    const done = renderState(agent({ task: { parent: 'desk', replyId: 'm000027', steps: 13, toolCalls: 12 } }));
    expect(done).toContain('task     sub-agent of desk: done (13 step(s), 12 tool call(s), answer m000027)\n');
    const stopped = renderState(
      agent({ task: { parent: 'desk', steps: 5, toolCalls: 5, stopped: 'its steps budget of 5 was reached' } }),
    );
    expect(stopped).toContain('task     sub-agent of desk: stopped: its steps budget of 5 was reached (5 step(s)');
    const failed = renderState(agent({ task: { parent: 'desk', steps: 0, toolCalls: 0, error: 'HTTP 401' } }));
    expect(failed).toContain('task     sub-agent of desk: failed: HTTP 401 (0 step(s), 0 tool call(s))\n');
    expect(renderState(agent())).not.toMatch(/^task /m);
  });

  it('says when no worker polls the task queue, and what to do', () => {
    const text = renderState(agent(), {
      worker: { taskQueue: 'q1', polled: false, text: 'no worker polls task queue q1 (the server has seen none)' },
    });
    expect(text).toContain(
      'worker   no worker polls task queue q1 (the server has seen none): nothing runs until one does',
    );
    expect(text).toContain('LONGRUN_TASK_QUEUE=q1');
    expect(text).toContain('status   running'); // a state of before shownStatus: its status
    expect(text).not.toMatch(/^(error|review) /m);
  });
});

describe('a step that only calls tools, in `state` and `context`', () => {
  const reply = {
    role: 'assistant' as const,
    content: null,
    tool_calls: [
      { id: 'c1', type: 'function' as const, function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
      {
        id: 'c2',
        type: 'function' as const,
        function: { name: 'grep', arguments: `{"pattern":"${'x'.repeat(150)}"}` },
      },
    ],
  };
  const record = recordOf(reply, { id: 'm000003', key: 'agents/a/l/messages/m000003.json', tokens: 40 });

  it('shows its calls, clipped, and a size that counts their arguments', () => {
    expect(record.chars).toBe(0); // the content's, what the planner cuts
    expect(record.callChars).toBe('read_file'.length + 15 + 'grep'.length + 164);
    expect(record.preview.startsWith('→ read_file {"path":"a.ts"} → grep {"pattern":"xxx')).toBe(true);
    const row = renderState(agent({ messages: [record] }))
      .split('\n')
      .find((line) => line.startsWith('m000003'));
    expect(row).toMatch(
      new RegExp(`^m000003  assistant +40 +${record.callChars} +→ read_file \\{"path":"a\\.ts"\\} → grep`),
    );
    expect(renderContext(agent({ messages: [record] }))).toContain('→ read_file {"path":"a.ts"} → grep');
  });

  it('a record of before (no preview of its calls) names them by id', () => {
    const earlier = { ...record, preview: '', callChars: undefined };
    expect(renderState(agent({ messages: [earlier] }))).toMatch(/^m000003 .* 0 +→ tool calls c1, c2$/m);
  });
});

describe('renderAgents', () => {
  it('shows turns, context tokens and the task queue', () => {
    const text = renderAgents([
      {
        agentId: 'a1',
        status: 'awaiting-review',
        model: 'gpt-4o-mini',
        turns: 12,
        contextTokens: 4321,
        taskQueue: 'longrun-agents',
        startedAt: new Date('2026-01-01T00:00:00Z'),
        workflowStatus: 'RUNNING',
      },
      {
        agentId: 'old',
        status: 'closed',
        model: 'gpt-4o',
        taskQueue: 'q2',
        startedAt: new Date('2026-01-01T00:00:00Z'),
        workflowStatus: 'COMPLETED',
      },
    ]);
    const [header, first, second] = text.split('\n');
    expect(header!.split(/\s{2,}/)).toEqual(['AGENT', 'STATUS', 'MODEL', 'TURNS', 'CONTEXT', 'TASK QUEUE', 'STARTED']);
    expect(first!.split(/\s{2,}/).slice(0, 6)).toEqual([
      'a1',
      'awaiting-review',
      'gpt-4o-mini',
      '12',
      '4321',
      'longrun-agents',
    ]);
    expect(second!.split(/\s{2,}/).slice(0, 6)).toEqual(['old', 'closed', 'gpt-4o', '?', '?', 'q2']);
  });
});

describe('renderConfigured', () => {
  it('says each change and the compaction made first', () => {
    const text = renderConfigured(
      {
        changed: [
          { setting: 'model', from: 'gpt-4o', to: 'gpt-4o-mini' },
          { setting: 'window', from: 128_000, to: 2_048 },
          { setting: 'systemPrompt', from: undefined, to: 'x'.repeat(100) },
        ],
        compacted: true,
        compaction: {
          compacted: true,
          reason: 'forced',
          event: { seq: 3, tokensBefore: 3000, tokensAfter: 900 } as never,
        },
        settings: { model: 'gpt-4o-mini', window: 2_048 },
      },
      'a1',
    );
    expect(text.split('\n')).toEqual([
      'model: "gpt-4o" → "gpt-4o-mini"',
      'window: 128000 tokens → 2048 tokens',
      `systemPrompt: none → "${'x'.repeat(60)}…" (100 chars)`,
      'compacted first for the smaller window: compaction 3, 3000 → 900 tokens',
    ]);
    expect(
      renderConfigured({ changed: [], compacted: false, settings: { model: 'gpt-4o', window: 128_000 } }, 'a1'),
    ).toBe('agent a1: nothing to change (model gpt-4o, window 128000)');
  });
});

describe('the current details', () => {
  it('fit the panel: every line at most 80 characters, a waiting draft and its commands included', () => {
    const state = {
      ...agent({ agentId: 'a-rather-long-agent-id-for-the-panel' }),
      messages: [],
      policy: { preset: 'default' },
      stats: { count: 2, averageSizeRatio: 0.4, tokensSaved: 900, reverts: 1 },
      events: [
        {
          seq: 3,
          trigger: 'revert',
          tokensBefore: 900,
          tokensAfter: 1500,
          strategies: [],
        },
      ],
      draft: { info: DRAFT, prepared: {} },
      cooldown: { consecutive: 1, lastTokensAfter: 0, pausedUntil: 99_999, pausedFor: 'draft-0 discarded by a person' },
    } as unknown as WorkflowState;
    const details = currentDetails(state, new Progress());
    for (const line of details.split('\n')) expect(line.length, line).toBeLessThanOrEqual(DETAILS_LINE_CHARS);
    expect(details).toContain('**awaiting-review** · model gpt-4o-mini');
    expect(details).toContain('compactions: 2 · reverts: 1');
    expect(details).toContain('last event (a revert): 3, 900 → 1500 tokens');
    expect(details).toContain('times out at 2026-01-01T00:10:00Z (in ');
    expect(details).toContain('`longrun approve a-rather-long-agent-id-for-the-panel draft-1`');
    expect(details).toContain('automatic compaction paused until 99999 tokens:\n\ndraft-0 discarded by a person');
  });

  it("show the last compaction's summary call: its cost, how it was asked, its cached share", () => {
    const event = {
      seq: 4,
      at: '2026-01-01T00:00:00.000Z',
      trigger: 'auto',
      messagesBefore: 40,
      messagesAfter: 12,
      removedCount: 28,
      tokensBefore: 6_000,
      tokensAfter: 2_500,
      strategies: ['summarize'],
      llm: { model: 'gpt-4o-mini', promptTokens: 5_000, cachedTokens: 4_608, completionTokens: 300, durationMs: 9 },
      spent: { summary: 0.000561, cache: { invalidatedTokens: 0, keptTokens: 0, rewrittenTokens: 0, nextCallCost: 0 } },
    };
    const details = (events: unknown[]) =>
      currentDetails({ ...agent(), messages: [], events } as unknown as WorkflowState, new Progress());
    expect(details([{ ...event, llm: { ...event.llm, request: 'conversation' } }])).toContain(
      'last summary call: $0.000561 (conversation, 92% cached)',
    );
    // An event of before the field: its summary was asked as a transcript.
    expect(details([event])).toContain('last summary call: $0.000561 (transcript, 92% cached)');
    // An extractive summary (no call), or none: no line.
    const extractive = { ...event, llm: { model: 'extractive', promptTokens: 0, completionTokens: 0, durationMs: 1 } };
    expect(details([extractive])).not.toContain('summary call');
    expect(details([{ ...event, llm: undefined }])).not.toContain('summary call');
    // `longrun events`: the same beside the cost, in the summary column.
    const stats = { count: 1, tokensSaved: 3_500, averageSizeRatio: 0.4 };
    const shown = renderEvents(
      [{ ...event, llm: { ...event.llm, request: 'conversation' } }] as unknown as CompactionEventSummary[],
      stats,
    );
    expect(shown).toContain('$0.000561 (conversation, 92% cached)');
  });

  it("`longrun events`' totals: what reverts put back, the tokens saved now, and the cost saved in USD either way", () => {
    const compacted = { count: 1, tokensSaved: 2_839, averageSizeRatio: 0.243, costSaved: 0.002 };
    expect(renderEvents([], compacted)).toContain(
      '1 compaction(s), 2839 tokens saved, average size after 24% of before, cost saved: $0.002000 (estimated, USD at ' +
        "the policy's compaction.cost prices)",
    );
    // After `revert --to-event 1`: the compaction's saving is undone, and the line says so.
    const reverted = { ...compacted, reverts: 1, tokensRestored: 2_839 };
    expect(renderEvents([], reverted)).toContain(
      '1 compaction(s), 2839 tokens saved; 1 revert(s) put 2839 back: 0 tokens saved now, average size after 24% of ' +
        "before, cost saved: $0.002000 (estimated when compacted, before reverts, USD at the policy's compaction.cost " +
        'prices)',
    );
    // Without prices: the same words, saying why there is no figure.
    const { costSaved: _, ...unpriced } = compacted;
    expect(renderEvents([], unpriced)).toContain('cost saved: not estimated (no compaction.cost prices in the policy)');
  });

  it('break a long line at spaces', () => {
    expect(brokenAt('aaa bbb ccc', 7)).toEqual(['aaa bbb', 'ccc']);
    expect(brokenAt('short', 80)).toEqual(['short']);
    expect(brokenAt('x'.repeat(90), 80)).toEqual(['x'.repeat(90)]); // one word: whole
    expect(brokenAt(`${'x'.repeat(90)} y`, 80)).toEqual(['x'.repeat(90), 'y']);
  });

  it('never break a command in backticks: it stays on one line, whole', () => {
    expect(brokenAt('run: `longrun approve-tool some-agent c1`', 20)).toEqual([
      'run:',
      '`longrun approve-tool some-agent c1`',
    ]);
    expect(brokenAt('a `b c` d', 3)).toEqual(['a', '`b c`', 'd']);
  });

  it('show a call waiting for approval, each command that answers it on a line of its own', () => {
    const agentId = 'trail-demo-with-a-rather-long-agent-id';
    const callId = 'call_7f3a9c2e5b1d4e8f9a0b1c2d';
    const progress = new Progress();
    progress.turnBegan(1, '2026-01-01T00:00:00.000Z');
    progress.approvalsWaiting([
      {
        callId,
        tool: 'trail_report',
        arguments: '{"stage":3}',
        since: '2026-01-01T00:00:00.000Z',
        until: '2026-01-01T01:00:00.000Z',
        onTimeout: 'deny',
      },
    ]);
    const state = { ...agent({ agentId }), messages: [], policy: { preset: 'default' } } as unknown as WorkflowState;
    const paragraphs = currentDetails(state, progress).split('\n\n');
    const approve = `\`longrun approve-tool ${agentId} ${callId}\``;
    const deny = `\`longrun deny-tool ${agentId} ${callId} [reason]\``;
    expect(paragraphs.filter((line) => line.endsWith(approve))).toHaveLength(1);
    expect(paragraphs.filter((line) => line.endsWith(deny))).toHaveLength(1);
    // Every code span opens and closes on the same line: no command is cut across paragraphs.
    for (const line of paragraphs) expect(line.split('`').length % 2, line).toBe(1);
    expect(paragraphs).toContain(`**awaiting approval: tool trail_report** (${callId})`);
    expect(paragraphs).toContain('denied at 2026-01-01T01:00:00Z if nobody answers');
  });
});
