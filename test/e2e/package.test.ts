/**
 * longrun as a dependency: the tarball `npm pack` makes (built JavaScript and declarations) installed into a fresh
 * app copied from examples/own-worker. The app type-checks against the declarations; its worker (its own tool, its
 * own model endpoint) and its client (its own system prompt) run as child processes against the embedded stack and
 * a loopback model server; the package's `longrun` command reads the agent back.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer, RecordedRequest } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import { newAgentId, sharedStackEnv } from '../support/harness.ts';
import { STACK_TRACE } from '../support/longrun-cli.ts';

const EXAMPLE = join(PROJECT_ROOT, 'examples', 'own-worker');
const SUMMARY_MODEL = 'summary-model';
const MODEL_KEY = 'team-key';
/** Pack (with its build) and install: about 35 s alone on a 2-core machine. */
const SETUP_MS = 150_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (never throws: the caller checks the code and reads the output). */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      { cwd, env, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

function ok(result: Run, what: string): Run {
  if (result.code !== 0) throw new Error(`${what} exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** Summary requests are told apart by the summary model; the agent's by its own model. */
const isSummaryRequest = (request: RecordedRequest) => request.body.model === SUMMARY_MODEL;

/** The team's model, scripted: a question names a city → ask the `forecast` tool; a tool result → answer with it. */
function respond(request: RecordedRequest) {
  if (isSummaryRequest(request)) {
    return {
      content: JSON.stringify({
        task_overview: 'Rain gear questions for Norwegian cities.',
        current_state: 'Forecasts fetched for the cities asked so far.',
        important_discoveries: 'Light rain everywhere.',
        next_steps: 'Answer the next city.',
        context_to_preserve: '',
      }),
    };
  }
  const messages = request.body.messages;
  const last = messages.at(-1)!;
  if (last.role === 'tool') {
    const [heading, ...hours] = textOf(last.content).split('\n');
    return { content: `${heading}: rain in ${hours.filter((hour) => hour.includes('rain')).length} of 24 hours` };
  }
  const city = /rain gear in (\S+) tomorrow/.exec(textOf(last.content))?.[1] ?? 'nowhere';
  const id = `call_${messages.length}`;
  return {
    content: null,
    toolCalls: [{ id, type: 'function' as const, function: { name: 'forecast', arguments: JSON.stringify({ city }) } }],
  };
}

/** Types of the package a client of it can rely on: each wrong use below must be an error. */
const TYPES_PROBE = `
import { defineTool } from 'longrun/tools';
import type { RunAgentWorkerOptions } from 'longrun/worker';
import type { CompactResult } from 'longrun/client';
import { resolvePolicy } from 'longrun/engine';

// @ts-expect-error a tool's name is a string
defineTool({ name: 1, description: '', parameters: {}, run: async () => '' });
// @ts-expect-error tools are definitions, not names
export const options: RunAgentWorkerOptions = { tools: ['forecast'] };
// @ts-expect-error a compaction's reason is text
export const result: CompactResult = { ...({} as CompactResult), reason: 42 };
export const trigger: number = resolvePolicy({ preset: 'default' }).triggerRatio;
`;

let dir: string;
let app: string;
let tarball: string;
let model: ChatServer;
let env: NodeJS.ProcessEnv;
let worker: ChildProcess | undefined;
let workerOutput = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'longrun-package-'));
  model = await startChatServer(respond);
  // The app's own settings only: no OpenAI variables (the model endpoint is the app's), no Temporal profile.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(OPENAI_|TEMPORAL_|AWS_|LONGRUN_)/.test(name)),
  );
  env = {
    ...inherited,
    ...sharedStackEnv(),
    LONGRUN_TASK_QUEUE: `package-${newAgentId('queue')}`,
    LONGRUN_SUMMARY_MODEL: SUMMARY_MODEL,
    TEAM_MODEL_URL: model.baseURL,
    TEAM_MODEL_KEY: MODEL_KEY,
  };

  // `npm pack` builds first (prepack: npm run build).
  ok(
    await run('npm', ['pack', '--pack-destination', dir, '--loglevel=error'], PROJECT_ROOT, process.env, 90_000),
    'npm pack',
  );
  const packed = (await readdir(dir)).filter((name) => name.endsWith('.tgz'));
  expect(packed).toHaveLength(1);
  tarball = join(dir, packed[0]!);

  app = join(dir, 'app');
  await cp(EXAMPLE, app, { recursive: true, filter: (path) => !path.includes('node_modules') });
  const manifest = JSON.parse(await readFile(join(app, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  manifest.dependencies.longrun = `file:${tarball}`;
  await writeFile(join(app, 'package.json'), JSON.stringify(manifest, null, 2));
  ok(
    await run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
      app,
      process.env,
      120_000,
    ),
    'npm install',
  );
}, SETUP_MS);

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    worker.kill('SIGKILL');
    await once(worker, 'exit');
  }
  await model?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('longrun as a dependency', () => {
  it('the tarball holds built JavaScript, declarations and the command, no sources, tests or data', async () => {
    const listing = ok(await run('tar', ['tzf', tarball], dir, process.env, 10_000), 'tar').stdout.split('\n');
    const files = listing.filter(Boolean).map((path) => path.replace(/^package\//, ''));
    for (const entry of ['worker', 'client', 'engine']) {
      expect(files).toContain(`dist/${entry}/index.js`);
      expect(files).toContain(`dist/${entry}/index.d.ts`);
    }
    expect(files).toContain('dist/activities/tools.d.ts');
    expect(files).toContain('dist/workflows/index.js'); // the worker bundles the workflows from here
    expect(files).toContain('bin/longrun.js');
    expect(files).toContain('CHANGELOG.md');
    // What `longrun up --cluster` runs the Temporal server with.
    expect(files).toContain('deploy/temporal-server.yaml');
    expect(files).toContain('deploy/temporal-dynamicconfig.yaml');
    // Nothing else: no sources, tests, fixtures, bench corpus, examples or data.
    const shipped =
      /^(dist\/.+\.(js|d\.ts)|bin\/longrun\.js|demo\/(session|trail-session)\.jsonl|deploy\/temporal-(server|dynamicconfig)\.yaml|CHANGELOG\.md|README\.md|package\.json)$/;
    expect(files.filter((path) => !shipped.test(path))).toEqual([]);
    const installed = join(app, 'node_modules', 'longrun');
    expect((await stat(join(installed, 'dist', 'worker', 'index.js'))).isFile()).toBe(true);
  });

  it('each entry point loads from the installed package; the engine counts tokens', async () => {
    const script = `
      const worker = await import('longrun/worker');
      const client = await import('longrun/client');
      const tools = await import('longrun/tools');
      const engine = await import('longrun/engine');
      const counter = await engine.loadTokenCounter('o200k_base');
      console.log(JSON.stringify([
        typeof worker.runAgentWorker, typeof client.startAgent, typeof tools.defineTool, counter.count('hello world'),
      ]));`;
    const loaded = ok(await run(process.execPath, ['--input-type=module', '-e', script], app, env, 30_000), 'node');
    expect(JSON.parse(loaded.stdout)).toEqual(['function', 'function', 'function', 2]);
  });

  it('the example app type-checks against the declarations, and wrong uses are type errors', async () => {
    await writeFile(join(app, 'types-probe.ts'), TYPES_PROBE);
    const tsc = await run(join(app, 'node_modules', '.bin', 'tsc'), ['-p', '.'], app, process.env, 60_000);
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.code).toBe(0);
  }, 60_000);

  it('runs its own worker and client: its tool is called, its system prompt and endpoint reach the model, a compaction is forced', async () => {
    worker = spawn(process.execPath, ['worker.ts'], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const polling = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        workerOutput += chunk.toString('utf8');
        if (workerOutput.includes('[worker] polling task queue')) resolve();
      };
      worker!.stdout!.on('data', onData);
      worker!.stderr!.on('data', onData);
      worker!.once('exit', (code) => reject(new Error(`the worker exited ${code}:\n${workerOutput}`)));
    });
    await polling;
    // One start line names the process and everything it talks to; the bundler's module listing is not printed.
    expect(workerOutput).toMatch(
      new RegExp(
        `\\[worker\\] polling task queue ${env.LONGRUN_TASK_QUEUE} as longrun-worker-\\d+@\\S+: ` +
          `Temporal ${escaped(env.TEMPORAL_ADDRESS!)} \\(namespace \\S+\\), S3 ${escaped(env.AWS_ENDPOINT_URL_S3!)} ` +
          `\\(bucket \\S+\\), model endpoint ${escaped(model.baseURL)}`,
      ),
    );
    expect(workerOutput).not.toMatch(/modules by path|orphan modules|webpack|Workflow bundle created/i);

    const agentId = newAgentId('team');
    const client = await run(process.execPath, ['client.ts', agentId], app, env, 90_000);
    expect(client.code, `${client.stdout}\n${client.stderr}\nworker:\n${workerOutput}`).toBe(0);

    // Four turns, each answered with what the team's tool returned.
    for (const city of ['Bergen', 'Oslo', 'Tromsø', 'Stavanger']) {
      expect(client.stdout).toContain(`${city}: ${city} tomorrow: rain in 24 of 24 hours\n`);
    }
    const agentRequests = model.requests.filter((r) => !isSummaryRequest(r));
    expect(agentRequests).toHaveLength(8); // per turn: the question, then the tool's result
    for (const request of agentRequests) {
      // The app's endpoint and key, its system prompt first, its tool offered; the worker named as operations.md says.
      expect(request.headers.authorization).toBe(`Bearer ${MODEL_KEY}`);
      expect(request.headers['x-longrun-worker']).toMatch(/^longrun-worker-\d+@\S+$/);
      expect(request.body.messages[0]).toMatchObject({ role: 'system' });
      expect(textOf(request.body.messages[0]!.content)).toContain('weather desk');
      const tools = (request.body.tools ?? []) as { function: { name: string } }[];
      expect(tools.map((t) => t.function.name)).toContain('forecast');
    }
    // The tool ran in the app's worker: its results are in the requests that followed.
    const toolResults = agentRequests.flatMap((r) => r.body.messages.filter((m) => m.role === 'tool'));
    expect(new Set(toolResults.map((m) => textOf(m.content).split('\n', 2).join(' / ')))).toEqual(
      new Set(['Bergen', 'Oslo', 'Tromsø', 'Stavanger'].map((city) => `${city} tomorrow / 0:00 light rain, 8 °C`)),
    );

    // The forced compaction summarized with the summary model; the client printed its event.
    expect(client.stdout).toMatch(/compaction: done/);
    const event = /event 1: summarize, (\d+) → (\d+) tokens/.exec(client.stdout);
    expect(event, client.stdout).not.toBeNull();
    expect(Number(event![2])).toBeLessThan(Number(event![1]));
    // (A second request is the fact check asking again for facts the scripted summary left out.)
    expect(model.requests.filter(isSummaryRequest).length).toBeGreaterThanOrEqual(1);

    // The package's own command reads the agent back (from dist/: no sources in the package).
    const state = await run(
      join(app, 'node_modules', '.bin', 'longrun'),
      ['state', agentId, '--json'],
      app,
      env,
      30_000,
    );
    expect(state.code, state.stderr).toBe(0);
    expect(JSON.parse(state.stdout)).toMatchObject({ agentId, status: 'running', turns: 4 });

    // SIGTERM stops the worker gracefully.
    const exited = once(worker, 'exit');
    worker.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code, workerOutput).toBe(0);
  }, 120_000);

  it('a worker with no model key stops at once with one line naming the variable, no stack', async () => {
    const { TEAM_MODEL_KEY: _key, ...withoutKey } = env;
    const started = Date.now();
    const result = await run(process.execPath, ['worker.ts'], app, withoutKey, 30_000);
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stderr).toContain(
      `worker: OPENAI_API_KEY: runAgentWorker has no API key for the model endpoint ${model.baseURL}: pass ` +
        'model.apiKey (it was undefined) or set OPENAI_API_KEY',
    );
    expect(result.stderr).not.toMatch(STACK_TRACE);
    expect(result.stderr).not.toContain('OpenAIError');
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

/** `text` as a regular expression that matches it literally. */
function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
