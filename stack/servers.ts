/**
 * Which servers a command runs against: the one decision, used by the worker process (`npm start`, `longrun up`,
 * worker/main.ts) and by `longrun replay`. Temporal is the configured one when TEMPORAL_ADDRESS or a temporal CLI
 * profile names a server (config/addresses.ts), checked to answer first; S3 the configured one when
 * AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL is set; whatever is not configured is started embedded (on
 * LONGRUN_TEMPORAL_PORT and LONGRUN_MINIO_PORT, where the CLI looks for them), built from the pinned versions when
 * missing.
 */
import { EncryptionCodec } from '../codec/payload-codec.ts';
import type { Settings } from '../config/settings.ts';
import { mainJobTemporalAdvice } from '../config/addresses.ts';
import { assertTemporalAnswers, loadTemporalTarget, localTemporalTarget } from '../config/temporal.ts';
import type { TemporalTarget } from '../config/temporal.ts';
import { s3EndpointConfigured, s3TargetFromEnv } from '../storage/s3.ts';
import type { S3Target } from '../storage/s3.ts';
import { MINIO, TEMPORAL } from './binaries.ts';
import { startEmbeddedStack } from './index.ts';
import type { EmbeddedStack } from './index.ts';
import { ensureBinaries } from './setup.ts';

export interface Servers {
  temporal: TemporalTarget;
  s3: S3Target;
  /** The embedded servers this process started (absent when both are configured). */
  stack?: EmbeddedStack;
  /** What was started, for messages: "the Temporal server and MinIO", "MinIO", or "". */
  started: string;
  /** Stops what this process started (nothing when both are configured). */
  stop(): Promise<void>;
}

export interface ServersOptions {
  settings: Settings;
  env?: NodeJS.ProcessEnv;
  /** `persistent`: the data stays in LONGRUN_DATA_DIR (the main job); `ephemeral`: a temporary folder (replay). */
  mode: 'persistent' | 'ephemeral';
  log?: (line: string) => void;
}

export async function startServers({
  settings,
  env = process.env,
  mode,
  log = () => {},
}: ServersOptions): Promise<Servers> {
  const configured = loadTemporalTarget(env);
  const needTemporal = !configured.configured;
  // A server the environment names is used as it is, once it answers: never claimed up when it is not.
  if (!needTemporal) await assertTemporalAnswers(configured, mainJobTemporalAdvice(configured.choice!, env));
  const needMinio = !s3EndpointConfigured(env);
  let stack: EmbeddedStack | undefined;
  if (needTemporal || needMinio) {
    const binaries = await ensureBinaries([...(needTemporal ? [TEMPORAL] : []), ...(needMinio ? [MINIO] : [])], {
      cacheDir: settings.cacheDir,
      log,
    });
    log(
      `[stack] starting ${[needTemporal && 'Temporal dev server', needMinio && 'MinIO'].filter(Boolean).join(' and ')}` +
        ' (set TEMPORAL_ADDRESS and AWS_ENDPOINT_URL_S3 to use running servers)',
    );
    // Encryption on: the embedded UI decodes payloads through a codec server with the same keys.
    const codec = settings.encryptionKeys ? new EncryptionCodec(settings.encryptionKeys) : undefined;
    stack = await startEmbeddedStack({ mode, settings, binaries, log, ...(codec ? { codec } : {}) });
  }
  return {
    temporal: stack?.temporal
      ? localTemporalTarget(stack.temporal.address, stack.temporal.namespace, configured)
      : configured,
    s3: stack?.minio
      ? { ...stack.minio.target, ...(settings.encryptionKeys ? { encryption: settings.encryptionKeys } : {}) }
      : s3TargetFromEnv(settings, env),
    ...(stack ? { stack } : {}),
    started: [needTemporal && 'the Temporal server', needMinio && 'MinIO'].filter(Boolean).join(' and '),
    stop: async () => {
      await stack?.stop();
    },
  };
}
