import { describe, expect, it } from 'vitest';
import { checkFacts, extractFacts, preservedFactsBlock, prioritizeFacts } from '../../../engine/facts.ts';

const kinds = (facts: { kind: string; text: string }[], kind: string) =>
  facts.filter((f) => f.kind === kind).map((f) => f.text);

describe('must-keep facts', () => {
  const span = [
    {
      role: 'user',
      content:
        'Fix the flaky test in src/api/paginate.ts. You must keep the public API unchanged. ' +
        "Don't touch the database schema. See https://github.com/acme/shop/issues/412 and ticket SHOP-1287.",
    },
    {
      role: 'assistant',
      content: 'Running the suite took 42.5 s and used 512 MiB; commit 3f9a2c71b was the last green one.',
    },
    {
      role: 'tool',
      content:
        "FAIL test/paginate.test.ts\nTypeError: Cannot read properties of undefined (reading 'length')\n" +
        '    at paginate (src/api/paginate.ts:17:22)\nrequest id 8d7f3c2a-1b4e-4c5d-9e8f-0a1b2c3d4e5f, retry in 250ms',
    },
    { role: 'assistant', content: 'I always run the linter first.' },
  ];
  const facts = extractFacts(span);

  it('extracts paths, URLs, identifiers, quantities, error signatures and user constraints', () => {
    expect(kinds(facts, 'path')).toEqual(expect.arrayContaining(['src/api/paginate.ts', 'test/paginate.test.ts']));
    expect(kinds(facts, 'url')).toEqual(['https://github.com/acme/shop/issues/412']);
    expect(kinds(facts, 'identifier')).toEqual(
      expect.arrayContaining(['SHOP-1287', '3f9a2c71b', '8d7f3c2a-1b4e-4c5d-9e8f-0a1b2c3d4e5f']),
    );
    expect(kinds(facts, 'quantity')).toEqual(expect.arrayContaining(['42.5 s', '512 MiB', '250ms']));
    expect(kinds(facts, 'error')).toEqual(
      expect.arrayContaining([
        'FAIL test/paginate.test.ts',
        "TypeError: Cannot read properties of undefined (reading 'length')",
      ]),
    );
    expect(kinds(facts, 'constraint')).toEqual([
      'You must keep the public API unchanged.',
      "Don't touch the database schema.",
    ]);
  });

  it('takes constraints from the user only, and lists each fact once', () => {
    expect(kinds(facts, 'constraint').some((c) => c.includes('linter'))).toBe(false);
    const texts = facts.map((f) => `${f.kind}:${f.text}`);
    expect(new Set(texts).size).toBe(texts.length);
  });

  it('catches a summary that dropped a path and an error, and the pinned block restores them', () => {
    const summary =
      'The user wants the flaky pagination test fixed (ticket SHOP-1287, https://github.com/acme/shop/issues/412) ' +
      'while keeping the public API unchanged and never touching the database schema. Last green commit 3f9a2c71b; ' +
      'the suite takes 42.5 s and 512 MiB. Request 8d7f3c2a-1b4e-4c5d-9e8f-0a1b2c3d4e5f failed, retried in 250ms. ' +
      'Failing file: test/paginate.test.ts (FAIL test/paginate.test.ts).';
    const { missing } = checkFacts(facts, summary);
    expect(missing.map(({ kind, text }) => ({ kind, text }))).toEqual([
      { kind: 'path', text: 'src/api/paginate.ts' },
      { kind: 'error', text: "TypeError: Cannot read properties of undefined (reading 'length')" },
    ]);
    // Paraphrased constraints count as kept.
    expect(missing.some((f) => f.kind === 'constraint')).toBe(false);

    const pinned = `${summary}\n\n${preservedFactsBlock(missing)}`;
    expect(checkFacts(facts, pinned).missing).toEqual([]);
    expect(preservedFactsBlock(missing)).toContain('- error: TypeError: Cannot read properties of undefined');
  });

  it('has nothing to pin when nothing is missing', () => {
    expect(preservedFactsBlock([])).toBe('');
  });

  it('pins the user’s own facts first, then constraints, errors, paths, URLs, identifiers, quantities', () => {
    const facts = extractFacts([
      { role: 'tool', content: 'GET /api/items/1 took 12 ms\nGET /api/items/2 took 15 ms\nTypeError: x is undefined' },
      { role: 'user', content: 'Use config/prod.yaml. Never touch the billing tables.' },
    ]);
    const ranked = prioritizeFacts(facts, 4).map((f) => f.text);
    expect(ranked).toEqual([
      'Never touch the billing tables.',
      'config/prod.yaml',
      'TypeError: x is undefined',
      '/api/items/1',
    ]);
  });

  it('reads the agent’s tool-call arguments, and puts the files it acted on before the paths a search listed', () => {
    const facts = extractFacts([
      { role: 'tool', content: 'src/a.py\nsrc/b.py\nsrc/c.py' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ function: { arguments: JSON.stringify({ path: 'src/c.py', text: 'print(1)' }) } }],
      },
    ]);
    expect(facts.filter((f) => f.kind === 'path').map((f) => [f.text, f.fromAgent ?? false])).toEqual([
      ['src/a.py', false],
      ['src/b.py', false],
      ['src/c.py', true],
    ]);
    expect(prioritizeFacts(facts, 2).map((f) => f.text)).toEqual(['src/c.py', 'src/a.py']);
  });

  it('takes lines that report an error, not code or prose that names one', () => {
    const reporting = [
      'Traceback (most recent call last):',
      "NameError: name 'Query' is not defined",
      'django.db.utils.OperationalError: no such table: auth_user',
      "E       AssertionError: 'a' != 'b'",
      "src/x.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.",
      'main.c:4:10: fatal error: stdio.h: No such file or directory',
      'error[E0308]: mismatched types',
      'bash: pyhton: command not found',
      'FAILED tests/test_app.py::test_join - KeyError: 3',
      'Process exited with code 2',
    ];
    const naming = [
      '  File "/testbed/app/models.py", line 12, in <module>',
      '        raise ValueError(',
      '    except TypeError:',
      '    print("Error:", e)',
      "    'ENGINE': 'django.db.backends.sqlite3',",
      '# remove ordering since EXISTS does not need it',
      'Process exited with code 0',
    ];
    const output = [...reporting, ...naming].join('\n');
    // Each reporting line, verbatim but for its spaces (folded to one).
    expect(kinds(extractFacts([{ role: 'tool', content: output }]), 'error')).toEqual(
      reporting.map((line) => line.replace(/\s+/g, ' ')),
    );
  });

  it('reads a fact in a list item (a summary, a ledger, a pinned block) as the same fact, however often carried', () => {
    const summary = [
      "- NameError: name 'Query' is not defined",
      "- - error: NameError: name 'Query' is not defined",
      '- path: src/app/models.py',
    ].join('\n');
    const facts = extractFacts([{ role: 'user', content: summary }]);
    expect(kinds(facts, 'error')).toEqual(["NameError: name 'Query' is not defined"]);
    expect(kinds(facts, 'path')).toEqual(['src/app/models.py']);
  });

  it('reads no fact from the engine’s own reload references and summary titles', () => {
    const facts = extractFacts([
      {
        role: 'user',
        content:
          '[Summary of earlier conversation: m000003–m000054 (52 messages)]\n' +
          '[tool result masked to save context: 900 characters, 300 tokens; read it with ' +
          'context_reload("agents/a1/01a2092f-cc73-7c98-a204-8fb9cbc1b4ea/messages/m000007.json")]',
      },
    ]);
    expect(facts.map((f) => f.text)).toEqual([]);
  });

  it('ranks a file named with a line number, then one named often, before one line of a listing', () => {
    const facts = extractFacts([
      { role: 'tool', content: './pkg/a.py\n./pkg/b.py\n./pkg/c.py\n./pkg/d.py' },
      { role: 'tool', content: 'grep: ./pkg/c.py matched' },
      { role: 'tool', content: 'Traceback (most recent call last):\n  File "./pkg/d.py", line 9, in run\nKeyError: 1' },
    ]);
    expect(
      prioritizeFacts(
        facts.filter((f) => f.kind === 'path'),
        3,
      ).map((f) => f.text),
    ).toEqual(['./pkg/d.py', './pkg/c.py', './pkg/a.py']);
  });
});
