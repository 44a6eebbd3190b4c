/**
 * Where a step's milliseconds go (issue 42): one agent on the embedded stack, a loopback model that answers at once
 * and a tool that returns at once, runs turns of `--steps` tool steps; the last turn's Temporal history is read back
 * and cut into its steps (a step: from one `callModel` activity's scheduling to the next's). Per step it counts the
 * workflow tasks, the activities by type and the other events, and splits the step's time by the server's own event
 * times: in workflow tasks (scheduled → completed), in activities (scheduled → completed, outside workflow tasks), and
 * between (the server's round trips and the worker's own work not inside either). Beside it, the floor of the bench
 * (bench/floor-workflow.ts: an Update whose handler awaits one echo activity) the same way.
 *
 *   node bench/step-profile.ts [--steps 20] [--turns 3] [--json]
 *
 * `--steps 0`: turns without tools (a model call each), each profiled whole from its Update's acceptance to its
 * completion, as `npm run bench`'s turn overhead times them.
 *
 * The times are the server's clock; the counts are the same on any machine under any load.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common';
import type protos from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { defineTool, ToolRegistry } from '../activities/tools.ts';
import { agentHandle, closeAgent, sendMessage, startAgent } from '../client/agents.ts';
import { modulePath } from '../config/settings.ts';
import type { ChatMessage } from '../engine/messages.ts';
import { startChatServer } from '../llm/chat-server.ts';
import { createOpenAI } from '../llm/openai.ts';
import { S3BlobStore } from '../storage/s3.ts';
import { startInProcessAgents } from '../worker/in-process.ts';
import { echoUpdate } from './floor-workflow.ts';
import { onStop, stopOnSignals } from './lifecycle.ts';
import { startBenchStack } from './stack.ts';

type Event = protos.temporal.api.history.v1.IHistoryEvent;

/** One step (or the floor's one Update) as its events show it. */
export interface StepProfile {
  ms: number;
  events: number;
  workflowTasks: number;
  /** Milliseconds inside workflow tasks (scheduled → completed). */
  workflowTaskMs: number;
  /** Activities by type: how many, and their milliseconds scheduled → completed. */
  activities: Record<string, { count: number; ms: number }>;
  /** Milliseconds in activities outside any workflow task. */
  activityMs: number;
  /** Events other than workflow tasks' and activities', by type. */
  other: Record<string, number>;
}

const kindOf = (e: Event): string =>
  Object.keys(e)
    .find((k) => k.endsWith('EventAttributes') && e[k as keyof Event])
    ?.replace(/EventAttributes$/, '') ?? 'unknown';

const at = (e: Event): number => tsToMs(e.eventTime);

/** The profile of the events from `from` (inclusive) to `to` (exclusive), `ms` their span. */
export function profileOf(events: Event[], ms: number): StepProfile {
  const profile: StepProfile = {
    ms,
    events: events.length,
    workflowTasks: 0,
    workflowTaskMs: 0,
    activities: {},
    activityMs: 0,
    other: {},
  };
  const scheduled = new Map<string, { type: string; at: number }>();
  let taskScheduled: number | undefined;
  const taskSpans: [number, number][] = [];
  for (const e of events) {
    const kind = kindOf(e);
    const id = String(e.eventId);
    if (kind === 'workflowTaskScheduled') taskScheduled = at(e);
    else if (kind === 'workflowTaskCompleted' || kind === 'workflowTaskFailed' || kind === 'workflowTaskTimedOut') {
      profile.workflowTasks++;
      if (taskScheduled !== undefined) taskSpans.push([taskScheduled, at(e)]);
      taskScheduled = undefined;
    } else if (kind === 'activityTaskScheduled') {
      scheduled.set(id, { type: e.activityTaskScheduledEventAttributes!.activityType!.name!, at: at(e) });
    } else if (kind === 'activityTaskCompleted' || kind === 'activityTaskFailed') {
      const attrs = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
      const begun = scheduled.get(String(attrs!.scheduledEventId));
      if (!begun) continue;
      const entry = (profile.activities[begun.type] ??= { count: 0, ms: 0 });
      entry.count++;
      entry.ms += at(e) - begun.at;
    } else if (kind !== 'workflowTaskStarted' && kind !== 'activityTaskStarted') {
      profile.other[kind] = (profile.other[kind] ?? 0) + 1;
    }
  }
  profile.workflowTaskMs = taskSpans.reduce((sum, [a, b]) => sum + (b - a), 0);
  profile.activityMs = Math.max(0, ms - profile.workflowTaskMs - gapsOutside(events));
  return profile;
}

