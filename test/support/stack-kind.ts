/**
 * Which stack the e2e tests run against: LONGRUN_STACK=embedded (the default: the Temporal dev server and MinIO,
 * `npm test`) or cluster (PostgreSQL, the Temporal server, its UI and MinIO: `npm run test:cluster`,
 * stack/cluster.ts). Read by the global setup, and by the tests that run only on one of them.
 */
import { SettingsError } from '../../config/settings.ts';

export type StackKind = 'embedded' | 'cluster';

export function stackKind(env: Readonly<Record<string, string | undefined>> = process.env): StackKind {
  const value = env.LONGRUN_STACK ?? '';
  if (value === '' || value === 'embedded') return 'embedded';
  if (value === 'cluster') return 'cluster';
  throw new SettingsError('LONGRUN_STACK', `must be embedded or cluster (got ${JSON.stringify(value)})`);
}

/** The e2e run is against cluster mode. */
export const onCluster = stackKind() === 'cluster';
