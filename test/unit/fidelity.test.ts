/** The pure parts of `npm run fidelity`: fact matching, one run's figures, the table and the target checks. */
import { requestsHolding } from '../../commands/replay.ts';
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../engine/messages.ts';
import {
  sentFloor,
  factsAfterEach,
  factInMatches,
  findableOf,
  FINDABLE_TOP,
  factsFound,
  failedRun,
  messageText,
  normalizeWhitespace,
  runResult,
} from '../../bench/fidelity/measure.ts';
import type { CompactionSnapshot, ReplayFigures } from '../../bench/fidelity/measure.ts';
import {
  checkTargets,
  historyLine,
  renderTable,
  renderTargets,
  strategiesLabel,
  windowLabel,
} from '../../bench/fidelity/table.ts';
import { constraintSentences, patchedFiles, tracebackErrors } from '../../bench/corpus/derive-facts.ts';
import { sessionOfTrajectory } from '../../bench/corpus/convert-mini-swe-agent.ts';
import { comparePresets, renderPresetComparison } from '../../bench/fidelity/presets-table.ts';

const snapshot = (over: Partial<CompactionSnapshot> & { seq: number }): CompactionSnapshot => ({
  strategies: ['summarize'],
  summary: null,
  context: [],
  removed: [],
  droppedCount: 0,
  removedCount: 0,
  reload: { identical: 0, total: 0 },
  ...over,
});

const figures = (over: Partial<ReplayFigures> = {}): ReplayFigures => ({
  window: 16_000,
  modelCalls: 157,
  recordedSteps: 156,
  replayedSteps: 156,
  maxRequestTokens: 12_000,
  tokensSent: 1_000,
  tokensSentWithoutCompaction: 4_000,
  toolPairViolations: 0,
  ...over,
});

describe('fact matching', () => {
  it('is a case-sensitive substring match with whitespace runs normalised on both sides', () => {
    const facts = ['TypeError: bad  value', 'src/app.py', 'Do NOT commit'];
    const found = factsFound(facts, ['Traceback…\nTypeError:\tbad\n value here', 'do not commit', 'see src/app.py:12']);
    expect([...found].sort()).toEqual(['TypeError: bad  value', 'src/app.py']);
    expect(normalizeWhitespace('  a \n\t b  ')).toBe('a b');
  });

  it('does not join the end of one text to the start of the next', () => {
    expect(factsFound(['ab cd'], ['xx ab', 'cd yy']).size).toBe(0);
  });

  it('reads the text of a message and the string values of its tool calls’ arguments', () => {
    const message: ChatMessage = {
      role: 'assistant',
      content: 'Let me patch it.',
      tool_calls: [
        {
          id: 'c1',
          type: 'function',
          function: { name: 'bash', arguments: '{"command": "sed -i \\"s/a/b/\\" pkg/mod.py"}' },
        },
        { id: 'c2', type: 'function', function: { name: 'raw', arguments: 'not json' } },
      ],
    };
    const text = messageText(message);
    expect(text).toContain('sed -i "s/a/b/" pkg/mod.py');
    expect(text).toContain('not json');
    expect(messageText({ role: 'user', content: [{ type: 'text', text: 'part one' }] })).toBe('part one');
  });
});

describe('facts after each compaction', () => {
  const facts = ['F1', 'F2', 'F3'];

  it('counts as appeared what was removed so far or is present, and as kept what the summary or context holds', () => {
    const after = factsAfterEach(facts, [
      snapshot({ seq: 1, removed: ['F1 was here'], summary: 'F1 summarized', context: ['nothing'] }),
      snapshot({ seq: 2, removed: ['F2 here'], summary: 'no facts', context: ['F3 now'] }),
      snapshot({ seq: 3, removed: [], summary: null, context: ['F1 F2 F3'] }),
    ]);
    expect(after.map((a) => [a.seq, a.appeared, a.kept])).toEqual([
      [1, 1, 1],
      [2, 3, 1],
      [3, 3, 3],
    ]);
    expect(after[0]!.pct).toBe(100);
    expect(after[1]!.pct).toBeCloseTo(100 / 3);
    expect(after[1]!.missing.sort()).toEqual(['F1', 'F2']);
  });

  it('has no share before any fact appeared', () => {
    expect(factsAfterEach(facts, [snapshot({ seq: 1, context: ['nothing'] })])[0]!.pct).toBeNull();
  });
});

