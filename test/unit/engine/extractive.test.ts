/** The extractive summarizer quotes the span; it never writes new sentences. */
import { describe, expect, it } from 'vitest';
import { ANSWERED_NEXT_STEP, extractiveSummary, EXTRACTIVE_LABEL } from '../../../engine/extractive.ts';
import { checkFacts, extractFacts } from '../../../engine/facts.ts';
import { renderSummary } from '../../../engine/summary.ts';

const span = [
  { role: 'user', content: 'Fix the flaky test in test/queue.test.ts. Never change the public API.' },
  { role: 'assistant', content: null },
  { role: 'tool', content: 'FAIL test/queue.test.ts\nError: timeout after 5000 ms' },
  { role: 'assistant', content: 'The consumer retries forever; I will add a limit of 3 retries.' },
  { role: 'user', content: 'Go ahead, and see https://example.com/issues/42 first.' },
];

describe('extractive summary', () => {
  it('quotes the user, the last answer and the errors, and says it is extractive', () => {
    const summary = extractiveSummary(span, 'Earlier: set up the repository.');
    expect(summary.task_overview.split('\n')[0]).toBe(EXTRACTIVE_LABEL);
    expect(summary.task_overview).toContain(
      '- user: Fix the flaky test in test/queue.test.ts. Never change the public API.',
    );
    expect(summary.current_state).toBe(
      'Earlier: set up the repository.\nLast answer: The consumer retries forever; I will add a limit of 3 retries.',
    );
    expect(summary.important_discoveries).toContain('Error: timeout after 5000 ms');
    expect(summary.next_steps).toBe(
      "Continue from the user's last request: Go ahead, and see https://example.com/issues/42 first.",
    );
  });

  it('takes the next step from the newest request: in progress, answered, or none in the span', () => {
    // The newest request of the span, answered in it: the next one is after the summary, not the one quoted.
    const answered = [...span, { role: 'assistant', content: 'Done: retries are limited to 3.' }];
    expect(extractiveSummary(answered).next_steps).toBe(ANSWERED_NEXT_STEP);
    // Two requests, the newer not answered yet: that one, never the older.
    const open = [
      ...answered,
      { role: 'user', content: 'Now run the whole suite twice.' },
      { role: 'assistant', content: null },
    ];
    expect(extractiveSummary(open).next_steps).toBe(
      "Continue from the user's last request: Now run the whole suite twice.",
    );
    // No request in the span: the folded summary's next step carries over.
    const first = renderSummary(extractiveSummary(open));
    expect(extractiveSummary([{ role: 'tool', content: 'ok' }], first).next_steps).toBe(
      "Continue from the user's last request: Now run the whole suite twice.",
    );
  });

  it('keeps every must-keep fact of the span', () => {
    const text = renderSummary(extractiveSummary(span));
    expect(checkFacts(extractFacts(span), text).missing).toEqual([]);
  });

  it('folds an earlier extractive summary in without nesting it: its quotes of the user carry over, once', () => {
    const first = renderSummary(extractiveSummary(span.slice(0, 4)));
    const second = renderSummary(extractiveSummary(span.slice(4), first));
    const third = renderSummary(extractiveSummary([{ role: 'tool', content: 'ok' }], second));
    for (const summary of [second, third]) {
      expect(summary.split('[Summary of earlier conversation').length).toBe(2);
      expect(summary.split('## Current state').length).toBe(2);
      expect(summary).toContain('- user: Fix the flaky test in test/queue.test.ts. Never change the public API.');
      expect(summary).toContain('- user: Go ahead, and see https://example.com/issues/42 first.');
      expect(summary).toContain('Error: timeout after 5000 ms');
    }
    // The span of the third has no answer: the last one summarized carries over.
    expect(third).toContain('Last answer: The consumer retries forever; I will add a limit of 3 retries.');
    expect(third.split('- Error: timeout after 5000 ms').length).toBe(2);
  });

  /** A hike's planning loop: the request, then forecasts and a config read by tools, a step at a time. */
  const call = (id: string, name: string, args: object) => ({
    id,
    type: 'function' as const,
    function: { name, arguments: JSON.stringify(args) },
  });
  const forecast = (city: string, base: number) =>
    [
      `${city} tomorrow`,
      ...[7, 10, 13, 16].map(
        (h, i) => `${String(h).padStart(2, '0')}:00 light rain, ${base + i} °C, wind ${12 + 3 * i} km/h`,
      ),
      `Sunset 21:04, daylight 15 h`,
    ].join('\n');
  const loop = [
    { role: 'user', content: 'Check tomorrow in Bergen and Oslo, then the upload settings, and say if we can go.' },
    {
      role: 'assistant',
      content: 'I will check each city first.',
      tool_calls: [call('c1', 'forecast', { city: 'Bergen' })],
    },
    { role: 'tool', tool_call_id: 'c1', content: forecast('Bergen', 9) },
    { role: 'assistant', content: null, tool_calls: [call('c2', 'forecast', { city: 'Oslo' })] },
    { role: 'tool', tool_call_id: 'c2', content: forecast('Oslo', 14) },
    { role: 'assistant', content: null, tool_calls: [call('c3', 'read_config', { file: 'upload.json' })] },
    {
      role: 'tool',
      tool_call_id: 'c3',
      content: '{"timeout_ms": 5000, "max_body": "25 MB", "region": "eu-west-1", "retries": 3}',
    },
    { role: 'assistant', content: null, tool_calls: [call('c4', 'ping', { host: 'upload.example.net' })] },
    { role: 'tool', tool_call_id: 'c4', content: 'reachable' },
  ];

  it('lists each preserved quantity with what it belongs to, never bare', () => {
    const summary = extractiveSummary(loop);
    const items = summary.context_to_preserve.split('\n');
    for (const expected of ['- wind 12 km/h', '- 07:00 light rain, 9 °C', '- daylight 15 h', '- "max_body": "25 MB"']) {
      expect(items).toContain(expected);
    }
    // No item is a quantity alone (`- 9 °C`, `- 25 MB`), nor a unit read as a path (`- km/h`).
    const quantities = extractFacts(loop).filter((f) => f.kind === 'quantity');
    expect(quantities.length).toBeGreaterThan(10);
    for (const { text } of quantities) expect(items).not.toContain(`- ${text}`);
    expect(items).not.toContain('- km/h');
    expect(checkFacts(extractFacts(loop), renderSummary(summary)).missing).toEqual([]);
  });

  it('a unit with a slash after a number is a quantity, not a path', () => {
    const facts = extractFacts([{ role: 'tool', content: 'wind 20 km/h, gusts 14 m/s; see docs/wind.md' }]);
    expect(facts.filter((f) => f.kind === 'quantity').map((f) => f.text)).toEqual(['20 km/h', '14 m/s']);
    expect(facts.filter((f) => f.kind === 'path').map((f) => f.text)).toEqual(['docs/wind.md']);
  });

  it('the current state of a loop in progress is its newest step, not the sentence that opened the work', () => {
    const summary = extractiveSummary(loop);
    expect(summary.current_state).not.toContain('I will check each city first.');
    expect(summary.current_state).toBe(
      'Latest step (of 4 tool calls here): ping({"host":"upload.example.net"}) → reachable',
    );
    // The request is still being worked on: it is the next step, not "answered".
    expect(summary.next_steps).toBe(`Continue from the user's last request: ${loop[0]!.content}`);
    // The newest step said something with its calls: quoted with them.
    const opening = extractiveSummary(loop.slice(0, 3)).current_state;
    expect(opening).toBe(
      'Latest step (of 1 tool call here) (saying: I will check each city first.): forecast({"city":"Bergen"}) → ' +
        'Bergen tomorrow 07:00 light rain, 9 °C, wind 12 km/h 10:00 light rain, 10 °C, wind 15 km/h 13:00 light rain, ' +
        '11 °C, wind 18 km/h 16:00 light rain, 12 °C, wind 21 km/h Sunset 21:04, daylight 15 h',
    );
    // An answer after the steps is the state again.
    const answered = [...loop, { role: 'assistant', content: 'Both cities get rain; the upload settings are fine.' }];
    expect(extractiveSummary(answered).current_state).toBe(
      'Last answer: Both cities get rain; the upload settings are fine.',
    );
  });
});
