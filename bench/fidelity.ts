/**
 * `npm run fidelity`: replays each recorded session of the corpus (test/fixtures/sessions) through a real agent at
 * each window under each preset, on one embedded stack (Temporal dev server + MinIO, started once), and measures
 * what compaction kept: compactions by strategy, summaries written, compactions that removed messages without a
 * summary, the must-keep facts present after every compaction, the largest request against the window, tokens sent
 * against no compaction, tool-pair violations, byte-identical reloads, and recorded against replayed steps.
 *
 * Prints a table (stdout) with progress on stderr, checks the issue's targets, and writes every figure as JSON.
 *
 *   npm run fidelity -- [--session NAME]… [--window N]… [--preset NAME]… [--out FILE]
 *
 * Options repeat or take comma lists. Defaults: every session, windows 16000 and 32000, every preset, out
 * bench/fidelity.json (git-ignored).
 */
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import type { ChatMessage } from '../engine/messages.ts';
import { PRESET_NAMES, resolvePolicy } from '../engine/presets.ts';
import { triggerTokens } from '../engine/gates.ts';
import { DEFAULTS, loadSettings, PROJECT_ROOT } from '../config/settings.ts';
import { BINARIES } from '../stack/binaries.ts';
import { startEmbeddedStack } from '../stack/index.ts';
import { ensureBinaries } from '../stack/setup.ts';
import type { BlobStore } from '../storage/s3.ts';
import { S3BlobStore } from '../storage/s3.ts';
import { runReplay } from '../commands/replay.ts';
import type { ReplayReport } from '../commands/replay.ts';
import { loadCorpus } from './fidelity/corpus.ts';
import type { CorpusSession } from './fidelity/corpus.ts';
import { failedRun, messageText, runResult } from './fidelity/measure.ts';
import type { CompactionSnapshot, RunResult } from './fidelity/measure.ts';
import { checkTargets, renderTable, renderTargets, windowLabel } from './fidelity/table.ts';

export const DEFAULT_WINDOWS = [16_000, 32_000];
const DEFAULT_OUT = join(PROJECT_ROOT, 'bench', 'fidelity.json');

/** Replacements that keep a stub or a cut of the original in the context (anything else left only a summary). */
const STUB_KINDS = new Set(['truncated', 'masked', 'offloaded']);

interface Options {
  sessions: string[];
  windows: number[];
  presets: string[];
  out: string;
}

/** Repeated options and comma lists, flattened. */
function listOf(values: string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

export function parseOptions(argv: string[], corpus: readonly CorpusSession[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      session: { type: 'string', multiple: true },
      window: { type: 'string', multiple: true },
      preset: { type: 'string', multiple: true },
      out: { type: 'string' },
    },
    strict: true,
  });
  const names = corpus.map((s) => s.name);
  const sessions = listOf(values.session);
  for (const s of sessions) {
    if (!names.includes(s)) throw new Error(`--session ${s}: not in the corpus (${names.join(', ') || 'empty'})`);
  }
  const presets = listOf(values.preset);
  for (const p of presets) {
    if (!PRESET_NAMES.includes(p)) throw new Error(`--preset ${p}: one of ${PRESET_NAMES.join(', ')}`);
  }
  const windows = listOf(values.window).map((w) => {
    const n = Number(w);
    if (!Number.isInteger(n) || n < 1024) throw new Error(`--window ${w}: a whole number of tokens, at least 1024`);
    return n;
  });
  return {
    sessions: sessions.length ? sessions : names,
    windows: windows.length ? windows : DEFAULT_WINDOWS,
    presets: presets.length ? presets : PRESET_NAMES,
    out: values.out ?? DEFAULT_OUT,
  };
}

/** What each compaction of a replay left in the store: its context after, its removed originals, its summary. */
async function snapshotsOf(store: BlobStore, report: ReplayReport): Promise<CompactionSnapshot[]> {
  const bodies = new Map<string, Promise<string>>();
  const body = (key: string) => {
    if (!bodies.has(key)) {
      bodies.set(
        key,
        store.get(key).then((text) => {
          if (text === undefined) throw new Error(`${key}: not in the store`);
          return messageText(JSON.parse(text) as ChatMessage);
        }),
      );
    }
    return bodies.get(key)!;
  };
  return Promise.all(
    report.compactions.map(async (c) => {
      const keys = JSON.parse((await store.get(c.keys.context)) ?? '[]') as string[];
      const removed = ((await store.get(c.keys.removed)) ?? '')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { replacedBy?: string; message: ChatMessage });
      return {
        seq: c.seq,
        strategies: c.strategies,
        summary: c.summary,
        context: await Promise.all(keys.map(body)),
        removed: removed.map((r) => messageText(r.message)),
        droppedCount: removed.filter((r) => !STUB_KINDS.has(r.replacedBy ?? '')).length,
        removedCount: c.removedCount,
        reload: { identical: c.offloaded.filter((o) => o.reloadIdentical).length, total: c.offloaded.length },
      };
    }),
  );
}

