/**
 * Vitest global setup of the e2e project: one embedded stack (Temporal dev server in memory + MinIO in a temporary
 * folder) on free loopback ports for the whole run, torn down even when tests fail. Tests read its addresses with
 * `inject('stack')`. The binaries come from the setup step (`node stack/setup.ts`, run by `npm test`).
 *
 * With LONGRUN_STACK=cluster (`npm run test:cluster`), cluster mode instead (stack/cluster.ts, ephemeral:
 * PostgreSQL, the Temporal server, its UI and MinIO in a temporary folder), with the same dynamic config on top.
 */
import type { TestProject } from 'vitest/node';
import { loadSettings } from '../../config/settings.ts';
import { BINARIES } from '../../stack/binaries.ts';
import { startClusterStack } from '../../stack/cluster.ts';
import { startEmbeddedStack } from '../../stack/index.ts';
import type { EmbeddedStack } from '../../stack/index.ts';
import { ensureBinaries, ensureClusterBinaries } from '../../stack/setup.ts';
import { stackKind } from './stack-kind.ts';
import type { S3Target } from '../../storage/s3.ts';

export const SUGGEST_CONTINUE_AS_NEW_EVENTS = 40;

export interface TestStack {
  temporalAddress: string;
  namespace: string;
  uiUrl: string;
  s3: S3Target;
}

declare module 'vitest' {
  export interface ProvidedContext {
    stack: TestStack;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const settings = loadSettings({ ...process.env, LONGRUN_S3_BUCKET: 'longrun-test' });
  // The temporal CLI also drives agents in some tests, on either stack.
  const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir });
  const common = {
    mode: 'ephemeral',
    settings,
    // The server suggests continue-as-new after this many history events (default 4,096), so that every e2e test
    // that runs a few turns crosses a continue-as-new.
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW_EVENTS },
    log: (line: string) => console.log(line),
  } as const;
  const stack: EmbeddedStack =
    stackKind() === 'cluster'
      ? await startClusterStack({ ...common, binaries: await ensureClusterBinaries({ cacheDir: settings.cacheDir }) })
      : await startEmbeddedStack({ ...common, binaries });
  project.provide('stack', {
    temporalAddress: stack.temporal!.address,
    namespace: stack.temporal!.namespace,
    uiUrl: stack.temporal!.uiUrl,
    s3: stack.minio!.target,
  });
  return () => stack.stop();
}
