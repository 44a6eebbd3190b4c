/**
 * How longrun reaches Temporal: through `@temporalio/envconfig`, exactly as the temporal CLI does
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE
 * and the CLI's config profiles), and with the payload codec when encryption is on (LONGRUN_ENCRYPTION_KEYS or
 * LONGRUN_ENCRYPTION_KEYS_FILE: docs/encryption.md), and traced when OTEL_EXPORTER_OTLP_ENDPOINT is set
 * (config/tracing.ts, docs/metrics.md#traces).
 */
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { ClientConnectConfig } from '@temporalio/envconfig';
import { encryptionDataConverter } from '../codec/payload-codec.ts';
import { readEncryptionKeys } from './settings.ts';
import { startTracing } from './tracing.ts';
import type { Tracing } from './tracing.ts';

export interface TemporalTarget {
  connectionOptions: ClientConnectConfig['connectionOptions'];
  namespace: string;
  /** True when the environment or a profile names a server: then longrun starts no Temporal of its own. */
  configured: boolean;
  /**
   * The payload codec every client and worker of this target uses when encryption is on; absent, Temporal's
   * default (payloads in clear).
   */
  dataConverter?: DataConverter;
  /**
   * The process's tracing when OTEL_EXPORTER_OTLP_ENDPOINT turns it on: clients then carry their spans' context to
   * the workflows, and workers trace workflows and activities. Absent: no traces.
   */
  tracing?: Tracing;
}

export function loadTemporalTarget(env: Readonly<Record<string, string | undefined>> = process.env): TemporalTarget {
  const config = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
  const keys = readEncryptionKeys(env);
  const tracing = startTracing(env);
  return {
    connectionOptions: config.connectionOptions,
    namespace: config.namespace ?? 'default',
    configured: Boolean(config.connectionOptions.address),
    ...(keys ? { dataConverter: encryptionDataConverter(keys) } : {}),
    ...(tracing ? { tracing } : {}),
  };
}

/**
 * A target pointed at the embedded dev server, with the codec and tracing of `like` (the target the environment
 * names) when it has them.
 */
export function localTemporalTarget(
  address: string,
  namespace: string,
  like: Pick<TemporalTarget, 'dataConverter' | 'tracing'> = {},
): TemporalTarget {
  return {
    connectionOptions: { address },
    namespace,
    configured: false,
    ...(like.dataConverter ? { dataConverter: like.dataConverter } : {}),
    ...(like.tracing ? { tracing: like.tracing } : {}),
  };
}

const CONNECT_TIMEOUT_MS = 5_000;

/**
 * gRPC's reconnect backoff grows to 2 minutes by default: a client waiting through a server restart would notice the
 * server back only that long after. Capped so that a waiting Update is sent again within seconds of its return.
 */
const MAX_RECONNECT_BACKOFF_MS = 5_000;

/** A client of the target's server and namespace: what the client library, the commands and the worker's own
 * in-process agents use. */
export async function connectClient(target: TemporalTarget): Promise<Client> {
  const connection = await Connection.connect({
    connectTimeout: CONNECT_TIMEOUT_MS,
    ...target.connectionOptions,
    channelArgs: { 'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS },
  });
  return new Client({
    connection,
    namespace: target.namespace,
    ...(target.dataConverter ? { dataConverter: target.dataConverter } : {}),
    // Traced: each start, Update, Signal and Query is a span whose context the workflow's spans continue.
    ...(target.tracing ? { interceptors: { workflow: target.tracing.clientInterceptors() } } : {}),
  });
}
