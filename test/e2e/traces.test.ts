/**
 * Traces (OTEL_EXPORTER_OTLP_ENDPOINT, docs/metrics.md#traces): the `longrun` CLI and a worker process (with
 * encryption on) export their spans by OTLP/HTTP to a receiver on loopback, and the spans link up: the CLI's start of
 * the agent → the workflow run → its first activity, one trace; and the CLI's `send` Update → the workflow's handling
 * of it → the turn's scheduling of the model call → the activity → the model call's span (with its GenAI attributes),
 * another.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textOf } from '../../engine/messages.ts';
import { startChatServer } from '../../llm/chat-server.ts';
import type { ChatServer } from '../../llm/chat-server.ts';
import { newAgentId, sharedStackEnv, spawnWorker } from '../support/harness.ts';
import { runLongrun } from '../support/longrun-cli.ts';

/** A span as the receiver keeps it: OTLP/JSON's fields (ids in hex), and the service that sent it. */
interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
  service: string;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpTraces {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        attributes?: OtlpAttribute[];
      }[];
    }[];
  }[];
}

const valueOf = (value: OtlpValue) =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue));
const attributesOf = (list: OtlpAttribute[] = []) =>
  Object.fromEntries(list.map((attribute) => [attribute.key, valueOf(attribute.value)]));

const spans: ReceivedSpan[] = [];
const contentTypes = new Set<string>();
let receiver: Server;
let endpoint: string;
let model: ChatServer;
let worker: ChildProcessWithoutNullStreams;
const dataDir = mkdtempSync(join(tmpdir(), 'longrun-traces-'));
const taskQueue = `traces-${Date.now()}`;
const keys = `k1:${randomBytes(32).toString('base64')}`;

/** What every traced process here is given: the receiver, a short batch delay, encryption on. */
function tracedEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...sharedStackEnv(),
    LONGRUN_TASK_QUEUE: taskQueue,
    LONGRUN_ENCRYPTION_KEYS: keys,
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '200',
    ...extra,
  };
}

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      contentTypes.add(String(request.headers['content-type']));
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpTraces;
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({ ...span, attributes: attributesOf(span.attributes), service });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  endpoint = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  model = await startChatServer((request) => ({
    content: `noted: ${textOf(request.body.messages.findLast((m) => m.role === 'user')?.content)}`,
    usage: { prompt_tokens: 42, completion_tokens: 7 },
  }));
  worker = await spawnWorker(
    'worker/main.ts',
    tracedEnv({
      LONGRUN_DATA_DIR: dataDir,
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: model.baseURL,
      OTEL_SERVICE_NAME: 'longrun-worker',
    }),
    ['--no-demo'],
  );
}, 120_000);

afterAll(async () => {
  if (worker && worker.exitCode === null && worker.signalCode === null) {
    const exited = new Promise((resolve) => worker.on('exit', resolve));
    worker.kill('SIGTERM');
    await exited;
  }
  await model?.close();
  await new Promise((resolve) => receiver?.close(resolve));
  rmSync(dataDir, { recursive: true, force: true });
});

/** Waits until a span matching `test` has arrived (spans are exported in batches). */
async function spanWhere(what: string, test: (span: ReceivedSpan) => boolean): Promise<ReceivedSpan> {
  for (let waited = 0; waited < 20_000; waited += 100) {
    const found = spans.find(test);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no span ${what} arrived; received: ${spans.map((s) => `${s.service}:${s.name}`).join(', ')}`);
}

describe('traces exported by OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set', () => {
  it('link the CLI, the workflow, its activities and, under each message, its model call', async () => {
    const agentId = newAgentId('traces');
    const cli = (...args: string[]) => runLongrun(args, { env: tracedEnv() });
    const started = await cli('start', agentId, '--model', 'gpt-4o-mini');
    expect(started.code, started.stderr).toBe(0);
    const sent = await cli('send', agentId, 'the secret word is heliotrope');
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toContain('noted: the secret word is heliotrope');
    const closed = await cli('close', agentId, '--wait');
    expect(closed.code, closed.stderr).toBe(0);

    // The start: the CLI's span, the workflow run under it, the run's scheduling of its first activity (the model's
    // description), the activity's attempt.
    const start = await spanWhere('StartWorkflow', (s) => s.name === 'StartWorkflow:agentWorkflow');
    expect(start.service).toBe('longrun');
    const run = await spanWhere('RunWorkflow', (s) => s.name === 'RunWorkflow:agentWorkflow');
    expect(run).toMatchObject({ traceId: start.traceId, parentSpanId: start.spanId, service: 'longrun-worker' });
    const describing = await spanWhere('StartActivity:describeModel', (s) => s.name === 'StartActivity:describeModel');
    expect(describing).toMatchObject({ traceId: start.traceId, parentSpanId: run.spanId });
    const described = await spanWhere('RunActivity:describeModel', (s) => s.name === 'RunActivity:describeModel');
    expect(described).toMatchObject({ traceId: start.traceId, parentSpanId: describing.spanId });

    // The message: the CLI's Update, the workflow's handling of it, and under that the turn the loop ran for it: the
    // model call's scheduling, the activity's attempt, the call. One trace from `longrun send` to the model call.
    const update = await spanWhere('StartWorkflowUpdate:send', (s) => s.name === 'StartWorkflowUpdate:send');
    expect(update.service).toBe('longrun');
    const handled = await spanWhere('HandleUpdate:send', (s) => s.name === 'HandleUpdate:send');
    expect(handled).toMatchObject({ traceId: update.traceId, parentSpanId: update.spanId });
    const schedule = await spanWhere('StartActivity:callModel', (s) => s.name === 'StartActivity:callModel');
    expect(schedule).toMatchObject({ traceId: update.traceId, parentSpanId: handled.spanId });
    const activity = await spanWhere('RunActivity:callModel', (s) => s.name === 'RunActivity:callModel');
    expect(activity).toMatchObject({ traceId: update.traceId, parentSpanId: schedule.spanId });
    const call = await spanWhere('chat gpt-4o-mini', (s) => s.name === 'chat gpt-4o-mini');
    expect(call).toMatchObject({
      traceId: update.traceId,
      parentSpanId: activity.spanId,
      service: 'longrun-worker',
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.response.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': 42,
        'gen_ai.usage.output_tokens': 7,
        'longrun.purpose': 'turn',
      },
    });
    // Every activity of the turn (the context's stored messages too) is in the message's trace, none in the run's.
    const turnActivities = spans.filter((s) => s.name.startsWith('StartActivity:') && s.traceId === update.traceId);
    expect(turnActivities.every((s) => s.parentSpanId === handled.spanId)).toBe(true);
    expect(spans.some((s) => s.name === 'StartActivity:callModel' && s.traceId === start.traceId)).toBe(false);

    // OTLP/HTTP with JSON bodies; no span carries the message's words (spans name operations, never payloads).
    expect([...contentTypes]).toEqual(['application/json']);
    expect(JSON.stringify(spans)).not.toContain('heliotrope');
  });
});