/** Milliseconds of the span with neither a workflow task nor an activity open (the round trips between them). */
function gapsOutside(events: Event[]): number {
  const open = new Set<string>();
  let gaps = 0;
  let last = events.length > 0 ? at(events[0]!) : 0;
  let inTask = false;
  for (const e of events) {
    const kind = kindOf(e);
    const now = at(e);
    if (!inTask && open.size === 0) gaps += now - last;
    last = now;
    if (kind === 'workflowTaskScheduled') inTask = true;
    if (kind === 'workflowTaskCompleted' || kind === 'workflowTaskFailed' || kind === 'workflowTaskTimedOut')
      inTask = false;
    if (kind === 'activityTaskScheduled') open.add(String(e.eventId));
    const ended = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
    if (ended) open.delete(String(ended.scheduledEventId));
  }
  return gaps;
}

/** The steps of the last turn in `events`: cut at each `callModel` scheduling, the last one up to the Update's end. */
export function stepsOf(events: Event[]): StepProfile[] {
  const accepted = events.findLastIndex((e) => kindOf(e) === 'workflowExecutionUpdateAccepted');
  const turn = events.slice(accepted);
  const starts = turn.flatMap((e, i) =>
    kindOf(e) === 'activityTaskScheduled' && e.activityTaskScheduledEventAttributes!.activityType!.name === 'callModel'
      ? [i]
      : [],
  );
  return starts.slice(0, -1).map((start, k) => {
    const slice = turn.slice(start, starts[k + 1]);
    return profileOf(slice, at(turn[starts[k + 1]!]!) - at(turn[start]!));
  });
}

/** Each Update in `events` from its acceptance to its completion, the first `skip` left out (warm-up). */
export function updatesOf(events: Event[], skip: number): StepProfile[] {
  const accepted = events.flatMap((e, i) => (kindOf(e) === 'workflowExecutionUpdateAccepted' ? [i] : []));
  return accepted.slice(skip).flatMap((start) => {
    const end = events.findIndex((e, i) => i > start && kindOf(e) === 'workflowExecutionUpdateCompleted');
    return end < 0 ? [] : [profileOf(events.slice(start, end + 1), at(events[end]!) - at(events[start]!))];
  });
}

const tool = defineTool({
  name: 'work',
  description: 'Does one step of work',
  parameters: { type: 'object', properties: { n: { type: 'number' } } },
  run: ({ n }) => Promise.resolve(`step ${String(n)} done`),
});

/** Tool results since the last user message of a request. */
const resultsSinceUser = (messages: ChatMessage[]) => {
  const user = messages.findLastIndex((m) => m.role === 'user');
  return messages.slice(user + 1).filter((m) => m.role === 'tool').length;
};

async function historyOf(client: Client, workflowId: string): Promise<Event[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return history.events ?? [];
}

/** The floor: Updates on bench/floor-workflow.ts, each one profiled whole. */
async function floorProfile(
  client: Client,
  connection: NativeConnection,
  namespace: string,
  updates: number,
): Promise<StepProfile[]> {
  const taskQueue = `floor-${randomUUID()}`;
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowsPath: modulePath(import.meta.url, './floor-workflow'),
    activities: { echo: (text: string) => Promise.resolve(text) },
  });
  const running = worker.run();
  try {
    const handle = await client.workflow.start('floorWorkflow', { taskQueue, workflowId: taskQueue });
    for (let i = 0; i < updates; i++) await handle.executeUpdate(echoUpdate, { args: [`u${i}`] });
    await handle.executeUpdate('stop');
    return updatesOf(await historyOf(client, taskQueue), 1);
  } finally {
    worker.shutdown();
    await running;
  }
}

