/**
 * `longrun up --cluster` as a user runs it, on free ports and a temporary data folder: the demo on the cluster (two
 * worker processes), a second start on the same folder, the errors that name a variable, and no process left behind
 * after --once, Ctrl-C, a worker's death or a kill -9 of the job; with encryption on, the cluster's UI decoding through the codec
 * server beside it.
 *
 * Runs in `npm run test:cluster` only (LONGRUN_STACK=cluster): cluster mode's programs are built by that command's
 * setup step, which `npm test` does not run (it would add their one-time build to CI). Under `npm test` this file
 * shows as skipped.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import { EncryptionCodec } from '../../codec/payload-codec.ts';
import { payloadToJson } from '../../codec/server.ts';
import { loadSettings, PROJECT_ROOT } from '../../config/settings.ts';
import { startClusterStack } from '../../stack/cluster.ts';
import { freePorts } from '../../stack/ports.ts';
import { ensureClusterBinaries } from '../../stack/setup.ts';
import { onCluster } from '../support/stack-kind.ts';

const CLUSTER_START_MS = 300_000;
const dataDir = mkdtempSync(join(tmpdir(), 'longrun-up-cluster-'));
chmodSync(dataDir, 0o755); // PostgreSQL's account (when the tests run as root) must reach its folder inside
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function clusterEnv(): Promise<NodeJS.ProcessEnv> {
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

/** The jobs a test started: one still running when it ends (it failed) is killed, with its servers. */
const jobs: ChildProcessWithoutNullStreams[] = [];
afterEach(async () => {
  for (const job of jobs.splice(0)) {
    if (job.exitCode === null && job.signalCode === null) job.kill('SIGKILL');
  }
  // Its supervisors stop the servers; the next test must not meet them on the same folder.
  await waitFor(() => serversOfTheFolder().length === 0, 30_000);
});

function startJob(args: string[], env: NodeJS.ProcessEnv): ChildProcessWithoutNullStreams {
  const job = spawn(process.execPath, [join(PROJECT_ROOT, 'commands/up.ts'), '--cluster', ...args], {
    env,
    cwd: PROJECT_ROOT,
  });
  jobs.push(job);
  return job;
}

function collect(child: ChildProcessWithoutNullStreams): { output: () => string; exit: Promise<number | null> } {
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { output: () => output, exit: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
}

/** Processes whose command line mentions the data folder (the servers and their supervisors). */
function serversOfTheFolder(): string[] {
  const result = spawnSync('pgrep', ['-af', dataDir], { encoding: 'utf8' });
  return result.stdout.split('\n').filter((line) => line.trim() !== '' && !line.includes('pgrep'));
}

/** The command line of a process ('' once it is gone), read from /proc. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** Every process below `pid`, now (read from /proc). */
function descendants(pid: number): number[] {
  const table = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry): [number, number][] => {
      try {
        // Field 4 of /proc/<pid>/stat is the parent, after the command name in parentheses.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        return [[Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])]];
      } catch {
        return []; // gone meanwhile
      }
    });
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [child, ppid] of table) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

/** Waits until the job's workers poll, and returns every process below it then (the servers and the workers). */
async function runningTree(child: ChildProcessWithoutNullStreams, run: { output: () => string }): Promise<number[]> {
  expect(await waitFor(() => run.output().includes('worker processes polling'), CLUSTER_START_MS), run.output()).toBe(
    true,
  );
  return descendants(child.pid!);
}

