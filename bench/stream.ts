/**
 * The live stream's first token (`stream.firstTokenP50Ms`, docs/streaming.md): from the loopback chat server writing
 * a reply's first text piece to a client of the agent's stream (`streamAgent`, following the log in S3) receiving it,
 * through the real stack (embedded Temporal dev server and MinIO, an in-process worker), p50 over `tries` turns.
 *
 * The chat server writes the first text piece one chunk gap after it answers (the role chunk comes first): the time
 * written is taken as the responder's answer plus that gap ({@link GAP_MS}); the client runs in the same process, on
 * the same clock.
 */
import { randomUUID } from 'node:crypto';
import { closeAgent, sendMessage, startAgent } from '../client/agents.ts';
import { streamAgent } from '../client/stream.ts';
import type { TemporalTarget } from '../config/temporal.ts';
import { startChatServer } from '../llm/chat-server.ts';
import { createOpenAI } from '../llm/openai.ts';
import { S3BlobStore } from '../storage/s3.ts';
import type { S3Target } from '../storage/s3.ts';
import { startInProcessAgents } from '../worker/in-process.ts';
import { onStop } from './lifecycle.ts';
import { onBenchStack } from './stack.ts';
import type { BenchStack } from './stack.ts';
import { percentile } from './stats.ts';

/** Between two chunks of the streamed reply (so the first text piece is written this long after the answer). */
const GAP_MS = 20;
const WARM_UP = 2;

export interface StreamBenchOptions {
  tries: number;
}

export const STREAM_FULL: StreamBenchOptions = { tries: 22 };
export const STREAM_SHORT: StreamBenchOptions = { tries: 4 };

/** The stream step, on `stack` (`npm run bench`'s) or on one of its own. */
export async function benchStream(
  log: (line: string) => void,
  options: StreamBenchOptions = STREAM_FULL,
  stack?: BenchStack,
) {
  return onBenchStack(log, stack, ({ temporal, s3 }) => streamOn(temporal, s3, log, options));
}

async function streamOn(
  temporal: TemporalTarget,
  s3: S3Target,
  log: (line: string) => void,
  options: StreamBenchOptions,
) {
  let answeredAt = 0;
  const model = await startChatServer(
    () => {
      answeredAt = performance.now();
      return { content: 'The first words of a longer reply, streamed piece by piece.', chunkDelayMs: GAP_MS };
    },
    { record: false },
  );
  const modelClosed = onStop(() => model.close());
  const store = new S3BlobStore(s3);
  const agents = await startInProcessAgents({
    temporal,
    taskQueue: `bench-stream-${randomUUID()}`,
    deps: { store, openai: createOpenAI({ apiKey: 'bench', baseURL: model.baseURL, timeoutMs: 10_000 }) },
  });
  const { client, taskQueue } = agents;
  try {
    const agentId = `bench-stream-${randomUUID().slice(0, 8)}`;
    await startAgent(client, { agentId, model: 'gpt-4o-mini', taskQueue });
    const latencies: number[] = [];
    for (let i = 0; i < options.tries; i++) {
      const controller = new AbortController();
      let firstAt: number | undefined;
      const reading = (async () => {
        for await (const item of streamAgent(client, store, agentId, { from: 'end', signal: controller.signal })) {
          if (item.kind === 'text' && firstAt === undefined) firstAt = performance.now();
          if (item.kind === 'model-end') controller.abort();
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 100)); // the reader has found the end
      await sendMessage(client, agentId, `try ${i}`);
      await reading;
      if (firstAt !== undefined) latencies.push(firstAt - (answeredAt + GAP_MS));
    }
    await closeAgent(client, agentId);
    const measured = latencies.slice(WARM_UP);
    const firstTokenP50Ms = percentile(measured, 50)!;
    log(
      `first token, chat server → stream client: p50 ${firstTokenP50Ms.toFixed(1)} ms, ` +
        `p90 ${percentile(measured, 90)!.toFixed(1)} ms over ${measured.length} turns (target p50 ≤ 150 ms)`,
    );
    return { firstTokenP50Ms, firstTokenP90Ms: percentile(measured, 90)!, tries: measured.length };
  } finally {
    await agents.close();
    await model.close();
    modelClosed();
  }
}

if (import.meta.main) {
  benchStream((line) => console.log(line)).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