/** Milliseconds with at least one of `spans` open (their union's length). */
export function busyMs(spans: readonly [number, number][]): number {
  let busy = 0;
  let until = -Infinity;
  for (const [a, b] of [...spans].sort((x, y) => x[0] - y[0])) {
    if (b <= until) continue;
    busy += b - Math.max(a, until);
    until = b;
  }
  return busy;
}

/**
 * S3 operations by kind (the operation and the key's folders without ids) while `on`: counts and milliseconds, and
 * every operation's span (what is in flight at once shows in {@link busyMs}).
 */
function countStorage(store: S3BlobStore) {
  const ops = new Map<string, { count: number; ms: number }>();
  const spans: [number, number][] = [];
  const state = { on: false };
  const kindOfKey = (key: string) =>
    key
      .split('/')
      .slice(2, -1)
      .map((part) => (/\d/.test(part) ? '*' : part))
      .join('/');
  for (const name of ['put', 'putIfAbsent', 'get', 'delete', 'list'] as const) {
    const original = (store[name] as (...args: unknown[]) => Promise<unknown>).bind(store);
    (store as unknown as Record<string, unknown>)[name] = async (...args: unknown[]) => {
      const started = performance.now();
      try {
        return await original(...args);
      } finally {
        if (state.on) {
          const kind = `${name} ${kindOfKey(String(args[0]))}`;
          const entry = ops.get(kind) ?? { count: 0, ms: 0 };
          entry.count++;
          entry.ms += performance.now() - started;
          ops.set(kind, entry);
          spans.push([started, performance.now()]);
        }
      }
    };
  }
  return { ops, spans, state };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** The median step, field by field (counts and milliseconds), over `steps`. */
export function medianProfile(steps: StepProfile[]): StepProfile {
  const types = [...new Set(steps.flatMap((s) => Object.keys(s.activities)))];
  const others = [...new Set(steps.flatMap((s) => Object.keys(s.other)))];
  return {
    ms: median(steps.map((s) => s.ms)),
    events: median(steps.map((s) => s.events)),
    workflowTasks: median(steps.map((s) => s.workflowTasks)),
    workflowTaskMs: median(steps.map((s) => s.workflowTaskMs)),
    activityMs: median(steps.map((s) => s.activityMs)),
    activities: Object.fromEntries(
      types.map((t) => [
        t,
        {
          count: median(steps.map((s) => s.activities[t]?.count ?? 0)),
          ms: median(steps.map((s) => s.activities[t]?.ms ?? 0)),
        },
      ]),
    ),
    other: Object.fromEntries(others.map((k) => [k, median(steps.map((s) => s.other[k] ?? 0))])),
  };
}

const line = (label: string, p: StepProfile) => {
  const activities = Object.entries(p.activities)
    .map(([t, a]) => `${t} ${a.count}× ${a.ms.toFixed(0)} ms`)
    .join(', ');
  const other = Object.entries(p.other)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  return (
    `${label}: ${p.ms.toFixed(0)} ms, ${p.events} events, ${p.workflowTasks} workflow tasks ` +
    `(${p.workflowTaskMs.toFixed(0)} ms), activities ${p.activityMs.toFixed(0)} ms outside them [${activities}]` +
    `, between ${Math.max(0, p.ms - p.workflowTaskMs - p.activityMs).toFixed(0)} ms; other events: ${other || 'none'}`
  );
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      steps: { type: 'string', default: '20' },
      turns: { type: 'string', default: '3' },
      json: { type: 'boolean', default: false },
    },
  });
  const steps = Number(values.steps);
  const turns = Number(values.turns);
  if (!Number.isInteger(steps) || steps < 0 || steps === 1 || steps > 500)
    throw new Error(`--steps: ${values.steps} (0, a turn without tools; or 2 to 500)`);
  const least = steps === 0 ? 3 : 1;
  if (!Number.isInteger(turns) || turns < least || turns > 100)
    throw new Error(`--turns: ${values.turns} (${least} to 100)`);
  const log = (text: string) => console.log(text);
  stopOnSignals(log);
  const stack = await startBenchStack(log);
  const model = await startChatServer(
    (request) => {
      const done = resultsSinceUser(request.body.messages);
      if (done >= steps) return { content: 'done' };
      const call = { name: 'work', arguments: JSON.stringify({ n: done }) };
      return { content: null, toolCalls: [{ id: `call_${randomUUID()}`, type: 'function' as const, function: call }] };
    },
    { record: false },
  );
  const modelClosed = onStop(() => model.close());
  const store = new S3BlobStore(stack.s3);
  const storage = countStorage(store);
  const agents = await startInProcessAgents({
    temporal: stack.temporal,
    taskQueue: `profile-${randomUUID()}`,
    deps: {
      store,
      openai: createOpenAI({ apiKey: 'bench', baseURL: model.baseURL, timeoutMs: 10_000 }),
      tools: new ToolRegistry([tool]),
    },
  });
  try {
    const agentId = `profile-${randomUUID().slice(0, 8)}`;
    await startAgent(agents.client, { agentId, model: 'gpt-4o-mini', taskQueue: agents.taskQueue });
    for (let t = 0; t < turns; t++) {
      // The last turn's storage; without tools, every turn's after the first.
      storage.state.on = steps === 0 ? t > 0 : t === turns - 1;
      await sendMessage(agents.client, agentId, `task ${t}: do ${steps} steps of work`);
    }
    storage.state.on = false;
    const run = await agentHandle(agents.client, agentId).describe();
    const history = await historyOf(agents.client, run.workflowId);
    // Without tools a step is a whole turn, its Update with it: each turn after the first.
    const agentSteps = steps === 0 ? updatesOf(history, 1) : stepsOf(history).slice(1);
    await closeAgent(agents.client, agentId);
    const connection = await NativeConnection.connect(stack.temporal.connectionOptions);
    const floor = await floorProfile(agents.client, connection, stack.temporal.namespace, agentSteps.length + 1);
    await connection.close();
    const step = medianProfile(agentSteps);
    const echo = medianProfile(floor);
    if (values.json) {
      const ops = { ...Object.fromEntries(storage.ops), busyMs: busyMs(storage.spans) };
      console.log(JSON.stringify({ step, floor: echo, steps: agentSteps, storage: ops }, null, 2));
      return;
    }
    log(
      steps === 0
        ? `\n${agentSteps.length} turns without tools, each one model call (the median of each figure, the first turn left out)`
        : `\nthe last turn's steps (the median of each figure over ${agentSteps.length}, the first step left out)`,
    );
    log(line(steps === 0 ? 'turn' : 'step', step));
    log(line('floor (Update + echo activity)', echo));
    const calls = steps === 0 ? turns - 1 : steps + 1;
    const sum = [...storage.ops.values()].reduce((total, op) => total + op.ms, 0);
    log(
      `S3 in the last turn, per step (${calls} model calls): ${(busyMs(storage.spans) / calls).toFixed(1)} ms with ` +
        `a request in flight, ${(sum / calls).toFixed(1)} ms the sum of the requests' times`,
    );
    for (const [kind, { count, ms }] of [...storage.ops].sort((a, b) => b[1].ms - a[1].ms)) {
      log(`  ${kind}: ${(count / calls).toFixed(2)} calls, ${(ms / calls).toFixed(1)} ms`);
    }
  } finally {
    await agents.close();
    await model.close();
    modelClosed();
    await stack.stop();
  }
}

if (import.meta.main) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
