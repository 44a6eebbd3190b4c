/**
 * The stream page in Chromium over the offline demo's tool loop (`trail_report`, one stage a step) with a steer, a
 * review that is discarded, one that is approved, and a revert: the page shows the opening user message, each tool
 * call once (its argument pieces build the line, the call as it runs completes it), the steer, each compaction once
 * with what became of it (discarded; applied with the tokens before and after), and the revert; a screenshot of it is
 * saved. The page is open from before the turn, so it draws everything live, as a person watching it would see it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import type { StreamItemBody } from '../../contract/stream.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trailReportTool } from '../../activities/demo-tool.ts';
import { approveDraft, compactAgent, discardDraft, revertAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { steerAgent } from '../../client/control.ts';
import { streamPage } from '../../commands/stream-page.ts';
import { startStreamServer } from '../../commands/stream-server.ts';
import type { StreamServer } from '../../commands/stream-server.ts';
import { ensureChromium } from '../../stack/chromium.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const STAGES = 4;
const TASK = `Check the first ${STAGES} stages of the Alta Via 1 one at a time with trail_report, then sum them up.`;
const STEER = 'give the distances in km and the climbs in m';
const ANSWER = `All ${STAGES} stages are open; take microspikes for stage 4.`;
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const tokens = (n: number) => n.toLocaleString('en-US');

let h: Harness;
let server: StreamServer;
let browser: Browser;
const dir = mkdtempSync(join(tmpdir(), 'longrun-stream-page-trail-'));
beforeAll(async () => {
  const executablePath = await ensureChromium();
  // The trail loop as the offline demo runs it: one trail_report a step, stage after stage, then the answer. The
  // arguments come in pieces (so the page gets `tool-call-delta` items before each `tool-call`).
  h = await startHarness(
    (request) => {
      const done = request.body.messages.filter((m) => m.role === 'tool').length;
      if (done >= STAGES) return { content: ANSWER, chunkDelayMs: 5 };
      const stage = done + 1;
      return {
        content: null,
        chunkDelayMs: 10,
        toolCalls: [
          {
            id: `trail-${stage}`,
            type: 'function',
            function: { name: 'trail_report', arguments: `{"stage":${stage}}` },
          },
        ],
      };
    },
    [trailReportTool({ delayMs: 300 })],
    { summaryModel: null },
  );
  server = await startStreamServer({ client: h.client, store: h.store, host: '127.0.0.1', port: 0, pollMs: 20 });
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the stream page over the trail loop', () => {
  it('draws each tool call and each compaction once, with every outcome, the opening message and the steer', async () => {
    const agentId = newAgentId('trail-page');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await page.goto(`${server.url}/agents/${agentId}`);
      await page.waitForSelector('body[data-state="live"]');
      const texts = (selector: string) => page.locator(selector).allTextContents();

      // The turn, steered once its first tool result is on the page.
      const turn = sendMessage(h.client, agentId, TASK);
      await page.locator('.result').first().waitFor();
      const steer = await steerAgent(h.client, agentId, STEER);
      expect(steer.turn).toBe(1);
      expect((await turn).reply).toBe(ANSWER);

      // A review discarded, a review approved, then a revert to before the compaction.
      const first = await compactAgent(h.client, agentId, { review: true });
      expect(first.draft?.id).toBe('draft-1');
      await discardDraft(h.client, agentId, 'draft-1');
      const second = await compactAgent(h.client, agentId, { review: true });
      expect(second.draft?.id).toBe('draft-2');
      const approved = await approveDraft(h.client, agentId, 'draft-2');
      expect(approved.compacted, approved.reason).toBe(true);
      const reverted = await revertAgent(h.client, agentId, { toEvent: 1 });
      await page.locator('.revert').waitFor();

      // The opening user message, once.
      expect(await texts('.user')).toEqual([`turn 1, user: ${TASK}`]);
      // Each tool call once, as it ran.
      expect(await texts('.tool')).toEqual(
        Array.from({ length: STAGES }, (_, i) => `→ trail_report {"stage":${i + 1}}`),
      );
      expect(await texts('.result')).toHaveLength(STAGES);
      // The steer, where it landed.
      expect(await texts('.steer')).toEqual([`steer (turn 1, step ${steer.step}): ${STEER}`]);
      // Each compaction once, with what became of it.
      const draft = (id: string, d: { tokensBefore: number; tokensAfter: number }) =>
        `${id} awaits review (${tokens(d.tokensBefore)} → ${tokens(d.tokensAfter)} tokens)`;
      const event = approved.event!;
      // (The discard is said by an activity of its own, which the next Update does not wait for.)
      await expect
        .poll(() => texts('.compaction:not(.revert)'), { timeout: 15_000 })
        .toEqual([
          `compaction 1 (draft-1): planning ✓ · summarizing ✓ · ${draft('draft-1', first.draft!)} · draft-1 discarded`,
          `compaction 1 (draft-2): planning ✓ · summarizing ✓ · ${draft('draft-2', second.draft!)} · applying ✓ · ` +
            `applied ${tokens(event.tokensBefore)} → ${tokens(event.tokensAfter)} tokens`,
        ]);
      expect(event.tokensAfter).toBeLessThan(event.tokensBefore);
      expect(await texts('.revert')).toEqual([
        `revert (event 2): the context before event 1 is back, ` +
          `${tokens(reverted.event.tokensBefore)} → ${tokens(reverted.event.tokensAfter)} tokens`,
      ]);
      expect(await texts('.turn-end')).toEqual([`turn 1 ended: ${ANSWER}`]);
      // Nothing drawn twice: every line of the page is there once.
      const lines = await texts('.item');
      expect(lines.filter((line, i) => lines.indexOf(line) !== i)).toEqual([]);

      const shot = join(dir, 'trail-page.png');
      await page.screenshot({ path: shot, fullPage: true });
      expect(existsSync(shot)).toBe(true);
      expect(statSync(shot).size).toBeGreaterThan(PNG_MAGIC.length);
      expect(readFileSync(shot).subarray(0, PNG_MAGIC.length).equals(PNG_MAGIC)).toBe(true);
      // The answer, as it was written.
      expect(await texts('.model')).toEqual([ANSWER]);
    } finally {
      await page.close();
    }
  }, 60_000);

  it('puts an outcome on the block of its draft when it comes late, and a call that did not stream on a line of its own', async () => {
    // The items as a stream can order them: a discard (its own activity) after the next compaction of the same seq
    // began planning; a provider that does not stream sends a call with no deltas.
    const items: StreamItemBody[] = [
      {
        kind: 'tool-call-delta',
        call: 'm000002',
        attempt: 1,
        index: 0,
        callId: 'c1',
        name: 'trail_report',
        arguments: '',
      },
      { kind: 'tool-call-delta', call: 'm000002', attempt: 1, index: 0, arguments: '{"stage":1}' },
      { kind: 'tool-call', callId: 'c1', name: 'trail_report', arguments: '{"stage":1}' },
      { kind: 'tool-call', callId: 'c2', name: 'trail_report', arguments: '{"stage":2}' },
      { kind: 'compaction', seq: 1, phase: 'planning', state: 'began' },
      { kind: 'compaction', seq: 1, phase: 'planning', state: 'ended' },
      {
        kind: 'compaction-outcome',
        seq: 1,
        outcome: 'drafted',
        draft: 'draft-1',
        tokensBefore: 3752,
        tokensAfter: 913,
      },
      { kind: 'compaction', seq: 1, phase: 'planning', state: 'began' },
      {
        kind: 'compaction-outcome',
        seq: 1,
        outcome: 'discarded',
        draft: 'draft-1',
        tokensBefore: 3752,
        tokensAfter: 913,
      },
      { kind: 'compaction', seq: 1, phase: 'planning', state: 'ended' },
      { kind: 'compaction-outcome', seq: 1, outcome: 'applied', tokensBefore: 3752, tokensAfter: 913 },
    ];
    const page = await browser.newPage();
    try {
      await page.addInitScript((feed: unknown[]) => {
        // An EventSource that delivers `feed` at once, as the server would.
        (globalThis as unknown as { EventSource: unknown }).EventSource = class {
          onopen?: () => void;
          onmessage?: (event: { data: string }) => void;
          constructor() {
            setTimeout(() => {
              this.onopen?.();
              feed.forEach((item, offset) =>
                this.onmessage?.({ data: JSON.stringify({ ...(item as object), offset }) }),
              );
            });
          }
        };
      }, items);
      await page.route('http://page.test/agents/trail', (route) =>
        route.fulfill({ contentType: 'text/html', body: streamPage('trail') }),
      );
      await page.goto('http://page.test/agents/trail');
      await page.locator('body[data-offset="10"]').waitFor();
      const texts = (selector: string) => page.locator(selector).allTextContents();
      expect(await texts('.tool')).toEqual(['→ trail_report {"stage":1}', '→ trail_report {"stage":2}']);
      expect(await texts('.compaction')).toEqual([
        'compaction 1 (draft-1): planning ✓ · draft-1 awaits review (3,752 → 913 tokens) · draft-1 discarded',
        'compaction 1: planning ✓ · applied 3,752 → 913 tokens',
      ]);
    } finally {
      await page.close();
    }
  });
});
