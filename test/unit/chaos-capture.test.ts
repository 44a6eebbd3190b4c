/**
 * The chaos driver's capture of the errors a process dies of (bench/chaos/capture.ts): in a Node process of its own
 * (the test runner has its own handlers), an uncaught exception and an unhandled rejection are kept with their
 * stacks and the process lives on; once the capture is disposed, Node's own handling is back.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';

const CAPTURE = join(PROJECT_ROOT, 'bench/chaos/capture.ts');

function runScript(body: string) {
  const script = `import { captureProcessErrors } from ${JSON.stringify(CAPTURE)};\n${body}`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
}

describe('the capture of process errors', () => {
  it('keeps an uncaught exception and an unhandled rejection with their stacks, and the process lives on', () => {
    const run = runScript(`
      const capture = captureProcessErrors();
      Promise.reject(new Error('injected rejection'));
      setTimeout(() => { throw new Error('injected exception'); }, 20);
      const first = await capture.first;
      await new Promise((resolve) => setTimeout(resolve, 200));
      capture.dispose();
      console.log(JSON.stringify({ first, errors: capture.errors }));
    `);
    expect(run.status, run.stderr).toBe(0);
    const { first, errors } = JSON.parse(run.stdout) as { first: string; errors: string[] };
    expect(errors).toHaveLength(2);
    expect(first).toBe(errors[0]);
    expect(errors[0]).toMatch(/^unhandled rejection: Error: injected rejection\n\s+at /);
    expect(errors[1]).toMatch(/^uncaught exception: Error: injected exception\n\s+at /);
  });

  it('keeps a rejection with a value that is not an Error', () => {
    const run = runScript(`
      const capture = captureProcessErrors();
      Promise.reject('a plain string');
      console.log(JSON.stringify(await capture.first));
      capture.dispose();
    `);
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toBe('unhandled rejection: a plain string');
  });

  it("leaves Node's own handling once disposed: the process dies of the next uncaught exception", () => {
    const run = runScript(`
      const capture = captureProcessErrors();
      capture.dispose();
      setTimeout(() => { throw new Error('after the capture'); }, 10);
    `);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('Error: after the capture');
  });
});
