/**
 * How longrun reaches Temporal: where (config/addresses.ts: TEMPORAL_ADDRESS, a temporal CLI profile through
 * `@temporalio/envconfig` as the temporal CLI reads them, or LONGRUN_TEMPORAL_PORT on loopback), with the payload
 * codec when encryption is on (LONGRUN_ENCRYPTION_KEYS or LONGRUN_ENCRYPTION_KEYS_FILE: docs/encryption.md), and
 * traced when OTEL_EXPORTER_OTLP_ENDPOINT is set (config/tracing.ts, docs/metrics.md#traces). A server that does not
 * answer is a {@link TemporalNotAnsweringError} naming what pointed there.
 */
import { connect as tcpConnect } from 'node:net';
import { status as grpcStatus } from '@grpc/grpc-js';
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { toClientOptions } from '@temporalio/envconfig';
import type { ClientConnectConfig } from '@temporalio/envconfig';
import { encryptionDataConverter } from '../codec/payload-codec.ts';
import { chooseTemporal, temporalAdvice } from './addresses.ts';
import type { AddressChoice } from './addresses.ts';
import { readEncryptionKeys } from './settings.ts';
import { startTracing } from './tracing.ts';
import type { Tracing } from './tracing.ts';

export interface TemporalTarget {
  connectionOptions: ClientConnectConfig['connectionOptions'];
  namespace: string;
  /** True when the environment or a profile names a server: then longrun starts no Temporal of its own. */
  configured: boolean;
  /** Where the address came from, for messages (config/addresses.ts); absent in a target built by hand. */
  choice?: AddressChoice;
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

/**
 * The Temporal target of this environment, by the one precedence of config/addresses.ts: TEMPORAL_ADDRESS, a
 * profile chosen with TEMPORAL_PROFILE / TEMPORAL_CONFIG_FILE, LONGRUN_TEMPORAL_PORT on 127.0.0.1, the default
 * profile, 127.0.0.1:7233.
 */
export function loadTemporalTarget(env: Readonly<Record<string, string | undefined>> = process.env): TemporalTarget {
  const choice = chooseTemporal(env);
  const config = toClientOptions(choice.config);
  const keys = readEncryptionKeys(env);
  const tracing = startTracing(env);
  const { config: _, ...described } = choice;
  return {
    connectionOptions: config.connectionOptions,
    namespace: config.namespace ?? 'default',
    configured: choice.external,
    choice: described,
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
    choice: {
      address,
      origin: 'started',
      text: `${address} (the Temporal server this process started)`,
      external: false,
    },
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
  await probeTemporal(target);
  const connection = await Connection.connect({
    connectTimeout: CONNECT_TIMEOUT_MS,
    ...target.connectionOptions,
    channelArgs: { 'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS },
  }).catch((error: unknown) => {
    throw new TemporalNotAnsweringError(target, connectFailure(error));
  });
  return new Client({
    connection,
    namespace: target.namespace,
    ...(target.dataConverter ? { dataConverter: target.dataConverter } : {}),
    // Traced: each start, Update, Signal and Query is a span whose context the workflow's spans continue.
    ...(target.tracing ? { interceptors: { workflow: target.tracing.clientInterceptors() } } : {}),
  });
}

/** The address's choice: the target's own, or the address alone for a target built by hand. */
function choiceOf(target: TemporalTarget): AddressChoice {
  const address = String(target.connectionOptions.address ?? 'localhost:7233');
  return target.choice ?? { address, origin: 'given', text: address, external: true };
}

/**
 * Thrown when the Temporal server a target names does not answer: the message names the address and what chose it
 * (`TEMPORAL_ADDRESS=127.0.0.1:17233 (from the environment) does not answer (connect ECONNREFUSED 127.0.0.1:17233):
 * start the server it names …`), and what to do; never a transport library's own text.
 */
export class TemporalNotAnsweringError extends Error {
  readonly address: string;
  readonly choice: AddressChoice;
  constructor(target: TemporalTarget, why: string, advice: string = temporalAdvice(choiceOf(target))) {
    const choice = choiceOf(target);
    super(`Temporal at ${choice.text} does not answer (${why}): ${advice}`);
    this.name = 'TemporalNotAnsweringError';
    this.address = choice.address;
    this.choice = choice;
  }
}

/** A failed connection in a few words: the gRPC details, never a Rust transport error's text. */
function connectFailure(error: unknown): string {
  if (isGrpcServiceError(error)) {
    const code: grpcStatus = Number(error.code);
    if (code === grpcStatus.DEADLINE_EXCEEDED) return 'no answer in time';
    return /Last error: (?:Error: )?(.*?)\.? Resolution note/.exec(error.details)?.[1] ?? error.details;
  }
  const message = error instanceof Error ? error.message : String(error);
  if (/tonic|transport error|hyper/i.test(message)) return 'the connection failed';
  return message.length > 200 ? `${message.slice(0, 200)}…` : message;
}

/** `host:port` (an IPv6 host in brackets) split, or undefined when the address has no port. */
function hostAndPort(address: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(address.replace(/^\w+:\/\//, ''));
  const host = match?.[1] ?? match?.[2];
  return host && match ? { host, port: Number(match[3]) } : undefined;
}

/**
 * Opens a TCP connection to the target's address and closes it: a refused or unresolvable address is a
 * {@link TemporalNotAnsweringError} at once (gRPC would try again until its deadline). An address that answers, or
 * cannot be told within the connect timeout, is left to the gRPC connection.
 */
export async function probeTemporal(target: TemporalTarget, advice?: string): Promise<void> {
  const where = hostAndPort(String(target.connectionOptions.address ?? ''));
  if (!where) return;
  const failure = await new Promise<string | undefined>((resolve) => {
    const socket = tcpConnect({ host: where.host, port: where.port });
    const done = (why: string | undefined) => {
      socket.destroy();
      resolve(why);
    };
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => done(undefined));
    socket.once('connect', () => done(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) =>
      done(error.code === 'ENOTFOUND' ? `no host ${where.host}` : error.message),
    );
  });
  if (failure !== undefined) throw new TemporalNotAnsweringError(target, failure, advice);
}

/**
 * Checks that the target's server answers (a connection and its system info), or throws
 * {@link TemporalNotAnsweringError} with `advice` (what to do, for the process that checks).
 */
export async function assertTemporalAnswers(target: TemporalTarget, advice?: string): Promise<void> {
  await probeTemporal(target, advice);
  const connection = await Connection.connect({
    connectTimeout: CONNECT_TIMEOUT_MS,
    ...target.connectionOptions,
  }).catch((error: unknown) => {
    throw new TemporalNotAnsweringError(target, connectFailure(error), advice);
  });
  await connection.close();
}
