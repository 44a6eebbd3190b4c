/**
 * The current details of an agent whose tool call waits for approval, as the Temporal UI (the dev server's) shows
 * them in Chromium: each command that answers the call whole in one code element, and the last line of text inside
 * the frame the UI sizes for the details (it came out about 15 px short, which clipped the last line).
 */
import { chromium } from 'playwright-core';
import type { Browser, Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineTool } from '../../activities/tools.ts';
import { agentHandle, sendMessage, startAgent } from '../../client/agents.ts';
import { agentWorkflowId, progressQuery } from '../../contract/agent.ts';
import { ensureChromium } from '../../stack/chromium.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const CALL_ID = 'call_7f3a9c2e5b1d4e8f9a0b1c2d';

let h: Harness;
let browser: Browser;
beforeAll(async () => {
  const executablePath = await ensureChromium();
  const report = defineTool({
    name: 'trail_report',
    description: 'Conditions on one stage',
    parameters: { type: 'object', properties: { stage: { type: 'integer' } } },
    run: () => Promise.resolve('open'),
  });
  h = await startHarness(
    (request) => {
      if (request.body.messages.at(-1)!.role === 'tool') return { content: 'The stage is open.' };
      const call = { id: CALL_ID, type: 'function' as const };
      return { content: null, toolCalls: [{ ...call, function: { name: 'trail_report', arguments: '{"stage":3}' } }] };
    },
    [report],
  );
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** The frame the UI renders the current details in, once it shows `text`. */
async function detailsFrame(page: Page, text: string): Promise<Frame> {
  for (let i = 0; i < 200; i++) {
    const frame = page.frames().find((f) => f.url().includes('/render?content=') && f.url().includes('awaiting'));
    if (frame && (await frame.locator('body').textContent())?.includes(text)) return frame;
    await page.waitForTimeout(100);
  }
  throw new Error(`the UI showed no current details with ${JSON.stringify(text)}`);
}

describe('the current details in the Temporal UI', () => {
  it('show a call waiting for approval with its commands whole, nothing clipped', async () => {
    const agentId = newAgentId('trail-demo-with-a-long-id');
    await startAgent(h.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: h.taskQueue,
      toolApproval: { tools: ['trail_report'] },
    });
    const turn = sendMessage(h.client, agentId, 'How is stage 3?');
    const handle = agentHandle(h.client, agentId);
    await expect
      .poll(async () => (await handle.query(progressQuery)).awaitingApproval?.length ?? 0, { timeout: 20_000 })
      .toBe(1);

    const stack = inject('stack');
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    try {
      await page.goto(`${stack.uiUrl}/namespaces/${stack.namespace}/workflows/${agentWorkflowId(agentId)}`);
      await page.getByText('User Metadata').click();
      const deny = `longrun deny-tool ${agentId} ${CALL_ID} [reason]`;
      const frame = await detailsFrame(page, deny);
      // Each command is one code element: copied whole.
      expect(await frame.locator('code').allTextContents()).toEqual([
        `longrun approve-tool ${agentId} ${CALL_ID}`,
        deny,
      ]);
      // The last line of text ends inside the frame the UI gave the details.
      const lastText = await frame.locator('p', { hasText: /\S/ }).last().boundingBox();
      const shown = await (await frame.frameElement()).boundingBox();
      expect(lastText!.y + lastText!.height).toBeLessThanOrEqual(shown!.y + shown!.height);
    } finally {
      await page.close();
    }
    await handle.executeUpdate('approveTool', { args: [{ callId: CALL_ID }] });
    expect((await turn).reply).toBe('The stage is open.');
  }, 60_000);
});
