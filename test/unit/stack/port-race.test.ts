import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isPortRace, retryPortRaces } from '../../../stack/index.ts';
import { ServerStartError } from '../../../stack/process.ts';

const logs = mkdtempSync(join(tmpdir(), 'port-race-'));
afterAll(() => rmSync(logs, { recursive: true, force: true }));
let logCount = 0;

/** A start failure as the stack reports it, with `line` as the last line of the server's log. */
function startError(line: string): ServerStartError {
  const logPath = join(logs, `server-${++logCount}.log`);
  writeFileSync(logPath, `${line}\n`);
  return new ServerStartError('Temporal dev server', 'it exited with code 1', logPath);
}

const race = () => startError('{"level":"FATAL","message":"listen tcp 127.0.0.1:42501: bind: address already in use"}');

describe('a port taken between choosing and binding it', () => {
  it('is told apart from other start failures', () => {
    expect(isPortRace(race())).toBe(true);
    expect(isPortRace(startError('FATAL: unknown flag --foo'))).toBe(false);
    expect(isPortRace(new Error('listen EADDRINUSE: address already in use'))).toBe(false); // not a server's start
  });

  it('starts again until it works, logging each retry', async () => {
    const lines: string[] = [];
    let calls = 0;
    const result = await retryPortRaces(
      () => (++calls < 3 ? Promise.reject(race()) : Promise.resolve('up')),
      3,
      (line) => lines.push(line),
    );
    expect(result).toBe('up');
    expect(calls).toBe(3);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/port was taken/);
  });

  it('gives up after the last attempt with the server’s own error', async () => {
    let calls = 0;
    const failure = retryPortRaces(
      () => (calls++, Promise.reject(race())),
      3,
      () => {},
    );
    await expect(failure).rejects.toThrow(/address already in use/);
    expect(calls).toBe(3);
  });

  it('does not retry any other failure', async () => {
    let calls = 0;
    const failure = retryPortRaces(
      () => (calls++, Promise.reject(startError('FATAL: bad config'))),
      3,
      () => {},
    );
    await expect(failure).rejects.toThrow(/bad config/);
    expect(calls).toBe(1);
  });
});
