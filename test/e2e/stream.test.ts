/**
 * The live stream on the real stack: the model call streams from the loopback chat server inside its activity, and
 * a client reads the agent's stream while the turn runs (tokens before the turn ends), resumes from any offset with
 * no gap and no duplicate, and, after a worker kill -9 mid-stream, sees the retried call's first attempt marked
 * superseded, every offset once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { streamAgent } from '../../client/stream.ts';
import type { StreamedItem } from '../../client/stream.ts';
import { connectClient, localTemporalTarget } from '../../config/temporal.ts';
import { agentLife } from '../../contract/keys.ts';
import { currentText } from '../../contract/stream.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { S3BlobStore } from '../../storage/s3.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import { toolWorkers } from '../support/tool-workers.ts';
import type { Harness } from '../support/harness.ts';

const REPLY =
  'The trail to the hut climbs four hundred metres through birch and heather, then follows the ridge to the lake.';

/** The items of `agentId`'s stream from `from` to its end now (no following). */
async function readAll(h: { client: Harness['client']; store: S3BlobStore }, agentId: string, from = 0) {
  const items: StreamedItem[] = [];
  for await (const item of streamAgent(h.client, h.store, agentId, { from, follow: false })) items.push(item);
  return items;
}

const textOf = (items: StreamedItem[], attempt?: number) =>
  items
    .flatMap((item) =>
      item.kind === 'text' && (attempt === undefined || item.attempt === attempt) && !item.superseded
        ? [item.text]
        : [],
    )
    .join('');

describe('the live stream', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness((request) =>
      request.body.stream === true
        ? { content: REPLY, chunkDelayMs: 40, usage: { prompt_tokens: 20, completion_tokens: 25 } }
        : { content: 'not streamed' },
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  it('a client reads the model output while the turn runs, then resumes from any offset: no gap, no duplicate', async () => {
    const agentId = newAgentId('stream');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const controller = new AbortController();
    const live: { item: StreamedItem; turnDone: boolean }[] = [];
    let turnDone = false;
    const reading = (async () => {
      for await (const item of streamAgent(h.client, h.store, agentId, { signal: controller.signal, pollMs: 20 })) {
        live.push({ item, turnDone });
        if (item.kind === 'turn-end') controller.abort();
      }
    })();
    const result = await sendMessage(h.client, agentId, 'How is the trail to the hut?');
    turnDone = true;
    await reading;
    expect(result.reply).toBe(REPLY);

    // Tokens arrived while the turn ran, before the turn ended, in several items.
    const texts = live.filter(({ item }) => item.kind === 'text');
    expect(texts.length).toBeGreaterThan(3);
    expect(texts.filter(({ turnDone }) => !turnDone).length).toBe(texts.length);
    const items = live.map(({ item }) => item);
    expect(textOf(items)).toBe(REPLY);
    const call = result.replyId ?? (items[1] as { call?: string }).call;
    // The turn's opening message first (stored by the model call), then the call's output.
    expect(items[0]).toMatchObject({ offset: 0, kind: 'user-message', turn: 1, text: 'How is the trail to the hut?' });
    expect(items[1]).toMatchObject({ offset: 1, kind: 'model-start', model: 'gpt-4o-mini', attempt: 1 });
    expect(items.at(-2)).toMatchObject({ kind: 'model-end', toolCalls: 0, attempt: 1, call });
    // The loopback server's usage, with its prompt cache's share (0: a 20-token prompt is below 1,024), kept apart.
    expect(items.at(-2)).toMatchObject({ usage: { promptTokens: 20, completionTokens: 25, cachedTokens: 0 } });
    // The reply without tool calls ended the turn: the model call says so, with the turn's number.
    expect(items.at(-1)).toMatchObject({ kind: 'turn-end', turn: 1, steps: 1, reply: REPLY.slice(0, 200) });
    expect(items.map((item) => item.offset)).toEqual(items.map((_, i) => i));

    // Read again from every offset: exactly the rest of the log.
    const all = await readAll(h, agentId);
    expect(all).toEqual(items);
    for (let from = 0; from <= all.length; from++) {
      expect((await readAll(h, agentId, from)).map((item) => item.offset)).toEqual(
        all.slice(from).map((item) => item.offset),
      );
    }
    // The stored log is the agent life's, under its prefix.
    const state = await agentState(h.client, agentId);
    const life = agentLife(state);
    expect(await h.store.list(`agents/${agentId}/${life.life}/stream/`)).not.toHaveLength(0);
    await closeAgent(h.client, agentId);
  });

  it('tool calls stream their arguments as the provider writes them', async () => {
    const tools = await startHarness((request) => {
      const last = request.body.messages.at(-1);
      if (last?.role === 'tool') return { content: 'done', chunkDelayMs: 5 };
      return {
        content: null,
        chunkDelayMs: 5,
        toolCalls: [{ id: 'c1', type: 'function', function: { name: 'missing', arguments: '{"city":"Tromsø"}' } }],
      };
    });
    try {
      const agentId = newAgentId('streamtools');
      await startAgent(tools.client, { agentId, model: 'gpt-4o-mini', taskQueue: tools.taskQueue });
      await sendMessage(tools.client, agentId, 'weather?');
      const items = await readAll(tools, agentId);
      const deltas = items.filter((item) => item.kind === 'tool-call-delta');
      expect(deltas[0]).toMatchObject({ index: 0, callId: 'c1', name: 'missing' });
      expect(deltas.map((d) => (d.kind === 'tool-call-delta' ? d.arguments : '')).join('')).toBe('{"city":"Tromsø"}');
      expect(items.filter((item) => item.kind === 'model-end')).toHaveLength(2);
      await closeAgent(tools.client, agentId);
    } finally {
      await tools.close();
    }
  });
});

