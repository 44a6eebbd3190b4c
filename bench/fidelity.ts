/**
 * `npm run fidelity`: replays each recorded session of the corpus (test/fixtures/sessions) through a real agent at
 * each window under each preset, on one embedded stack (Temporal dev server + MinIO, started once), and measures
 * what compaction kept: compactions by strategy, summaries written, compactions that removed messages without a
 * summary, the must-keep facts present after every compaction and, of those missing, the ones `context_search` finds
 * with their own words in its first 5 matches (findable), the largest request against the window, tokens sent
 * against no compaction, the cost with prompt caching against sending everything with caching and the cached share of
 * input (at {@link FIDELITY_PRICE} or `--price IN,CACHED,OUT`), tool-pair violations, byte-identical reloads, and
 * recorded against replayed steps.
 *
 * Prints a table (stdout) with progress on stderr, checks the issue's targets, and writes every figure as JSON.
 *
 *   npm run fidelity -- [--session NAME]… [--window N]… [--preset NAME]… [--policy FILE] [--sessions DIR]
 *     [--out FILE] [--price P]
 *   npm run fidelity -- --short [--out FILE] [--price P]
 *
 * `--policy FILE`: a JSON object of policy overrides (as `longrun replay --policy` takes it) on top of every preset
 * replayed; a `preset` in it stands for `--preset`. Options repeat or take comma lists. Defaults: every session,
 * windows 16000 and 32000, every preset, sessions in test/fixtures/sessions, out bench/fidelity.json (git-ignored).
 * The recorded sessions are not in the repository (the README there builds them): without them it stops at once
 * (exit 2) naming the files missing and where it looked. `--short` replays a synthetic session generated here
 * (fidelity/synthetic.ts) at one small window under two presets, in well under a minute: `npm test` runs it
 * (test/e2e/fidelity.test.ts); its figures say the machinery works, not how well compaction keeps a real session. It
 * writes its JSON only with --out.
 */
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import type { ChatMessage } from '../engine/messages.ts';
import { priceOf } from '../engine/pricing.ts';
import type { ModelPrice } from '../engine/pricing.ts';
import { priceFlag, readPolicyFile } from '../commands/cli/parse.ts';
import type { PolicyOverrides } from '../engine/policy.ts';
import { PRESET_NAMES, resolvePolicy } from '../engine/presets.ts';
import { triggerTokens } from '../engine/gates.ts';
import { PROJECT_ROOT } from '../config/settings.ts';
import type { BlobStore } from '../storage/s3.ts';
import { S3BlobStore } from '../storage/s3.ts';
import { SEARCH_LIMITS, SearchIndex } from '../storage/search-index.ts';
import { queryTerms } from '../storage/search-rank.ts';
import { lifeOfKey } from '../contract/keys.ts';
import { runReplay } from '../commands/replay.ts';
import type { ReplayReport } from '../commands/replay-report.ts';
import { loadCorpus, missingSessions, SESSIONS_DIR } from './fidelity/corpus.ts';
import type { CorpusSession } from './fidelity/corpus.ts';
import { factInMatches, failedRun, FINDABLE_TOP, findableOf, messageText, runResult } from './fidelity/measure.ts';
import type { CompactionSnapshot, RunResult } from './fidelity/measure.ts';
import { startReplayStack } from './fidelity/replay-stack.ts';
import { writeSyntheticCorpus } from './fidelity/synthetic.ts';
import { renderPresetComparison } from './fidelity/presets-table.ts';
import { checkTargets, historyLine, renderTable, renderTargets, windowLabel } from './fidelity/table.ts';
import type { TargetCheck } from './fidelity/table.ts';

export const DEFAULT_WINDOWS = [16_000, 32_000];
/** `--short`: the synthetic session at one window small enough for several compactions, under two presets. */
export const SHORT_WINDOWS = [8_000];
export const SHORT_PRESETS = ['default', 'agentscope'];
const DEFAULT_OUT = join(PROJECT_ROOT, 'bench', 'fidelity.json');

