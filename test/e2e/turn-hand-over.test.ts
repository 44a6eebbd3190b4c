/**
 * A turn longer than a run's history budget: the run hands over to a new one (continue-as-new) at a step boundary,
 * inside the turn, and the next run goes on with the turn at its next step (workflows/hand-over.ts). The e2e stack's
 * server suggests continue-as-new after 40 events (test/support/global-stack.ts), so a turn of 40 steps hands over
 * several times. The turn's `send` resolves once, with the whole turn's figures; each step is asked of the model and
 * each tool run once; a steer sent mid-turn lands once; a message sent meanwhile waits through the hand-overs and
 * opens the next turn.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentHandle, agentState, closeAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { steerAgent } from '../../client/control.ts';
import { isHandedOver } from '../../contract/results.ts';
import { textOf } from '../../engine/messages.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { readFile, readStep } from '../support/files.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';

const STEPS = 40;
const TASK = `Read src/module_1.ts to src/module_${STEPS}.ts one by one.`;
const NEXT = 'Anything else?';

/** The loop: one read per step (the step is one more than the tool results so far), then an answer. */
function reply(messages: ChatMessage[]) {
  const last = messages.at(-1)!;
  if (last.role === 'user' && textOf(last.content) === NEXT) return { content: 'Nothing else.' };
  const step = messages.filter((m) => m.role === 'tool').length + 1;
  if (step > STEPS) return { content: `All ${STEPS} modules read.` };
  return readStep(step);
}

let h: Harness;

beforeAll(async () => {
  h = await startHarness((request) => reply(request.body.messages), [readFile]);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('a turn that outlasts its run', () => {
  it(`hands over inside a ${STEPS}-step turn; the turn goes on in the next runs, nothing asked, run or answered twice`, async () => {
    const agentId = newAgentId('turn-hand-over');
    await startAgent(h.client, { agentId, model: 'gpt-4o-mini', taskQueue: h.taskQueue });
    const handle = agentHandle(h.client, agentId);
    const firstRun = (await handle.describe()).runId;
    /** The turn's requests (turn 2's asks after the message NEXT). */
    const asked = () =>
      h.model.requests.filter(
        (r) => textOf(r.body.messages[0]?.content) === TASK && !r.body.messages.some((m) => textOf(m.content) === NEXT),
      );

    const turn = sendMessage(h.client, agentId, TASK);
    while (asked().length < 5) await new Promise((resolve) => setTimeout(resolve, 50));
    const next = sendMessage(h.client, agentId, NEXT); // queued behind the turn, through its hand-overs
    while (asked().length < STEPS / 2) await new Promise((resolve) => setTimeout(resolve, 50));
    const steer = await steerAgent(h.client, agentId, 'Steered: keep reading.');

    const result = await turn;
    expect(result).toMatchObject({ turn: 1, toolCalls: STEPS, steps: STEPS + 1, reply: `All ${STEPS} modules read.` });
    expect(await next).toMatchObject({ turn: 2, reply: 'Nothing else.' });
    expect(steer).toMatchObject({ turn: 1, opened: false });

    // Handed over inside the turn, more than once.
    const state = await agentState(h.client, agentId);
    expect(state.runs).toBeGreaterThanOrEqual(3);
    const runs: string[] = [];
    for await (const run of h.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) {
      runs.push(run.runId);
    }
    expect(runs.length).toBe(state.runs);
    // The first run answered the turn's `send` with `handedOver`; the client sent it again to the next run.
    const events = (await h.client.workflow.getHandle(handle.workflowId, firstRun).fetchHistory()).events ?? [];
    const outcomes = events.flatMap((e) => e.workflowExecutionUpdateCompletedEventAttributes?.outcome?.success ?? []);
    const answers = outcomes.flatMap((success) =>
      (success.payloads ?? []).map((p) => defaultPayloadConverter.fromPayload(p)),
    );
    const handedOver = answers.filter(isHandedOver);
    expect(handedOver.length).toBeGreaterThanOrEqual(1);
    expect(handedOver[0]!.handedOver).toMatchObject({ turn: 1 });

    // Each step asked once, each call answered once, in order; the steer and the messages once each.
    const steps = asked().map((r) => r.body.messages.filter((m) => m.role === 'tool').length + 1);
    expect(steps).toEqual(Array.from({ length: STEPS + 1 }, (_, i) => i + 1));
    const toolIds = state.messages.filter((m) => m.role === 'tool').map((m) => m.toolCallId);
    expect(toolIds).toEqual(Array.from({ length: STEPS }, (_, i) => `call_${i + 1}`));
    const users = state.messages.filter((m) => m.role === 'user').map((m) => m.preview);
    expect(users).toEqual([TASK, 'Steered: keep reading.', NEXT]);
    await closeAgent(h.client, agentId);
  }, 120_000);
});
