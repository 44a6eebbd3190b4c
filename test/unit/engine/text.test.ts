/**
 * Cuts that never split a surrogate pair: the helpers of engine/text.ts, and every place that slices text for the
 * model (truncation head and tail, offload previews, previews, fact clips, extractive quotes, the task ledger, the
 * summarizer's transcript, context_reload pages), over random text full of astral characters (fast-check).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { transcriptOf } from '../../../activities/compaction/index.ts';
import { contextReload, RELOAD_PAGE_CHARS } from '../../../activities/tools.ts';
import { offloadText, truncateText } from '../../../engine/apply.ts';
import { extractiveSummary } from '../../../engine/extractive.ts';
import { extractFacts } from '../../../engine/facts.ts';
import { renderLedger, updateLedger } from '../../../engine/ledger.ts';
import { previewOf } from '../../../engine/messages.ts';
import { clipLine, cutIndex, headOf, safeSlice, tailOf } from '../../../engine/text.ts';
import type { BlobStore } from '../../../storage/s3.ts';

/** Whether `text` holds a lone surrogate (a paired one is a single code point, not in the Cs class). */
const hasLoneSurrogate = (text: string) => /\p{Cs}/u.test(text);

/** Text mixing ASCII, whitespace, Han, and astral characters (emoji, math letters): many surrogate pairs. */
const mixedText = fc
  .array(
    fc.oneof(
      fc.constantFrom('a', 'b', ' ', '\n', 'Error: ', '/src/x.ts ', 'must '),
      fc.integer({ min: 0x4e00, max: 0x9fff }).map((c) => String.fromCodePoint(c)),
      fc.integer({ min: 0x1f300, max: 0x1f64f }).map((c) => String.fromCodePoint(c)),
      fc.integer({ min: 0x1d400, max: 0x1d7ff }).map((c) => String.fromCodePoint(c)),
      fc.constant('👨‍👩‍👧‍👦'),
    ),
    { maxLength: 400 },
  )
  .map((parts) => parts.join(''));

describe('the cut helpers', () => {
  const pair = '😀'; // U+1F600: \ud83d\ude00
  const text = `ab${pair}cd`;

  it('move an index that falls inside a pair back to its start; other indexes stay, clamped', () => {
    expect(cutIndex(text, 3)).toBe(2);
    expect([0, 1, 2, 4, 5, 6].map((i) => cutIndex(text, i))).toEqual([0, 1, 2, 4, 5, 6]);
    expect(cutIndex(text, -3)).toBe(0);
    expect(cutIndex(text, 99)).toBe(6);
  });

  it('cut heads and tails short of a pair rather than through it', () => {
    expect(headOf(text, 3)).toBe('ab');
    expect(headOf(text, 4)).toBe(`ab${pair}`);
    expect(tailOf(text, 3)).toBe('cd');
    expect(tailOf(text, 4)).toBe(`${pair}cd`);
    expect(tailOf(text, 0)).toBe('');
    expect(tailOf(text, 10)).toBe(text);
    expect(safeSlice(text, 3, 5)).toBe(`${pair}c`);
    expect(clipLine(`ab ${pair}  cd`, 4)).toBe('ab …');
  });

  it('never leave a lone surrogate, and slices at the same boundaries put the text back together', () => {
    fc.assert(
      fc.property(mixedText, fc.nat(500), fc.nat(500), (s, a, b) => {
        for (const piece of [headOf(s, a), tailOf(s, a), safeSlice(s, a, b), clipLine(s, a + 2)]) {
          expect(hasLoneSurrogate(piece)).toBe(false);
        }
        expect(headOf(s, a).length).toBeLessThanOrEqual(a);
        expect(tailOf(s, a).length).toBeLessThanOrEqual(Math.max(0, a));
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        expect(safeSlice(s, 0, lo) + safeSlice(s, lo, hi) + safeSlice(s, hi)).toBe(s);
      }),
      { numRuns: 300 },
    );
  });
});

describe('every cut for the model keeps the text valid', () => {
  it('truncation head and tail, offload previews, previews and the transcript', () => {
    fc.assert(
      fc.property(mixedText, fc.nat(300), fc.nat(300), (s, head, tail) => {
        const ref = 'agents/a/messages/m1.json';
        const outputs = [
          truncateText(s, head, tail, '[cut {omitted} at {ref}]', ref),
          offloadText(s, head, ref),
          previewOf(s, head + 2),
          transcriptOf([{ role: 'tool', tool_call_id: 'c1', content: s }], head),
        ];
        for (const output of outputs) expect(hasLoneSurrogate(output)).toBe(false);
        // The marker counts what the cut left out, exactly.
        const cut = truncateText(s, head, tail, '[cut {omitted}]', ref);
        if (cut !== s) {
          // Head, marker and tail each on a line; without a tail, the marker ends the text.
          const [before, after] = cut.split(/\n\[cut \d+\](?:\n|$)/);
          const omitted = Number(/\[cut (\d+)\]/.exec(cut)![1]);
          expect(before!.length + after!.length + omitted).toBe(s.length);
          expect(s.startsWith(before!) && s.endsWith(after!)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('fact clips and the extractive summary’s quotes', () => {
    fc.assert(
      fc.property(fc.array(mixedText, { minLength: 1, maxLength: 4 }), (texts) => {
        // Long error lines and constraints are clipped to MAX_FACT_CHARS; quotes to 400 characters.
        const span = texts.flatMap((t) => [
          { role: 'user', content: `You must ${t.repeat(3)}` },
          { role: 'tool', content: `TypeError: ${t.repeat(3)}` },
          { role: 'assistant', content: t.repeat(5) },
        ]);
        for (const fact of extractFacts(span)) expect(hasLoneSurrogate(fact.text)).toBe(false);
        const summary = extractiveSummary(span, texts.join('').repeat(4));
        for (const field of Object.values(summary) as string[]) expect(hasLoneSurrogate(field)).toBe(false);
      }),
      { numRuns: 100 },
    );
  });

  it('the task ledger’s goal and items', () => {
    fc.assert(
      fc.property(mixedText, (t) => {
        const long = t.repeat(40);
        const ledger = updateLedger(undefined, {
          goal: long,
          userMessages: [],
          update: { decisions: [long], done: [long], pending: [long], nextAction: long },
        });
        expect(hasLoneSurrogate(renderLedger(ledger))).toBe(false);
      }),
      { numRuns: 100 },
    );
  });

  it('context_reload pages: each valid, together the stored body', async () => {
    const agent = { agentId: 'trip', life: 'life-1' };
    const reference = 'agents/trip/life-1/messages/m000001.json';
    // Astral characters straddling every page boundary: 7,999 ASCII characters, then pairs.
    const body = JSON.stringify({ role: 'tool', content: `${'x'.repeat(RELOAD_PAGE_CHARS - 1)}${'😀'.repeat(6_000)}` });
    const store: BlobStore = {
      bucket: 'test',
      put: () => Promise.resolve(),
      get: (key) => Promise.resolve(key === reference ? body : undefined),
      ensureBucket: () => Promise.resolve(),
    };
    const pages: string[] = [];
    const count = Math.ceil(body.length / RELOAD_PAGE_CHARS);
    for (let page = 1; page <= count; page++) {
      const text = await contextReload.run({ reference, page }, { ...agent, store });
      const header = `[${reference} · page ${page} of ${count}]\n`;
      expect(text.startsWith(header)).toBe(true);
      pages.push(text.slice(header.length));
    }
    for (const page of pages) expect(hasLoneSurrogate(page)).toBe(false);
    expect(pages.join('')).toBe(body);
  });
});
