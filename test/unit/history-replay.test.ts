/**
 * Releases replay: every history a release recorded (test/fixtures/histories/<version>/, `npm run record:histories`)
 * replays against today's workflow code. A change that would break the running agents of an earlier release fails
 * here, naming the history and the command that differs; such a change goes behind patched()
 * (docs/changing-workflows.md). No server: replay needs only the workflow bundle (built here, a few seconds).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import type { History } from '../support/history-fixtures.ts';
import type { CallModelResult, RunToolInput } from '../../contract/activities.ts';
import { PROJECT_ROOT } from '../../config/settings.ts';
import { bundleWorkflows } from '../../worker/worker.ts';
import {
  listHistoryFixtures,
  readHistoryFixture,
  recordedVersions,
  replayHistoryFixtures,
} from '../support/history-fixtures.ts';

/** Bundling the workflows and replaying every history: well over the unit tier's 5 s. */
const REPLAY_TIMEOUT_MS = 180_000;

// The replay worker's lines from WARN up: a nondeterminism error is reported by the test itself.
Runtime.install({ logger: new DefaultLogger('WARN') });

const fixtures = listHistoryFixtures();
let results: Map<string, Error | undefined>;

beforeAll(async () => {
  results = await replayHistoryFixtures(await bundleWorkflows(), fixtures);
}, REPLAY_TIMEOUT_MS);

describe('recorded histories replay against the workflow code', () => {
  it.each(fixtures.map((fixture) => fixture.file))('%s', (file) => {
    expect(results.has(file), `${file} was not replayed`).toBe(true);
    const error = results.get(file);
    if (error) {
      expect.fail(
        `${file} does not replay against the current workflow code (a change that breaks running agents of that ` +
          `release goes behind patched(), docs/changing-workflows.md): ${error.name}: ${error.message}`,
      );
    }
  });

  it('the package version has its histories (recorded before it ships), at least six', () => {
    const { version } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(recordedVersions(), `npm run record:histories -- --version ${version}`).toContain(version);
    expect(fixtures.filter((fixture) => fixture.version === version).length).toBeGreaterThanOrEqual(6);
  });
});

describe('histories from before turn budgets (0.1.0-dev.7e0b6c7)', () => {
  // Recorded by the code of commit 7e0b6c7 (a turn: at most maxSteps model calls that could call tools, then one with
  // tool_choice 'none') with a model that calls a tool on every request, one turn each. They replay only through
  // the old rule, which the workflow keeps for a run whose history has no `turn-budget` patch marker.
  it.each([
    ['pre-turn-budget-max-steps-2.json', 3],
    ['pre-turn-budget-default.json', 9],
  ] as const)('%s holds a turn of %i model calls and no turn-budget marker', (name, modelCalls) => {
    const events = readHistoryFixture({ version: '0.1.0-dev.7e0b6c7', file: `0.1.0-dev.7e0b6c7/${name}` }).events ?? [];
    const calls = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel');
    expect(calls).toHaveLength(modelCalls);
    expect(events.some((e) => e.markerRecordedEventAttributes)).toBe(false);
  });
});

type HistoryEvent = NonNullable<History['events']>[number];

/** The patch ids a history's markers record. */
function patchesOf(history: History): Set<string> {
  const ids = (history.events ?? []).flatMap((event) =>
    (event.markerRecordedEventAttributes?.details?.['patch-data']?.payloads ?? []).map(
      (payload) => (JSON.parse(Buffer.from(payload.data ?? []).toString('utf8')) as { id: string }).id,
    ),
  );
  return new Set(ids);
}

/** Whether a run began a turn (a model call was scheduled). */
function turned(history: History): boolean {
  return (history.events ?? []).some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel');
}

describe('histories of reachable turns (0.1.0-dev.e359dc8)', () => {
  const REACHABLE = '0.1.0-dev.e359dc8';
  const histories = fixtures
    .filter((fixture) => fixture.version === REACHABLE)
    .map((fixture) => ({ file: fixture.file, history: readHistoryFixture(fixture) }));
  const events = histories.flatMap(({ history }) => history.events ?? []);

  it('every run with a turn took the new branch (the reachable-turns marker); no history of 0.1.0 did', () => {
    expect(histories.length).toBeGreaterThanOrEqual(6);
    for (const { file, history } of histories.filter(({ history }) => turned(history))) {
      expect(patchesOf(history), file).toContain('reachable-turns');
    }
    const released = fixtures
      .filter((fixture) => fixture.version === '0.1.0')
      .map((fixture) => readHistoryFixture(fixture));
    expect(released.filter(turned).length).toBeGreaterThan(0);
    for (const history of released) expect(patchesOf(history)).not.toContain('reachable-turns');
  });

  it('holds every input of reachable turns, by Update and by Signal, and cancellations of both activities', () => {
    const updates = new Set(
      events.map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name),
    );
    expect([...updates]).toEqual(expect.arrayContaining(['compact', 'steer', 'interrupt', 'approveTool', 'denyTool']));
    const signals = new Set(events.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName));
    expect([...signals]).toEqual(expect.arrayContaining(['compact', 'steer', 'interrupt']));
    const cancelled = new Set(
      histories.flatMap(({ history }) => {
        const all = history.events ?? [];
        const typeOf = (id: unknown) =>
          all.find((e) => String(e.eventId) === String(id))?.activityTaskScheduledEventAttributes?.activityType?.name;
        return all
          .filter((e) => e.activityTaskCanceledEventAttributes)
          .map((e) => typeOf(e.activityTaskCanceledEventAttributes!.scheduledEventId));
      }),
    );
    expect([...cancelled].sort()).toEqual(['callModel', 'runTool']);
    // The approval that nobody answered: its timer fired.
    expect(events.some((e) => e.timerFiredEventAttributes)).toBe(true);
  });

  it('holds an approval wait across a worker restart, and a run after continue-as-new that steers', () => {
    const [first = [], second = []] = ['reach-across-runs.json', 'reach-across-runs.run2.json'].map(
      (name): HistoryEvent[] => histories.find(({ file }) => file === `${REACHABLE}/${name}`)?.history.events ?? [],
    );
    const at = (found: (e: HistoryEvent) => unknown) => first.findIndex(found);
    const waits = at((e) => e.timerStartedEventAttributes);
    const restarted = at(
      (e) => e.workflowTaskStartedEventAttributes?.identity === 'longrun-history-recorder-restarted',
    );
    const approved = at(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'approveTool',
    );
    expect(waits).toBeGreaterThan(0);
    expect(
      first.slice(0, waits).some((e) => e.workflowTaskStartedEventAttributes?.identity === 'longrun-history-recorder'),
    ).toBe(true);
    expect(restarted).toBeGreaterThan(waits);
    expect(approved).toBeGreaterThan(restarted);
    expect(first.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    expect(
      second.some((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'steer'),
    ).toBe(true);
  });
});

