/**
 * Records the histories of representative agents (test/support/history-scenarios.ts) for a release: each run of
 * each agent as Temporal's JSON history, in test/fixtures/histories/<version>/<name>.json (later runs of a chain that
 * continued as new: <name>.run2.json, …). The unit tier replays them all on every `npm test`
 * (test/unit/history-replay.test.ts), so a change to the workflow code that would break the release's running agents
 * fails there. The rule they guard: docs/changing-workflows.md.
 *
 *   npm run record:histories -- --version 0.1.0            # before the release ships, once
 *   npm run record:histories -- --out /tmp/h --only closed  # a trial run elsewhere, of some scenarios
 *
 * Runs its own embedded stack (Temporal in memory, MinIO in a temporary folder), the continue-as-new threshold
 * lowered as in the e2e tests, a scripted model on loopback and two in-process workers: one with the tools the
 * scenarios always had, one (its own task queue) with the tools of the agents reached while they work, which a
 * scenario restarts. A version already recorded is refused: a release's fixtures are never recorded again.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import type { WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ToolRegistry } from '../../activities/tools.ts';
import { loadSettings, PROJECT_ROOT } from '../../config/settings.ts';
import { localTemporalTarget } from '../../config/temporal.ts';
import { agentState } from '../../client/agents.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import { createOpenAI } from '../../llm/openai.ts';
import { BINARIES } from '../../stack/binaries.ts';
import { startEmbeddedStack } from '../../stack/index.ts';
import { ensureBinaries } from '../../stack/setup.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import { startInProcessAgents } from '../../worker/in-process.ts';
import { bundleWorkflows } from '../../worker/worker.ts';
import { historyToJSON, HISTORIES_DIR, replayHistoryFixtures } from './history-fixtures.ts';
import { REACH_TOOLS, SCENARIOS, scriptedModel, SUMMARY_MODEL, TOOLS } from './history-scenarios.ts';
import type { Scenario, ScenarioContext } from './history-scenarios.ts';

/** The server suggests continue-as-new after this many events (default 4,096), as in the e2e tests. */
const SUGGEST_CONTINUE_AS_NEW_EVENTS = 40;
/** Names the recorder in the histories, instead of the machine's pid@hostname. */
const IDENTITY = 'longrun-history-recorder';
/** Names the worker that a scenario's restart started, so that its histories show which worker took what. */
const RESTARTED_IDENTITY = `${IDENTITY}-restarted`;
const TASK_QUEUE = 'longrun-history-recorder';
/** The agents reached while they work: a worker of their own, with {@link REACH_TOOLS} besides the others. */
const REACH_TASK_QUEUE = 'longrun-history-recorder-reach';

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

function usage(message: string): never {
  console.error(`${message}\nusage: npm run record:histories -- [--version <version>] [--out <dir>] [--only a,b]`);
  process.exit(2);
}

/** Every run of the agent from `runId` on, following its continue-as-new chain. */
async function runsFrom(client: Client, agentId: string, runId: string): Promise<History[]> {
  const histories: History[] = [];
  for (let next: string | undefined = runId; next;) {
    const history: History = await client.workflow.getHandle(agentWorkflowId(agentId), next).fetchHistory();
    histories.push(history);
    next = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return histories;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { version: { type: 'string' }, out: { type: 'string' }, only: { type: 'string' } },
  });
  const packageVersion = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string })
    .version;
  const version = values.version ?? packageVersion;
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) usage(`--version: not a version: ${version}`);
  const only = values.only?.split(',');
  const unknown = only?.filter((name) => !SCENARIOS.some((s) => s.name === name)) ?? [];
  if (unknown.length) usage(`--only: no scenario ${unknown.join(', ')} (${SCENARIOS.map((s) => s.name).join(', ')})`);
  const scenarios = SCENARIOS.filter((s) => !only || only.includes(s.name));
  const root = values.out ?? HISTORIES_DIR;
  const folder = join(root, version);
  if (existsSync(folder)) {
    usage(
      `${relative(process.cwd(), folder)} exists: a version's histories are recorded once (docs/changing-workflows.md)`,
    );
  }
  if (version !== packageVersion) console.error(`note: recording ${version}; package.json says ${packageVersion}`);
  const partial = join(root, `.${version}.recording`); // renamed into place once everything is recorded
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  try {
    await record(scenarios, partial);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    throw error;
  }
  renameSync(partial, folder);
  console.log(`recorded in ${relative(process.cwd(), folder)}`);
}

