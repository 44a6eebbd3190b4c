/**
 * Cuts measured in real tokens: a truncate operation with `maxTokens` is cut by counting (a binary search over the
 * characters kept), so dense text (code, base64, CJK, emoji) lands just under its budget and never over it, the
 * marker names the stored original, and no cut splits a surrogate pair. Plans stored before (no `maxTokens`) keep
 * the character cut.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_HEAD_SHARE, replacementBody, truncateToTokens } from '../../../engine/apply.ts';
import type { ChatMessage, MessageMeta } from '../../../engine/messages.ts';
import type { Operation } from '../../../engine/planner/index.ts';
import { countMessage, loadTokenCounter } from '../../../engine/tokens.ts';
import type { TokenCounter } from '../../../engine/tokens.ts';

let counter: TokenCounter;
beforeAll(async () => {
  counter = await loadTokenCounter('o200k_base');
});

const hasLoneSurrogate = (text: string) => /\p{Cs}/u.test(text);

/** A seeded PRNG (mulberry32): the same texts on every run. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = random(13);
const pick = <T>(items: readonly T[]) => items[Math.floor(rand() * items.length)]!;
const codePoints = (from: number, to: number, n: number) =>
  Array.from({ length: n }, () => String.fromCodePoint(from + Math.floor(rand() * (to - from)))).join('');

/** Dense texts, each far over the budgets below. */
const DENSE: Record<string, string> = {
  code: Array.from(
    { length: 600 },
    (_, i) =>
      `export function ${pick(['parse', 'load', 'fold', 'emit'])}${i}(x: Map<string, number[]>): number {\n` +
      `  return [...x.values()].flat().reduce((a, b) => a ^ (b << ${i % 31}), 0x${(i * 2654435761).toString(16)});\n}\n`,
  ).join(''),
  base64: Buffer.from(Array.from({ length: 90_000 }, () => Math.floor(rand() * 256))).toString('base64'),
  cjk: codePoints(0x4e00, 0x9fff, 30_000),
  emoji: Array.from(
    { length: 12_000 },
    () => pick(['😀', '🧑‍💻', '🇩🇪', '👍🏽', '❤️‍🔥', '𝐀', '𝔸', ' ', 'ok ']) + codePoints(0x1f300, 0x1f5ff, 1),
  ).join(''),
};

const MARKER = '[… {omitted} characters cut; the full result is stored at {ref} …]';
const REF = 'agents/trip/life-1/messages/m000042.json';
const meta: MessageMeta = { id: 'm000042', role: 'tool', tokens: 0, chars: 0, key: REF, toolCallId: 'call_42' };

function truncate(content: string, maxTokens: number, headChars = 7_000, tailChars = 3_000, margin = 1) {
  const original: ChatMessage = { role: 'tool', tool_call_id: 'call_42', content };
  const op: Extract<Operation, { op: 'truncate' }> = {
    op: 'truncate',
    id: meta.id,
    headChars,
    tailChars,
    tokens: maxTokens,
    maxTokens,
  };
  const body = replacementBody(original, meta, op, MARKER, { counter, margin });
  return { body, text: body.content as string, tokens: countMessage(counter, body, margin) };
}

/** The head, the omitted count and the tail around the marker. */
function parts(text: string) {
  // A cut without a tail (head only) ends at the marker.
  const match = /\n\[… (\d+) characters cut; the full result is stored at (\S+) …\](?:\n|$)/.exec(text)!;
  expect(match, 'the marker').not.toBeNull();
  return {
    head: text.slice(0, match.index),
    tail: text.slice(match.index + match[0].length),
    omitted: Number(match[1]),
    ref: match[2],
  };
}

