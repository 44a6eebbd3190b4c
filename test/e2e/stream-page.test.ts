/**
 * The stream server (commands/stream-server.ts) on the real stack: the SSE endpoint (event id = offset,
 * `Last-Event-ID` resumes after it, an unknown agent is a 404), and the page in a real Chromium (the OS's, found or
 * installed by stack/chromium.ts, driven by playwright-core) showing the model's text while it is written, the tool
 * call, and the rest of the turn.
 */
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { startStreamServer } from '../../commands/stream-server.ts';
import type { StreamServer } from '../../commands/stream-server.ts';
import { ensureChromium } from '../../stack/chromium.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const REPLY = 'Bergen tomorrow: light rain all day, eight to twelve degrees, wind from the south-west.';

/** The events of an SSE body: `id` and parsed `data`. */
function eventsOf(body: string): { id: number; data: { offset: number; kind: string } }[] {
  return body
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const id = Number(/^id: (\d+)$/m.exec(block)![1]);
      return { id, data: JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as { offset: number; kind: string } };
    });
}

/** Reads an SSE response until `until` holds for the events so far, then aborts it. */
async function readEvents(url: string, headers: Record<string, string>, until: (count: number) => boolean) {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let body = '';
  while (!until(eventsOf(body).length)) {
    const { value, done } = (await reader.read()) as { value?: Uint8Array; done: boolean };
    if (done) break;
    body += decoder.decode(value, { stream: true });
  }
  controller.abort();
  return eventsOf(body);
}

let h: Harness;
let server: StreamServer;
let browser: Browser;
beforeAll(async () => {
  const executablePath = await ensureChromium();
  h = await startHarness((request) => {
    const last = request.body.messages.at(-1);
    if (last?.role === 'tool') return { content: REPLY, chunkDelayMs: 150 };
    return {
      content: null,
      chunkDelayMs: 20,
      toolCalls: [{ id: 'w1', type: 'function', function: { name: 'forecast', arguments: '{"city":"Bergen"}' } }],
    };
  });
  server = await startStreamServer({ client: h.client, store: h.store, host: '127.0.0.1', port: 0, pollMs: 20 });
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
}, 600_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await h?.close();
});

describe('the stream server', () => {
  it('serves the stream as Server-Sent Events (id = offset); Last-Event-ID resumes after it; errors are clear', async () => {
    const agentId = newAgentId('sse');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    await sendMessage(h.client, agentId, 'Rain in Bergen tomorrow?');
    const url = `${server.url}/agents/${agentId}/stream`;
    const all = await readEvents(url, {}, (count) => count >= 6);
    expect(all.map((event) => event.id)).toEqual(all.map((_, i) => i));
    expect(all.every((event) => event.data.offset === event.id)).toBe(true);
    // A browser that saw event 3 reconnects with Last-Event-ID: 3 and gets 4 on, nothing twice.
    const resumed = await readEvents(url, { 'last-event-id': '3' }, (count) => count >= 2);
    // (One chunk of the response may carry more events than the two waited for: every one after 3, in order.)
    expect(resumed.map((event) => event.id)).toEqual(resumed.map((_, i) => 4 + i));
    expect(resumed.slice(0, 2).map((event) => event.data)).toEqual(all.slice(4, 6).map((event) => event.data));
    // `?from=` when there is no Last-Event-ID.
    const from = await readEvents(`${url}?from=2`, {}, (count) => count >= 1);
    expect(from[0]!.id).toBe(2);

    const unknown = await fetch(`${server.url}/agents/${newAgentId('nobody')}/stream`);
    expect(unknown.status).toBe(404);
    const badId = await fetch(url, { headers: { 'last-event-id': 'seven' } });
    expect(badId.status).toBe(400);
    expect(await badId.text()).toMatch(/Last-Event-ID must be an offset/);
    const badFrom = await fetch(`${url}?from=-1`);
    expect(badFrom.status).toBe(400);
    expect(await badFrom.text()).toMatch(/from must be an offset/);
    await closeAgent(h.client, agentId);
  });

  it('the page shows the agent live in Chromium: the tool call, then the text while it is written', async () => {
    const agentId = newAgentId('page');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}/agents/${agentId}`);
      await page.waitForSelector('body[data-state="live"]');
      let turnDone = false;
      const turn = sendMessage(h.client, agentId, 'Rain in Bergen tomorrow?').then((result) => {
        turnDone = true;
        return result;
      });
      // The tool call with its arguments, as the model wrote them.
      const tool = page.locator('.tool').first();
      await tool.waitFor();
      await expect.poll(() => tool.textContent()).toBe('→ forecast {"city":"Bergen"}');
      // Part of the reply is on the page while the turn still runs (the text comes a word every 150 ms).
      const text = page.locator('.model').first();
      await expect.poll(() => text.textContent(), { timeout: 30_000 }).toMatch(/^Bergen tomorrow: light/);
      const partial = (await text.textContent())!;
      expect(turnDone).toBe(false);
      expect(partial.length).toBeLessThan(REPLY.length);
      expect((await turn).reply).toBe(REPLY);
      await expect.poll(() => text.textContent(), { timeout: 30_000 }).toBe(REPLY);
    } finally {
      await page.close();
    }
    await closeAgent(h.client, agentId);
  });
});
