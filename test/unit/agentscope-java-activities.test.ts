/**
 * AgentScope Java's summaries in their places, through the compaction activities over an in-memory store as the
 * workflow's pipeline runs them (plan by reference, summarize from the stored plan, apply): an old run of tool calls
 * becomes one assistant message where it was (strategy 1), each historical round a summary after its user's message
 * (strategy 4); written by the summary model, or by the extractive summarizer offline.
 */
import { asyncLocalStorage } from '@temporalio/activity';
import type { Context } from '@temporalio/activity';
import { noopMetricMeter } from '@temporalio/common';
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { resolvePolicy } from '../../engine/presets.ts';
import { NO_COOLDOWN } from '../../engine/trigger.ts';
import type { ApplyOutcome, NoGainOutcome } from '../../contract/compaction-activities.ts';
import { recordsDigest } from '../../contract/context-delta.ts';
import { messageIdOf, messageKey } from '../../contract/keys.ts';
import type { ContextRecord } from '../../contract/records.ts';

const counting = { encoding: 'o200k_base' as const, margin: 1 };
const activityContext = { metricMeter: noopMetricMeter, heartbeat: () => undefined } as unknown as Context;
const inActivity = <T>(work: () => Promise<T>): Promise<T> => asyncLocalStorage.run(activityContext, work);

/** A summary model that answers every call with the same five fields, and the prompts it was sent. */
function summaryModel(prompts: string[]): OpenAI {
  const create = (request: { messages: { content: string }[] }) => {
    prompts.push(request.messages.map((m) => m.content).join('\n'));
    return Promise.resolve({
      model: 'summarizer',
      choices: [
        {
          message: {
            content: JSON.stringify({
              task_overview: 'Audit the repository.',
              current_state: 'read_file read src/a.ts, src/b.ts, src/c.ts and src/d.ts: each exports one function.',
              important_discoveries: 'No file imports another.',
              next_steps: 'Report.',
              context_to_preserve: 'src/a.ts src/b.ts src/c.ts src/d.ts',
              decisions: [],
              done: [],
              pending: [],
            }),
          },
        },
      ],
      usage: { prompt_tokens: 100, completion_tokens: 60 },
    });
  };
  return { chat: { completions: { create } } } as unknown as OpenAI;
}

function memoryStore() {
  const objects = new Map<string, string>();
  /** Every key read, in order. */
  const reads: string[] = [];
  return {
    bucket: 'test',
    objects,
    reads,
    put: (key: string, body: string) => Promise.resolve(void objects.set(key, body)),
    get: (key: string) => Promise.resolve(void reads.push(key)).then(() => objects.get(key)),
    ensureBucket: () => Promise.resolve(),
  };
}

/** The agent's messages stored, then one automatic compaction under the agentscope-java preset, as the pipeline runs it. */
async function compacted(messages: ChatMessage[], prompts?: string[]) {
  const store = memoryStore();
  const activities = createActivities({
    store,
    openai: prompts ? summaryModel(prompts) : ({} as OpenAI),
    ...(prompts ? { summaryModel: 'summarizer' } : {}),
  });
  const life = { agentId: 'java', life: 'l1' };
  const { fixedTokens } = await activities.describeModel({ model: 'gpt-4o-mini' });
  const context: ContextRecord[] = [];
  for (const message of messages) {
    const messageId = messageIdOf(context.length + 1);
    context.push(await activities.storeMessage({ ...life, messageId, message, counting }));
  }
  const goalId = context.find((m) => m.role === 'user')!.id;
  const window = 1_000_000;
  const plan = await inActivity(() =>
    activities.planCompaction({
      ...life,
      seq: 1,
      policy: resolvePolicy({ preset: 'agentscope-java' }),
      window,
      fixedTokens,
      counting,
      trigger: 'auto',
      cooldown: NO_COOLDOWN,
      goalId,
      contextRef: { baseLength: 0, firstSeq: 1, lastSeq: context.length, tailDigest: recordsDigest(context) },
    }),
  );
  if (plan.action === 'skip') throw new Error(`skipped: ${plan.reason}`);
  const readBefore = store.reads.length;
  const summary = await inActivity(() =>
    activities.summarizeSpan({
      ...life,
      seq: 1,
      planKey: plan.planKey!,
      maxTokens: plan.summary!.maxTokens!,
      counting,
      writer: plan.summary!.writer!,
      goalKey: messageKey(life, goalId),
    }),
  );
  const summaryReads = store.reads.slice(readBefore);
  const outcome: ApplyOutcome | NoGainOutcome = await inActivity(() =>
    activities.applyCompaction({
      ...life,
      seq: 1,
      planKey: plan.planKey!,
      summaryKey: summary.summaryKey!,
      at: new Date(0).toISOString(),
      counting,
      fixedTokens,
      startedAt: 0,
      consecutive: 0,
      window,
    }),
  );
  if ('noGain' in outcome) throw new Error(`not applied: ${outcome.reason}`);
  const body = (record: ContextRecord): ChatMessage =>
    JSON.parse(store.objects.get(messageKey(life, record.id)) ?? store.objects.get(record.key!)!) as ChatMessage;
  return { plan, summary, summaryReads, outcome, next: outcome.context!, body, store };
}

