/**
 * The hand-written pre-tokenizers give exactly the pieces of the reference's split regex (js-tiktoken's pattern for
 * each encoding): on random text from a varied alphabet, on every BMP code point in several contexts, on a sample
 * of astral code points, and on the bench corpus.
 */
import fc from 'fast-check';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import o200k from 'js-tiktoken/ranks/o200k_base';
import { describe, expect, it } from 'vitest';
import { mixedMessages, pathologicalInputs } from '../../../bench/corpus.ts';
import { cl100kPieceEnd, o200kPieceEnd } from '../../../engine/pretokenize.ts';
import type { PieceScanner } from '../../../engine/pretokenize.ts';
import { variedText } from './tokenizer-text.ts';

const SPLITS: [string, PieceScanner, RegExp][] = [
  ['o200k_base', o200kPieceEnd, new RegExp(o200k.pat_str, 'gu')],
  ['cl100k_base', cl100kPieceEnd, new RegExp(cl100k.pat_str, 'gu')],
];

function scan(pieceEnd: PieceScanner, text: string): string[] {
  const pieces: string[] = [];
  for (let start = 0, end: number; start < text.length; start = end) {
    end = pieceEnd(text, start);
    if (end <= start) throw new Error(`no progress at ${start}`);
    pieces.push(text.slice(start, end));
  }
  return pieces;
}

function reference(pattern: RegExp, text: string): string[] {
  return Array.from(text.matchAll(pattern), (match) => match[0]);
}

/** Every BMP code point, each placed in `template` (where `$` stands for it). */
function everyBmpCodePoint(template: string): string {
  const parts: string[] = [];
  for (let cp = 0; cp < 0x10000; cp++) parts.push(template.replaceAll('$', String.fromCharCode(cp)));
  return parts.join('');
}

const TEMPLATES = ['$', '$$', ' $a', 'x$Y', 'A$b ', '$A ', "$'s ", ' $1', '.$ ', '\n$\n', '  $', '$  x', 'é$Ş', '日$ '];

describe.each(SPLITS)('%s pre-tokenizer', (_name, pieceEnd, pattern) => {
  it('splits random text from a varied alphabet as the regex does', () => {
    fc.assert(
      fc.property(variedText(), (text) => {
        expect(scan(pieceEnd, text)).toEqual(reference(pattern, text));
      }),
      { numRuns: 3_000 },
    );
  });

  it.each(TEMPLATES)('splits every BMP code point in %j as the regex does', (template) => {
    const text = everyBmpCodePoint(template);
    expect(scan(pieceEnd, text)).toEqual(reference(pattern, text));
  });

  it('splits a sample of astral code points as the regex does', () => {
    const parts: string[] = [];
    for (let cp = 0x10000; cp < 0x110000; cp += cp < 0x30000 || (cp >= 0xe0000 && cp < 0xe0200) ? 7 : 997) {
      const char = String.fromCodePoint(cp);
      parts.push(char, ` ${char}a`, `A${char}b`, `${char}${char}1`);
    }
    const text = parts.join('');
    expect(scan(pieceEnd, text)).toEqual(reference(pattern, text));
  });

  it('splits the bench corpus and the pathological inputs as the regex does', () => {
    for (const text of [...mixedMessages(256 * 1024), ...Object.values(pathologicalInputs())]) {
      expect(scan(pieceEnd, text)).toEqual(reference(pattern, text));
    }
  });
});
