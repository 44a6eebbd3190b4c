/** The piece memo returns the remembered count or -1, never another piece's count, however many pieces collide. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MEMO_MAX_PIECE, PieceMemo } from '../../../engine/tokenizer-memo.ts';

describe('piece memo', () => {
  it('answers with the count of that very piece or -1, with 100,000 pieces in 32,768 slots', () => {
    const memo = new PieceMemo();
    const counts = new Map<string, number>();
    const pieces = Array.from({ length: 100_000 }, (_, i) => `${(i * 2654435761).toString(36)}é${i % 7}`);
    pieces.forEach((piece, i) => {
      counts.set(piece, i % 50);
      memo.set(`<<${piece}>>`, 2, 2 + piece.length, i % 50);
    });
    let hits = 0;
    for (const piece of pieces) {
      const count = memo.get(`..${piece}`, 2, 2 + piece.length);
      if (count === -1) continue;
      expect(count).toBe(counts.get(piece));
      hits++;
    }
    expect(hits).toBeGreaterThan(10_000);
  });

  it('tells apart pieces that differ in one code unit or in length', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: MEMO_MAX_PIECE }), fc.nat(), (piece, seed) => {
        const memo = new PieceMemo();
        memo.set(piece, 0, piece.length, 7);
        expect(memo.get(piece, 0, piece.length)).toBe(7);
        const other =
          piece.slice(0, -1) + String.fromCharCode((piece.charCodeAt(piece.length - 1) + 1 + (seed % 50)) % 65536);
        expect(memo.get(other, 0, other.length)).toBe(-1);
        if (piece.length > 1) expect(memo.get(piece, 0, piece.length - 1)).toBe(-1);
        memo.clear();
        expect(memo.get(piece, 0, piece.length)).toBe(-1);
      }),
    );
  });
});