/** Replacements that keep a stub or a cut of the original in the context (anything else left only a summary). */
const STUB_KINDS = new Set(['truncated', 'masked', 'offloaded']);

interface Options {
  sessions: string[];
  windows: number[];
  presets: string[];
  out: string;
  price: ModelPrice;
  /** `--policy FILE`'s overrides, on top of every preset. */
  policy?: PolicyOverrides;
}

/**
 * The price the table's costs are at, unless `--price IN,CACHED,OUT` gives another: gpt-4o-mini's input and output
 * list prices (the model the replays name), cached input at 0.1 × input, as issue 29's targets price it (OpenAI
 * lists gpt-4o-mini's cached input at 0.5 ×, its newer models' at 0.1 ×).
 */
export const FIDELITY_PRICE: ModelPrice = {
  inputPerMillion: 0.15,
  cachedInputPerMillion: 0.015,
  outputPerMillion: 0.6,
};

/** Thrown when the run cannot start (sessions missing, bad options): its message is all the user needs. */
export class FidelitySetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FidelitySetupError';
  }
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
      sessions: { type: 'string' },
      out: { type: 'string' },
      price: { type: 'string' },
      policy: { type: 'string' },
    },
    strict: true,
  });
  const names = corpus.map((s) => s.name);
  const sessions = listOf(values.session);
  for (const s of sessions) {
    if (!names.includes(s))
      throw new FidelitySetupError(`--session ${s}: not in the corpus (${names.join(', ') || 'empty'})`);
  }
  const presets = listOf(values.preset);
  for (const p of presets) {
    if (!PRESET_NAMES.includes(p)) throw new FidelitySetupError(`--preset ${p}: one of ${PRESET_NAMES.join(', ')}`);
  }
  const policy = values.policy === undefined ? undefined : policyOption(values.policy, presets);
  const windows = listOf(values.window).map((w) => {
    const n = Number(w);
    if (!Number.isInteger(n) || n < 1024)
      throw new FidelitySetupError(`--window ${w}: a whole number of tokens, at least 1024`);
    return n;
  });
  return {
    sessions: sessions.length ? sessions : names,
    windows: windows.length ? windows : DEFAULT_WINDOWS,
    presets: policy?.presets ?? (presets.length ? presets : PRESET_NAMES),
    out: values.out ?? DEFAULT_OUT,
    price: priceOption(values.price),
    ...(policy ? { policy: policy.overrides } : {}),
  };
}

/**
 * `--policy FILE` (commands/cli/parse.ts `readPolicyFile`), checked under each preset it goes on top of: a preset the
 * file names stands for `--preset` (and must agree with it).
 */
function policyOption(file: string, presets: readonly string[]): { presets: string[]; overrides: PolicyOverrides } {
  try {
    const { preset: named, ...overrides } = readPolicyFile(file);
    if (named !== undefined && presets.some((preset) => preset !== named)) {
      throw new FidelitySetupError(
        `--policy: ${file} names the preset ${named}, --preset ${presets.join(', ')}: give one, or the same`,
      );
    }
    const chosen = named !== undefined ? [named] : presets.length ? [...presets] : PRESET_NAMES;
    for (const preset of chosen) resolvePolicy({ ...overrides, preset });
    return { presets: chosen, overrides };
  } catch (error) {
    if (error instanceof FidelitySetupError) throw error;
    throw new FidelitySetupError((error as Error).message);
  }
}

