/**
 * A Temporal server on which Worker Deployment Versioning moves a pinned run to the current version at
 * continue-as-new (Server 1.32.1: stack/binaries.ts TEMPORAL_SERVER_VERSIONING), for the release test of the
 * versioned way: SQLite in memory, one history shard, free loopback ports, the namespace and longrun's search
 * attributes set up as cluster mode sets them up (stack/cluster-servers.ts). Gone with its process.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../../config/settings.ts';
import { TEMPORAL_SERVER_VERSIONING } from '../../stack/binaries.ts';
import { SERVER_CONFIG_ENV } from '../../stack/cluster-config.ts';
import { setUpNamespace, startTemporalServer } from '../../stack/cluster-servers.ts';
import { freePorts } from '../../stack/ports.ts';
import { ensureBinaries } from '../../stack/setup.ts';

export interface VersioningServer {
  address: string;
  namespace: string;
  stop(): Promise<void>;
}

const sqlite = (name: string) => `
    ${name}:
      sql:
        pluginName: sqlite
        databaseName: ${name}
        connectAddr: localhost
        connectProtocol: tcp
        connectAttributes:
          mode: memory
          cache: private
        maxConns: 1
        maxIdleConns: 1
        maxConnLifetime: 1h`;

const rpc = (grpc: number, membership: number, http?: number) => `
    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnIP: 127.0.0.1${http !== undefined ? `\n      httpPort: ${http}` : ''}`;

/** The server's configuration: SQLite in memory, every service on its own free ports. */
function config(ports: number[]): string {
  const [grpc, http, fm, mg, mm, hg, hm, wg, wm] = ports as [number, ...number[]];
  return `log:
  stdout: true
  level: warn
persistence:
  numHistoryShards: 1
  defaultStore: default
  visibilityStore: visibility
  datastores:${sqlite('default')}${sqlite('visibility')}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:${rpc(grpc, fm!, http)}
  matching:${rpc(mg!, mm!)}
  history:${rpc(hg!, hm!)}
  worker:${rpc(wg!, wm!)}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:${grpc}
      httpAddress: 127.0.0.1:${http}
dcRedirectionPolicy:
  policy: noop
`;
}

export async function startVersioningServer(log: (line: string) => void = () => {}): Promise<VersioningServer> {
  const settings = loadSettings();
  const paths = await ensureBinaries([TEMPORAL_SERVER_VERSIONING], { cacheDir: settings.cacheDir, log });
  const root = mkdtempSync(join(tmpdir(), 'longrun-versioning-server-'));
  mkdirSync(join(root, 'config'));
  const ports = await freePorts(9);
  writeFileSync(join(root, 'config', `${SERVER_CONFIG_ENV}.yaml`), config(ports));
  const address = `127.0.0.1:${ports[0]}`;
  const server = await startTemporalServer(
    paths[TEMPORAL_SERVER_VERSIONING.name]!,
    root,
    { FRONTEND_GRPC_PORT: String(ports[0]) },
    join(root, 'temporal-server.log'),
  );
  const namespace = 'default';
  try {
    await setUpNamespace(address, namespace, log);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return {
    address,
    namespace,
    async stop() {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