describe('truncation measured in real tokens', () => {
  it.each(Object.keys(DENSE))(
    '%s: within three percent under the budget, never over, at 500, 2,000 and 8,000 tokens',
    (name) => {
      const original = DENSE[name]!;
      expect(counter.count(original)).toBeGreaterThan(3 * 8_000);
      for (const budget of [500, 2_000, 8_000]) {
        const { text, tokens } = truncate(original, budget);
        expect(tokens, `${name} at ${budget}`).toBeLessThanOrEqual(budget);
        expect(tokens, `${name} at ${budget}`).toBeGreaterThanOrEqual(budget * 0.97);
        expect(hasLoneSurrogate(text)).toBe(false);
        const { head, tail, omitted, ref } = parts(text);
        expect(ref).toBe(REF);
        expect(original.startsWith(head) && original.endsWith(tail)).toBe(true);
        expect(head.length + tail.length + omitted).toBe(original.length);
        // The head share of the op (7,000 : 3,000), to a character or two (a pair is not split).
        expect(Math.abs(head.length - 0.7 * (head.length + tail.length))).toBeLessThanOrEqual(2);
      }
    },
  );

  it('the character estimate it replaces lands far over the budget on dense text (why counting is needed)', () => {
    // The planner's old estimate: chars × budget / tokens of the whole, at the average density of the message.
    const mixed = `${'plain words and more plain words. '.repeat(1_500)}${DENSE.base64!.slice(0, 40_000)}`;
    const keep = Math.floor((mixed.length * 2_000) / counter.count(mixed));
    const old = truncate(mixed, 1_000_000, Math.round(keep * 0.3), keep - Math.round(keep * 0.3));
    expect(old.tokens).toBeGreaterThan(2_000 * 1.3);
    const counted = truncate(mixed, 2_000, 3, 7);
    expect(counted.tokens).toBeLessThanOrEqual(2_000);
    expect(counted.tokens).toBeGreaterThanOrEqual(2_000 * 0.97);
  });

  it('counts what the model sees: chat overhead, tool_call_id, name and the margin', () => {
    for (const margin of [1, 1.3]) {
      const { body, tokens } = truncate(DENSE.code!, 1_000, 7, 3, margin);
      expect(body.tool_call_id).toBe('call_42');
      expect(tokens).toBeLessThanOrEqual(1_000);
      expect(tokens).toBeGreaterThanOrEqual(970);
    }
    const named: ChatMessage = { role: 'user', name: 'a-rather-long-user-name', content: DENSE.cjk! };
    const text = truncateToTokens(named, DENSE.cjk!, 700, DEFAULT_HEAD_SHARE, MARKER, REF, { counter });
    const tokens = countMessage(counter, { ...named, content: text });
    expect(tokens).toBeLessThanOrEqual(700);
    expect(tokens).toBeGreaterThanOrEqual(679);
  });

  it('keeps a text that fits whole; the marker alone when not even that fits', () => {
    expect(truncate('short result', 100).text).toBe('short result');
    const { text } = truncate(DENSE.code!, 5);
    expect(parts(text)).toMatchObject({ head: '', tail: '', omitted: DENSE.code!.length });
  });

  it('random text: valid, never over the budget, the marker naming the ref', () => {
    const textArb = fc
      .array(
        fc.oneof(
          fc.string({ unit: 'grapheme', maxLength: 40 }),
          fc.string({ unit: 'binary', maxLength: 40 }),
          fc.constantFrom('😀', '🧑‍💻', '\n', '    ', 'function f() {}', 'QUJD'),
        ),
        { minLength: 1, maxLength: 150 },
      )
      .map((pieces) => pieces.join(''))
      .filter((text) => !hasLoneSurrogate(text));
    fc.assert(
      fc.property(textArb, fc.integer({ min: 40, max: 2_000 }), fc.nat(10), fc.nat(10), (text, budget, h, t) => {
        const { text: cut, tokens } = truncate(text, budget, h, t);
        expect(hasLoneSurrogate(cut)).toBe(false);
        expect(tokens).toBeLessThanOrEqual(budget);
        if (cut !== text) expect(parts(cut).ref).toBe(REF);
      }),
      { numRuns: 80 },
    );
  });

  it('a plan stored before counted cuts (no maxTokens) keeps the character cut', () => {
    const original: ChatMessage = {
      role: 'tool',
      tool_call_id: 'call_42',
      content: `${'a'.repeat(50)}😀${'b'.repeat(50)}`,
    };
    const op: Extract<Operation, { op: 'truncate' }> = {
      op: 'truncate',
      id: meta.id,
      headChars: 51,
      tailChars: 10,
      tokens: 9,
    };
    const text = replacementBody(original, meta, op, MARKER, { counter }).content as string;
    // 51 characters would end inside the emoji: the head stops before it.
    expect(parts(text)).toEqual({ head: 'a'.repeat(50), tail: 'b'.repeat(10), omitted: 42, ref: REF });
  });
});
