/**
 * Step latency of an agent loop (one user message, many tool steps) while compaction runs in the background,
 * against the same loop with no compaction, and with today's blocking compaction: three runs side by side on one
 * stack, one worker. The model answers each step after `stepModelMs` and writes a summary in `summaryMs`
 * (real proportions: a summary takes several model calls' time; the steps between the soft threshold and the
 * trigger are the head start the background compaction has).
 *
 * A step's latency is the time between two consecutive requests of the agent's model: the model's answer, the tool,
 * and longrun's orchestration. "During" counts the steps that overlapped a summary request (a background
 * compaction in flight); "blocking" the steps that contained one (the agent waited for it).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool, ToolRegistry } from '../activities/tools.ts';
import { sendMessage, startAgent } from '../client/agents.ts';
import type { TemporalTarget } from '../config/temporal.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { startChatServer } from '../llm/chat-server.ts';
import { createOpenAI } from '../llm/openai.ts';
import type { BlobStore } from '../storage/s3.ts';
import { startInProcessAgents } from '../worker/in-process.ts';
import { onStop } from './lifecycle.ts';
import { percentile } from './stats.ts';

export interface BackgroundOptions {
  /** Tool steps under the one message. */
  steps: number;
  /** The model's window in the runs that compact. */
  window: number;
  /** How long the model takes to answer a step, and to write a summary (ms). */
  stepModelMs: number;
  summaryMs: number;
}

export const BACKGROUND_FULL: BackgroundOptions = { steps: 150, window: 32_000, stepModelMs: 300, summaryMs: 1_500 };

/** A few compactions per run in seconds: a smaller window, a summary shorter than the steps from the soft threshold to the trigger. */
export const BACKGROUND_SHORT: BackgroundOptions = { steps: 40, window: 12_000, stepModelMs: 60, summaryMs: 150 };

const SUMMARY_MODEL = 'bench-summary';
/** Steps left out of the figures at the start of each run (the worker's caches warming up). */
const WARM_UP = 3;

/** A tool result of about 2 KB (~450 tokens), different per step. */
const readFile = defineTool({
  name: 'read_file',
  description: 'Read a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  run: (args) =>
    Promise.resolve(
      Array.from({ length: 40 }, (_, i) => `${String(args.path)}:${i + 1}: const v${i} = load(${i}); // ok`).join('\n'),
    ),
});

function stepOf(messages: ChatMessage[]): number {
  const last = messages.at(-1)!;
  return last.role === 'tool' ? Number(/^call_(\d+)$/.exec(last.tool_call_id ?? '')?.[1] ?? 0) + 1 : 1;
}

interface Timeline {
  steps: number[];
  summaries: { start: number; end: number }[];
}

export interface StepLatency {
  stepLatencyP50Ms: number;
  stepLatencyP99Ms: number;
  stepLatencyDuringCompactionP99Ms: number | null;
  stepLatencyBlockingCompactionP99Ms: number | null;
  stepsDuringCompaction: number;
  compactions: number;
}

async function loop(
  temporal: TemporalTarget,
  store: BlobStore,
  options: BackgroundOptions,
  compaction: Record<string, unknown> | undefined,
  window: number,
): Promise<Timeline> {
  const timeline: Timeline = { steps: [], summaries: [] };
  const model = await startChatServer(
    async (request) => {
      if (request.body.model === SUMMARY_MODEL) {
        const span = { start: performance.now(), end: 0 };
        timeline.summaries.push(span);
        await sleep(options.summaryMs);
        span.end = performance.now();
        return {
          content: JSON.stringify({
            task_overview: 'Read every file.',
            current_state: 'Reading.',
            important_discoveries: 'Nothing failed.',
            next_steps: 'Read the next file.',
            context_to_preserve: 'file numbers',
          }),
        };
      }
      timeline.steps.push(performance.now());
      await sleep(options.stepModelMs);
      const step = stepOf(request.body.messages);
      if (step > options.steps) return { content: 'done' };
      return {
        content: null,
        toolCalls: [
          {
            id: `call_${step}`,
            type: 'function' as const,
            function: { name: 'read_file', arguments: JSON.stringify({ path: `src/f${step}.ts` }) },
          },
        ],
      };
    },
    { record: false },
  );
  const modelClosed = onStop(() => model.close());
  const agents = await startInProcessAgents({
    temporal,
    taskQueue: `bench-bg-${randomUUID()}`,
    deps: {
      store,
      openai: createOpenAI({ apiKey: 'bench', baseURL: model.baseURL, timeoutMs: 30_000 }),
      summaryModel: SUMMARY_MODEL,
      tools: new ToolRegistry([readFile]),
    },
  });
  try {
    const agentId = `bench-bg-${randomUUID().slice(0, 8)}`;
    await startAgent(agents.client, {
      agentId,
      model: 'gpt-4o-mini',
      taskQueue: agents.taskQueue,
      modelOverride: { window },
      ...(compaction ? { compaction } : {}),
    });
    await sendMessage(agents.client, agentId, `Read src/f1.ts to src/f${options.steps}.ts one by one.`);
    return timeline;
  } finally {
    await agents.close();
    await model.close();
    modelClosed();
  }
}

