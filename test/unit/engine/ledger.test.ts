/** The task ledger: the user's words verbatim, the summary's lists merged, never summarized away. */
import { describe, expect, it } from 'vitest';
import { extractFacts } from '../../../engine/facts.ts';
import {
  EMPTY_LEDGER,
  LEDGER_HEADER,
  LEDGER_KEY_FACTS,
  nextActionOf,
  parseLedgerUpdate,
  renderLedger,
  updateLedger,
} from '../../../engine/ledger.ts';

describe('task ledger', () => {
  it('takes the goal and the constraints verbatim from the user, the rest from the summary', () => {
    const ledger = updateLedger(undefined, {
      goal: 'Migrate the orders table to Postgres 16.',
      userMessages: ['Use the staging database first. Never drop the old table before the copy is verified.'],
      update: {
        decisions: ['Copy in batches of 10,000 rows'],
        done: ['Schema created'],
        pending: ['Copy data'],
        nextAction: 'Start the copy',
      },
    });
    expect(ledger).toEqual({
      goal: 'Migrate the orders table to Postgres 16.',
      constraints: ['Never drop the old table before the copy is verified.'],
      decisions: ['Copy in batches of 10,000 rows'],
      done: ['Schema created'],
      pending: ['Copy data'],
      nextAction: 'Start the copy',
    });
  });

  it('keeps the goal and every constraint across updates; appends decisions and done; follows pending and next', () => {
    const first = updateLedger(undefined, {
      goal: 'Goal one.',
      userMessages: ['You must keep the API stable.'],
      update: { decisions: ['A'], done: ['x'], pending: ['p1'], nextAction: 'n1' },
    });
    const second = updateLedger(first, {
      goal: 'A later message that is not the goal.',
      userMessages: ['Always run the tests.'],
      update: { decisions: ['B', 'a'], done: ['y'], pending: ['p2'] },
    });
    expect(second.goal).toBe('Goal one.');
    expect(second.constraints).toEqual(['You must keep the API stable.', 'Always run the tests.']);
    expect(second.decisions).toEqual(['A', 'B']); // case-insensitive duplicates dropped
    expect(second.done).toEqual(['x', 'y']);
    expect(second.pending).toEqual(['p2']);
    expect(second.nextAction).toBe('n1'); // the update had none
  });

  it('reads the ledger lists of a JSON summary, and nothing from plain text', () => {
    expect(parseLedgerUpdate('{"decisions":["d"],"done":[],"pending":["p", 3]}')).toEqual({
      decisions: ['d'],
      done: [],
      pending: ['p'],
    });
    expect(parseLedgerUpdate('## Next steps\nGo on')).toEqual({});
    expect(nextActionOf('\n- Run the migration\n- Then verify')).toBe('Run the migration');
  });

  it('renders as a message with its header and only the sections it has', () => {
    expect(renderLedger({ ...EMPTY_LEDGER, goal: 'G', constraints: ['Never X.'] })).toBe(
      `${LEDGER_HEADER}\n## Goal\nG\n## Constraints\n- Never X.`,
    );
  });

  it('carries the key facts of what left: error lines and the files the agent acted on, the newest 40', () => {
    const facts = extractFacts([
      { role: 'tool', content: 'src/a.py\nTraceback (most recent call last):\nValueError: bad value' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ function: { arguments: JSON.stringify({ path: 'src/b.py' }) } }],
      },
    ]);
    const ledger = updateLedger(undefined, { goal: 'Fix it.', userMessages: [], facts });
    expect(ledger.keyFacts).toEqual(['Traceback (most recent call last):', 'ValueError: bad value', 'src/b.py']);
    expect(renderLedger(ledger)).toContain('## Key facts (errors met, files acted on)\n- Traceback');
    const many = Array.from({ length: 50 }, (_, i) => ({ kind: 'error' as const, text: `Error: case ${i}` }));
    expect(updateLedger(ledger, { userMessages: [], facts: many }).keyFacts).toHaveLength(LEDGER_KEY_FACTS);
    expect(updateLedger(ledger, { userMessages: [], facts: many }).keyFacts!.at(-1)).toBe('Error: case 49');
  });
});