/** The goal, four read_file calls with their results, the answer, then 45 exchanges: 101 messages. */
function oldToolRun(): ChatMessage[] {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You audit repositories with read_file.' },
    { role: 'user', content: 'Audit src/: which file imports which?' },
  ];
  for (const name of ['a', 'b', 'c', 'd']) {
    const id = `call_${name}`;
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: `{"path":"src/${name}.ts"}` } }],
      },
      {
        role: 'tool',
        tool_call_id: id,
        content: [
          `export function ${name}Value(): number {`,
          ...Array.from({ length: 120 }, (_, i) => `  // line ${i}: ${name} computes step ${i} of its value`),
          `  return ${name.charCodeAt(0)};`,
          '}',
        ].join('\n'),
      },
    );
  }
  messages.push({ role: 'assistant', content: 'No file of src/ imports another: a, b, c and d stand alone.' });
  for (let i = 0; i < 45; i++) {
    messages.push({ role: 'user', content: `Question ${i}?` }, { role: 'assistant', content: `Answer ${i}.` });
  }
  return messages;
}

// AutoContextMemory's README, Strategy 1: "Uses LLM to compress these tool invocations while preserving key
// information", "Replaces original tool invocations with compressed content"; its code returns "a new ASSISTANT message
// containing the compressed tool invocation summary".
describe('agentscope-java strategy 1 through the activities', () => {
  it('offline: the run becomes one assistant message in its place, the calls and the heads of their results listed', async () => {
    const { plan, next, body, outcome } = await compacted(oldToolRun());
    expect(plan.steps.map((s) => s.strategy)).toEqual(['compress-tool-runs']);
    expect(next.map((r) => r.id).slice(0, 4)).toEqual(['m000001', 'm000002', 'c000001', 'm000011']);
    expect(next).toHaveLength(101 - 8 + 1);
    expect(next.some((r) => r.kind === 'ledger')).toBe(false);
    const summary = body(next[2]!);
    expect(summary.role).toBe('assistant');
    const text = summary.content as string;
    expect(text.startsWith('[Compressed tool calls: m000003–m000010 (8 messages)]')).toBe(true);
    for (const name of ['a', 'b', 'c', 'd']) {
      expect(text).toContain(`- read_file({"path":"src/${name}.ts"}) → export function ${name}Value(): number {`);
    }
    expect(text).toContain('context_reload'); // where the originals are
    expect(outcome.event.removedCount).toBe(8);
  });

  it('with a summary model: asked for the calls and their key results, written as the assistant', async () => {
    const prompts: string[] = [];
    const { next, body } = await compacted(oldToolRun(), prompts);
    expect(prompts).toHaveLength(1);
    expect(prompts[0]).toContain('one run of consecutive tool calls and their results');
    const summary = body(next[2]!);
    expect(summary.role).toBe('assistant');
    expect(summary.content as string).toMatch(/^\[Compressed tool calls: m000003–m000010 \(8 messages\)\]/);
    expect(summary.content as string).toContain('each exports one function');
  });
});