describe('one run’s figures', () => {
  it('aggregates strategies, summaries, removals without a summary, facts, tokens and reloads', () => {
    const r = runResult(
      { session: 's', preset: 'default', durationMs: 1500 },
      figures({ requestTokens: [100, 16_001, 15_999, 17_000] }),
      ['F1', 'F2'],
      [
        snapshot({
          seq: 1,
          strategies: ['mask-tool-results'],
          context: ['F1'],
          removed: ['F2'],
          removedCount: 3,
          reload: { identical: 3, total: 3 },
        }),
        snapshot({
          seq: 2,
          strategies: ['mask-tool-results', 'summarize', 'summarize'],
          summary: 'F2',
          context: ['F1'],
          droppedCount: 2,
          removedCount: 4,
          reload: { identical: 3, total: 4 },
        }),
        snapshot({ seq: 3, strategies: ['halve'], context: ['F1', 'F2'], droppedCount: 5, removedCount: 5 }),
      ],
    );
    expect(r.compactions).toBe(3);
    expect(r.byStrategy).toEqual({ 'mask-tool-results': 2, summarize: 1, halve: 1 });
    expect(r.summaries).toBe(1);
    expect(r.removedWithoutSummary).toBe(1); // the halve; the masking kept stubs
    expect(r.facts.minPct).toBe(50);
    expect(r.facts.meanPct).toBeCloseTo((50 + 100 + 100) / 3);
    expect(r.facts.worst).toEqual({ seq: 1, missing: ['F2'] });
    expect(r.requestsOverWindow).toBe(2);
    expect(r.tokensRatio).toBe(0.25);
    expect(r.reload).toEqual({ identical: 6, total: 7 });
  });

  it('the floor of tokens sent at a trigger: requests below it whole, each compaction leaving nothing', () => {
    // Without compaction: 10, 20, …, 80. Trigger 35: 10, 20, 30, then 40 ≥ 35 → 0, 10, 20, 30, then 80 → 0.
    const whole = [10, 20, 30, 40, 50, 60, 70, 80];
    expect(sentFloor(whole, 35)).toBe(10 + 20 + 30 + 0 + 10 + 20 + 30 + 0);
    expect(sentFloor(whole, 1_000)).toBe(whole.reduce((a, b) => a + b, 0)); // never reached: everything goes whole
    // A context that shrank in the recording itself (a new session) carries on from where it is.
    expect(sentFloor([100, 50, 60], 1_000)).toBe(100 + 50 + 60);
  });

  it('knows no request was over the window from the largest one alone, and not how many were when it was', () => {
    const fits = runResult({ session: 's', preset: 'p', durationMs: 1 }, figures({ maxRequestTokens: 16_000 }), [], []);
    const over = runResult({ session: 's', preset: 'p', durationMs: 1 }, figures({ maxRequestTokens: 16_001 }), [], []);
    expect(fits.requestsOverWindow).toBe(0);
    expect(over.requestsOverWindow).toBeNull();
    expect(fits.facts.minPct).toBeNull();
  });
});

describe('the Temporal history against the recording', () => {
  it('is the replay’s history over the recording’s bytes, and the line sums every replay', () => {
    const run = { session: 's', preset: 'p', durationMs: 1, sessionBytes: 200_000 };
    const a = runResult(run, figures({ historyBytes: 300_000 }), [], []);
    expect(a.history).toEqual({ bytes: 300_000, sessionBytes: 200_000, ratio: 1.5 });
    const b = runResult({ ...run, sessionBytes: 100_000 }, figures({ historyBytes: 250_000 }), [], []);
    expect(historyLine([a, b])).toBe(
      "Temporal history: 1.83× the recordings' own bytes over 2 replays (1.50–2.50× each)",
    );
    // Not reported: no figure, never 0.
    expect(runResult({ session: 's', preset: 'p', durationMs: 1 }, figures({}), [], []).history).toBeUndefined();
    expect(historyLine([])).toBe('Temporal history: not reported');
  });
});

