/** Reading servers' logs: the end of one, and what one gained since a start. */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sizeOfFile, tailOfFile, textOfFileFrom } from '../../../stack/logs.ts';

const dir = mkdtempSync(join(tmpdir(), 'longrun-logs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('logs', () => {
  it('what a log appended to across starts gained since this start, not what an earlier run wrote', () => {
    const log = join(dir, 'worker-1.log');
    expect(sizeOfFile(log)).toBe(0);
    writeFileSync(log, '[worker] polling task queue q (an earlier run)\n');
    const from = sizeOfFile(log);
    expect(textOfFileFrom(log, from)).toBe('');
    appendFileSync(log, 'starting\n');
    expect(textOfFileFrom(log, from)).toBe('starting\n');
    expect(textOfFileFrom(log, from)).not.toContain('polling');
    expect(textOfFileFrom(log, from, 4)).toBe('star');
    expect(textOfFileFrom(join(dir, 'missing.log'), 0)).toBe('');
  });

  it('the last lines of a log, indented', () => {
    const log = join(dir, 'server.log');
    writeFileSync(log, 'a\n\nb\nc\n');
    expect(tailOfFile(log, 2)).toBe('    b\n    c');
  });
});
