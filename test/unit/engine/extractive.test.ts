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
});