describe('table and targets', () => {
  const ok = runResult(
    { session: 'django-11797', preset: 'default', durationMs: 29_800 },
    figures({ requestTokens: [12_000] }),
    ['F1'],
    [snapshot({ seq: 1, strategies: ['summarize'], summary: 'F1', removedCount: 2, droppedCount: 2 })],
  );
  const bad = runResult(
    { session: 'django-11797', preset: 'astrbot', durationMs: 46_100 },
    figures({ window: 32_000, maxRequestTokens: 40_000, replayedSteps: 27, toolPairViolations: 1 }),
    ['F1'],
    [snapshot({ seq: 1, strategies: ['halve'], context: [], removed: ['F1'], droppedCount: 4 })],
  );
  const failed = failedRun({ session: 'astroid-1333', window: 16_000, preset: 'octomind', durationMs: 900 }, 'boom');

  it('renders one aligned row per run under a header', () => {
    const table = renderTable([ok, bad, failed]);
    const lines = table.split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^session\s+window\s+preset\s+steps/);
    expect(lines[1]).toContain('16k');
    expect(lines[1]).toContain('156/156');
    expect(lines[1]).toContain('100% / 100%');
    expect(lines[1]).toContain('12000 (0.75)');
    expect(lines[1]).toContain('summarize×1');
    expect(lines[2]).toContain('32k');
    expect(lines[2]).toContain('≥1');
    expect(lines[3]).toContain('FAILED: boom');
    // Every column but the last starts at the same place on every line.
    const at = (line: string) => (line.indexOf('  16k') === -1 ? line.indexOf('  32k') : line.indexOf('  16k'));
    expect(new Set([lines[1]!, lines[2]!, lines[3]!].map(at)).size).toBe(1);
  });

  it('shows the cost with caching, its ratio to sending everything with caching, its floor, and the cached share', () => {
    const priced = runResult(
      { session: 'django-11797', preset: 'default', durationMs: 1_000 },
      figures({ cost: 0.0123, costWithoutCompaction: 0.041, costFloor: 0.0082, cachedInputShare: 0.8149 }),
      [],
      [],
    );
    expect(priced).toMatchObject({
      cost: 0.0123,
      costWithoutCompaction: 0.041,
      costFloor: 0.0082,
      cachedInputShare: 0.8149,
    });
    const [header, row, none] = renderTable([priced, failed]).split('\n');
    expect(header).toMatch(/cost \(× all\)\s+all\+cache\s+floor \(× all\)\s+cached/);
    expect(row).toMatch(/\$0\.0123 \(0\.30\)\s+\$0\.0410\s+\$0\.0082 \(0\.20\)\s+81%/);
    // A report without a price (or a failed run): no figure, never $0.
    expect(none).not.toContain('$');
    expect(runResult({ session: 's', preset: 'p', durationMs: 1 }, figures({}), [], []).cost).toBeNull();
  });

  it('counts the facts missing after each compaction that context_search finds, and shows them as a column', () => {
    const lost = runResult(
      { session: 'django-11797', preset: 'default', durationMs: 1_000 },
      figures({}),
      ['F1', 'F2'],
      [
        snapshot({ seq: 1, strategies: ['summarize'], summary: 'F1', removed: ['F1 F2'], removedCount: 1 }),
        snapshot({ seq: 2, strategies: ['summarize'], summary: 'none', removed: [], removedCount: 1 }),
      ],
    );
    // F2 missing after both compactions, F1 after the second: three missing, F2's message found.
    lost.findable = findableOf(lost.facts.perCompaction, new Set(['F2']));
    expect(lost.findable).toEqual({ missing: 3, found: 2 });
    const [header, row] = renderTable([lost]).split('\n');
    expect(header).toMatch(/facts min\/mean\s+findable/);
    expect(row).toMatch(/\s2\/3\s/);
    const checks = checkTargets([lost]);
    expect(checks.find((c) => c.target.includes('findable'))!.missed).toEqual(['django-11797 16k default']);
    expect(renderTable([ok]).split('\n')[1]).toMatch(/100% \/ 100%\s+—\s/);
  });

  it('shows the pins kept as a column, and misses the target when a request after the pin lacked it', () => {
    const pinned = runResult(
      { session: 'django-11797', preset: 'default', durationMs: 1_000 },
      { ...figures({}), pins: { requests: 40, verbatim: 39, compactions: 3 } },
      [],
      [],
    );
    expect(pinned.pins).toEqual({ requests: 40, verbatim: 39, compactions: 3 });
    const [header, row] = renderTable([pinned]).split('\n');
    expect(header).toMatch(/findable\s+pins/);
    expect(row).toMatch(/\s39\/40\s/);
    const check = checkTargets([pinned, ok]).find((c) => c.target.includes('pin verbatim'))!;
    expect(check.missed).toEqual(['django-11797 16k default']);
    const messages = (...texts: string[]) => texts.map((content) => ({ role: 'user' as const, content }));
    expect(
      requestsHolding('Fix the bug in a.py', [messages('x', 'Fix the bug in a.py'), messages('Fix the bug')]),
    ).toBe(1);
  });

  it('finds a fact only in a stored message or original among the first five matches, as written', () => {
    const fact = 'ValueError: bad  thing';
    const message = (text: string) => ({ kind: 'message', text });
    expect(factInMatches(fact, [message('x'), { kind: 'original', text: 'a ValueError: bad thing b' }])).toBe(true);
    expect(factInMatches(fact, [{ kind: 'summary', text: 'ValueError: bad thing' }])).toBe(false);
    expect(factInMatches(fact, [...Array.from({ length: FINDABLE_TOP }, () => message('x')), message(fact)])).toBe(
      false,
    );
  });

  it('labels windows and strategies', () => {
    expect(windowLabel(16_000)).toBe('16k');
    expect(windowLabel(8192)).toBe('8192');
    expect(strategiesLabel({ halve: 1, summarize: 6, 'mask-tool-results': 6 })).toBe(
      'mask-tool-results×6 summarize×6 halve×1',
    );
  });

  it('checks the issue’s targets, the default preset’s only on default rows', () => {
    const checks = checkTargets([ok, bad, failed]);
    const missed = Object.fromEntries(checks.map((c) => [c.target, c.missed]));
    expect(missed['every replay ran every recorded step']).toEqual([
      'django-11797 32k astrbot',
      'astroid-1333 16k octomind',
    ]);
    expect(missed['every preset: 0 requests over the window']).toEqual([
      'django-11797 32k astrbot',
      'astroid-1333 16k octomind',
    ]);
    expect(missed['every preset: 0 tool-pair violations']).toEqual(['django-11797 32k astrbot']);
    expect(missed['default: 0 compactions without a summary']).toEqual([]);
    expect(checks.find((c) => c.target.startsWith('default: 0 compactions'))!.rows).toBe(1);
    const text = renderTargets(checks);
    expect(text).toContain('met     default: 0 compactions without a summary (1 rows)');
    expect(text).toContain('MISSED  every preset: 0 tool-pair violations: 1 of 3 rows (django-11797 32k astrbot)');
  });
});

