/**
 * The embedded stack: a Temporal dev server (with its UI) and MinIO on loopback, started, health-checked and
 * stopped together.
 *
 * - `persistent` (the main job): standard ports (7233, 8233, 9000, 9001; each movable by a LONGRUN_*_PORT
 *   variable), data under LONGRUN_DATA_DIR, Temporal on SQLite in WAL mode.
 * - `ephemeral` (tests): free ports, Temporal in memory, MinIO in a temporary folder removed on stop. A server that
 *   finds one of its ports taken meanwhile is started again on other ports.
 *
 * In both modes a start that fails on a port race is tried again: the Temporal CLI also chooses ports of its own
 * (its HTTP API's), which another process can take between its choice and its bind.
 *
 * Either server can be left out (when TEMPORAL_ADDRESS or AWS_ENDPOINT_URL_S3 point at running ones). With encryption
 * on (`codec`), a codec server runs in this process beside Temporal, on loopback (LONGRUN_CODEC_PORT, or a free port
 * when ephemeral), and the UI decodes payloads through it (docs/encryption.md).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PayloadCodec } from '@temporalio/common';
import { startCodecServer } from '../codec/server.ts';
import type { CodecServer } from '../codec/server.ts';
import { DEFAULTS } from '../config/settings.ts';
import type { Settings } from '../config/settings.ts';
import type { S3Target } from '../storage/s3.ts';
import { startMinio } from './minio.ts';
import type { MinioOptions, RunningMinio } from './minio.ts';
import { assertPortsFree, freePorts, LOOPBACK } from './ports.ts';
import { ServerStartError } from './process.ts';
import { startTemporal, temporalDbFile } from './temporal.ts';
import type { DynamicConfig, RunningTemporal, TemporalDevServerOptions } from './temporal.ts';

export interface EmbeddedStackOptions {
  mode: 'persistent' | 'ephemeral';
  settings: Settings;
  /** Paths of the binaries to run; a server whose binary is absent is not started. */
  binaries: { temporal?: string; minio?: string };
  dynamicConfig?: DynamicConfig;
  namespace?: string;
  /** Encryption on: the codec the Temporal UI decodes payloads with, through a codec server beside it. */
  codec?: PayloadCodec;
  log?: (line: string) => void;
}

export interface EmbeddedStack {
  /** `codecEndpoint`: the UI's codec server, when encryption is on. */
  temporal?: { address: string; namespace: string; uiUrl: string; codecEndpoint?: string };
  minio?: { endpoint: string; consoleUrl: string; target: S3Target };
  /** Folder holding the servers' data and logs. */
  dataDir: string;
  stop(): Promise<void>;
}

/**
 * Starts tried before a port race is reported: ephemeral ones each with freshly chosen ports; persistent ones keep
 * their configured ports (checked free before each start) while the Temporal CLI chooses its own again.
 */
export const START_ATTEMPTS = 3;

/**
 * Did a server fail to start because a port was taken between choosing it and binding it? Free ports come from the
 * OS's ephemeral range, where any outgoing connection may take one meanwhile; the Temporal CLI also picks some of
 * its own ports that way.
 */
export function isPortRace(error: unknown): boolean {
  return error instanceof ServerStartError && /address already in use/i.test(error.message);
}

/** Runs `start` again, at most `attempts` times in all, while it fails with a port race; other errors pass through. */
export async function retryPortRaces<T>(
  start: () => Promise<T>,
  attempts: number,
  log: (line: string) => void,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= attempts || !isPortRace(error)) throw error;
      log(`[stack] a port was taken between choosing and binding it; starting again (${attempt + 1} of ${attempts})`);
    }
  }
}

export async function startEmbeddedStack(options: EmbeddedStackOptions): Promise<EmbeddedStack> {
  return retryPortRaces(() => startOnce(options), START_ATTEMPTS, options.log ?? (() => {}));
}

/**
 * The Temporal dev server's options over a data folder: its log there, and with `persistent` its SQLite file too (a
 * server started again with the same options comes back with its workflows).
 */
export function temporalOptionsIn(
  dataDir: string,
  server: Pick<
    TemporalDevServerOptions,
    'binary' | 'port' | 'uiPort' | 'namespace' | 'dynamicConfig' | 'uiCodecEndpoint'
  >,
  persistent: boolean,
): TemporalDevServerOptions {
  return {
    ...server,
    ...(persistent ? { dbFile: temporalDbFile(dataDir) } : {}),
    logPath: join(dataDir, 'logs', 'temporal.log'),
  };
}

/** MinIO's options over a data folder: its objects and its log there, the embedded stack's credentials and region. */
export function minioOptionsIn(
  dataDir: string,
  server: Pick<MinioOptions, 'binary' | 'port' | 'consolePort' | 'bucket'>,
): MinioOptions {
  return {
    ...server,
    dataDir: join(dataDir, 'minio'),
    logPath: join(dataDir, 'logs', 'minio.log'),
    user: DEFAULTS.minioUser,
    password: DEFAULTS.minioPassword,
    region: DEFAULTS.region,
  };
}

