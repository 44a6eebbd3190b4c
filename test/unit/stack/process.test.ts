/** Supervised server processes, with small shell commands standing in for the servers. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ServerProcess, ServerStartError } from '../../../stack/process.ts';

const dir = mkdtempSync(join(tmpdir(), 'longrun-process-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ServerProcess', () => {
  it('a server that exits during start is an error showing the last lines of its log', async () => {
    const start = ServerProcess.start({
      name: 'Fake server',
      command: 'sh',
      args: ['-c', 'for i in 1 2 3 4 5; do echo "line $i"; done; echo "fatal: cannot bind" >&2; exit 3'],
      logPath: join(dir, 'exits.log'),
      healthy: () => Promise.resolve(false),
      startTimeoutMs: 10_000,
    });
    await expect(start).rejects.toBeInstanceOf(ServerStartError);
    const error = (await start.catch((e: unknown) => e)) as ServerStartError;
    expect(error.message).toContain('Fake server did not start: it exited with code 3');
    expect(error.message).toContain(`Last lines of ${join(dir, 'exits.log')}:`);
    expect(error.message).toContain('    fatal: cannot bind');
    expect(error.message).toContain('    line 5');
  });

  it('a server that never becomes healthy is stopped and reported after the start timeout', async () => {
    const start = ServerProcess.start({
      name: 'Silent server',
      command: 'sleep',
      args: ['30'],
      logPath: join(dir, 'silent.log'),
      healthy: () => Promise.resolve(false),
      startTimeoutMs: 500,
    });
    await expect(start).rejects.toThrow('Silent server did not start: no answer within 0.5s');
  });

  it('starts once healthy and stops the server on stop()', async () => {
    let checks = 0;
    const server = await ServerProcess.start({
      name: 'Sleeper',
      command: 'sleep',
      args: ['30'],
      logPath: join(dir, 'sleeper.log'),
      healthy: () => Promise.resolve(++checks >= 3),
      startTimeoutMs: 10_000,
    });
    const pid = server.pid!;
    expect(() => process.kill(pid, 0)).not.toThrow();
    await server.stop();
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it('asks the server to stop with its own signal when it has one (PostgreSQL: SIGINT, its fast shutdown)', async () => {
    const logPath = join(dir, 'signal.log');
    const script =
      'trap "echo got INT; exit 0" INT; trap "echo got TERM; exit 0" TERM; echo up; while :; do sleep 0.1; done';
    const server = await ServerProcess.start({
      name: 'Trapper',
      command: 'sh',
      args: ['-c', script],
      logPath,
      stopSignal: 'SIGINT',
      healthy: () => Promise.resolve(readFileSync(logPath, 'utf8').includes('up')),
      startTimeoutMs: 10_000,
    });
    await server.stop();
    expect(readFileSync(logPath, 'utf8')).toContain('got INT');
    expect(readFileSync(logPath, 'utf8')).not.toContain('got TERM');
  });
});
