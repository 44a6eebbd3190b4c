/**
 * The codec server: Temporal's codec server protocol over HTTP, so the Temporal UI (and the temporal CLI's
 * `--codec-endpoint`) show decoded payloads. `POST …/encode` and `POST …/decode` take and return
 * `{"payloads":[{"metadata":{"<key>":"<base64>"},"data":"<base64>"}]}` (Payloads as protobuf JSON); only the last
 * path segment counts, so the server can sit under any prefix.
 *
 * Who may decode: the UI's browser calls the server directly, so
 * - the `X-Namespace` header must name a namespace the server serves (403 otherwise);
 * - a request from a browser (with an `Origin` header) must come from an allowed origin (403 otherwise), and the CORS
 *   preflight is answered for those origins only;
 * - when `authorization` is set, the `Authorization` header must equal it (401 otherwise).
 *
 *   const server = await startCodecServer({ codec, namespaces: ['default'], origins: ['http://127.0.0.1:8233'] });
 *   // temporal server start-dev --ui-codec-endpoint ${server.url}
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Namespaces whose payloads the server encodes and decodes (the `X-Namespace` header). */
  namespaces: readonly string[];
  /** Browser origins allowed to call it (the Temporal UI's, e.g. `http://localhost:8080`). */
  origins: readonly string[];
  /** When set, the exact `Authorization` header value a request must carry. */
  authorization?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
}

export interface CodecServer {
  /** `http://host:port`: what `--ui-codec-endpoint` and `TEMPORAL_CODEC_ENDPOINT` take. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** A request body larger than this is refused (413); a history payload is at most 2 MB. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** What the Temporal UI sends: its JSON, the namespace, and with OIDC its access token. */
const ALLOWED_HEADERS = 'Content-Type, X-Namespace, Authorization, Authorization-Extras';

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer((request, response) => {
    handle(options, request, response).catch((error: unknown) => {
      const status = error instanceof HttpError ? error.status : 400;
      reply(response, status, { message: error instanceof Error ? error.message : String(error) });
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port: options.port ?? 0, exclusive: true }, () => {
      server.off('error', reject);
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      resolve({
        url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

async function handle(options: CodecServerOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const origin = request.headers.origin;
  const originAllowed = origin !== undefined && options.origins.includes(origin);
  if (originAllowed) {
    response.setHeader('Access-Control-Allow-Origin', origin);
    response.setHeader('Access-Control-Allow-Credentials', 'true');
  }
  response.setHeader('Vary', 'Origin');
  const operation = /\/(encode|decode)\/?$/.exec(new URL(request.url ?? '/', 'http://codec').pathname)?.[1];
  if (!operation) throw new HttpError(404, 'not found: the codec server answers POST …/encode and …/decode');
  if (origin !== undefined && !originAllowed) {
    throw new HttpError(
      403,
      `origin ${origin} may not call this codec server (allowed: ${options.origins.join(', ')})`,
    );
  }
  if (request.method === 'OPTIONS') {
    response.writeHead(204, {
      'Access-Control-Allow-Methods': 'POST, OPTIONS',
      'Access-Control-Allow-Headers': ALLOWED_HEADERS,
      'Access-Control-Max-Age': '600',
    });
    response.end();
    return;
  }
  if (request.method !== 'POST') {
    response.setHeader('Allow', 'POST, OPTIONS');
    throw new HttpError(405, `${request.method} is not allowed: POST the payloads`);
  }
  if (options.authorization !== undefined && !sameText(request.headers.authorization, options.authorization)) {
    throw new HttpError(401, 'the Authorization header is missing or wrong');
  }
  const namespace = request.headers['x-namespace'];
  if (typeof namespace !== 'string' || !options.namespaces.includes(namespace)) {
    throw new HttpError(
      403,
      namespace === undefined
        ? 'the X-Namespace header is missing'
        : `namespace ${JSON.stringify(namespace)} is not served here (served: ${options.namespaces.join(', ')})`,
    );
  }
  const payloads = payloadsFromJson(await readBody(request));
  const result = operation === 'encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
  reply(response, 200, { payloads: result.map(payloadToJson) });
}

function sameText(given: string | undefined, expected: string): boolean {
  const a = Buffer.from(given ?? '');
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `the body is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

interface JsonPayload {
  metadata?: Record<string, string> | null;
  data?: string | null;
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function bytes(value: unknown, where: string): Uint8Array {
  if (typeof value !== 'string' || !BASE64.test(value)) throw new HttpError(400, `${where} must be a base64 string`);
  return Buffer.from(value, 'base64');
}

/** Payloads as protobuf JSON (bytes as base64) → Payload objects; 400 on anything else. */
export function payloadsFromJson(body: string): Payload[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new HttpError(400, 'the body is not JSON');
  }
  const list = (parsed as { payloads?: unknown } | null)?.payloads;
  if (!Array.isArray(list)) throw new HttpError(400, 'the body must be {"payloads":[…]}');
  return list.map((item: JsonPayload, index) => {
    if (typeof item !== 'object' || item === null) throw new HttpError(400, `payloads[${index}] must be an object`);
    const metadata = Object.fromEntries(
      Object.entries(item.metadata ?? {}).map(([key, value]) => [
        key,
        bytes(value, `payloads[${index}].metadata.${key}`),
      ]),
    );
    return { metadata, data: item.data == null ? new Uint8Array() : bytes(item.data, `payloads[${index}].data`) };
  });
}

export function payloadToJson(payload: Payload): { metadata: Record<string, string>; data: string } {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([key, value]) => [key, Buffer.from(value ?? []).toString('base64')]),
    ),
    data: Buffer.from(payload.data ?? []).toString('base64'),
  };
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  if (response.headersSent) return void response.end();
  response.writeHead(status, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify(body));
}