describe('histories from before reachable turns (0.1.0-dev.0b95204)', () => {
  // Recorded by the code of commit 0b95204, where every input waited for the turn in progress to end: the code of
  // today replays it only through the old branch of `reachable-turns` (taken for a run without its marker).
  it('before-reachable-turns.json holds inputs sent during a tool step, taken after the turn, and no marker', () => {
    const history = readHistoryFixture({
      version: '0.1.0-dev.0b95204',
      file: '0.1.0-dev.0b95204/before-reachable-turns.json',
    });
    const events = history.events ?? [];
    const activity = (e: HistoryEvent) => e.activityTaskScheduledEventAttributes?.activityType?.name;
    const sent = events.findIndex(
      (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'compact',
    );
    const signals = events
      .slice(sent)
      .map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)
      .filter(Boolean);
    const planned = events.findIndex((e) => activity(e) === 'planCompaction');
    expect(sent).toBeGreaterThan(0);
    expect(signals.slice(0, 2)).toEqual(['compact', 'message']);
    // The turn went on to its end (two more tool steps, then its answer) before the first compaction began.
    const between = events.slice(sent, planned).map(activity).filter(Boolean);
    expect(between).toEqual(['callModel', 'runTool', 'callModel', 'runTool', 'callModel']);
    expect(patchesOf(history)).not.toContain('reachable-turns');
  });
});

describe("histories of a step's tool calls run in its model call (0.1.0-dev.6817442)", () => {
  // Recorded by the code of commit 6817442, where the model call runs its reply's plain tool calls itself (`runCalls`):
  // they replay through the same code as the histories of before, which schedule `runTool` for every call, told
  // apart by the model call's result alone (its `toolResults`), with no marker.
  const STEP_TOOLS = '0.1.0-dev.6817442';
  const histories = fixtures
    .filter((fixture) => fixture.version === STEP_TOOLS)
    .map((fixture) => ({ file: fixture.file, history: readHistoryFixture(fixture) }));
  /** Each activity of a history: its type, its input and result (decoded), and how it ended. */
  const activitiesOf = (events: HistoryEvent[]) => {
    const decoded = (data: Uint8Array | null | undefined): unknown =>
      data ? JSON.parse(Buffer.from(data).toString('utf8')) : undefined;
    const byId = new Map<string, { type: string; input: unknown; result?: unknown; ends: string[] }>();
    for (const e of events) {
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled) {
        const input = decoded(scheduled.input?.payloads?.[0]?.data);
        byId.set(String(e.eventId), { type: scheduled.activityType!.name!, input, ends: [] });
      }
      const cancel = e.activityTaskCancelRequestedEventAttributes;
      if (cancel) byId.get(String(cancel.scheduledEventId))?.ends.push('cancel requested');
      const completed = e.activityTaskCompletedEventAttributes;
      if (completed) {
        const activity = byId.get(String(completed.scheduledEventId));
        if (activity) {
          activity.ends.push('completed');
          activity.result = decoded(completed.result?.payloads?.[0]?.data);
        }
      }
    }
    return [...byId.values()];
  };
  const all = histories.flatMap(({ history }) => activitiesOf(history.events ?? []));
  const results = all.filter((a) => a.type === 'callModel').map((a) => a.result as CallModelResult | undefined);

  it('its model calls ran their steps’ plain calls; runTool only for the calls left to the workflow', () => {
    expect(histories.length).toBeGreaterThanOrEqual(6);
    const ran = results.flatMap((result) => result?.toolResults ?? []).filter((record) => record !== null);
    expect(ran.length).toBeGreaterThanOrEqual(8);
    const runs = all.filter((a) => a.type === 'runTool').map((a) => a.input as RunToolInput);
    // A call that waited for approval (asked, then run once approved), and a tool that threw, run again with the
    // attempt it spent in the model call.
    expect(runs.some((run) => run.approval === 'ask')).toBe(true);
    expect(runs.some((run) => run.toolErrors === 1)).toBe(true);
  });

  it('holds a model call an interrupt asked to cancel while its tool ran, completed with its reply', () => {
    const interrupted = all.filter(
      (a) => a.type === 'callModel' && a.ends.join(', ') === 'cancel requested, completed',
    );
    expect(interrupted.length).toBeGreaterThanOrEqual(1);
    for (const call of interrupted) expect((call.result as CallModelResult).reply?.toolCalls.length).toBeGreaterThan(0);
  });
});
