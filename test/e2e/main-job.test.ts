/**
 * The main job as a user runs it (`npm start`), on free ports and a temporary data folder so it can run beside a
 * developer's own `npm start`: --once exits 0 after the demo and leaves no process behind; a taken port is a clear
 * error naming its variable; a kill -9 of the main job takes its servers down with it.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { freePort, freePorts } from '../../stack/ports.ts';
import { sharedStackEnv } from '../support/harness.ts';
import { runLongrun, STACK_TRACE } from '../support/longrun-cli.ts';
import { onCluster } from '../support/stack-kind.ts';

/**
 * Under `npm run test:cluster`, only the case against the shared stack (then the cluster) runs: the others start the
 * embedded stack of `npm start`, which `npm test` covers; their cluster counterparts (`longrun up --cluster`: --once,
 * a taken port, kill -9, Ctrl-C) are in cluster-mode.test.ts.
 */
const embeddedOnly = it.skipIf(onCluster);

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function mainJobEnv(): Promise<NodeJS.ProcessEnv> {
  const dataDir = mkdtempSync(join(tmpdir(), 'longrun-main-'));
  dirs.push(dataDir);
  const [temporal, ui, minio, console] = (await freePorts(4)).map(String) as [string, string, string, string];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LONGRUN_DATA_DIR: dataDir,
    LONGRUN_TEMPORAL_PORT: temporal,
    LONGRUN_TEMPORAL_UI_PORT: ui,
    LONGRUN_MINIO_PORT: minio,
    LONGRUN_MINIO_CONSOLE_PORT: console,
  };
  for (const name of [
    'TEMPORAL_ADDRESS',
    'AWS_ENDPOINT_URL_S3',
    'AWS_ENDPOINT_URL',
    'OPENAI_API_KEY',
    'TEMPORAL_PROFILE',
  ]) {
    delete env[name];
  }
  return env;
}

function startMainJob(args: string[], env: NodeJS.ProcessEnv): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [join(PROJECT_ROOT, 'commands/up.ts'), ...args], { env, cwd: PROJECT_ROOT });
}

