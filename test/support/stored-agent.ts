/**
 * An agent's conversation stored through the real activities over an in-memory store, for unit tests that run the
 * compaction activities as the workflow's pipeline does (plan → summarize → apply) without a Temporal server: the
 * store, the activity context they read (a meter that records nothing, heartbeats that go nowhere), a scripted summary
 * model, and the agent loop the tests compact.
 */
import { asyncLocalStorage } from '@temporalio/activity';
import type { Context } from '@temporalio/activity';
import { noopMetricMeter } from '@temporalio/common';
import type OpenAI from 'openai';
import { createActivities } from '../../activities/index.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import type { PolicyOverrides } from '../../engine/policy.ts';
import { resolvePolicy } from '../../engine/presets.ts';
import { NO_COOLDOWN } from '../../engine/trigger.ts';
import type { Trigger } from '../../engine/trigger.ts';
import type { PlanOutcome, SummarizeRequest } from '../../contract/compaction-activities.ts';
import { messageIdOf, messageKey } from '../../contract/keys.ts';
import type { AgentLife } from '../../contract/keys.ts';
import type { ContextRecord } from '../../contract/records.ts';
import { wholeSummary } from '../../contract/lean-calls.ts';
import type { TaskLedger } from '../../engine/ledger.ts';
import type { BlobStore } from '../../storage/s3.ts';

export const counting = { encoding: 'o200k_base' as const, margin: 1 };

/** What the activities read of their context: a meter that records nothing, heartbeats that go nowhere. */
const activityContext = { metricMeter: noopMetricMeter, heartbeat: () => undefined } as unknown as Context;

/** Runs `work` as an activity would run (activities read their context from async local storage). */
export const inActivity = <T>(work: () => Promise<T>): Promise<T> => asyncLocalStorage.run(activityContext, work);

/** An in-memory store. */
export function memoryStore(): BlobStore & { objects: Map<string, string> } {
  const objects = new Map<string, string>();
  return {
    bucket: 'test',
    objects,
    put: (key, body) => Promise.resolve(void objects.set(key, body)),
    get: (key) => Promise.resolve(objects.get(key)),
    ensureBucket: () => Promise.resolve(),
  };
}

/** The usage a provider reports with a completion (its shape on the wire). */
export type WireUsage = { prompt_tokens: number; completion_tokens: number; [field: string]: unknown };

/** A summary model that answers with `reply()` (the summarize step's JSON), reporting `usage()` for each call. */
export function summaryModel(
  reply: () => string,
  usage: () => WireUsage = () => ({ prompt_tokens: 100, completion_tokens: 100 }),
): OpenAI {
  const create = () =>
    Promise.resolve({ model: 'summarizer', choices: [{ message: { content: reply() } }], usage: usage() });
  return { chat: { completions: { create } } } as unknown as OpenAI;
}

/**
 * An agent at work: a goal with constraints, then `steps` tool calls whose results are 30 lines of a log page
 * (`line(i, step)`, i from 1), each answered.
 */
export function agentLoop(steps: number, line: (i: number, step: number) => string): ChatMessage[] {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are an operations agent. You read logs with the fetch_log tool and report.' },
    { role: 'user', content: 'Find why checkout fails since Monday. Do not restart production; report by 17:00.' },
  ];
  for (let step = 1; step <= steps; step++) {
    const id = `call_${step}`;
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'fetch_log', arguments: `{"page":${step}}` } }],
      },
      { role: 'tool', tool_call_id: id, content: Array.from({ length: 30 }, (_, i) => line(i + 1, step)).join('\n') },
      { role: 'assistant', content: `Page ${step}: all 30 requests answered 200; checkout not seen yet.` },
      { role: 'user', content: `Go on with page ${step + 1}.` },
    );
  }
  return messages;
}

/**
 * `messages` stored as agent `agentId`'s (life `l1`) through the activities over a fresh in-memory store: the
 * activities, the context's records (`context`, which `append` extends), the tokens every request adds besides its
 * messages (`fixedTokens`) and the goal (the first user message). With `summarizer`, summaries are written by it
 * (as model `summaryModelName`, whose list price prices them); without, extractive (deterministic).
 */
export async function storedAgent(
  agentId: string,
  messages: ChatMessage[],
  summarizer?: OpenAI,
  summaryModelName = 'summarizer',
) {
  const store = memoryStore();
  const activities = createActivities({
    store,
    openai: summarizer ?? ({} as OpenAI),
    ...(summarizer ? { summaryModel: summaryModelName } : {}),
  });
  const life = { agentId, life: 'l1' };
  // What every request adds besides its messages (the tool schemas of context_reload, the reply primer).
  const { fixedTokens } = await activities.describeModel({ model: 'gpt-4o-mini' });
  const context: ContextRecord[] = [];
  /** Stores messages after those stored so far; their records. */
  async function append(more: ChatMessage[]): Promise<ContextRecord[]> {
    const records: ContextRecord[] = [];
    for (const message of more) {
      const messageId = messageIdOf(context.length + 1);
      context.push(await activities.storeMessage({ ...life, messageId, message, counting }));
      records.push(context.at(-1)!);
    }
    return records;
  }
  await append(messages);
  const goalId = context.find((m) => m.role === 'user')!.id;

  /** What every plan of compaction `o.seq` takes (its context, inline or by reference, and options aside). */
  const planInput = (o: CompactionOf) => ({
    ...life,
    seq: o.seq,
    policy: resolvePolicy(o.policy),
    window: o.window,
    fixedTokens,
    counting,
    trigger: o.trigger,
    cooldown: NO_COOLDOWN,
    goalId,
  });

  /**
   * The summary of a plan's span, asked as the workflow asks it: `span` names it inline (by default the plan's own
   * keys, as before `compaction-refs`) or by the stored plan's key (`{ planKey }`). Its ledger whole again, as the
   * workflow restores it from `base`, the ledger the plan was made with (contract/lean-calls.ts).
   */
  const summarize = async (seq: number, s: PlannedSummary, span: SpanOf = inlineSpan(s), base?: TaskLedger) =>
    wholeSummary(
      await inActivity(() =>
        activities.summarizeSpan({
          ...life,
          seq,
          ...span,
          maxTokens: s.maxTokens!,
          counting,
          writer: s.writer!,
          goalKey: messageKey(life, goalId),
        }),
      ),
      base,
    );

  /** What every apply of compaction `o.seq` takes (the summary and options aside). */
  const applyInput = (o: Pick<CompactionOf, 'seq' | 'window'>, plan: PlanOutcome) => ({
    ...life,
    seq: o.seq,
    planKey: plan.planKey!,
    at: new Date(0).toISOString(),
    counting,
    fixedTokens,
    startedAt: 0,
    consecutive: 0,
    window: o.window,
  });

  return { store, activities, life, fixedTokens, context, append, goalId, planInput, summarize, applyInput };
}

/** A compaction as the tests ask for it. */
export interface CompactionOf {
  seq: number;
  trigger: Trigger;
  window: number;
  policy: PolicyOverrides;
}

type PlannedSummary = NonNullable<PlanOutcome['summary']>;
type SpanOf = Omit<SummarizeRequest, keyof AgentLife | 'seq' | 'maxTokens' | 'counting'>;

/** A plan's span named inline: its keys, the summary it extends, its coverage and what leaves with it. */
const inlineSpan = (s: PlannedSummary): SpanOf => ({
  spanKeys: s.spanKeys!,
  keptKeys: s.keptKeys!,
  ...(s.prependToKey ? { prependToKey: s.prependToKey } : {}),
  coverage: s.coverage!,
  leavingIds: s.leavingIds!,
});