function latencies({ steps, summaries }: Timeline): StepLatency {
  const all: number[] = [];
  const during: number[] = [];
  const blocking: number[] = [];
  for (let i = 1 + WARM_UP; i < steps.length; i++) {
    const [from, to] = [steps[i - 1]!, steps[i]!];
    const ms = to - from;
    all.push(ms);
    // A summary wholly inside the step: the step waited for it. One that overlaps it: it ran beside the step.
    if (summaries.some((s) => s.start >= from && s.end <= to)) blocking.push(ms);
    else if (summaries.some((s) => s.start < to && s.end > from)) during.push(ms);
  }
  return {
    stepLatencyP50Ms: percentile(all, 50)!,
    stepLatencyP99Ms: percentile(all, 99)!,
    stepLatencyDuringCompactionP99Ms: percentile(during, 99) ?? null,
    stepLatencyBlockingCompactionP99Ms: percentile(blocking, 99) ?? null,
    stepsDuringCompaction: during.length,
    compactions: summaries.length,
  };
}

/** The three runs; keys as `npm run bench` records them under `agent`. */
export async function benchBackground(
  log: (line: string) => void,
  temporal: TemporalTarget,
  store: BlobStore,
  options: BackgroundOptions = BACKGROUND_FULL,
) {
  // Summaries only (no masking pass, no cheaper strategy first): each compaction waits for the summary model. Not
  // priced (`cost: null`): the soft threshold and the trigger act where they are set, so the runs measure the
  // mechanics, not whether a compaction pays.
  const summariesOnly = { mask: { fromRatio: null }, strategies: ['summarize'], cost: null };
  log(
    `step latency, ${options.steps} tool steps under one message, model ${options.stepModelMs} ms per step, summary ${options.summaryMs} ms`,
  );
  const none = latencies(await loop(temporal, store, options, undefined, 10_000_000));
  log(`  no compaction:        p50 ${none.stepLatencyP50Ms.toFixed(0)} ms, p99 ${none.stepLatencyP99Ms.toFixed(0)} ms`);
  const background = latencies(await loop(temporal, store, options, summariesOnly, options.window));
  log(
    `  background (${background.compactions} compactions): p99 ${background.stepLatencyP99Ms.toFixed(0)} ms; ` +
      `the ${background.stepsDuringCompaction} steps beside a summary p99 ${background.stepLatencyDuringCompactionP99Ms?.toFixed(0) ?? 'n/a'} ms; ` +
      `steps that waited for one p99 ${background.stepLatencyBlockingCompactionP99Ms?.toFixed(0) ?? 'none'}`,
  );
  const blocking = latencies(
    await loop(temporal, store, options, { ...summariesOnly, backgroundRatio: null }, options.window),
  );
  log(
    `  blocking (${blocking.compactions} compactions): p99 ${blocking.stepLatencyP99Ms.toFixed(0)} ms; ` +
      `steps with a compaction p99 ${blocking.stepLatencyBlockingCompactionP99Ms?.toFixed(0) ?? 'n/a'} ms`,
  );
  const ratio = (background.stepLatencyDuringCompactionP99Ms ?? NaN) / none.stepLatencyP99Ms;
  log(`  during a background compaction / without: ${ratio.toFixed(2)}× (target ≤ 1.2×)`);
  return {
    stepLatencyP99Ms: none.stepLatencyP99Ms,
    stepLatencyDuringCompactionP99Ms: background.stepLatencyDuringCompactionP99Ms,
    stepLatencyBlockingCompactionP99Ms: blocking.stepLatencyBlockingCompactionP99Ms,
    stepLatency: { none, background, blocking },
  };
}
