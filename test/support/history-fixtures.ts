/**
 * The recorded histories every release leaves behind (test/fixtures/histories/<version>/<name>.json, Temporal's JSON
 * history format): how they are found, read and replayed against the workflow code. Shared by the recorder
 * (test/support/record-histories.ts) and the unit test that replays them on every `npm test`
 * (test/unit/history-replay.test.ts). Replay needs no server: only the workflow bundle.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type protos from '@temporalio/proto';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { ReplayWorkerOptions, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { PROJECT_ROOT } from '../../config/settings.ts';

export type History = temporal.api.history.v1.IHistory;

/**
 * The SDK's `historyToJSON` / `historyFromJSON` (@temporalio/common/lib/proto-utils) throw "type must be a Type" in
 * this install, and so does `Worker.runReplayHistories` given a JSON history: @temporalio/common, /proto and /worker
 * each carry a copy of protobufjs 8 (the top level holds @grpc/proto-loader's protobufjs 7), and common's ProtoJSON
 * checks `instanceof Type` against its own copy while the history type comes from @temporalio/proto's. The same two
 * conversions here use the protobufjs that @temporalio/proto itself loads; the replay worker is given decoded
 * histories. The output is the same ProtoJSON (`temporal workflow show --output json`, the Temporal UI's download).
 */
const require = createRequire(import.meta.url);
const proto = require('@temporalio/proto') as typeof protos;
const { patchProtobufRoot } = require('@temporalio/proto/lib/patch-protobuf-root') as {
  patchProtobufRoot: (root: unknown) => { lookupType(name: string): unknown };
};
const protojson = createRequire(require.resolve('@temporalio/proto'))('protobufjs/ext/protojson') as {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options: { ignoreUnknownFields: boolean }): History | null;
};
const historyType = patchProtobufRoot(proto).lookupType('temporal.api.history.v1.History');

/** A history as Temporal's JSON history file (two-space indented, newline at the end). */
export function historyToJSON(history: History): string {
  const message = proto.temporal.api.history.v1.History.fromObject(history);
  return `${JSON.stringify(protojson.toJson(historyType, message), null, 2)}\n`;
}

/** A history read from Temporal's JSON history format. */
export function historyFromJSON(json: string): History {
  const history = protojson.fromJson(historyType, JSON.parse(json), { ignoreUnknownFields: true });
  if (!history?.events?.length) throw new TypeError('not a history: no events');
  return history;
}

/** Where the releases' histories are committed, one folder per version. */
export const HISTORIES_DIR = join(PROJECT_ROOT, 'test/fixtures/histories');

/** One recorded history: `file` is its path under {@link HISTORIES_DIR} (`0.1.0/turns-with-tools.json`). */
export interface HistoryFixture {
  version: string;
  file: string;
}

/** The versions with recorded histories (the folders under `dir`; not a recording under way), in name order. */
export function recordedVersions(dir = HISTORIES_DIR): string[] {
  return readdirSync(dir)
    .filter((name) => !name.startsWith('.') && statSync(join(dir, name)).isDirectory())
    .sort();
}

/** Every recorded history under `dir`, by version, then name. */
export function listHistoryFixtures(dir = HISTORIES_DIR): HistoryFixture[] {
  return recordedVersions(dir).flatMap((version) =>
    readdirSync(join(dir, version))
      .filter((name) => name.endsWith('.json'))
      .sort()
      .map((name) => ({ version, file: `${version}/${name}` })),
  );
}

export function readHistoryFixture(fixture: HistoryFixture, dir = HISTORIES_DIR): History {
  return historyFromJSON(readFileSync(join(dir, fixture.file), 'utf8'));
}

/**
 * Replays each history against `bundle` in one replay worker; resolves to each file's failure (a
 * DeterminismViolationError names the command that differs), or `undefined` where it replayed.
 * The file is the replay's workflow id: the agent workflow never reads its own id.
 */
export async function replayHistoryFixtures(
  bundle: WorkflowBundleWithSourceMap,
  fixtures: HistoryFixture[],
  dir = HISTORIES_DIR,
  options: Pick<ReplayWorkerOptions, 'sinks'> = {},
): Promise<Map<string, Error | undefined>> {
  const results = new Map<string, Error | undefined>();
  const histories = fixtures.map((fixture) => ({
    workflowId: fixture.file,
    history: readHistoryFixture(fixture, dir),
  }));
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: bundle, replayName: 'longrun-history-fixtures', ...options },
    histories,
  )) {
    results.set(result.workflowId, result.error);
  }
  return results;
}
