/**
 * How longrun reaches Temporal: through `@temporalio/envconfig`, exactly as the temporal CLI does
 * (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE
 * and the CLI's config profiles).
 */
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { ClientConnectConfig } from '@temporalio/envconfig';

export interface TemporalTarget {
  connectionOptions: ClientConnectConfig['connectionOptions'];
  namespace: string;
  /** True when the environment or a profile names a server: then longrun starts no Temporal of its own. */
  configured: boolean;
}

export function loadTemporalTarget(env: Readonly<Record<string, string | undefined>> = process.env): TemporalTarget {
  const config = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
  return {
    connectionOptions: config.connectionOptions,
    namespace: config.namespace ?? 'default',
    configured: Boolean(config.connectionOptions.address),
  };
}

/** The same target, pointed at the embedded dev server instead. */
export function localTemporalTarget(address: string, namespace: string): TemporalTarget {
  return { connectionOptions: { address }, namespace, configured: false };
}
