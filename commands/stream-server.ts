/**
 * The stream server (`longrun stream-server`, docs/streaming.md): an agent's live stream over HTTP for browsers and
 * anything that reads Server-Sent Events, and a small page that shows a live agent.
 *
 *   GET /agents/<agentId>/stream[?from=<offset>|end]   the stream as Server-Sent Events: `id: <offset>`,
 *                                                     `data: <item as JSON>`; `Last-Event-ID` resumes after that
 *                                                     offset (an EventSource sends it when it reconnects)
 *   GET /agents/<agentId>                             the page: the agent's text as it is written, its tool calls
 *                                                     and results, compactions, steers, interrupts, turn ends
 *   GET /healthz                                      `ok`
 *
 * It reads S3 (the log) and asks Temporal only for the agent's life (its state) when a stream opens. It listens on
 * loopback unless told otherwise: the stream is the agent's whole output, and the server has no authentication of
 * its own (put it behind your proxy's to serve it further).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { agentState } from '../client/agents.ts';
import { streamLife } from '../client/stream.ts';
import type { StreamStore } from '../client/stream.ts';
import { AGENT_ID_PATTERN, AGENT_ID_RULE, agentLife } from '../contract/keys.ts';
import { LOOPBACK } from '../stack/ports.ts';
import { streamPage } from './stream-page.ts';

/** The port the stream server listens on unless told otherwise. */
export const STREAM_SERVER_PORT = 7244;
/** A comment line this often keeps proxies from closing an idle stream. */
const KEEP_ALIVE_MS = 15_000;

export interface StreamServerOptions {
  client: Client;
  store: StreamStore;
  host: string;
  /** 0: a free port. */
  port: number;
  /** How often the log is polled for new items (default: the client library's). */
  pollMs?: number;
}

export interface StreamServer {
  url: string;
  close(): Promise<void>;
}

/** Where a stream opens: after `Last-Event-ID` when the browser resumes, else `?from=` (default 0). */
export function startOffset(lastEventId: string | undefined, from: string | null): number | 'end' | Error {
  if (lastEventId !== undefined && lastEventId !== '') {
    const last = Number(lastEventId);
    if (!Number.isSafeInteger(last) || last < 0)
      return new Error(`Last-Event-ID must be an offset, got ${lastEventId}`);
    return last + 1;
  }
  if (from === null || from === '') return 0;
  if (from === 'end') return 'end';
  const offset = Number(from);
  if (!Number.isSafeInteger(offset) || offset < 0) {
    return new Error(`from must be an offset (a whole number >= 0) or end, got ${from}`);
  }
  return offset;
}

function refuse(response: ServerResponse, status: number, message: string): void {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  response.end(`${message}\n`);
}

async function serveStream(
  options: StreamServerOptions,
  request: IncomingMessage,
  response: ServerResponse,
  agentId: string,
  query: URLSearchParams,
): Promise<void> {
  const header = request.headers['last-event-id'];
  const from = startOffset(Array.isArray(header) ? header[0] : header, query.get('from'));
  if (from instanceof Error) return refuse(response, 400, from.message);
  const controller = new AbortController();
  request.on('close', () => controller.abort());
  try {
    // The agent's life first: an unknown agent is a 404, not an empty stream.
    const life = agentLife(await agentState(options.client, agentId));
    const items = streamLife(options.store, life, {
      from,
      signal: controller.signal,
      ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
    });
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    response.write(': longrun stream\n\n');
    const keepAlive = setInterval(() => response.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
    try {
      for await (const item of items) response.write(`id: ${item.offset}\ndata: ${JSON.stringify(item)}\n\n`);
    } finally {
      clearInterval(keepAlive);
    }
    response.end();
  } catch (error) {
    if (controller.signal.aborted) return;
    if (error instanceof WorkflowNotFoundError) return refuse(response, 404, `no agent ${agentId}`);
    if (!response.headersSent) return refuse(response, 502, `cannot read the stream of ${agentId}: ${String(error)}`);
    response.destroy();
  }
}

/** Starts the server; resolves once it listens. */
export async function startStreamServer(options: StreamServerOptions): Promise<StreamServer> {
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://stream-server');
    if (request.method !== 'GET') return refuse(response, 405, 'only GET');
    if (url.pathname === '/healthz') return refuse(response, 200, 'ok');
    const match = /^\/agents\/([^/]+)(\/stream)?\/?$/.exec(url.pathname);
    if (!match) return refuse(response, 404, 'not found: GET /agents/<agentId> (the page) or /agents/<agentId>/stream');
    const agentId = decodeURIComponent(match[1]!);
    if (!AGENT_ID_PATTERN.test(agentId)) return refuse(response, 400, `agent id ${agentId} ${AGENT_ID_RULE}`);
    if (!match[2]) {
      response.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
      });
      response.end(streamPage(agentId));
      return;
    }
    void serveStream(options, request, response, agentId, url.searchParams);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface StreamServerCommand {
  client: Client;
  store: StreamStore;
  port?: number;
  host?: string;
  log: (line: string) => void;
  /** Settles when the server should stop (default: the first SIGINT or SIGTERM). */
  stop?: Promise<unknown>;
}

/** `longrun stream-server`: the server until Ctrl-C or SIGTERM. */
export async function runStreamServer(options: StreamServerCommand): Promise<void> {
  const server = await startStreamServer({
    client: options.client,
    store: options.store,
    host: options.host ?? LOOPBACK,
    port: options.port ?? STREAM_SERVER_PORT,
  });
  options.log(`[stream] listening on ${server.url}: GET /agents/<agent> (the page), /agents/<agent>/stream (SSE)`);
  try {
    await (options.stop ??
      new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      }));
  } finally {
    await server.close();
    options.log('[stream] stopped');
  }
}
