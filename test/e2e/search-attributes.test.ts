/**
 * A worker on a namespace without longrun's search attributes stops at its start, naming each one that is missing,
 * its type and the command that registers it (config/search-attributes.ts), instead of polling and failing every
 * workflow task that upserts one. The file runs a Temporal dev server of its own, started without `AgentCost`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INDEXED_TYPES } from '../../config/search-attributes.ts';
import { loadSettings, PROJECT_ROOT } from '../../config/settings.ts';
import { SEARCH_ATTRIBUTE_TYPES, SEARCH_ATTRIBUTES } from '../../contract/search-attributes.ts';
import { BINARIES } from '../../stack/binaries.ts';
import { freePorts } from '../../stack/ports.ts';
import { ensureBinaries } from '../../stack/setup.ts';
import { startTemporal } from '../../stack/temporal.ts';
import type { RunningTemporal } from '../../stack/temporal.ts';
import { sharedStackEnv } from '../support/harness.ts';

const COST = SEARCH_ATTRIBUTES.cost.name;
const dir = mkdtempSync(join(tmpdir(), 'longrun-attributes-'));
let temporal: RunningTemporal;

beforeAll(async () => {
  const binaries = await ensureBinaries(BINARIES, { cacheDir: loadSettings(process.env).cacheDir });
  const [port, uiPort] = (await freePorts(2)) as [number, number];
  const { [COST]: _cost, ...others } = SEARCH_ATTRIBUTE_TYPES;
  temporal = await startTemporal({
    binary: binaries.temporal!,
    port,
    uiPort,
    namespace: 'default',
    logPath: join(dir, 'temporal.log'),
    searchAttributes: others,
  });
}, 90_000);

afterAll(async () => {
  await temporal?.process.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the worker's entry point against the file's server until it exits: its exit code and its output. */
function runWorker(): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'worker/main.ts')], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      ...sharedStackEnv(), // the shared MinIO
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: 'default',
      LONGRUN_TASK_QUEUE: `attributes-${Date.now()}`,
      LONGRUN_DATA_DIR: dir,
    },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (output.includes('[worker] polling')) child.kill('SIGTERM'); // it did not stop: no need to wait
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000); // a worker that polls instead never exits
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    }),
  );
}

describe("a worker on a namespace without longrun's search attributes", () => {
  it('exits at its start naming the missing attribute, its type and the command that registers it', async () => {
    const { code, output } = await runWorker();
    expect(code, output).toBe(1);
    expect(output).not.toContain('[worker] polling');
    expect(output).toContain(`Temporal namespace default at ${temporal.address} lacks search attributes`);
    expect(output).toContain(`${COST} (Double)`);
    expect(output).toContain(
      `temporal operator search-attribute create --namespace default --name ${COST} --type Double`,
    );
    // Only what is missing is named.
    for (const name of Object.keys(SEARCH_ATTRIBUTE_TYPES).filter((n) => n !== COST)) {
      expect(output).not.toContain(`--name ${name} `);
    }
  }, 90_000);

  it('names one registered with another type, and how to register it again', async () => {
    const connection = await Connection.connect({ address: temporal.address });
    try {
      await connection.operatorService.addSearchAttributes({
        namespace: 'default',
        searchAttributes: { [COST]: INDEXED_TYPES.Keyword },
      });
    } finally {
      await connection.close();
    }
    const { code, output } = await runWorker();
    expect(code, output).toBe(1);
    expect(output).toContain(`${COST} (Double, registered as Keyword)`);
    expect(output).toContain(`temporal operator search-attribute remove --namespace default --name ${COST}\n`);
    expect(output).toContain(
      `temporal operator search-attribute create --namespace default --name ${COST} --type Double`,
    );
  }, 90_000);
});
