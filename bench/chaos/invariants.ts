/**
 * What a chaos run must keep, checked on what it left: the transcript (every stored message, by sequence number),
 * the final working context, the compaction events (in S3 and in the workflow's state), the model requests, and the
 * workflow runs. Pure: the driver (run.ts) reads these from Temporal, S3 and the scripted model.
 */
import { pairViewOf, toolPairViolations } from '../../engine/tool-pairs.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';

/** One agent's outcome, as read after the run. */
export interface AgentOutcome {
  name: string;
  /** The user messages the script sent, in order. */
  script: string[];
  /** Sent all at once: applied each once, in an order the server chose (not compared with the other run). */
  unordered?: boolean;
  /** Every stored message of the agent's life, by sequence number (message id `m000001`, …). */
  transcript: { id: string; message: ChatMessage }[];
  /** The final working context: each record's id, its storage key, and what it refers to. */
  context: { id: string; key: string; ref?: string; kind?: string }[];
  /** The manifest the context starts from, if a compaction made one. */
  base?: string;
  /** Every compaction event in S3, oldest first: its sequence number, what it did, and what it removed. */
  events: {
    seq: number;
    trigger: string;
    strategies: string[];
    tokensBefore: number;
    tokensAfter: number;
    removed: { id: string; replacedBy?: string }[];
  }[];
  /** The events the workflow's state keeps (the last few) and its count. */
  stateEvents: { seq: number; tokensAfter: number }[];
  stateCompactions: number;
  /** Every run of the agent's workflow: its status, and how many workflow tasks failed in its history. */
  runs: { status: string; workflowTaskFailures: number }[];
}

export interface InvariantResult {
  name: string;
  passed: boolean;
  /** What broke it (empty when it held), at most a few lines. */
  violations: string[];
}

const limited = (lines: string[]) => lines.slice(0, 8);

/** I1: every message the script sent applied exactly once, in order. Also counts lost and duplicated messages. */
export function everyMessageOnce(
  agents: readonly AgentOutcome[],
): InvariantResult & { lost: number; duplicated: number } {
  const violations: string[] = [];
  let lost = 0;
  let duplicated = 0;
  for (const agent of agents) {
    const sent = agent.transcript.filter((m) => m.message.role === 'user').map((m) => textOf(m.message.content));
    for (const text of new Set(agent.script)) {
      const times = sent.filter((s) => s === text).length;
      if (times === 0) lost++;
      if (times > 1) duplicated += times - 1;
    }
    const [got, want] = agent.unordered ? [[...sent].sort(), [...agent.script].sort()] : [sent, agent.script];
    if (got.join('\n') !== want.join('\n')) {
      violations.push(`${agent.name}: user messages ${JSON.stringify(sent)} ≠ script ${JSON.stringify(agent.script)}`);
    }
  }
  return {
    name: 'I1 every message applied exactly once, in order',
    passed: violations.length === 0,
    violations: limited(violations),
    lost,
    duplicated,
  };
}

/**
 * I2: no model request holds a tool call without its result or a result without its call; and every stored message
 * is covered exactly once by the final context: in it (raw or as a replacement that can be reloaded), or removed into
 * a summary, never both and never neither.
 */
export function requestsValidAndCovered(
  agents: readonly AgentOutcome[],
  requests: readonly { messages: ChatMessage[] }[],
): InvariantResult {
  const violations: string[] = [];
  requests.forEach((request, index) => {
    const broken = toolPairViolations(request.messages.map(pairViewOf));
    if (broken.length) violations.push(`request ${index + 1}: ${broken.map((v) => `${v.kind} ${v.id}`).join(', ')}`);
  });
  for (const agent of agents) {
    const inContext = new Map<string, number>();
    for (const record of agent.context) inContext.set(record.id, (inContext.get(record.id) ?? 0) + 1);
    const summarized = new Set(
      agent.events.flatMap((e) => e.removed.filter((r) => r.replacedBy === 'summary').map((r) => r.id)),
    );
    for (const { id } of agent.transcript) {
      const times = inContext.get(id) ?? 0;
      if (times > 1) violations.push(`${agent.name}: ${id} is in the context ${times} times`);
      if (times > 0 && summarized.has(id)) violations.push(`${agent.name}: ${id} is in the context and in a summary`);
      if (times === 0 && !summarized.has(id)) violations.push(`${agent.name}: ${id} reaches the model nowhere`);
    }
  }
  return {
    name: 'I2 every request valid, every message covered once',
    passed: violations.length === 0,
    violations: limited(violations),
  };
}

