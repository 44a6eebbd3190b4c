/** MinIO on loopback with its own data folder and local-only credentials; the bucket is created through the S3 API. */
import { mkdirSync } from 'node:fs';
import { S3BlobStore } from '../storage/s3.ts';
import type { S3Target } from '../storage/s3.ts';
import { LOOPBACK } from './ports.ts';
import { ServerProcess } from './process.ts';

export interface MinioOptions {
  binary: string;
  port: number;
  consolePort: number;
  dataDir: string;
  logPath: string;
  user: string;
  password: string;
  bucket: string;
  region: string;
}

const START_TIMEOUT_MS = 60_000;

export interface RunningMinio {
  endpoint: string;
  consoleUrl: string;
  /** How the project's S3 clients reach this MinIO. */
  target: S3Target;
  process: ServerProcess;
}

export function minioArgs(options: MinioOptions): string[] {
  return [
    'server',
    options.dataDir,
    '--address',
    `${LOOPBACK}:${options.port}`,
    '--console-address',
    `${LOOPBACK}:${options.consolePort}`,
    '--quiet',
  ];
}

export async function startMinio(options: MinioOptions): Promise<RunningMinio> {
  mkdirSync(options.dataDir, { recursive: true });
  const endpoint = `http://${LOOPBACK}:${options.port}`;
  const process = await ServerProcess.start({
    name: 'MinIO',
    command: options.binary,
    args: minioArgs(options),
    env: {
      ...globalThis.process.env,
      MINIO_ROOT_USER: options.user,
      MINIO_ROOT_PASSWORD: options.password,
      MINIO_UPDATE: 'off',
      MINIO_CALLHOME_ENABLE: 'off',
    },
    logPath: options.logPath,
    startTimeoutMs: START_TIMEOUT_MS,
    // Not /minio/health/live: that answers 200 while the object layer, bucket metadata and IAM are still being
    // initialized, and the bucket request that follows then fails with XMinioServerNotInitialized (503; found by CI
    // on a loaded machine). The cluster check answers 200 only once all three are up.
    healthy: async () => (await fetch(`${endpoint}/minio/health/cluster`, { signal: AbortSignal.timeout(1_000) })).ok,
  });
  const target: S3Target = {
    bucket: options.bucket,
    forcePathStyle: true,
    endpoint,
    region: options.region,
    credentials: { accessKeyId: options.user, secretAccessKey: options.password },
  };
  try {
    await new S3BlobStore(target).ensureBucket();
  } catch (error) {
    await process.stop();
    throw error;
  }
  return { endpoint, consoleUrl: `http://${LOOPBACK}:${options.consolePort}`, target, process };
}
