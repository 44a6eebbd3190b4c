/**
 * A compaction never makes the context bigger unless asked, end to end. The README demo (`npm start`: the recorded
 * session replayed, no summary model, as the worker wires it offline): a forced `longrun compact` of it shrinks the
 * context; of a short chat it says "nothing to gain (B → ~A tokens)", changes nothing, and applies only with
 * `--even-if-larger`. The README's client example: its forced compaction shrinks the context; the one-city version
 * it had said nothing to gain through `compactAgent`, and `evenIfLarger: true` applies it (a bad value is refused
 * naming the field). Automatic compaction at a 2,000-token window with a summary model that writes all it may: no
 * compaction that grew the context is committed, and the agent does not compact at every turn.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentState, compactAgent, sendMessage, startAgent } from '../../client/agents.ts';
import { compactionHistory } from '../../client/reads.ts';
import { defineTool } from '../../activities/tools.ts';
import { runDemo } from '../../commands/demo.ts';
import { textOf } from '../../engine/messages.ts';
import { DEMO_SESSION } from '../../llm/endpoint.ts';
import { replayResponder } from '../../llm/offline-model.ts';
import { parseSessionJsonl } from '../../llm/replayed-model.ts';
import { readFileSync } from 'node:fs';
import type { CompactResult } from '../../contract/results.ts';
import { isSummaryRequest, newAgentId, startHarness } from '../support/harness.ts';
import type { Harness } from '../support/harness.ts';
import { cliEnv, runLongrun, STACK_TRACE } from '../support/longrun-cli.ts';

const session = parseSessionJsonl(readFileSync(DEMO_SESSION, 'utf8'));

let offline: Harness;
let scripted: Harness;

/** The README's forecast tool (examples/own-worker/worker.ts). */
const forecast = defineTool({
  name: 'forecast',
  description: 'Tomorrow’s hourly weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  run: ({ city }) => {
    const hours = Array.from({ length: 24 }, (_, hour) => `${hour}:00 light rain, ${8 + (hour % 7)} °C`);
    return Promise.resolve(`${String(city)} tomorrow\n${hours.join('\n')}`);
  },
});

/** The summary model writes as much as it may (the transcript back), and a short ledger; else the weather desk. */
let bloatedSummaries = false;

beforeAll(async () => {
  offline = await startHarness(replayResponder(session, { source: 'demo/session.jsonl' }), [], { summaryModel: null });
  scripted = await startHarness(
    (request) => {
      const last = request.body.messages.at(-1)!;
      if (isSummaryRequest(request)) {
        const given = textOf(last.content);
        return {
          content: JSON.stringify({
            task_overview: 'The field team asks whether they need rain gear tomorrow.',
            current_state: bloatedSummaries ? given : 'Forecasts read for the cities asked; rain all day in each.',
            important_discoveries: 'Light rain in every hour of tomorrow.',
            next_steps: 'Answer the next city.',
            context_to_preserve: 'Bergen, Oslo, Tromsø, Stavanger',
            decisions: bloatedSummaries
              ? Array.from(
                  { length: 8 },
                  (_, i) => `Decision ${i + 1}: ${'keep every note of the diary in order '.repeat(7)}`,
                )
              : ['Check the forecast tool before answering'],
            done: ['Forecasts read'],
            pending: [],
          }),
        };
      }
      if (last.role === 'tool') return { content: `${textOf(last.content).split('\n')[0]}: rain in 24 of 24 hours` };
      const city = /gear in (\S+) tomorrow/.exec(textOf(last.content))?.[1];
      if (city) {
        return {
          content: null,
          toolCalls: [
            {
              id: `call_${city}`,
              type: 'function',
              function: { name: 'forecast', arguments: JSON.stringify({ city }) },
            },
          ],
        };
      }
      return { content: `Noted: ${textOf(last.content).slice(0, 300)}` };
    },
    [forecast],
  );
});

afterAll(async () => {
  await offline?.close();
  await scripted?.close();
});

function longrun(h: Harness, ...args: string[]) {
  return runLongrun(args, { env: cliEnv(h), timeoutMs: 60_000 });
}

describe('the README demo, through the CLI', () => {
  it('a forced compaction of the demo agent shrinks its context', async () => {
    const agentId = await runDemo(offline.client, {
      taskQueue: offline.taskQueue,
      model: 'gpt-4o-mini',
      sessionPath: DEMO_SESSION,
      namespace: offline.temporal.namespace,
      replayed: true,
      close: false,
      log: () => undefined,
    });
    const compacted = await longrun(offline, 'compact', agentId, '--json');
    expect(compacted.code, compacted.stderr).toBe(0);
    const result = JSON.parse(compacted.stdout) as CompactResult;
    expect(result.compacted).toBe(true);
    expect(result.event!.tokensAfter).toBeLessThan(0.9 * result.event!.tokensBefore);
  });

  it('of a short chat: "nothing to gain", nothing changed; --even-if-larger applies it', async () => {
    const agentId = newAgentId('short');
    expect((await longrun(offline, 'start', agentId)).code).toBe(0);
    for (const message of session.filter((m) => m.role === 'user').slice(0, 3)) {
      await sendMessage(offline.client, agentId, textOf(message.content));
    }
    const before = await agentState(offline.client, agentId);
    const refused = await longrun(offline, 'compact', agentId);
    expect(refused.code, refused.stderr).toBe(0);
    const said =
      /^nothing to gain \((\d+) → ~(\d+) tokens\): \[halve\] would leave the context larger, .*; not compacted \(--even-if-larger applies it anyway\)\n$/.exec(
        refused.stdout,
      );
    expect(said, refused.stdout).not.toBeNull();
    expect(Number(said![1])).toBe(before.contextTokens);
    const after = await agentState(offline.client, agentId);
    expect(after.compactions).toBe(0);
    expect(after.messages).toEqual(before.messages);

    const applied = await longrun(offline, 'compact', agentId, '--even-if-larger');
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).not.toMatch(STACK_TRACE);
    // What the plan said it would come to is what it came to.
    expect(applied.stdout).toContain(`compaction 1: ${said![1]} → ${said![2]} tokens`);
    expect(applied.stdout).toContain(`grew the context from ${said![1]} to ${said![2]} tokens`);
    expect((await agentState(offline.client, agentId)).compactions).toBe(1);
  });
});