function collect(child: ChildProcessWithoutNullStreams): { output: () => string; exit: Promise<number | null> } {
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { output: () => output, exit: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
}

/** Processes whose command line mentions `needle` (our servers carry the data folder or their ports in it). */
function processesMentioning(needle: string): string[] {
  const result = spawnSync('pgrep', ['-af', needle], { encoding: 'utf8' });
  return result.stdout.split('\n').filter((line) => line.trim() !== '' && !line.includes('pgrep'));
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describe('npm start (the main job)', () => {
  embeddedOnly(
    '--once runs the demo conversation on the replayed model, exits 0 and leaves no process behind',
    async () => {
      const env = await mainJobEnv();
      const run = collect(startMainJob(['--once'], env));
      const code = await run.exit;
      const output = run.output();
      expect(code, output).toBe(0);
      expect(output).toContain('REPLAYED model');
      expect(output).toMatch(/agent \(replayed model\) > Gladly\./);
      expect(output).toContain('(turn 3,');
      expect(output).toContain(`Temporal UI http://127.0.0.1:${env.LONGRUN_TEMPORAL_UI_PORT}`);
      // No command to try against the servers it is about to stop: it says what --once did instead.
      expect(output).not.toContain('npx longrun start hike');
      expect(output).toContain('[demo] --once: the demo agent is closed and the servers stop now');
      expect(output).toMatch(
        /\[demo\] 6 turns, 13 messages stored in S3 under agents\/demo-[\d-]+\/[^/\s]+\/messages\/; context \d+ of 128000 tokens/,
      );
      expect(await waitFor(() => processesMentioning(env.LONGRUN_DATA_DIR!).length === 0, 5_000)).toBe(true);
    },
  );

  embeddedOnly('fails clearly when a standard port is taken, naming the variable that moves it', async () => {
    const env = await mainJobEnv();
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(Number(env.LONGRUN_TEMPORAL_PORT), '127.0.0.1', resolve));
    try {
      const run = collect(startMainJob(['--once'], env));
      expect(await run.exit).toBe(1);
      expect(run.output()).toContain(
        `Port ${env.LONGRUN_TEMPORAL_PORT} (Temporal server) is already in use on 127.0.0.1`,
      );
      expect(run.output()).toContain('set LONGRUN_TEMPORAL_PORT to another port');
    } finally {
      blocker.close();
    }
    expect(processesMentioning(env.LONGRUN_DATA_DIR!)).toEqual([]);
  });

  embeddedOnly('a bad setting is an error naming the variable, before anything starts', async () => {
    const env = { ...(await mainJobEnv()), LONGRUN_MINIO_PORT: '99999' };
    const run = collect(startMainJob(['--once'], env));
    expect(await run.exit).toBe(1);
    expect(run.output()).toContain('LONGRUN_MINIO_PORT: must be an integer from 1 to 65535 (got "99999")');
  });

  embeddedOnly('kill -9 of the main job takes the Temporal server and MinIO down with it', async () => {
    const env = await mainJobEnv();
    const child = startMainJob([], env);
    const run = collect(child);
    expect(await waitFor(() => run.output().includes('Ctrl-C to stop'), 60_000), run.output()).toBe(true);
    const servers = processesMentioning(env.LONGRUN_DATA_DIR!);
    expect(servers.some((line) => line.includes('temporal'))).toBe(true);
    expect(servers.some((line) => line.includes('minio'))).toBe(true);

    // Its hint names what another shell exports to reach these servers on their moved ports; with exactly that,
    // the CLI finds the demo's agent.
    const hint = /from another terminal, with `export ([^`]+)` there/.exec(run.output());
    expect(hint, run.output()).not.toBeNull();
    const exported = Object.fromEntries(hint![1]!.split(' ').map((pair) => pair.split('=') as [string, string]));
    expect(exported).toMatchObject({
      LONGRUN_TEMPORAL_PORT: env.LONGRUN_TEMPORAL_PORT,
      LONGRUN_MINIO_PORT: env.LONGRUN_MINIO_PORT,
    });
    const shell = { ...process.env, ...exported };
    for (const name of ['TEMPORAL_ADDRESS', 'TEMPORAL_PROFILE', 'AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL'])
      delete shell[name];
    const list = await runLongrun(['list'], { env: shell });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/demo-[\d-]+/);

    child.kill('SIGKILL');
    await run.exit;
    expect(await waitFor(() => processesMentioning(env.LONGRUN_DATA_DIR!).length === 0, 15_000)).toBe(true);
  });

  embeddedOnly(
    'TEMPORAL_ADDRESS naming a server that does not answer: refused at once, nothing claimed or started',
    async () => {
      const dead = `127.0.0.1:${await freePort()}`;
      const env: NodeJS.ProcessEnv = { ...(await mainJobEnv()), TEMPORAL_ADDRESS: dead };
      const started = Date.now();
      const run = collect(startMainJob(['--once'], env));
      expect(await run.exit).toBe(1);
      const output = run.output();
      expect(output).toContain(`Temporal at TEMPORAL_ADDRESS=${dead} (from the environment) does not answer`);
      expect(output).toContain(
        '`npm start` starts no Temporal of its own while TEMPORAL_ADDRESS names a server: start that server, or unset ' +
          `TEMPORAL_ADDRESS to have it start one on 127.0.0.1:${env.LONGRUN_TEMPORAL_PORT} (LONGRUN_TEMPORAL_PORT)`,
      );
      expect(output).not.toContain('[stack] Temporal');
      expect(output).not.toMatch(/tonic|transport::Error/);
      expect(output).not.toMatch(STACK_TRACE);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(processesMentioning(env.LONGRUN_DATA_DIR!)).toEqual([]);
    },
  );

  it('starts no server of its own when TEMPORAL_ADDRESS and AWS_ENDPOINT_URL_S3 point at running ones', async () => {
    const stack = inject('stack');
    const env: NodeJS.ProcessEnv = {
      ...(await mainJobEnv()),
      ...sharedStackEnv(),
      LONGRUN_S3_BUCKET: 'longrun-external-test',
      LONGRUN_TASK_QUEUE: `main-job-external-${Date.now()}`,
    };
    const run = collect(startMainJob(['--once'], env));
    expect(await run.exit, run.output()).toBe(0);
    expect(run.output()).not.toContain('[stack] starting');
    expect(run.output()).toContain(`[stack] Temporal ${stack.temporalAddress}`);
    expect(run.output()).toContain('bucket longrun-external-test');
    expect(run.output()).toMatch(/\[demo\] 6 turns, 13 messages stored in S3/);
    expect(processesMentioning(env.LONGRUN_DATA_DIR!)).toEqual([]);
  });

  embeddedOnly(
    'the demo names where its messages are stored; Ctrl-C closes its agent, then stops, exit 0',
    async () => {
      const env = await mainJobEnv();
      const child = startMainJob([], env);
      const run = collect(child);
      expect(await waitFor(() => run.output().includes('Ctrl-C to stop'), 90_000), run.output()).toBe(true);
      const agentId = /\[demo\] agent (demo-\S+) /.exec(run.output())?.[1];
      expect(agentId, run.output()).toBeDefined();
      // The real prefix: the agent's life is part of it.
      expect(run.output()).toMatch(new RegExp(`messages stored in S3 under agents/${agentId}/[^/\\s]+/messages/;`));
      child.kill('SIGINT');
      expect(await run.exit, run.output()).toBe(0);
      expect(run.output()).toContain(`[demo] closing agent ${agentId}\n[demo] closed agent ${agentId}\n`);
    },
  );

  embeddedOnly('Ctrl-C (SIGINT) stops the worker and the servers and exits 0', async () => {
    const env = await mainJobEnv();
    const child = startMainJob(['--no-demo'], env);
    const run = collect(child);
    expect(await waitFor(() => run.output().includes('Ctrl-C to stop'), 60_000), run.output()).toBe(true);
    child.kill('SIGINT');
    expect(await run.exit).toBe(0);
    expect(await waitFor(() => processesMentioning(env.LONGRUN_DATA_DIR!).length === 0, 5_000)).toBe(true);
  });
});
