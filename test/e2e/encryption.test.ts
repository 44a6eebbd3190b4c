/**
 * Encryption on, against the real things: a Temporal dev server of this file's own (started by the embedded stack
 * with the codec server beside it and the UI's --ui-codec-endpoint set), the shared MinIO, a worker and a client with
 * the payload codec. The history and the stored objects are read raw and searched for the user's words; the UI's
 * codec endpoint is driven over real HTTP as the UI's browser drives it; `longrun codec-server` runs as a command.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import protos from '@temporalio/proto';
import type { Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { ToolRegistry } from '../../activities/tools.ts';
import { agentState, sendMessage, startAgent } from '../../client/agents.ts';
import { Keyring } from '../../codec/keys.ts';
import { EncryptionCodec, encryptionDataConverter, keyIdOf } from '../../codec/payload-codec.ts';
import { payloadToJson } from '../../codec/server.ts';
import { loadSettings, PROJECT_ROOT } from '../../config/settings.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { listAgents } from '../../client/reads.ts';
import type { TemporalTarget } from '../../config/temporal.ts';
import { agentWorkflowId } from '../../contract/agent.ts';
import { agentPrefix } from '../../contract/keys.ts';
import { textOf } from '../../engine/messages.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { createOpenAI } from '../../llm/openai.ts';
import { TEMPORAL } from '../../stack/binaries.ts';
import { startEmbeddedStack } from '../../stack/index.ts';
import type { EmbeddedStack } from '../../stack/index.ts';
import { freePort } from '../../stack/ports.ts';
import { ensureBinaries } from '../../stack/setup.ts';
import { OBJECT_METADATA, S3BlobStore } from '../../storage/s3.ts';
import { startInProcessAgents } from '../../worker/in-process.ts';
import type { InProcessAgents } from '../../worker/in-process.ts';
import { newAgentId, sharedBundle } from '../support/harness.ts';

/** Two keys: the older still listed after a rotation, the newer encrypting everything written now. */
const KEYS_TEXT = `2024-q4:${randomBytes(32).toString('base64')},2025-q1:${randomBytes(32).toString('base64')}`;
const SECRET = 'meet at the lighthouse at 04:00, the word is amber-falcon';

let keys: Keyring;
let stack: EmbeddedStack;
let model: ChatServer;
let encrypted: TemporalTarget;
const running: InProcessAgents[] = [];

beforeAll(async () => {
  const settings = loadSettings({ ...process.env, LONGRUN_ENCRYPTION_KEYS: KEYS_TEXT });
  keys = settings.encryptionKeys!;
  const binaries = await ensureBinaries([TEMPORAL], { cacheDir: settings.cacheDir });
  // Temporal only (MinIO is the shared one), with the codec server the UI decodes through.
  stack = await startEmbeddedStack({ mode: 'ephemeral', settings, binaries, codec: new EncryptionCodec(keys) });
  encrypted = localTemporalTarget(stack.temporal!.address, stack.temporal!.namespace, {
    dataConverter: encryptionDataConverter(keys),
  });
  model = await startChatServer((request) => ({
    content: `noted (${request.body.messages.length}): ${textOf(request.body.messages.at(-1)?.content)}`,
  }));
});

afterAll(async () => {
  for (const agents of running) await agents.close();
  await model?.close();
  await stack?.stop();
});

/** A worker and a client on `taskQueue`; encryption on when `temporal` carries the codec and `store` the keys. */
async function agentsOn(temporal: TemporalTarget, store: S3BlobStore, taskQueue: string): Promise<InProcessAgents> {
  const agents = await startInProcessAgents({
    temporal,
    taskQueue,
    deps: {
      store,
      openai: createOpenAI({ apiKey: 'test-key', baseURL: model.baseURL, timeoutMs: 10_000 }),
      tools: new ToolRegistry([]),
    },
    workflowBundle: await sharedBundle(),
  });
  running.push(agents);
  return agents;
}

const sharedS3 = () => inject('stack').s3;

