import { describe, expect, it } from 'vitest';
import {
  parseSummary,
  renderSummary,
  SUMMARY_FIELDS,
  SUMMARY_JSON_SCHEMA,
  LEDGER_FIELDS,
  summaryPrompt,
} from '../../../engine/summary.ts';
import type { StructuredSummary } from '../../../engine/summary.ts';

const summary: StructuredSummary = {
  task_overview: 'Fix the flaky pagination test; keep the public API unchanged.',
  current_state: 'The off-by-one in src/api/paginate.ts is found, not fixed.',
  important_discoveries: 'Page 0 is accepted silently; the test relied on it.',
  next_steps: 'Throw RangeError for page < 1, then add a regression test.',
  context_to_preserve: "TypeError: Cannot read properties of undefined (reading 'length')",
};

describe('structured summary', () => {
  it('the JSON schema requires exactly the five fields, strictly', () => {
    expect(SUMMARY_JSON_SCHEMA.schema.required).toEqual([...SUMMARY_FIELDS, ...LEDGER_FIELDS]);
    expect(Object.keys(SUMMARY_JSON_SCHEMA.schema.properties)).toEqual([...SUMMARY_FIELDS, ...LEDGER_FIELDS]);
    expect(SUMMARY_JSON_SCHEMA.strict).toBe(true);
    expect(SUMMARY_JSON_SCHEMA.schema.additionalProperties).toBe(false);
  });

  it('the prompt carries the previous summary, the ledger and a forced compaction’s instructions', () => {
    const prompt = summaryPrompt({
      transcript: 'user: hi',
      previousSummary: 'earlier: set up the repo',
      ledger: 'goal: fix pagination',
      instructions: 'focus on the failing tests',
    });
    expect(prompt).toContain('## Previous summary (fold it in)\nearlier: set up the repo');
    expect(prompt).toContain('## Task ledger (authoritative; do not contradict it)\ngoal: fix pagination');
    expect(prompt).toContain('## Messages to summarize\nuser: hi');
    expect(prompt.endsWith('## Instructions for this compaction (follow them)\nfocus on the failing tests')).toBe(true);
    expect(summaryPrompt({ transcript: 'x' })).toBe('## Messages to summarize\nx');
  });

  it('parses structured output, also inside a code fence', () => {
    expect(parseSummary(JSON.stringify(summary))).toEqual({ summary, parsedAs: 'json' });
    expect(parseSummary('```json\n' + JSON.stringify(summary) + '\n```')).toEqual({ summary, parsedAs: 'json' });
  });

  it('reads plain text with the headings when a provider ignores the schema (round trip through the renderer)', () => {
    expect(parseSummary(renderSummary(summary))).toEqual({ summary, parsedAs: 'headings' });
    const bold = '**Task overview:**\nShip it.\n\n**Next steps**\nDeploy at 17:00.';
    expect(parseSummary(bold).summary).toMatchObject({ task_overview: 'Ship it.', next_steps: 'Deploy at 17:00.' });
  });

  it('keeps any other text whole, as the current state, and never throws', () => {
    expect(parseSummary('We fixed the bug and deployed.')).toEqual({
      summary: {
        ...Object.fromEntries(SUMMARY_FIELDS.map((f) => [f, ''])),
        current_state: 'We fixed the bug and deployed.',
      },
      parsedAs: 'text',
    });
    expect(parseSummary('').parsedAs).toBe('text');
    expect(parseSummary('{"unrelated": 1}').parsedAs).toBe('text');
  });

  it('renders only the fields that have content', () => {
    const rendered = renderSummary({ ...summary, important_discoveries: '  ' });
    expect(rendered.startsWith('[Summary of earlier conversation]')).toBe(true);
    expect(rendered).not.toContain('Important discoveries');
    expect(rendered).toContain('## Next steps\nThrow RangeError for page < 1, then add a regression test.');
  });
});
