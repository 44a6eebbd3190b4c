/**
 * Per-run limits a busy agent meets (issue 15, F7): more Updates at once than the server lets in flight (10 per
 * workflow) are taken in turn; none is lost or applied twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { textOf } from '../../engine/messages.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

let h: Harness;
beforeAll(async () => {
  // A model that takes its time, so that the messages pile up in flight.
  h = await startHarness((request) => ({
    content: `re: ${textOf(request.body.messages.at(-1)!.content)}`,
    delayMs: 300,
  }));
});
afterAll(async () => {
  await h?.close();
});

describe('Updates in flight', () => {
  it('16 messages at once to one agent, more than the server lets in flight: each applied once, every turn answered', async () => {
    const agentId = newAgentId('in-flight');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const texts = Array.from({ length: 16 }, (_, i) => `message ${i + 1}`);
    // The server lets 10 Updates per workflow be in flight; the SDK's own retries absorb its refusals of the others
    // (and refusedForNow, unit-tested, sends one again once they give up).
    const results = await Promise.all(texts.map((text) => sendMessage(h.client, agentId, text)));
    expect(results.map((r) => r.reply).sort()).toEqual(texts.map((t) => `re: ${t}`).sort());
    expect(results.map((r) => r.turn).sort((a, b) => a - b)).toEqual(texts.map((_, i) => i + 1));
    const state = await agentState(h.client, agentId);
    const users = state.messages.filter((m) => m.role === 'user').map((m) => m.preview);
    expect(users.sort()).toEqual([...texts].sort());
    await closeAgent(h.client, agentId);
  }, 120_000);
});