describe('corpus preparation', () => {
  it('derives changed files, traceback exception lines and constraint sentences', () => {
    expect(patchedFiles('diff --git a/src/a.py b/src/a.py\n+x\ndiff --git a/b.py b/b.py\n')).toEqual([
      'src/a.py',
      'b.py',
    ]);
    const output =
      'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    f()\nValueError: bad thing\n' +
      'then\nTraceback (most recent call last):\n  File "y.py", line 2\nmod.sub.CustomError: other\n';
    expect(tracebackErrors(output)).toEqual(['ValueError: bad thing', 'mod.sub.CustomError: other']);
    expect(
      constraintSentences(
        '- DO NOT MODIFY: Tests, configs\nHello there. You MUST use this. Fine.\n<X>Do not push.</X>',
      ),
    ).toEqual(['DO NOT MODIFY: Tests, configs', 'You MUST use this.', 'Do not push.']);
  });

  it('converts a tool-calling trajectory: recorder fields dropped, the exit record answering the final call', () => {
    const session = sessionOfTrajectory({
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'task' },
        {
          role: 'assistant',
          content: 'look',
          tool_calls: [{ id: 'a', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
        },
        { role: 'tool', content: 'out', tool_call_id: 'a' },
        {
          role: 'assistant',
          content: 'submit',
          tool_calls: [{ id: 'b', type: 'function', function: { name: 'bash', arguments: '{"command":"echo"}' } }],
        },
        { role: 'exit', content: 'diff --git a/x b/x' },
      ],
    });
    expect(session).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'task' },
      {
        role: 'assistant',
        content: 'look',
        tool_calls: [{ id: 'a', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
      },
      { role: 'tool', tool_call_id: 'a', content: 'out' },
      {
        role: 'assistant',
        content: 'submit',
        tool_calls: [{ id: 'b', type: 'function', function: { name: 'bash', arguments: '{"command":"echo"}' } }],
      },
      { role: 'tool', tool_call_id: 'b', content: 'diff --git a/x b/x' },
    ]);
    expect(() => sessionOfTrajectory({ messages: [{ role: 'critic', content: 'x' }] })).toThrow(/unknown role/);
  });
});