/** Runs `scenarios` against a stack of their own and writes every run's history to `folder`, then replays them. */
async function record(scenarios: Scenario[], folder: string): Promise<void> {
  // ERROR: the failures the scenarios cause on purpose (HTTP 401, the broken tool) are logged as warnings.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const settings = loadSettings({ ...process.env, LONGRUN_S3_BUCKET: 'longrun-history-recorder' });
  const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir });
  const stack = await startEmbeddedStack({
    mode: 'ephemeral',
    settings,
    binaries,
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW_EVENTS },
  });
  /** What to stop, newest first, whatever happens. */
  const stops: (() => Promise<void>)[] = [() => stack.stop()];
  try {
    const switches = { summarizerDown: false, slowRequests: 0 };
    const model = await startChatServer(scriptedModel(switches));
    stops.unshift(() => model.close());
    const bundle = await bundleWorkflows();
    const temporal = localTemporalTarget(stack.temporal!.address, stack.temporal!.namespace);
    const store = new S3BlobStore(stack.minio!.target);
    const worker = (taskQueue: string, tools: typeof TOOLS, identity = IDENTITY) =>
      startInProcessAgents({
        temporal,
        taskQueue,
        identity,
        workflowBundle: bundle,
        deps: {
          store,
          openai: createOpenAI({ apiKey: 'recorder', baseURL: model.baseURL, timeoutMs: 10_000 }),
          tools: new ToolRegistry(tools),
          summaryModel: SUMMARY_MODEL,
        },
      });
    const agents = await worker(TASK_QUEUE, TOOLS);
    stops.unshift(() => agents.close());
    let reach = await worker(REACH_TASK_QUEUE, [...TOOLS, ...REACH_TOOLS]);
    stops.unshift(() => reach.close());
    const restartReachWorker = async () => {
      await reach.close();
      reach = await worker(REACH_TASK_QUEUE, [...TOOLS, ...REACH_TOOLS], RESTARTED_IDENTITY);
    };
    const connection = await Connection.connect(temporal.connectionOptions);
    stops.unshift(() => connection.close());
    const client = new Client({ connection, namespace: temporal.namespace, identity: IDENTITY });
    const context: ScenarioContext = {
      client,
      store,
      taskQueue: TASK_QUEUE,
      switches,
      reachTaskQueue: REACH_TASK_QUEUE,
      restartReachWorker,
    };
    const recorded: string[] = [];
    for (const scenario of scenarios) {
      const started = Date.now();
      const agentId = `history-${scenario.name}`;
      const firstRun = await scenario.run(context, agentId);
      const runs = await runsFrom(client, agentId, firstRun);
      if (runs.length < (scenario.minRuns ?? 1)) {
        throw new Error(`${scenario.name}: ${runs.length} run(s) recorded, at least ${scenario.minRuns} expected`);
      }
      const files = runs.map((history, i) => {
        const file = `${scenario.name}${i === 0 ? '' : `.run${i + 1}`}.json`;
        const json = historyToJSON(history);
        writeFileSync(join(folder, file), json);
        recorded.push(file);
        return `${file} (${history.events?.length} events, ${(json.length / 1024).toFixed(1)} KiB)`;
      });
      const { events = [] } = await agentState(client, agentId);
      const compactions = events.map((e) => `#${e.seq} ${e.trigger} ${e.strategies.join('+')}`).join(', ');
      console.log(`${scenario.name}: ${scenario.about}\n  ${files.join(', ')} in ${Date.now() - started} ms`);
      if (compactions) console.log(`  compactions: ${compactions}`);
    }
    // What was just recorded replays against the code that recorded it (the unit test replays it from now on).
    const results = await replayHistoryFixtures(
      bundle,
      recorded.map((file) => ({ version: '', file })),
      folder,
    );
    const failed = [...results].filter(([, error]) => error);
    if (failed.length) {
      throw new Error(`recorded, but not replayed:\n${failed.map(([f, e]) => `${f}: ${e}`).join('\n')}`);
    }
  } finally {
    for (const stop of stops) await stop();
  }
}

// Exits once done: the scripted model's answer to an interrupted `[slow]` call is still due (its timer, a minute).
main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    process.exit(1);
  },
);