// AutoContextMemory's README, Strategy 4: "Summarizes each round (user + tools + assistant)", "Replaces original
// conversation rounds with summary messages"; its code: "user1-tools-assistant1, … user4" becomes "user1-summary, …".
describe('agentscope-java strategy 4 through the activities', () => {
  it('each round before the latest final answer: its user message verbatim, then one assistant summary of its own', async () => {
    const messages: ChatMessage[] = [{ role: 'system', content: 'You check services.' }];
    for (let n = 1; n <= 30; n++) {
      const id = `call_${n}`;
      messages.push(
        { role: 'user', content: `Is service ${n} healthy?` },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id, type: 'function', function: { name: 'status', arguments: `{"service":${n}}` } }],
        },
        {
          role: 'tool',
          tool_call_id: id,
          content: Array.from({ length: 40 }, (_, i) => `probe ${i}: service ${n} answered in ${i + 3} ms`).join('\n'),
        },
        { role: 'assistant', content: `Service ${n} is healthy: 40 probes answered.` },
      );
    }
    const { plan, next, body, summaryReads } = await compacted(messages);
    expect(plan.steps.map((s) => s.strategy)).toEqual(['summarize-rounds']);
    // 29 summaries in their places from one stored plan, read once.
    expect(summaryReads.filter((key) => key === plan.planKey)).toHaveLength(1);
    // system, then (user, summary) × 29, then the 30th round whole.
    expect(next).toHaveLength(1 + 29 * 2 + 4);
    for (let r = 0; r < 29; r++) {
      const user = next[1 + 2 * r]!;
      const summary = next[2 + 2 * r]!;
      expect(user.id).toBe(messageIdOf(2 + 4 * r));
      expect(body(user).content).toBe(`Is service ${r + 1} healthy?`);
      expect(summary.id).toBe(r === 0 ? 'c000001' : `c000001-${r + 1}`);
      const text = body(summary).content as string;
      expect(body(summary).role).toBe('assistant');
      expect(text.startsWith(`[Summary of this round: ${messageIdOf(3 + 4 * r)}–${messageIdOf(5 + 4 * r)}`)).toBe(true);
      expect(text).toContain(`status({"service":${r + 1}})`);
    }
  });
});

/** 47 exchanges, the last answer the latest, then a request whose round calls `grep` four times: 104 messages. */
function roundInProgress(): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: 'You search logs with grep.' }];
  for (let i = 0; i < 47; i++) {
    messages.push({ role: 'user', content: `Question ${i}?` }, { role: 'assistant', content: `Answer ${i}.` });
  }
  messages.push({ role: 'user', content: 'Find every timeout in logs/ and say which service logged it.' });
  for (const day of [1, 2, 3, 4]) {
    const id = `call_${day}`;
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'grep', arguments: `{"file":"logs/day${day}.log"}` } }],
      },
      {
        role: 'tool',
        tool_call_id: id,
        content: Array.from({ length: 60 }, (_, i) => `day${day} 10:${i} service-${day} timeout after ${i} s`).join(
          '\n',
        ),
      },
    );
  }
  return messages;
}

// AutoContextMemory's README, Strategy 5 (its code's strategy 6), "Compress Current Round": "Finds the latest user
// message and merges all messages after it (typically tool calls and results)", "Preserves tool call interfaces and
// compresses tool results"; the rounds before it and the latest final answer are not its material.
describe('agentscope-java, the round in progress, through the activities', () => {
  it('its steps before the newest become one assistant message after its request; the answers before stay', async () => {
    for (const prompts of [undefined, [] as string[]]) {
      const { plan, next, body } = await compacted(roundInProgress(), prompts);
      expect(plan.steps.map((s) => s.strategy)).toEqual(['summarize-current-turn']);
      // Everything up to the request as it was (the latest answer, Answer 46, included), then the summary, then the
      // newest step.
      expect(next.map((r) => r.id)).toEqual([
        ...Array.from({ length: 96 }, (_, i) => messageIdOf(i + 1)),
        'c000001',
        messageIdOf(103),
        messageIdOf(104),
      ]);
      expect(body(next[94]!).content).toBe('Answer 46.');
      expect(body(next[95]!).content).toBe('Find every timeout in logs/ and say which service logged it.');
      const summary = body(next[96]!);
      expect(summary.role).toBe('assistant');
      const text = summary.content as string;
      expect(text).toMatch(
        new RegExp(
          `^\\[Summary of this round so far: ${messageIdOf(97)}–${messageIdOf(102)} \\(6 messages\\); steps 1–3 of the request in progress\\]`,
        ),
      );
      expect(text).toContain('## Where the loop stands');
      expect(next.some((r) => r.kind === 'ledger')).toBe(false);
      if (prompts) {
        // One summary, asked for the round in progress with its request (asked again when it missed a fact).
        expect(prompts.length).toBeGreaterThan(0);
        for (const prompt of prompts) {
          expect(prompt).toContain('the steps of the request in progress so far');
          expect(prompt).toContain('Find every timeout in logs/');
        }
      } else {
        // Offline: the calls and the heads of their results.
        for (const day of [1, 2, 3]) expect(text).toContain(`- grep({"file":"logs/day${day}.log"}) → day${day} 10:0`);
      }
    }
  });
});
