/**
 * Model failures through the real openai client and the loopback server: transient ones are retried by the
 * activity's retry policy (honouring Retry-After), permanent ones fail the turn at once with a clear error, and
 * the agent lives on.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import type { RecordedRequest, ScriptedReply } from '../../llm/chat-server.ts';
import { textOf } from '../../engine/messages.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const attempts = new Map<string, number[]>(); // user text → times of the requests for it

/** The last user message says how to fail: `500x1`, `429x1`, `401`. */
function script(request: RecordedRequest): ScriptedReply {
  const text = textOf(request.body.messages.findLast((m) => m.role === 'user')?.content);
  const times = attempts.get(text) ?? [];
  times.push(Date.now());
  attempts.set(text, times);
  if (text.startsWith('reset') && times.length === 1) return { reset: true };
  if (text.startsWith('slow') && times.length === 1) return { content: 'too late', delayMs: 3_000 };
  const [, status, failures] = /^(\d{3})(?:x(\d+))?/.exec(text) ?? [];
  if (status && times.length <= Number(failures ?? Infinity)) {
    return {
      status: Number(status),
      error:
        status === '401'
          ? 'Incorrect API key provided'
          : status === '404'
            ? 'The model `gpt-4o-mini` does not exist or you do not have access to it.'
            : `scripted ${status}`,
      ...(status === '429' ? { headers: { 'retry-after': '1' } } : {}),
    };
  }
  return { content: `ok after ${times.length} request(s)` };
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness(script, [], { modelTimeoutMs: 1_000 });
});
afterAll(async () => {
  await h?.close();
});

describe('model failures', () => {
  it('a 5xx is retried with backoff and the turn succeeds', async () => {
    const agentId = newAgentId('err');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const text = `500x1 ${agentId}`;
    expect((await sendMessage(h.client, agentId, text)).reply).toBe('ok after 2 request(s)');
    const [first, second] = attempts.get(text)!;
    expect(second! - first!).toBeGreaterThanOrEqual(1_900); // the policy's first interval: 2 s
    await closeAgent(h.client, agentId);
  });

  it('a 429 is retried after the Retry-After delay, not the policy interval', async () => {
    const agentId = newAgentId('err');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const text = `429x1 ${agentId}`;
    expect((await sendMessage(h.client, agentId, text)).reply).toBe('ok after 2 request(s)');
    const [first, second] = attempts.get(text)!;
    expect(second! - first!).toBeGreaterThanOrEqual(900);
    expect(second! - first!).toBeLessThan(1_900);
    await closeAgent(h.client, agentId);
  });

  it('a 401 is not retried: the Update fails with a clear error, the agent lives on', async () => {
    const agentId = newAgentId('err');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const text = `401 ${agentId}`;
    const failed = await sendMessage(h.client, agentId, text).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(WorkflowUpdateFailedError);
    const message = ((failed as WorkflowUpdateFailedError).cause as Error).message;
    expect(message).toBe(
      `callModel failed: model gpt-4o-mini at ${h.model.baseURL}: HTTP 401: 401 Incorrect API key provided`,
    );
    expect(attempts.get(text)).toHaveLength(1);

    const state = await agentState(h.client, agentId);
    expect(state.status).toBe('running');
    expect(state.lastError).toBe(message);
    // The user's message is kept: the failed call did not store it, so it was stored on its own.
    expect(state.messages.map((m) => m.preview)).toEqual([text]);
    expect(JSON.parse((await h.store.get(state.messages[0]!.key))!)).toEqual({ role: 'user', content: text });
    // Fixed at the provider's end: the next message goes through, and the error is cleared.
    expect((await sendMessage(h.client, agentId, `fine ${agentId}`)).reply).toBe('ok after 1 request(s)');
    const next = h.model.requests.findLast((r) => r.body.messages.at(-1)?.content === `fine ${agentId}`)!;
    expect(next.body.messages.map((m) => m.content)).toEqual([text, `fine ${agentId}`]);
    expect((await agentState(h.client, agentId)).lastError).toBeUndefined();
    await closeAgent(h.client, agentId);
  });

  it('a connection reset is retried and the turn succeeds', async () => {
    const agentId = newAgentId('reset');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const result = await sendMessage(h.client, agentId, 'reset once');
    expect(result.reply).toBe('ok after 2 request(s)');
  });

  it('a request over the client timeout is retried and the turn succeeds', async () => {
    const agentId = newAgentId('slow');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const result = await sendMessage(h.client, agentId, 'slow once');
    expect(result.reply).toBe('ok after 2 request(s)');
  });

  it('an unknown model (404) is not retried: a clear error, the agent lives on', async () => {
    const agentId = newAgentId('404');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const error = await sendMessage(h.client, agentId, '404').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((error as Error).cause)).toContain('HTTP 404');
    expect(String((error as Error).cause)).toContain('does not exist');
    expect(attempts.get('404')).toHaveLength(1);
    expect((await sendMessage(h.client, agentId, 'fine now')).reply).toBe('ok after 1 request(s)');
  });

  it.each(['403', '400'])('a %s (no access, malformed request) is not retried either', async (status) => {
    const agentId = newAgentId(`e${status}`);
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const error = await sendMessage(h.client, agentId, status).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((error as Error).cause)).toContain(`HTTP ${status}`);
    expect(attempts.get(status)).toHaveLength(1);
    expect((await agentState(h.client, agentId)).lastError).toContain(`HTTP ${status}`);
  });
});