function progressLine(index: number, total: number, r: RunResult): string {
  const head = `[fidelity] ${index}/${total} ${r.session} ${windowLabel(r.window)} ${r.preset}: ${(r.durationMs / 1000).toFixed(1)} s`;
  if (r.error) return `${head}, FAILED: ${r.error}`;
  const facts = r.facts.minPct === null ? 'no compaction' : `facts min ${Math.floor(r.facts.minPct)}%`;
  return (
    `${head}, ${r.replayedSteps}/${r.recordedSteps} steps, ${r.compactions} compactions (${r.summaries} summaries), ` +
    `${facts}, largest request ${r.maxRequestTokens}/${r.window}`
  );
}

async function main(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const corpus = loadCorpus();
  const options = parseOptions(process.argv.slice(2), corpus);
  if (corpus.length === 0) {
    throw new Error(
      'the corpus is empty: no session in test/fixtures/sessions (build them from their source with the commands in ' +
        'test/fixtures/sessions/README.md)',
    );
  }
  const sessions = corpus.filter((s) => options.sessions.includes(s.name));
  const plan = sessions.flatMap((session) =>
    options.windows.flatMap((window) => options.presets.map((preset) => ({ session, window, preset }))),
  );
  log(
    `[fidelity] ${plan.length} replays: ${sessions.map((s) => `${s.name} (${s.steps} steps)`).join(', ')} × ` +
      `windows ${options.windows.join(', ')} × presets ${options.presets.join(', ')}`,
  );

  const started = performance.now();
  const settings = loadSettings();
  const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir });
  const stack = await startEmbeddedStack({ mode: 'ephemeral', settings, binaries, log });
  const results: RunResult[] = [];
  try {
    // runReplay uses a running stack when TEMPORAL_ADDRESS is set, and the S3 store the environment names.
    process.env.TEMPORAL_ADDRESS = stack.temporal!.address;
    process.env.TEMPORAL_NAMESPACE = stack.temporal!.namespace;
    process.env.AWS_ENDPOINT_URL_S3 = stack.minio!.endpoint;
    process.env.AWS_ACCESS_KEY_ID = DEFAULTS.minioUser;
    process.env.AWS_SECRET_ACCESS_KEY = DEFAULTS.minioPassword;
    process.env.AWS_REGION = DEFAULTS.region;
    const store = new S3BlobStore(stack.minio!.target);
    for (const [i, { session, window, preset }] of plan.entries()) {
      const runStarted = performance.now();
      let result: RunResult;
      try {
        const report = await runReplay({ file: session.file, window, preset });
        const snapshots = await snapshotsOf(store, report);
        const durationMs = performance.now() - runStarted;
        const trigger = triggerTokens(resolvePolicy({ preset }), report.window);
        result = runResult(
          { session: session.name, preset, durationMs, triggerTokens: trigger },
          report,
          session.facts,
          snapshots,
        );
      } catch (error) {
        const durationMs = performance.now() - runStarted;
        result = failedRun({ session: session.name, window, preset, durationMs }, (error as Error).message);
      }
      results.push(result);
      log(progressLine(i + 1, plan.length, result));
    }
  } finally {
    await stack.stop();
  }
  const durationMs = performance.now() - started;
  const targets = checkTargets(results);
  writeFileSync(
    options.out,
    `${JSON.stringify(
      {
        machine: { cpus: cpus().length, node: process.version, at: new Date().toISOString() },
        durationMs: Math.round(durationMs),
        sessions: sessions.map((s) => ({
          name: s.name,
          file: relative(PROJECT_ROOT, s.file),
          steps: s.steps,
          facts: s.facts.length,
        })),
        results,
        targets,
      },
      null,
      2,
    )}\n`,
  );
  console.log(renderTable(results));
  console.log(`\ntargets (issue 13):\n${renderTargets(targets)}`);
  console.log(
    `\n${results.length} replays in ${(durationMs / 60_000).toFixed(1)} min on ${cpus().length} CPUs; ` +
      `written to ${relative(process.cwd(), options.out)}`,
  );
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
