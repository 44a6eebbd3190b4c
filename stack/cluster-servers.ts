/**
 * Cluster mode's servers set up and started (stack/cluster.ts): the databases' schemas by the Temporal SQL tool, the
 * Temporal server, the namespace and longrun's search attributes as compose's temporal-setup registers them, and the
 * Temporal UI server; each server supervised (stack/process.ts).
 */
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import protos from '@temporalio/proto';
import { INDEXED_TYPES } from '../config/search-attributes.ts';
import { SEARCH_ATTRIBUTE_TYPES } from '../contract/search-attributes.ts';
import type { SearchAttributeTypeName } from '../contract/search-attributes.ts';
import { NAMESPACE_RETENTION_DAYS, schemaCommands, temporalServerArgs, uiServerArgs } from './cluster-config.ts';
import { tailOfText } from './logs.ts';
import { LOOPBACK } from './ports.ts';
import { ServerProcess } from './process.ts';

/**
 * How often each server service re-reads namespaces (the server's `system.namespaceCacheRefreshInterval`, 2 s by
 * default): a namespace or search attribute registered now is known to every service after one interval.
 */
const NAMESPACE_REFRESH_MS = 2_000;

/** Creates and updates both databases (schemaCommands), each run of the SQL tool logged to `logPath`. */
export async function setUpSchema(sqlTool: string, port: number, logPath: string): Promise<void> {
  const log = createWriteStream(logPath, { flags: 'a' });
  try {
    for (const args of schemaCommands(port)) {
      try {
        const { stdout, stderr } = await promisify(execFile)(sqlTool, args, { timeout: 120_000 });
        log.write(`$ temporal-sql-tool ${args.join(' ')}\n${stdout}${stderr}`);
      } catch (error) {
        const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
        throw new Error(
          `The Temporal SQL tool failed to set up the databases (temporal-sql-tool ${args.join(' ')}):\n` +
            tailOfText(`${stdout}${stderr}`, 15),
          { cause: error },
        );
      }
    }
  } finally {
    await new Promise<void>((done) => log.end(done));
  }
}

const START_TIMEOUT_MS = 90_000;
const SETUP_TIMEOUT_MS = 60_000;

/** Starts the Temporal server, healthy once its frontend answers the health check as serving. */
export async function startTemporalServer(binary: string, root: string, env: Record<string, string>, logPath: string) {
  const address = `${LOOPBACK}:${env.FRONTEND_GRPC_PORT}`;
  return ServerProcess.start({
    name: 'Temporal server',
    command: binary,
    args: temporalServerArgs(root),
    env: { ...process.env, ...env },
    logPath,
    startTimeoutMs: START_TIMEOUT_MS,
    healthy: async () => {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        const { status } = await connection.healthService.check({
          service: 'temporal.api.workflowservice.v1.WorkflowService',
        });
        return status === protos.grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING;
      } finally {
        await connection.close();
      }
    },
  });
}

/** A visibility query that names every attribute (the frontend refuses it until it knows them all). */
export function queryNaming(attributes: Readonly<Record<string, SearchAttributeTypeName>>): string {
  const sample = { Int: '0', Keyword: '""', Datetime: '"2000-01-01T00:00:00Z"', Double: '0' } as const;
  return Object.entries(attributes)
    .map(([name, type]) => `${name} = ${sample[type]}`)
    .join(' AND ');
}

/**
 * The namespace (7 days' retention) and longrun's search attributes, as compose's temporal-setup registers them;
 * waits until they can be used (a service knows them after its next namespace refresh).
 */
export async function setUpNamespace(address: string, namespace: string, log: (line: string) => void): Promise<void> {
  const connection = await Connection.connect({ address });
  const deadline = Date.now() + SETUP_TIMEOUT_MS;
  // Right after the server starts, or a registration, a service may not know the namespace yet: ask again.
  const retried = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        return await call();
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`${what}: ${(error as Error).message}`, { cause: error });
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };
  try {
    let registered = false;
    await retried(`registering namespace ${namespace}`, async () => {
      try {
        await connection.workflowService.registerNamespace({
          namespace,
          workflowExecutionRetentionPeriod: msToTs(`${NAMESPACE_RETENTION_DAYS}d`),
        });
        registered = true;
      } catch (error) {
        if ((error as { code?: number }).code !== status.ALREADY_EXISTS) throw error;
      }
    });
    const known = await retried('listing search attributes', () =>
      connection.operatorService.listSearchAttributes({ namespace }),
    );
    const missing = Object.entries(SEARCH_ATTRIBUTE_TYPES).filter(([name]) => !(name in known.customAttributes));
    if (missing.length > 0) {
      await retried('adding search attributes', () =>
        connection.operatorService.addSearchAttributes({
          namespace,
          searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, INDEXED_TYPES[type]])),
        }),
      );
    }
    if (registered || missing.length > 0) {
      log(
        `[stack] registered ${[registered && `namespace ${namespace}`, missing.length > 0 && `${missing.length} search attributes`].filter(Boolean).join(' and ')}`,
      );
      const query = queryNaming(SEARCH_ATTRIBUTE_TYPES);
      await retried('waiting for the search attributes', () =>
        connection.workflowService.countWorkflowExecutions({ namespace, query }),
      );
      // The frontend knows them; the history and matching services do after their next refresh.
      await new Promise((resolve) => setTimeout(resolve, NAMESPACE_REFRESH_MS + 500));
    }
  } finally {
    await connection.close();
  }
}

/** Starts the Temporal UI server, healthy once its page answers. */
export async function startUiServer(binary: string, root: string, env: Record<string, string>, logPath: string) {
  const url = `http://${LOOPBACK}:${env.TEMPORAL_UI_PORT}`;
  return ServerProcess.start({
    name: 'Temporal UI server',
    command: binary,
    args: uiServerArgs(root),
    env: { ...process.env, ...env },
    logPath,
    startTimeoutMs: START_TIMEOUT_MS,
    healthy: async () => (await fetch(url, { signal: AbortSignal.timeout(1_000) })).ok,
  });
}