describe('a worker killed mid-stream', () => {
  const dir = mkdtempSync(join(tmpdir(), 'longrun-stream-crash-'));
  const taskQueue = `stream-crash-${Date.now()}`;
  let model: ChatServer;
  const workers = toolWorkers(dir, taskQueue);
  const startWorker = () => workers.start(model.baseURL);

  beforeAll(async () => {
    // The first request streams slowly (the worker is killed meanwhile); the retry streams at once.
    model = await startChatServer((_request, index) => ({ content: REPLY, chunkDelayMs: index === 0 ? 150 : 5 }));
  });
  afterAll(async () => {
    await workers.stop();
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the retried call marks the first attempt superseded; every offset once, none missing', async () => {
    const stack = inject('stack');
    const client = await connectClient(localTemporalTarget(stack.temporalAddress, stack.namespace));
    const store = new S3BlobStore(stack.s3);
    try {
      const first = await startWorker();
      const agentId = newAgentId('streamcrash');
      const handle = await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
      const turn = sendMessage(client, agentId, 'How is the trail to the hut?');
      const controller = new AbortController();
      const seen: StreamedItem[] = [];
      let killed = false;
      // The life is the agent's first run: read without asking the agent (its worker may not have polled yet).
      const life = { agentId, life: (await handle.describe()).runId };
      for await (const item of streamAgent(client, store, agentId, { signal: controller.signal, pollMs: 20, life })) {
        seen.push(item);
        if (!killed && seen.filter((s) => s.kind === 'text').length >= 3) {
          first.kill('SIGKILL'); // mid-stream: some of the reply is published, the rest never comes
          killed = true;
          await startWorker();
        }
        if (item.kind === 'model-end') controller.abort();
      }
      expect((await turn).reply).toBe(REPLY);

      // Every offset once, in order, none missing: live, and read again from the start.
      expect(seen.map((item) => item.offset)).toEqual(seen.map((_, i) => i));
      const again: StreamedItem[] = [];
      for await (const item of streamAgent(client, store, agentId, { follow: false })) again.push(item);
      expect(again.slice(0, seen.length)).toEqual(seen);

      // The first attempt's text is partial, the second's whole; the second says the first is superseded, and a
      // reader that keeps only what is not superseded has the reply once.
      const call = (seen.find((item) => item.kind === 'model-start') as { call: string }).call;
      const superseded = seen.findIndex((item) => item.kind === 'superseded');
      expect(seen[superseded]).toMatchObject({ kind: 'superseded', call, attempt: 2 });
      const partial = seen.slice(0, superseded).flatMap((item) => (item.kind === 'text' ? [item.text] : []));
      expect(partial.join('').length).toBeGreaterThan(0);
      expect(REPLY.startsWith(partial.join(''))).toBe(true);
      expect(partial.join('')).not.toBe(REPLY);
      expect(textOf(seen, 2)).toBe(REPLY);
      expect(currentText(seen, call)).toBe(REPLY);
      // Read again: the first attempt's items after the superseded item (none here: it was dead) are marked.
      expect(again.filter((item) => item.superseded)).toEqual([]);
      expect(seen.at(-1)).toMatchObject({ kind: 'model-end', call, attempt: 2 });
      await closeAgent(client, agentId);
    } finally {
      await client.connection.close();
    }
  }, 120_000);
});