/** Every payload of the agent's history as the server stores it (no codec), search attributes aside. */
async function rawHistory(agents: InProcessAgents, agentId: string) {
  const events: protos.temporal.api.history.v1.IHistoryEvent[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await agents.client.workflowService.getWorkflowExecutionHistory({
      namespace: stack.temporal!.namespace,
      execution: { workflowId: agentWorkflowId(agentId) },
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    events.push(...(page.history?.events ?? []));
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  const payloads: Payload[] = [];
  /** The patch markers' payloads (docs/changing-workflows.md): the SDK's core writes them, in clear. */
  const patches: Payload[] = [];
  /** The event types that carry payloads, by name (WORKFLOW_EXECUTION_STARTED, ACTIVITY_TASK_SCHEDULED, …). */
  const carriers = new Set<string>();
  const walk = (value: unknown, eventType: string): void => {
    if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return;
    const object = value as Record<string, unknown>;
    if (object.data instanceof Uint8Array && typeof object.metadata === 'object' && object.metadata !== null) {
      payloads.push(object);
      carriers.add(eventType);
      return;
    }
    // Search attributes stay in clear by design: the server indexes them (status, model, counts).
    for (const [key, child] of Object.entries(object)) if (key !== 'searchAttributes') walk(child, eventType);
  };
  const EventType = protos.temporal.api.enums.v1.EventType;
  for (const event of events) {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_patch') {
      for (const details of Object.values(marker.details ?? {})) patches.push(...(details.payloads ?? []));
      continue;
    }
    walk(event, EventType[event.eventType ?? 0]!.replace(/^EVENT_TYPE_/, ''));
  }
  const bytes = Buffer.from(protos.temporal.api.history.v1.History.encode({ events }).finish());
  return { events, payloads, patches, carriers, bytes };
}

describe('encryption on', () => {
  let agents: InProcessAgents;
  let agentId: string;

  beforeAll(async () => {
    agents = await agentsOn(encrypted, new S3BlobStore({ ...sharedS3(), encryption: keys }), `enc-${randomUUID()}`);
    agentId = newAgentId('enc');
    await startAgent(agents.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: agents.taskQueue,
      systemPrompt: 'Keep secrets.',
    });
  });

  it('an agent turn: the client reads the reply, and no payload in the history holds the words in clear', async () => {
    const result = await sendMessage(agents.client, agentId, SECRET);
    expect(result.reply).toBe(`noted (2): ${SECRET}`);
    expect(model.requests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'user', content: SECRET });

    const { payloads, patches, carriers, bytes } = await rawHistory(agents, agentId);
    // The start input (the system prompt), the Update's argument and result, activity inputs, results and summaries.
    expect([...carriers]).toEqual(
      expect.arrayContaining([
        'WORKFLOW_EXECUTION_STARTED',
        'WORKFLOW_EXECUTION_UPDATE_ACCEPTED',
        'WORKFLOW_EXECUTION_UPDATE_COMPLETED',
        'ACTIVITY_TASK_SCHEDULED',
        'ACTIVITY_TASK_COMPLETED',
      ]),
    );
    for (const payload of payloads) {
      expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe('binary/encrypted');
      expect(keyIdOf(payload)).toBe('2025-q1');
    }
    // A patch marker is the SDK core's, in clear: it holds the patch's id and nothing of the agent's.
    expect(patches.length).toBeGreaterThan(0); // the turn's Update recorded `reply-by-reference`
    for (const patch of patches) {
      expect(Object.keys(JSON.parse(Buffer.from(patch.data!).toString()) as object).sort()).toEqual([
        'deprecated',
        'id',
      ]);
    }
    expect(bytes.includes(Buffer.from('amber-falcon'))).toBe(false);
    expect(bytes.includes(Buffer.from('Keep secrets'))).toBe(false);
  });

  it('longrun list without the keys lists the encrypted agent (its turns, in the encrypted memo, left out)', async () => {
    await sendMessage(agents.client, agentId, 'and one more');
    const plain = await connectClient(localTemporalTarget(stack.temporal!.address, stack.temporal!.namespace));
    try {
      // The list decoded every memo and threw at the first it could not: the whole list failed without the keys.
      const listed = (await listAgents(plain)).find((agent) => agent.agentId === agentId);
      expect(listed).toMatchObject({ agentId, status: 'running', model: 'gpt-4o-mini' });
      expect(listed).not.toHaveProperty('turns');
      const withKeys = (await listAgents(agents.client)).find((agent) => agent.agentId === agentId);
      expect(withKeys?.turns).toBeGreaterThanOrEqual(2);
    } finally {
      await plain.connection.close();
    }
  });

  it('S3 bodies are encrypted with the same newest key, and read back through the store', async () => {
    const store = new S3BlobStore({ ...sharedS3(), encryption: keys });
    const objects = await store.list(agentPrefix(agentId));
    expect(objects.length).toBeGreaterThanOrEqual(3); // system, user, assistant
    const bodies: string[] = [];
    for (const key of objects) {
      const raw = await store.client.send(new GetObjectCommand({ Bucket: store.bucket, Key: key }));
      expect(raw.Metadata?.[OBJECT_METADATA.keyId]).toBe('2025-q1');
      expect(raw.ContentType).toBe('application/octet-stream');
      expect(Buffer.from(await raw.Body!.transformToByteArray()).includes(Buffer.from('amber-falcon'))).toBe(false);
      bodies.push((await store.get(key))!);
    }
    expect(bodies.some((body) => body.includes(SECRET))).toBe(true);
    // Without the keys, a clear error rather than ciphertext.
    await expect(new S3BlobStore(sharedS3()).get(objects[0]!)).rejects.toThrow(
      /is encrypted \(key "2025-q1"\) and no encryption keys are set: set LONGRUN_ENCRYPTION_KEYS/,
    );
  });

  it("the UI's codec endpoint decodes a history payload over HTTP, for the UI's origin and namespace only", async () => {
    const { payloads } = await rawHistory(agents, agentId);
    const uiUrl = stack.temporal!.uiUrl;
    const namespace = stack.temporal!.namespace;
    // The UI itself says where it decodes: the dev server was started with --ui-codec-endpoint.
    const uiSettings = (await (await fetch(`${uiUrl}/api/v1/settings`)).json()) as { Codec: { Endpoint: string } };
    const endpoint = uiSettings.Codec.Endpoint;
    expect(endpoint).toBe(stack.temporal!.codecEndpoint);
    expect(endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const decode = (headers: Record<string, string>) =>
      fetch(`${endpoint}/decode`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Origin: uiUrl, ...headers },
        body: JSON.stringify({ payloads: payloads.map(payloadToJson) }),
      });
    const decoded = await decode({ 'X-Namespace': namespace });
    expect(decoded.status).toBe(200);
    expect(decoded.headers.get('access-control-allow-origin')).toBe(uiUrl);
    const body = (await decoded.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(body.payloads).toHaveLength(payloads.length);
    const texts = body.payloads.map((p) => Buffer.from(p.data, 'base64').toString('utf8'));
    expect(texts.some((text) => text.includes(SECRET))).toBe(true);
    expect(Buffer.from(body.payloads[0]!.metadata.encoding!, 'base64').toString()).toMatch(
      /^(json\/plain|binary\/null)$/,
    );

    const wrongNamespace = await decode({ 'X-Namespace': 'someone-else' });
    expect(wrongNamespace.status).toBe(403);
    expect(await wrongNamespace.text()).not.toContain('amber-falcon');

    const preflight = await fetch(`${endpoint}/decode`, {
      method: 'OPTIONS',
      headers: {
        Origin: uiUrl,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-namespace',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(uiUrl);
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-namespace');
  });

  it('`longrun codec-server` decodes the same payloads with the keys from its environment, and stops on SIGTERM', async () => {
    const { payloads } = await rawHistory(agents, agentId);
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [join(PROJECT_ROOT, 'bin/longrun.js'), 'codec-server', '--port', String(port), '--namespaces', 'default,ops'],
      { env: { ...process.env, LONGRUN_ENCRYPTION_KEYS: KEYS_TEXT }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const lines: string[] = [];
    const stderr: string[] = [];
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
    const exited = once(child, 'exit');
    try {
      for await (const line of createInterface({ input: child.stdout })) {
        lines.push(line);
        if (line.startsWith('[codec] keys')) break;
      }
      expect(lines, stderr.join('')).toContain(
        `[codec] listening on http://127.0.0.1:${port} (POST /encode, /decode) for namespace default, ops`,
      );
      expect(lines).toContain('[codec] keys 2024-q4, 2025-q1 (new payloads: 2025-q1)');
      const response = await fetch(`http://127.0.0.1:${port}/decode`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Namespace': 'ops' },
        body: JSON.stringify({ payloads: payloads.map(payloadToJson) }),
      });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { payloads: { data: string }[] };
      expect(body.payloads.some((p) => Buffer.from(p.data, 'base64').toString('utf8').includes(SECRET))).toBe(true);
    } finally {
      child.kill('SIGTERM');
    }
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
  });
});

describe('S3 objects', () => {
  it('after a rotation an object written with the old key still reads; an object moved to another key does not', async () => {
    const [older] = keys.keys;
    const before = new S3BlobStore({ ...sharedS3(), encryption: new Keyring([older!], 'LONGRUN_ENCRYPTION_KEYS') });
    const after = new S3BlobStore({ ...sharedS3(), encryption: keys });
    const key = `encryption-test/${randomUUID()}/m000001.json`;
    await before.put(key, '{"role":"user","content":"before the rotation"}');
    expect(await after.get(key)).toBe('{"role":"user","content":"before the rotation"}');
    await after.put(`${key}.new`, 'after');
    const raw = await after.client.send(new GetObjectCommand({ Bucket: after.bucket, Key: `${key}.new` }));
    expect(raw.Metadata).toMatchObject({
      [OBJECT_METADATA.keyId]: '2025-q1',
      [OBJECT_METADATA.cipher]: 'aes-256-gcm',
      [OBJECT_METADATA.contentType]: 'application/json',
    });

    // The object's key is bound in: the same bytes and metadata under another key do not decrypt.
    const copied = await after.client.send(new GetObjectCommand({ Bucket: after.bucket, Key: key }));
    await after.client.send(
      new PutObjectCommand({
        Bucket: after.bucket,
        Key: `${key}.moved`,
        Body: await copied.Body!.transformToByteArray(),
        Metadata: copied.Metadata!,
      }),
    );
    await expect(after.get(`${key}.moved`)).rejects.toThrow(`object ${key}.moved does not decrypt with key "2024-q4"`);
  });
});

describe('turning encryption on for a running agent', () => {
  it('its history and objects written in clear still read, and what comes after is encrypted', async () => {
    const taskQueue = `plain-then-enc-${randomUUID()}`;
    const agentId = newAgentId('turn-on');
    const plain = await agentsOn(
      localTemporalTarget(stack.temporal!.address, stack.temporal!.namespace),
      new S3BlobStore(sharedS3()),
      taskQueue,
    );
    await startAgent(plain.client, { agentId, model: 'gpt-4o-mini', taskQueue });
    expect((await sendMessage(plain.client, agentId, 'written in clear: walrus')).reply).toBe(
      'noted (1): written in clear: walrus',
    );
    await plain.close();

    // The same task queue, now with the keys: the new worker replays the clear history and reads the clear objects.
    const store = new S3BlobStore({ ...sharedS3(), encryption: keys });
    const agents = await agentsOn(encrypted, store, taskQueue);
    const second = await sendMessage(agents.client, agentId, 'written encrypted: narwhal');
    expect(second).toMatchObject({ turn: 2, reply: 'noted (3): written encrypted: narwhal' });
    expect(model.requests.at(-1)!.body.messages.map((m) => textOf(m.content))).toEqual([
      'written in clear: walrus',
      'noted (1): written in clear: walrus',
      'written encrypted: narwhal',
    ]);
    expect((await agentState(agents.client, agentId)).turns).toBe(2);

    const { payloads, bytes } = await rawHistory(agents, agentId);
    const encodings = new Set(payloads.map((p) => Buffer.from(p.metadata!.encoding!).toString()));
    expect(encodings).toEqual(new Set(['json/plain', 'binary/encrypted']));
    expect(bytes.includes(Buffer.from('walrus'))).toBe(true); // written before: left as it was
    expect(bytes.includes(Buffer.from('narwhal'))).toBe(false);
  });
});