describe('the presets side by side (issue 42)', () => {
  const run = (
    session: string,
    window: number,
    preset: string,
    cost: number,
    plans = { made: 4, empty: 1, avoided: 0 },
  ) =>
    runResult(
      { session, preset, durationMs: 1 },
      figures({ window, cost, costWithoutCompaction: 0.1, costFloor: 0.02, cachedInputShare: 0.9, plans }),
      [],
      [],
    );

  it('compares the default with the cheapest seed preset that replayed every step, per session and window', () => {
    const rows = comparePresets([
      run('a', 16_000, 'default', 0.05),
      run('a', 16_000, 'octomind', 0.04),
      run('a', 16_000, 'astrbot', 0.06),
      // A seed that failed, or replayed fewer steps, is no yardstick.
      failedRun({ session: 'a', window: 16_000, preset: 'agentscope', durationMs: 1 }, 'boom'),
      runResult(
        { session: 'a', preset: 'agentscope-java', durationMs: 1 },
        figures({ cost: 0.01, replayedSteps: 100 }),
        [],
        [],
      ),
      run('a', 32_000, 'default', 0.03),
      run('a', 32_000, 'octomind', 0.036),
      // No default at this window: no row.
      run('b', 16_000, 'octomind', 0.02),
    ]);
    expect(rows.map((r) => [r.session, r.window, r.cheapest.preset])).toEqual([
      ['a', 16_000, 'octomind'],
      ['a', 32_000, 'octomind'],
    ]);
    expect(rows[0]!.ratio).toBeCloseTo(1.25);
    expect(rows[0]!.toFloor).toBeCloseTo(2.5);
    expect(rows[0]!.plans).toEqual({ made: 4, empty: 1 });
    expect(rows[1]!.ratio).toBeCloseTo(0.8333, 3);
    const text = renderPresetComparison([run('a', 16_000, 'default', 0.05), run('a', 16_000, 'octomind', 0.04)]);
    expect(text).toContain('a                    16k  $0.0500    octomind $0.0400');
    expect(text).toMatch(/1\.250\s+2\.50\s+4 \(1\)/);
    expect(text).toContain('worst: 1.250 (a at 16k, octomind)');
    expect(renderPresetComparison([run('a', 16_000, 'octomind', 0.04)])).toBe('');
  });
});
