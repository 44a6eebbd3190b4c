/**
 * How longrun reaches Temporal: through `@temporalio/envconfig`, exactly as the temporal CLI does
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE
 * and the CLI's config profiles), and with the payload codec when encryption is on (LONGRUN_ENCRYPTION_KEYS or
 * LONGRUN_ENCRYPTION_KEYS_FILE: docs/encryption.md).
 */
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { ClientConnectConfig } from '@temporalio/envconfig';
import { encryptionDataConverter } from '../codec/payload-codec.ts';
import { readEncryptionKeys } from './settings.ts';

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
}

export function loadTemporalTarget(env: Readonly<Record<string, string | undefined>> = process.env): TemporalTarget {
  const config = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
  const keys = readEncryptionKeys(env);
  return {
    connectionOptions: config.connectionOptions,
    namespace: config.namespace ?? 'default',
    configured: Boolean(config.connectionOptions.address),
    ...(keys ? { dataConverter: encryptionDataConverter(keys) } : {}),
  };
}

/** The same target, pointed at the embedded dev server instead (with the same codec, when encryption is on). */
export function localTemporalTarget(address: string, namespace: string, dataConverter?: DataConverter): TemporalTarget {
  return { connectionOptions: { address }, namespace, configured: false, ...(dataConverter ? { dataConverter } : {}) };
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
  });
}
