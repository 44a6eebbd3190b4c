/**
 * The offline model (no OPENAI_API_KEY: the demo recording replayed) through the `longrun` CLI: it keeps answering
 * past the end of its recording, honestly, and every reply the CLI prints says it comes from a replayed model.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState } from '../../client/agents.ts';
import { compactAgent } from '../../client/agents.ts';
import { trailReportTool } from '../../activities/demo-tool.ts';
import { DEMO_SESSION, DEMO_TOOL_SESSION, toolDemoTask } from '../../llm/endpoint.ts';
import { textOf } from '../../engine/messages.ts';
import { parseSessionJsonl, replayResponder } from '../../llm/replayed-model.ts';
import type { SendResult } from '../../contract/results.ts';
import { newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun } from '../support/longrun-cli.ts';

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
    tools = await startHarness(replayResponder([...session, ...trail]), [trailReportTool()], { summaryModel: null });
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
});