describe("the README's client example", () => {
  it('as the README has it (four cities, the last exchange protected): the forced compaction shrinks the context', async () => {
    const agentId = newAgentId('desk');
    await startAgent(scripted.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: scripted.taskQueue,
      systemPrompt: 'You are the field team’s weather desk. Check the forecast tool before you answer.',
      compaction: { keepTurns: 1, reserveRatio: 0 },
    });
    for (const city of ['Bergen', 'Oslo', 'Tromsø', 'Stavanger']) {
      await sendMessage(scripted.client, agentId, `Do we need rain gear in ${city} tomorrow?`);
    }
    const { compacted, event } = await compactAgent(scripted.client, agentId, { instructions: 'keep the city names' });
    expect(compacted).toBe(true);
    expect(event!.tokensAfter).toBeLessThan(0.75 * event!.tokensBefore);
  });

  it('one city, as it was: nothing to gain, unless evenIfLarger; a bad value is refused naming the field', async () => {
    const agentId = newAgentId('desk1');
    await startAgent(scripted.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: scripted.taskQueue,
      systemPrompt: 'You are the field team’s weather desk. Check the forecast tool before you answer.',
    });
    await sendMessage(scripted.client, agentId, 'Do we need rain gear in Bergen tomorrow?');
    const before = await agentState(scripted.client, agentId);
    const refused = await compactAgent(scripted.client, agentId, { instructions: 'keep the city names' });
    expect(refused.compacted).toBe(false);
    expect(refused.noGain).toMatchObject({ tokensBefore: before.contextTokens, estimated: true });
    expect(refused.noGain!.tokensAfter).toBeGreaterThanOrEqual(before.contextTokens);
    expect(refused.reason).toMatch(/^nothing to gain \(\d+ → ~\d+ tokens\)/);
    expect((await agentState(scripted.client, agentId)).compactions).toBe(0);

    const error = await compactAgent(scripted.client, agentId, { evenIfLarger: 'yes' as never }).catch(
      (e: unknown) => e,
    );
    expect(String(error)).toContain('evenIfLarger: must be true or false (got "yes")');

    const even = await compactAgent(scripted.client, agentId, { evenIfLarger: true });
    expect(even.compacted).toBe(true);
    expect(even.event!.tokensAfter).toBeGreaterThanOrEqual(even.event!.tokensBefore);
    expect(even.event!.notes.join('\n')).toMatch(/grew the context from \d+ to \d+ tokens/);
  });
});

describe('automatic compaction at a 2,000-token window', () => {
  it('commits no compaction that grew the context, and does not compact at every turn', async () => {
    bloatedSummaries = true;
    try {
      const agentId = newAgentId('small');
      await startAgent(scripted.client, {
        agentId,
        model: 'gpt-4o-mini',
        taskQueue: scripted.taskQueue,
        // A system prompt of about 480 tokens (fixed): what is left to compact is small, turn after turn.
        systemPrompt: 'You keep a travel diary. Note what you are told. '.repeat(40),
        modelOverride: { window: 2_000 },
      });
      const summariesBefore = scripted.model.requests.filter(isSummaryRequest).length;
      const turns = 24;
      for (let turn = 1; turn <= turns; turn++) {
        await sendMessage(
          scripted.client,
          agentId,
          `Day ${turn}: we walked ${turn + 10} km from hut ${turn} to hut ${turn + 1}, rain in the morning, sun later.`,
        );
      }
      const state = await agentState(scripted.client, agentId);
      expect(state.turns).toBe(turns);
      expect(state.contextTokens).toBeLessThanOrEqual(2_000);
      const { events } = await compactionHistory(scripted.client, scripted.store, agentId);
      console.log(
        'EVENTS',
        JSON.stringify(
          events.map((e) => [
            e.seq,
            e.trigger,
            e.strategies,
            e.tokensBefore,
            e.tokensAfter,
            e.summaryTokens,
            e.messagesBefore,
            e.messagesAfter,
          ]),
        ),
        scripted.model.requests.filter(isSummaryRequest).length - summariesBefore,
      );
      expect(events.length).toBeGreaterThan(0);
      for (const event of events) expect(event.tokensAfter, JSON.stringify(event)).toBeLessThan(event.tokensBefore);
      // The summaries (committed or not) are not asked for at every turn. (An agent at its floor still compacts a
      // turn's worth when it grows past the trigger: the loop guard's pause lasts as long as its growth step.)
      const summaries = scripted.model.requests.filter(isSummaryRequest).length - summariesBefore;
      expect(summaries).toBeLessThan(turns / 2);
      expect(events.length).toBeLessThan(turns / 2);
    } finally {
      bloatedSummaries = false;
    }
  });
});