/** I3: events numbered 1, 2, 3, … without a gap, the same in the workflow's state and in S3. */
export function eventsInStep(agents: readonly AgentOutcome[]): InvariantResult {
  const violations: string[] = [];
  for (const agent of agents) {
    agent.events.forEach((event, i) => {
      if (event.seq !== i + 1) violations.push(`${agent.name}: event ${i + 1} in S3 has seq ${event.seq}`);
    });
    if (agent.stateCompactions !== agent.events.length) {
      violations.push(
        `${agent.name}: the state counts ${agent.stateCompactions} compactions, S3 holds ${agent.events.length}`,
      );
    }
    for (const kept of agent.stateEvents) {
      const stored = agent.events[kept.seq - 1];
      if (!stored || stored.tokensAfter !== kept.tokensAfter) {
        violations.push(`${agent.name}: the state's event ${kept.seq} differs from S3's`);
      }
    }
  }
  return {
    name: 'I3 events strictly increasing, the same in the workflow and in S3',
    passed: violations.length === 0,
    violations: limited(violations),
  };
}

/** I4: no run failed or was terminated, and no workflow task failed (a nondeterminism or a bug loops there). */
export function noFailedWorkflow(agents: readonly AgentOutcome[]): InvariantResult {
  const violations: string[] = [];
  for (const agent of agents) {
    agent.runs.forEach((run, i) => {
      if (!['COMPLETED', 'CONTINUED_AS_NEW'].includes(run.status)) {
        violations.push(`${agent.name}: run ${i + 1} ended ${run.status}`);
      }
      if (run.workflowTaskFailures > 0) {
        violations.push(`${agent.name}: run ${i + 1} has ${run.workflowTaskFailures} failed workflow tasks`);
      }
    });
  }
  return {
    name: 'I4 no workflow Failed or Terminated, no workflow task failing',
    passed: violations.length === 0,
    violations: limited(violations),
  };
}

/** I5: every key the final context references exists in S3. Returns the unreferenced objects as a count too. */
export function referencedKeysExist(agents: readonly AgentOutcome[], stored: ReadonlySet<string>): InvariantResult {
  const violations: string[] = [];
  for (const agent of agents) {
    const keys = [
      ...(agent.base ? [agent.base] : []),
      ...agent.context.flatMap((r) => [r.key, ...(r.ref ? [r.ref] : [])]),
    ];
    for (const key of keys) if (!stored.has(key)) violations.push(`${agent.name}: ${key} is referenced, not stored`);
  }
  return {
    name: 'I5 every key the context references exists in S3',
    passed: violations.length === 0,
    violations: limited(violations),
  };
}

/**
 * What two runs of the same script must agree on: every stored message, by id, with its content, its tool calls
 * and the call it answers. Not what each compaction decided: its reload references name the agent's id and life,
 * which differ between the two runs and count differently (a few tokens in a thousand), and that is enough to tip a
 * threshold one way in one run and the other in the next; the decisions under faults are held to I2 and I3 instead.
 */
export function comparable(agent: AgentOutcome): unknown {
  return agent.transcript.map(({ id, message }) => ({
    id,
    role: message.role,
    content: textOf(message.content),
    calls: message.tool_calls?.map((c) => `${c.id} ${c.function.name} ${c.function.arguments}`),
    answers: message.tool_call_id,
  }));
}

/** I6: each agent's transcript equal to that of the same script's run without faults. */
export function sameAsWithoutFaults(faulty: readonly AgentOutcome[], clean: readonly AgentOutcome[]): InvariantResult {
  const violations: string[] = [];
  for (const agent of faulty.filter((a) => !a.unordered)) {
    const twin = clean.find((c) => c.name === agent.name);
    if (!twin) {
      violations.push(`${agent.name}: no run without faults to compare with`);
      continue;
    }
    const [a, b] = [JSON.stringify(comparable(agent)), JSON.stringify(comparable(twin))];
    if (a !== b) {
      let at = 0;
      while (at < a.length && a[at] === b[at]) at++;
      violations.push(
        `${agent.name}: differs at …${a.slice(Math.max(0, at - 60), at + 60)}… vs …${b.slice(Math.max(0, at - 60), at + 60)}…`,
      );
    }
  }
  return {
    name: 'I6 transcript equal to the run without faults',
    passed: violations.length === 0,
    violations: limited(violations),
  };
}
