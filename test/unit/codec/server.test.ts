/**
 * The codec server over real HTTP on loopback: Temporal's protocol (POST …/encode and …/decode, payloads as protobuf
 * JSON), and who may use it: the X-Namespace header, the browser origins (CORS), the Authorization header.
 */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keyring } from '../../../codec/keys.ts';
import { EncryptionCodec } from '../../../codec/payload-codec.ts';
import { payloadToJson, startCodecServer } from '../../../codec/server.ts';
import type { CodecServer } from '../../../codec/server.ts';

const UI = 'http://127.0.0.1:8233';
const codec = new EncryptionCodec(new Keyring([{ id: 'k1', key: new Uint8Array(randomBytes(32)) }], 'test'));
let server: CodecServer;
let guarded: CodecServer;

beforeAll(async () => {
  server = await startCodecServer({ codec, namespaces: ['default'], origins: [UI] });
  guarded = await startCodecServer({ codec, namespaces: ['default'], origins: [UI], authorization: 'Bearer t0ken' });
});
afterAll(async () => {
  await server?.close();
  await guarded?.close();
});

async function encrypted(value: unknown) {
  const [payload] = await codec.encode([defaultPayloadConverter.toPayload(value)]);
  return payloadToJson(payload!);
}

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Namespace': 'default', ...headers },
    body: JSON.stringify(body),
  });
}

describe('codec server', () => {
  it('decodes what the codec encoded, and encodes, as protobuf JSON', async () => {
    const response = await post(`${server.url}/decode`, { payloads: [await encrypted({ text: 'hi' })] });
    expect(response.status).toBe(200);
    const { payloads } = (await response.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(Buffer.from(payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('json/plain');
    expect(JSON.parse(Buffer.from(payloads[0]!.data, 'base64').toString())).toEqual({ text: 'hi' });

    const plain = payloadToJson(defaultPayloadConverter.toPayload('from the UI'));
    const encoded = (await (await post(`${server.url}/encode`, { payloads: [plain] })).json()) as {
      payloads: { metadata: Record<string, string> }[];
    };
    expect(Buffer.from(encoded.payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('binary/encrypted');
  });

  it('answers under any path prefix, only the last segment counts', async () => {
    expect((await post(`${server.url}/default/decode`, { payloads: [] })).status).toBe(200);
    expect((await post(`${server.url}/somewhere/else`, { payloads: [] })).status).toBe(404);
  });

  it('refuses a namespace it does not serve, or none', async () => {
    const wrong = await post(`${server.url}/decode`, { payloads: [] }, { 'X-Namespace': 'payments' });
    expect(wrong.status).toBe(403);
    expect(await wrong.json()).toEqual({ message: 'namespace "payments" is not served here (served: default)' });
    const none = await fetch(`${server.url}/decode`, { method: 'POST', body: '{"payloads":[]}' });
    expect(none.status).toBe(403);
  });

  it('answers the CORS preflight for the UI origin only, and marks responses for it', async () => {
    const preflight = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: {
        Origin: UI,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(UI);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    expect(preflight.headers.get('access-control-allow-headers')).toContain('X-Namespace');
    expect(preflight.headers.get('access-control-allow-credentials')).toBe('true');

    const stranger = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(stranger.status).toBe(403);
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
    const strangerPost = await post(`${server.url}/decode`, { payloads: [] }, { Origin: 'http://evil.example' });
    expect(strangerPost.status).toBe(403);

    const fromUi = await post(`${server.url}/decode`, { payloads: [] }, { Origin: UI });
    expect(fromUi.status).toBe(200);
    expect(fromUi.headers.get('access-control-allow-origin')).toBe(UI);
  });

  it('with an Authorization value set, refuses requests without it', async () => {
    expect((await post(`${guarded.url}/decode`, { payloads: [] })).status).toBe(401);
    expect((await post(`${guarded.url}/decode`, { payloads: [] }, { Authorization: 'Bearer other' })).status).toBe(401);
    expect((await post(`${guarded.url}/decode`, { payloads: [] }, { Authorization: 'Bearer t0ken' })).status).toBe(200);
  });

  it('400 for a body that is not payloads JSON, or a payload that does not decode; 405 for GET', async () => {
    const notJson = await fetch(`${server.url}/decode`, {
      method: 'POST',
      headers: { 'X-Namespace': 'default' },
      body: 'payloads please',
    });
    expect(notJson.status).toBe(400);
    expect((await post(`${server.url}/decode`, { items: [] })).status).toBe(400);
    expect((await post(`${server.url}/decode`, { payloads: [{ data: '***' }] })).status).toBe(400);
    const other = new EncryptionCodec(new Keyring([{ id: 'k9', key: new Uint8Array(randomBytes(32)) }], 'test'));
    const [foreign] = await other.encode([defaultPayloadConverter.toPayload('x')]);
    const unknown = await post(`${server.url}/decode`, { payloads: [payloadToJson(foreign!)] });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { message: string }).message).toContain('no encryption key with id "k9"');
    expect((await fetch(`${server.url}/decode`, { headers: { 'X-Namespace': 'default' } })).status).toBe(405);
  });
});