describe.runIf(onCluster)('longrun up --cluster', () => {
  it(
    '--once on a new folder: the cluster, two workers and the demo, exit 0, no process left behind',
    async () => {
      const env = await clusterEnv();
      const child = startJob(['--once'], env);
      const run = collect(child);
      const tree = await runningTree(child, run);
      const code = await run.exit;
      const output = run.output();
      expect(code, output).toBe(0);
      expect(output).toContain('[stack] creating the PostgreSQL database cluster');
      expect(output).toContain('registered namespace default and 6 search attributes');
      expect(output).toContain(`Temporal 127.0.0.1:${env.LONGRUN_TEMPORAL_PORT} (namespace default), 4 history shards`);
      expect(output).toContain(`Temporal UI http://127.0.0.1:${env.LONGRUN_TEMPORAL_UI_PORT}`);
      expect(output).toContain('[worker] 2 worker processes polling task queue longrun-agents');
      expect(output).toMatch(/agent \(replayed model\) > Gladly\./);
      expect(output).toMatch(
        /\[demo\] 6 turns, 13 messages stored in S3 under agents\/demo-[\d-]+\/[^/\s]+\/messages\//,
      );
      // PostgreSQL, the server, the UI, MinIO, two workers, and a supervisor for each.
      expect(tree.length).toBeGreaterThanOrEqual(12);
      expect(await waitFor(() => tree.every((pid) => !alive(pid)), 15_000)).toBe(true);
      expect(serversOfTheFolder()).toEqual([]);
    },
    CLUSTER_START_MS,
  );

  it(
    'a second start on the same folder keeps the database (nothing created or registered again) and runs the demo',
    async () => {
      const env = await clusterEnv();
      const run = collect(startJob(['--once'], env));
      expect(await run.exit, run.output()).toBe(0);
      expect(run.output()).not.toContain('creating the PostgreSQL database cluster');
      expect(run.output()).not.toContain('registered');
      expect(run.output()).toMatch(/\[demo\] 6 turns, 13 messages stored in S3/);
      expect(await waitFor(() => serversOfTheFolder().length === 0, 15_000)).toBe(true);
    },
    CLUSTER_START_MS,
  );

  it('another history shard count on the same folder is an error naming the variable, before anything starts', async () => {
    const env = { ...(await clusterEnv()), LONGRUN_HISTORY_SHARDS: '8' };
    const run = collect(startJob(['--once'], env));
    expect(await run.exit).toBe(1);
    expect(run.output()).toContain(`LONGRUN_HISTORY_SHARDS: is 8, but the cluster in ${join(dataDir, 'cluster')}`);
    expect(run.output()).toContain('was created with 4 history shards');
    expect(serversOfTheFolder()).toEqual([]);
  });

  it('a taken standard port is an error naming the variable that moves it', async () => {
    const env = await clusterEnv();
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(Number(env.LONGRUN_TEMPORAL_UI_PORT), '127.0.0.1', resolve));
    try {
      const run = collect(startJob(['--once'], env));
      expect(await run.exit).toBe(1);
      expect(run.output()).toContain(`Port ${env.LONGRUN_TEMPORAL_UI_PORT} (Temporal UI) is already in use`);
      expect(run.output()).toContain('set LONGRUN_TEMPORAL_UI_PORT to another port');
    } finally {
      blocker.close();
    }
    expect(serversOfTheFolder()).toEqual([]);
  });

  it('TEMPORAL_ADDRESS set is an error naming it: cluster mode runs its own server', async () => {
    const env = { ...(await clusterEnv()), TEMPORAL_ADDRESS: '127.0.0.1:1' };
    const run = collect(startJob(['--once'], env));
    expect(await run.exit).toBe(1);
    expect(run.output()).toContain('TEMPORAL_ADDRESS: --cluster starts a Temporal cluster of its own');
    expect(serversOfTheFolder()).toEqual([]);
  });

  it(
    'Ctrl-C (SIGINT) stops the workers and then the servers, and exits 0',
    async () => {
      const env = await clusterEnv();
      const child = startJob(['--no-demo'], env);
      const run = collect(child);
      const tree = await runningTree(child, run);
      expect(await waitFor(() => run.output().includes('Ctrl-C to stop'), 10_000)).toBe(true);
      child.kill('SIGINT');
      expect(await run.exit, run.output()).toBe(0);
      expect(run.output()).toContain('[cluster] stopping: the workers finish their work in flight, then the servers');
      expect(await waitFor(() => tree.every((pid) => !alive(pid)), 15_000)).toBe(true);
    },
    CLUSTER_START_MS,
  );

  it(
    'a worker that dies ends the job: exit 1, its log named, the other worker and the servers stopped',
    async () => {
      const env = await clusterEnv();
      const child = startJob(['--no-demo'], env);
      const run = collect(child);
      const tree = await runningTree(child, run);
      expect(await waitFor(() => run.output().includes('Ctrl-C to stop'), 10_000)).toBe(true);
      const workers = tree.filter(
        (pid) => /worker\/main\.ts/.test(commandOf(pid)) && !commandOf(pid).includes('supervisor'),
      );
      expect(workers, tree.map(commandOf).join('\n')).toHaveLength(2);
      process.kill(workers[0]!, 'SIGKILL');
      expect(await run.exit, run.output()).toBe(1);
      expect(run.output()).toMatch(/Worker \d exited on its own \(its log: .*worker-\d\.log\); stopping the cluster/);
      expect(await waitFor(() => tree.every((pid) => !alive(pid)), 20_000)).toBe(true);
    },
    CLUSTER_START_MS,
  );

  it(
    'kill -9 of the job takes PostgreSQL, the server, the UI, MinIO and the workers down with it',
    async () => {
      const env = await clusterEnv();
      const child = startJob(['--no-demo'], env);
      const run = collect(child);
      const tree = await runningTree(child, run);
      const servers = serversOfTheFolder().join('\n');
      for (const name of ['postgres', 'temporal-server', 'temporal-ui-server', 'minio'])
        expect(servers).toContain(name);
      child.kill('SIGKILL');
      await run.exit;
      expect(await waitFor(() => tree.every((pid) => !alive(pid)), 20_000)).toBe(true);
      expect(serversOfTheFolder()).toEqual([]);
    },
    CLUSTER_START_MS,
  );

  it(
    "with encryption on, the cluster's UI decodes payloads through a codec server beside it, for its origin",
    async () => {
      const settings = loadSettings({
        ...process.env,
        LONGRUN_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      });
      const codec = new EncryptionCodec(settings.encryptionKeys!);
      const binaries = await ensureClusterBinaries({ cacheDir: settings.cacheDir });
      const stack = await startClusterStack({ mode: 'ephemeral', settings, binaries, codec });
      try {
        const { uiUrl, namespace, codecEndpoint } = stack.temporal;
        // The UI server says where it decodes (TEMPORAL_CODEC_ENDPOINT of the image's configuration).
        const ui = (await (await fetch(`${uiUrl}/api/v1/settings`)).json()) as { Codec: { Endpoint: string } };
        expect(ui.Codec.Endpoint).toBe(codecEndpoint);
        expect(codecEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        const [encrypted] = await codec.encode([defaultPayloadConverter.toPayload('the word is amber-falcon')]);
        const decoded = await fetch(`${codecEndpoint}/decode`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Origin: uiUrl, 'X-Namespace': namespace },
          body: JSON.stringify({ payloads: [payloadToJson(encrypted!)] }),
        });
        expect(decoded.status).toBe(200);
        expect(decoded.headers.get('access-control-allow-origin')).toBe(uiUrl);
        const body = (await decoded.json()) as { payloads: { data: string }[] };
        expect(Buffer.from(body.payloads[0]!.data, 'base64').toString('utf8')).toBe('"the word is amber-falcon"');
      } finally {
        await stack.stop();
      }
    },
    CLUSTER_START_MS,
  );
});
