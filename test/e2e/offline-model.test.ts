/**
 * The offline model (no OPENAI_API_KEY: the demo recording replayed) through the `longrun` CLI: it keeps answering
 * past the end of its recording, honestly, and every reply the CLI prints says it comes from a replayed model.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState } from '../../client/agents.ts';
import { compactAgent } from '../../client/agents.ts';
import { trailReportTool } from '../../activities/demo-tool.ts';
import { DEMO_INTERRUPT, DEMO_STEER } from '../../commands/demo.ts';
import { DEMO_SESSION, DEMO_TOOL_SESSION, toolDemoTask } from '../../llm/endpoint.ts';
import { textOf } from '../../engine/messages.ts';
import { replayResponder } from '../../llm/offline-model.ts';
import { parseSessionJsonl } from '../../llm/replayed-model.ts';
import { INTERRUPTED_CALL_TAG } from '../../contract/results.ts';
import type { SendResult } from '../../contract/results.ts';
import { messageKey } from '../../contract/keys.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';

/** How long each trail_report takes in the tool loop's tests. */
const STEP_MS = 400;

/** A reply well within this is a normal one; the old offline model was silent for minutes past its recording. */
const NORMAL_REPLY_MS = 20_000;

const session = parseSessionJsonl(readFileSync(DEMO_SESSION, 'utf8'));
const recorded = session.filter((m) => m.role === 'assistant').map((m) => textOf(m.content));

let h: Harness;
beforeAll(async () => {
  // As the worker wires it without OPENAI_API_KEY: the demo recording replayed, no summary model.
  h = await startHarness(replayResponder(session, { source: 'demo/session.jsonl' }), [], { summaryModel: null });
});
afterAll(async () => {
  await h?.close();
});

function longrun(input: string | undefined, ...args: string[]) {
  return runLongrun(args, {
    env: cliEnv(h),
    ...(input !== undefined ? { input } : {}),
    timeoutMs: NORMAL_REPLY_MS + 10_000,
  });
}

