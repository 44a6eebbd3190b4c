/**
 * The embedded stack a bench's replays run on (`npm run fidelity`, bench/history-breakdown.ts): started ephemeral,
 * and `runReplay` pointed at it through the environment (it uses a running stack when TEMPORAL_ADDRESS is set, and
 * the S3 store the environment names). `stop` puts the environment back and stops the stack.
 */
import { DEFAULTS, loadSettings } from '../../config/settings.ts';
import { BINARIES } from '../../stack/binaries.ts';
import { startEmbeddedStack } from '../../stack/index.ts';
import { ensureBinaries } from '../../stack/setup.ts';
import type { S3Target } from '../../storage/s3.ts';

/** What a replay stack points runReplay at (and puts back after). */
const SERVER_VARIABLES = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'AWS_ENDPOINT_URL_S3',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_REGION',
];

export interface ReplayStack {
  /** The stack's S3 bucket, for reading what the replays stored. */
  s3: S3Target;
  stop(): Promise<void>;
}

export async function startReplayStack(log: (line: string) => void): Promise<ReplayStack> {
  const settings = loadSettings();
  const binaries = await ensureBinaries(BINARIES, { cacheDir: settings.cacheDir });
  const stack = await startEmbeddedStack({ mode: 'ephemeral', settings, binaries, log });
  const saved = Object.fromEntries(SERVER_VARIABLES.map((name) => [name, process.env[name]]));
  process.env.TEMPORAL_ADDRESS = stack.temporal!.address;
  process.env.TEMPORAL_NAMESPACE = stack.temporal!.namespace;
  process.env.AWS_ENDPOINT_URL_S3 = stack.minio!.endpoint;
  process.env.AWS_ACCESS_KEY_ID = DEFAULTS.minioUser;
  process.env.AWS_SECRET_ACCESS_KEY = DEFAULTS.minioPassword;
  process.env.AWS_REGION = DEFAULTS.region;
  return {
    s3: stack.minio!.target,
    async stop() {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await stack.stop();
    },
  };
}
