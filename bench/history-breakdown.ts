/**
 * Where a replay's Temporal history goes: replays one recorded session (as `npm run fidelity` does, on an embedded
 * stack) and sums the bytes of its workflow's history (every run) by event type, and the payloads of each activity's
 * input and result by activity type, as the server stores them (each event protobuf-encoded).
 *
 *   node bench/history-breakdown.ts [--session NAME] [--window N] [--preset NAME] [--json]
 *
 * Defaults: django-11797 at 16000 under the default preset. The recorded sessions are in test/fixtures/sessions
 * (git-ignored; the README there builds them).
 */
import { join } from 'node:path';
import { statSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import protos from '@temporalio/proto';
import { runReplay } from '../commands/replay.ts';
import { SESSIONS_DIR } from './fidelity/corpus.ts';
import { startReplayStack } from './fidelity/replay-stack.ts';

type Event = protos.temporal.api.history.v1.IHistoryEvent;

export interface HistoryBreakdown {
  /** Every event's bytes, by its type (the attribute it carries). */
  events: Record<string, { count: number; bytes: number }>;
  /** The payload bytes of each activity's inputs and results, by activity type. */
  activities: Record<string, { count: number; inputBytes: number; resultBytes: number }>;
  total: number;
}

const payloadBytes = (payloads: protos.temporal.api.common.v1.IPayloads | null | undefined): number =>
  (payloads?.payloads ?? []).reduce((sum, p) => sum + (p.data?.length ?? 0), 0);

/** The breakdown of `events` (one or more runs' histories), added into `into`. */
export function breakdownOf(events: Event[], into?: HistoryBreakdown): HistoryBreakdown {
  const { HistoryEvent } = protos.temporal.api.history.v1;
  const out: HistoryBreakdown = into ?? { events: {}, activities: {}, total: 0 };
  const typeOf = new Map<string, string>();
  for (const e of events) {
    const bytes = HistoryEvent.encode(HistoryEvent.fromObject(e)).finish().length;
    const kind = Object.keys(e).find((k) => k.endsWith('Attributes') && e[k as keyof Event]) ?? 'unknown';
    const row = (out.events[kind] ??= { count: 0, bytes: 0 });
    row.count++;
    row.bytes += bytes;
    out.total += bytes;
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const name = scheduled.activityType?.name ?? '?';
      typeOf.set(String(e.eventId), name);
      const a = (out.activities[name] ??= { count: 0, inputBytes: 0, resultBytes: 0 });
      a.count++;
      a.inputBytes += payloadBytes(scheduled.input);
    }
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed) {
      const name = typeOf.get(String(completed.scheduledEventId)) ?? '?';
      (out.activities[name] ??= { count: 0, inputBytes: 0, resultBytes: 0 }).resultBytes += payloadBytes(
        completed.result,
      );
    }
  }
  return out;
}

/** Every run's history of the agent's workflow, summed. */
async function agentBreakdown(client: Client, agentId: string, dump?: string): Promise<HistoryBreakdown> {
  const out: HistoryBreakdown = { events: {}, activities: {}, total: 0 };
  const lines: string[] = [];
  for await (const execution of client.workflow.list({ query: `WorkflowId = "agent-${agentId}"` })) {
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    breakdownOf(history.events ?? [], out);
    if (dump) lines.push(...activityLines(history.events ?? []));
  }
  if (dump) writeFileSync(dump, lines.join('\n') + '\n');
  return out;
}

/** Each activity's type, decoded input and result, and the workflow's own result, as JSON lines. */
function activityLines(events: Event[]): string[] {
  const decode = (payloads: protos.temporal.api.common.v1.IPayloads | null | undefined): unknown[] =>
    (payloads?.payloads ?? []).map((p) => JSON.parse(Buffer.from(p.data ?? []).toString('utf8')) as unknown);
  const scheduled = new Map<string, { type: string; input: unknown[] }>();
  const lines: string[] = [];
  const shown = new Map<string, number>();
  for (const e of events) {
    const kind = Object.keys(e).find((k) => k.endsWith('Attributes') && e[k as keyof Event]) ?? 'unknown';
    shown.set(kind, (shown.get(kind) ?? 0) + 1);
    if (shown.get(kind) === 20) lines.push(JSON.stringify({ raw: kind, event: e }));
    const s = e.activityTaskScheduledEventAttributes;
    if (s) scheduled.set(String(e.eventId), { type: s.activityType?.name ?? '?', input: decode(s.input) });
    const c = e.activityTaskCompletedEventAttributes;
    const of = c && scheduled.get(String(c.scheduledEventId));
    if (of) lines.push(JSON.stringify({ ...of, result: decode(c.result) }));
    const done = e.workflowExecutionCompletedEventAttributes;
    if (done) lines.push(JSON.stringify({ type: 'workflowExecutionCompleted', result: decode(done.result) }));
  }
  return lines;
}

function render(b: HistoryBreakdown, sessionBytes: number): string {
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  const lines = [`history ${kb(b.total)} = ${(b.total / sessionBytes).toFixed(2)}× the session's ${kb(sessionBytes)}`];
  lines.push('', 'events by type:');
  for (const [kind, { count, bytes }] of Object.entries(b.events).sort((x, y) => y[1].bytes - x[1].bytes)) {
    lines.push(`  ${kind.padEnd(56)} ${String(count).padStart(5)}  ${kb(bytes).padStart(10)}`);
  }
  lines.push('', 'activity payloads (input / result):');
  const rows = Object.entries(b.activities).sort(
    (x, y) => y[1].inputBytes + y[1].resultBytes - (x[1].inputBytes + x[1].resultBytes),
  );
  for (const [name, { count, inputBytes, resultBytes }] of rows) {
    lines.push(
      `  ${name.padEnd(24)} ${String(count).padStart(5)}  ${kb(inputBytes).padStart(10)}  ${kb(resultBytes).padStart(10)}`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      session: { type: 'string', default: 'django-11797' },
      window: { type: 'string', default: '16000' },
      preset: { type: 'string', default: 'default' },
      json: { type: 'boolean', default: false },
      /** Also writes every activity's decoded input and result, one JSON line each, to this file. */
      dump: { type: 'string' },
    },
  });
  const window = Number(values.window);
  if (!Number.isInteger(window) || window <= 0)
    throw new Error(`--window: a whole number of tokens (got ${values.window})`);
  const file = join(SESSIONS_DIR, `${values.session}.jsonl`);
  const sessionBytes = statSync(file).size;
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const stack = await startReplayStack(log);
  try {
    let breakdown: HistoryBreakdown | undefined;
    await runReplay({
      file,
      window,
      preset: values.preset,
      inspect: async (client, agentId) => {
        breakdown = await agentBreakdown(client, agentId, values.dump);
      },
    });
    if (values.json) console.log(JSON.stringify({ sessionBytes, ...breakdown! }, null, 2));
    else console.log(render(breakdown!, sessionBytes));
  } finally {
    await stack.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