describe('the offline (replayed) model through the CLI', () => {
  it('answers more turns than the recording has, honestly past its end, every reply labelled', async () => {
    const agentId = newAgentId('offline');
    expect((await longrun(undefined, 'start', agentId)).code).toBe(0);
    const texts = [
      ...session.filter((m) => m.role === 'user').map((m) => textOf(m.content)),
      'Can we add a fourth day?',
      'What is the weather like up there in July?',
      'Thanks! One more:   which rifugio has the best view?',
    ];
    expect(texts.length).toBeGreaterThan(recorded.length + 2);
    for (const [index, text] of texts.entries()) {
      const sent = await longrun(undefined, 'send', agentId, text);
      expect(sent.code, `message ${index + 1}: ${sent.stderr}`).toBe(0);
      expect(sent.ms).toBeLessThan(NORMAL_REPLY_MS);
      expect(sent.stdout.startsWith('(replayed model) '), sent.stdout).toBe(true);
      if (index < recorded.length) {
        expect(sent.stdout).toBe(`(replayed model) ${recorded[index]}\n`);
      } else {
        expect(sent.stdout).toMatch(/^\(replayed model\) \[offline model\] I am longrun's replayed model/);
        expect(sent.stdout).toContain(`You said: "${text.replace(/\s+/g, ' ')}".`);
        expect(sent.stdout).toContain('OPENAI_API_KEY');
      }
    }

    // --json carries the served model's name instead of the label.
    const json = await longrun(undefined, 'send', agentId, 'And in JSON?', '--json');
    expect(json.code, json.stderr).toBe(0);
    const result = JSON.parse(json.stdout) as SendResult;
    expect(result).toMatchObject({ turn: texts.length + 1, toolCalls: 0, servedBy: 'replayed:gpt-4o-mini' });
    expect(result.reply).toContain('You said: "And in JSON?".');

    // chat labels its replies the way the demo does.
    const chat = await longrun('one more line\n/quit\n', 'chat', agentId);
    expect(chat.code, chat.stderr).toBe(0);
    expect(chat.stdout).toMatch(/agent \(replayed model\) > \[offline model\] .*You said: "one more line"/);

    expect((await agentState(h.client, agentId)).turns).toBe(texts.length + 2);
    expect((await longrun(undefined, 'close', agentId)).code).toBe(0);
  });
});

describe('the offline model’s tool loop (what the main job offers without OPENAI_API_KEY)', () => {
  const trail = parseSessionJsonl(readFileSync(DEMO_TOOL_SESSION, 'utf8'));
  let tools: Harness;
  beforeAll(async () => {
    // Both recordings, and the tool the recorded loop calls, as worker/process.ts wires them offline.
    // Each report takes a moment, as in the main job: long enough to reach the turn while it works.
    const tool = trailReportTool({ delayMs: STEP_MS });
    tools = await startHarness(replayResponder([...session, ...trail]), [tool], { summaryModel: null });
  });
  afterAll(async () => {
    await tools?.close();
  });

  it('runs the recorded task on a new agent: twelve trail_report steps, the recorded answer; a compaction shrinks it', async () => {
    const agentId = newAgentId('hike');
    const env = cliEnv(tools);
    expect((await runLongrun(['start', agentId], { env })).code).toBe(0);
    const sent = await runLongrun(['send', agentId, toolDemoTask(), '--json'], { env, timeoutMs: 60_000 });
    expect(sent.code, sent.stderr).toBe(0);
    const result = JSON.parse(sent.stdout) as SendResult;
    expect(result).toMatchObject({ turn: 1, steps: 13, toolCalls: 12, servedBy: 'replayed:gpt-4o-mini' });
    expect(result.reply).toBe(textOf(trail.at(-1)!.content));
    // The tool ran in the worker: each step's request carries its report.
    const last = tools.model.requests.at(-1)!.body.messages;
    const headings = last.filter((m) => m.role === 'tool').map((m) => textOf(m.content).split('\n', 1)[0]!);
    expect(headings).toHaveLength(12);
    headings.forEach((heading, i) => expect(heading).toMatch(new RegExp(`^Stage ${i + 1} of 12: `)));
    const compaction = await compactAgent(tools.client, agentId);
    expect(compaction.compacted, compaction.reason).toBe(true);
    expect(compaction.event!.tokensAfter).toBeLessThan(compaction.event!.tokensBefore / 2);
  });
  /** The tool loop's requests from `from` on, once one carries at least `reports` tool results. */
  async function untilReports(from: number, reports: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    const carried = () =>
      tools.model.requests.slice(from).some((r) => r.body.messages.filter((m) => m.role === 'tool').length >= reports);
    while (!carried()) {
      if (Date.now() > deadline) throw new Error(`no request carried ${reports} tool results within 30 s`);
      await sleep(50);
    }
  }

  /** The stages whose reports came back in a request (their first lines), the interrupted calls left out. */
  const stagesIn = (messages: ChatMessage[]) =>
    messages
      .filter((m) => m.role === 'tool' && !textOf(m.content).startsWith(INTERRUPTED_CALL_TAG))
      .map((m) => Number(/^Stage (\d+) of 12: /.exec(textOf(m.content))?.[1]));

  it('a steer during the loop lands, and the turn goes on through all 12 stages, the steer acknowledged', async () => {
    const agentId = newAgentId('hikesteer');
    const env = cliEnv(tools);
    expect((await runLongrun(['start', agentId], { env })).code).toBe(0);
    const from = tools.model.requests.length;
    const sending = runLongrun(['send', agentId, toolDemoTask(), '--json'], { env, timeoutMs: 60_000 });
    await untilReports(from, 3);
    const steer = DEMO_STEER; // what the demo's hint sends
    const steered = await runLongrun(['steer', agentId, steer], { env });
    expect(steered.code, steered.stderr).toBe(0);
    const landed = /^steer landed in turn 1 at step (\d+)/.exec(steered.stdout);
    expect(landed, steered.stdout).not.toBeNull();
    expect(Number(landed![1])).toBeLessThanOrEqual(13);
    const sent = await sending;
    expect(sent.code, sent.stderr).toBe(0);
    const result = JSON.parse(sent.stdout) as SendResult;
    expect(result).toMatchObject({ turn: 1, steps: 13, toolCalls: 12, servedBy: 'replayed:gpt-4o-mini' });
    expect(result.reply.startsWith(textOf(trail.at(-1)!.content))).toBe(true);
    expect(result.reply).toContain(`You said during this turn: "${steer}".`);
    // Every stage reported once, in order; the step after the steer said it noted it.
    const last = tools.model.requests.at(-1)!.body.messages;
    expect(stagesIn(last)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const at = last.findIndex((m) => m.role === 'user' && textOf(m.content) === steer);
    const noted = last.slice(at + 1).find((m) => m.role === 'assistant');
    expect(textOf(noted?.content)).toContain(`[offline model] Noted: "${steer}".`);
  });

  it('an interrupt with text during the loop: the next turn goes on through the remaining stages, acknowledging it', async () => {
    const agentId = newAgentId('hikeintr');
    const env = cliEnv(tools);
    expect((await runLongrun(['start', agentId], { env })).code).toBe(0);
    const from = tools.model.requests.length;
    const sending = runLongrun(['send', agentId, toolDemoTask(), '--json'], { env, timeoutMs: 60_000 });
    await untilReports(from, 3);
    const text = DEMO_INTERRUPT; // what the demo's hint sends
    const interrupted = await runLongrun(['interrupt', agentId, text], { env });
    expect(interrupted.code, interrupted.stderr).toBe(0);
    expect(interrupted.stdout).toMatch(/^turn 1 interrupted at step \d+; turn 2 opens with the text/);
    const sent = await sending;
    expect(JSON.parse(sent.stdout)).toMatchObject({ turn: 1, interrupted: {} });
    const deadline = Date.now() + 30_000;
    while ((await agentState(tools.client, agentId)).turns < 2) {
      if (Date.now() > deadline) throw new Error('turn 2 did not end within 30 s');
      await sleep(100);
    }
    const state = await agentState(tools.client, agentId);
    const answer = state.messages.at(-1)!;
    expect(answer.role).toBe('assistant');
    const stored = JSON.parse((await tools.store.get(messageKey(state, answer.id)))!) as ChatMessage;
    expect(textOf(stored.content).startsWith(textOf(trail.at(-1)!.content))).toBe(true);
    expect(textOf(stored.content)).toContain(`You said during this turn: "${text}".`);
    // Over both turns every stage was reported, in order (an interrupted call made again).
    expect(stagesIn(tools.model.requests.at(-1)!.body.messages)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });
});