async function startOnce(options: EmbeddedStackOptions): Promise<EmbeddedStack> {
  const { settings, mode } = options;
  const log = options.log ?? (() => {});
  const ephemeral = mode === 'ephemeral';
  const dataDir = ephemeral ? mkdtempSync(join(tmpdir(), 'longrun-stack-')) : settings.dataDir;
  const ports = ephemeral ? await ephemeralPorts() : settings.ports;
  if (!ephemeral) {
    await assertStandardPortsFree(settings, {
      temporal: Boolean(options.binaries.temporal),
      minio: Boolean(options.binaries.minio),
      codec: Boolean(options.codec),
    });
  }

  let temporal: RunningTemporal | undefined;
  let minio: RunningMinio | undefined;
  let codecServer: CodecServer | undefined;
  const stop = async () => {
    await Promise.all([temporal?.process.stop(), minio?.process.stop(), codecServer?.close()]);
    if (ephemeral) rmSync(dataDir, { recursive: true, force: true });
  };
  const namespace = options.namespace ?? 'default';
  try {
    const started = Date.now();
    if (options.codec && options.binaries.temporal) {
      codecServer = await startUiCodecServer(options.codec, namespace, ports.temporalUi, settings, ephemeral);
    }
    const [temporalResult, minioResult] = await Promise.allSettled([
      options.binaries.temporal
        ? startTemporal(
            temporalOptionsIn(
              dataDir,
              {
                binary: options.binaries.temporal,
                port: ports.temporal,
                uiPort: ports.temporalUi,
                namespace,
                ...(options.dynamicConfig ? { dynamicConfig: options.dynamicConfig } : {}),
                ...(codecServer ? { uiCodecEndpoint: codecServer.url } : {}),
              },
              !ephemeral,
            ),
          )
        : undefined,
      options.binaries.minio
        ? startMinio(
            minioOptionsIn(dataDir, {
              binary: options.binaries.minio,
              port: ports.minio,
              consolePort: ports.minioConsole,
              bucket: settings.bucket,
            }),
          )
        : undefined,
    ]);
    // Keep whatever did start, so that stop() reaches it when the other failed.
    if (temporalResult.status === 'fulfilled') temporal = temporalResult.value;
    if (minioResult.status === 'fulfilled') minio = minioResult.value;
    if (temporalResult.status === 'rejected') throw temporalResult.reason;
    if (minioResult.status === 'rejected') throw minioResult.reason;
    log(`[stack] up in ${Date.now() - started} ms (data and logs: ${dataDir})`);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    ...(temporal
      ? {
          temporal: {
            address: temporal.address,
            namespace: temporal.namespace,
            uiUrl: temporal.uiUrl,
            ...(temporal.uiCodecEndpoint ? { codecEndpoint: temporal.uiCodecEndpoint } : {}),
          },
        }
      : {}),
    ...(minio ? { minio: { endpoint: minio.endpoint, consoleUrl: minio.consoleUrl, target: minio.target } } : {}),
    dataDir,
    stop,
  };
}

/**
 * The main job's standard ports (LONGRUN_*_PORT) that the servers about to start need: throws
 * {@link PortTakenError} naming the variable of the first one taken.
 */
export async function assertStandardPortsFree(
  settings: Settings,
  starting: { temporal: boolean; minio: boolean; codec: boolean },
): Promise<void> {
  const { ports } = settings;
  await assertPortsFree([
    ...(starting.temporal
      ? [
          { port: ports.temporal, service: 'Temporal server', variable: 'LONGRUN_TEMPORAL_PORT' },
          { port: ports.temporalUi, service: 'Temporal UI', variable: 'LONGRUN_TEMPORAL_UI_PORT' },
          ...(starting.codec
            ? [{ port: settings.codecServer.port, service: 'codec server', variable: 'LONGRUN_CODEC_PORT' }]
            : []),
        ]
      : []),
    ...(starting.minio
      ? [
          { port: ports.minio, service: 'MinIO', variable: 'LONGRUN_MINIO_PORT' },
          { port: ports.minioConsole, service: 'MinIO console', variable: 'LONGRUN_MINIO_CONSOLE_PORT' },
        ]
      : []),
  ]);
}

/**
 * The codec server the Temporal UI on `uiPort` decodes payloads through (encryption on), in this process on
 * loopback: LONGRUN_CODEC_PORT, or a port of its own choosing when ephemeral (the UI is told its address).
 */
export function startUiCodecServer(
  codec: PayloadCodec,
  namespace: string,
  uiPort: number,
  settings: Settings,
  ephemeral: boolean,
): Promise<CodecServer> {
  const ui = [`http://${LOOPBACK}:${uiPort}`, `http://localhost:${uiPort}`];
  return startCodecServer({
    codec,
    namespaces: [namespace],
    origins: [...ui, ...settings.codecServer.origins],
    host: LOOPBACK,
    port: ephemeral ? 0 : settings.codecServer.port,
  });
}

async function ephemeralPorts(): Promise<Settings['ports']> {
  const [temporal, temporalUi, minio, minioConsole] = (await freePorts(4)) as [number, number, number, number];
  return { temporal, temporalUi, minio, minioConsole };
}