/** `--price IN,CACHED,OUT` (commands/cli/parse.ts), or {@link FIDELITY_PRICE}. */
function priceOption(raw: string | undefined): ModelPrice {
  try {
    return priceFlag(raw) ?? FIDELITY_PRICE;
  } catch (error) {
    throw new FidelitySetupError((error as Error).message);
  }
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

/**
 * Which facts missing after a compaction `context_search` finds with their own words: each such fact searched once,
 * over everything the replay stored, and found when a message or original holding it is among the first
 * {@link FINDABLE_TOP} matches.
 */
async function findable(store: S3BlobStore, report: ReplayReport, result: RunResult) {
  const life = lifeOfKey(`${report.storagePrefix}messages/m000001.json`);
  if (!life) return undefined;
  const index = new SearchIndex(store);
  const found = new Set<string>();
  for (const fact of new Set(result.facts.perCompaction.flatMap((a) => a.missing))) {
    if (fact.trim() === '' || queryTerms(fact).length === 0) continue;
    const matches = await index.search(life, fact.slice(0, SEARCH_LIMITS.query.maxChars), { limit: FINDABLE_TOP });
    const bodies = await Promise.all(
      matches.map(async (match) => ({
        kind: match.kind,
        text: messageText(JSON.parse((await store.get(match.key)) ?? '{}') as ChatMessage),
      })),
    );
    if (factInMatches(fact, bodies)) found.add(fact);
  }
  return findableOf(result.facts.perCompaction, found);
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

export interface FidelityRun {
  durationMs: number;
  results: RunResult[];
  targets: TargetCheck[];
}

/**
 * Replays each of `sessions` at each window under each preset, on one embedded stack started for it (and stopped,
 * whatever happens); a replay that fails is a row with its error.
 */
export async function runFidelity(
  sessions: readonly CorpusSession[],
  windows: readonly number[],
  presets: readonly string[],
  log: (line: string) => void,
  price: ModelPrice = FIDELITY_PRICE,
  policy?: PolicyOverrides,
): Promise<FidelityRun> {
  const plan = sessions.flatMap((session) =>
    windows.flatMap((window) => presets.map((preset) => ({ session, window, preset }))),
  );
  log(
    `[fidelity] ${plan.length} replays: ${sessions.map((s) => `${s.name} (${s.steps} steps)`).join(', ')} × ` +
      `windows ${windows.join(', ')} × presets ${presets.join(', ')}`,
  );
  const started = performance.now();
  const stack = await startReplayStack(log);
  const results: RunResult[] = [];
  try {
    const store = new S3BlobStore(stack.s3);
    for (const [i, { session, window, preset }] of plan.entries()) {
      const runStarted = performance.now();
      let result: RunResult;
      try {
        const report = await runReplay({
          file: session.file,
          window,
          preset,
          ...(policy ? { policy } : {}),
          price,
          pin: true,
        });
        const snapshots = await snapshotsOf(store, report);
        const durationMs = performance.now() - runStarted;
        const trigger = triggerTokens(resolvePolicy({ ...policy, preset }), report.window);
        result = runResult(
          {
            session: session.name,
            preset,
            durationMs,
            triggerTokens: trigger,
            sessionBytes: statSync(session.file).size,
          },
          report,
          session.facts,
          snapshots,
        );
        result.findable = await findable(store, report, result);
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
  return { durationMs: performance.now() - started, results, targets: checkTargets(results) };
}

/** `path` relative to the working folder when it is inside it, else as it is. */
function shown(path: string): string {
  const inside = relative(process.cwd(), path);
  return inside.startsWith('..') ? path : inside;
}

/** The corpus of `dir`, or {@link FidelitySetupError} naming the sessions missing there and how to build them. */
export function loadFullCorpus(dir: string): CorpusSession[] {
  const missing = missingSessions(dir);
  const corpus = loadCorpus(dir);
  if (missing.length > 0 || corpus.length === 0) {
    throw new FidelitySetupError(
      `the fidelity corpus is not on this machine: ${
        missing.length > 0
          ? `missing ${missing.map(shown).join(', ')}`
          : 'no session (<name>.jsonl with its <name>.facts.json)'
      } (looked for in ${dir}${existsSync(dir) ? '' : ', which does not exist'}). The recorded sessions are not in the repository: build them with the commands in ` +
        `${relative(process.cwd(), join(SESSIONS_DIR, 'README.md'))}, or run \`npm run fidelity -- --short\` on the ` +
        'synthetic session',
    );
  }
  return corpus;
}

async function main(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const argv = process.argv.slice(2);
  const { values: top } = parseArgs({
    args: argv,
    options: { short: { type: 'boolean' }, sessions: { type: 'string' } },
    strict: false,
  });
  let corpus: CorpusSession[];
  let scratch: string | undefined;
  let options: Options;
  if (top.short) {
    const { values } = parseArgs({
      args: argv,
      options: { short: { type: 'boolean' }, out: { type: 'string' }, price: { type: 'string' } },
      strict: true,
    });
    scratch = mkdtempSync(join(tmpdir(), 'longrun-fidelity-'));
    corpus = loadCorpus(writeSyntheticCorpus(scratch));
    options = {
      sessions: corpus.map((s) => s.name),
      windows: SHORT_WINDOWS,
      presets: SHORT_PRESETS,
      out: values.out ?? '',
      price: priceOption(values.price),
    };
  } else {
    const dir = typeof top.sessions === 'string' ? top.sessions : SESSIONS_DIR;
    corpus = loadFullCorpus(dir);
    options = parseOptions(argv, corpus);
  }
  try {
    const sessions = corpus.filter((s) => options.sessions.includes(s.name));
    const run = await runFidelity(sessions, options.windows, options.presets, log, options.price, options.policy);
    if (options.out) {
      writeFileSync(
        options.out,
        `${JSON.stringify(
          {
            machine: { cpus: cpus().length, node: process.version, at: new Date().toISOString() },
            durationMs: Math.round(run.durationMs),
            sessions: sessions.map((s) => ({
              name: s.name,
              file: scratch ? s.file : relative(PROJECT_ROOT, s.file),
              steps: s.steps,
              facts: s.facts.length,
            })),
            ...(options.policy ? { policy: options.policy } : {}),
            results: run.results,
            targets: run.targets,
          },
          null,
          2,
        )}\n`,
      );
    }
    const p = priceOf(options.price);
    console.log(
      `costs at USD ${p.inputPerMillion} / ${p.cachedInputPerMillion} / ${p.outputPerMillion} per million tokens ` +
        '(input / cached input / output)\n',
    );
    if (options.policy) {
      console.log(`every replay under these policy overrides (--policy): ${JSON.stringify(options.policy)}\n`);
    }
    console.log(renderTable(run.results));
    console.log(`\ntargets (issue 13):\n${renderTargets(run.targets)}`);
    const presets = renderPresetComparison(run.results);
    if (presets) console.log(`\n${presets}`);
    console.log(`\n${plansLine(run.results)}`);
    console.log(historyLine(run.results));
    console.log(
      `\n${run.results.length} replays in ${(run.durationMs / 60_000).toFixed(1)} min on ${cpus().length} CPUs` +
        (options.out ? `; written to ${relative(process.cwd(), options.out)}` : ''),
    );
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

/** The compaction plans of every replay: how many found nothing to do (issue 29's target: at most 10% of them). */
export function plansLine(results: readonly RunResult[]): string {
  const plans = { made: 0, empty: 0, avoided: 0 };
  for (const r of results) {
    plans.made += r.plans?.made ?? 0;
    plans.empty += r.plans?.empty ?? 0;
    plans.avoided += r.plans?.avoided ?? 0;
  }
  const share = plans.made > 0 ? ` (${((100 * plans.empty) / plans.made).toFixed(1)}%)` : '';
  return (
    `compaction plans: ${plans.made} made, ${plans.empty} found nothing${share}; ` +
    `${plans.avoided} masking passes not planned (they would have found nothing)`
  );
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    const setup =
      error instanceof FidelitySetupError ||
      (error as Error).name === 'CorpusError' ||
      String((error as NodeJS.ErrnoException).code).startsWith('ERR_PARSE_ARGS');
    console.error(setup ? `fidelity: ${(error as Error).message}` : error);
    process.exit(setup ? 2 : 1);
  });
}
