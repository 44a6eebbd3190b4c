/**
 * What a chaos run must keep, checked on what it left: the transcript (every stored message, by sequence number),
 * the final working context, the compaction events (in S3 and in the workflow's state), the model requests, and the
 * workflow runs. Pure: the driver (run.ts) reads these from Temporal, S3 and the scripted model.
 */
import { pairViewOf, toolPairViolations } from '../../engine/tool-pairs.ts';
import type { ChatMessage } from '../../engine/messages.ts';
import { textOf } from '../../engine/messages.ts';
import { currentText, SupersededCalls } from '../../contract/stream.ts';
import type { StreamItem } from '../../contract/stream.ts';
import type { SteerResult } from '../../contract/results.ts';

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
  context: { id: string; key: string; ref?: string; kind?: string; steer?: true }[];
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

/** A steer the streaming fault (F9) sent: its text (with its sequence number), its Update id and what came back. */
export interface SteerSent {
  seq: number;
  text: string;
  updateId: string;
  /** Where it landed, as its Update answered. */
  answered?: SteerResult;
  /** Why its Update failed, when it did. */
  error?: string;
  /** What the same Update (same id) sent again at a worker kill answered: each must be {@link answered}. */
  resent: { answered?: SteerResult; error?: string }[];
}

/** An agent of the streaming fault: its outcome, the segments of its stream as stored, and the steers sent to it. */
export interface StreamAgentOutcome extends AgentOutcome {
  /** Every segment of the agent's stream as stored: the offset its key names, and its items. */
  segments: { start: number; items: StreamItem[] }[];
  steers: SteerSent[];
}

/** The stream of `agent` in offset order, each offset once (the first segment that holds it). */
function streamItems(agent: StreamAgentOutcome): StreamItem[] {
  const byOffset = new Map<number, StreamItem>();
  for (const segment of [...agent.segments].sort((a, b) => a.start - b.start)) {
    for (const item of segment.items) if (!byOffset.has(item.offset)) byOffset.set(item.offset, item);
  }
  return [...byOffset.values()].sort((a, b) => a.offset - b.offset);
}

/**
 * I7: each agent's stream, as stored, is whole: its segments cover offsets 0 to n-1, each once and each item at the
 * offset its segment says (no gap, no duplicate offset); no item id, model call attempt's start or end appears twice
 * (no duplicate item); every attempt after a model call's first begins with its `superseded` item, and the text a
 * reader shows of every stored reply (`currentText`: the newest attempt's) is that reply's content, whole once. Counts
 * the items, the gaps and duplicates, and the attempts superseded (the kills that landed mid-output).
 */
export function streamWhole(
  agents: readonly StreamAgentOutcome[],
): InvariantResult & { items: number; gaps: number; duplicates: number; supersededAttempts: number } {
  const violations: string[] = [];
  let [items, gaps, duplicates, supersededAttempts] = [0, 0, 0, 0];
  for (const agent of agents) {
    const say = (line: string) => violations.push(`${agent.name}: ${line}`);
    let end = 0;
    for (const segment of [...agent.segments].sort((a, b) => a.start - b.start)) {
      if (segment.start > end) {
        gaps += segment.start - end;
        say(`offsets ${end} to ${segment.start - 1} are in no segment`);
      }
      if (segment.start < end) {
        duplicates += Math.min(end, segment.start + segment.items.length) - segment.start;
        say(`the segment at ${segment.start} overlaps the offsets before ${end}`);
      }
      segment.items.forEach((item, i) => {
        if (item.offset !== segment.start + i)
          say(`the segment at ${segment.start} holds offset ${item.offset} at ${i}`);
      });
      end = Math.max(end, segment.start + segment.items.length);
    }
    const stream = streamItems(agent);
    items += stream.length;
    if (stream.length === 0) say('its stream is empty');
    const once = (what: string, keys: string[]) => {
      const seen = new Set<string>();
      for (const key of keys) {
        if (seen.has(key)) {
          duplicates++;
          say(`${what} ${key} is in the stream twice`);
        }
        seen.add(key);
      }
    };
    once(
      'item id',
      stream.flatMap((item) => (item.id ? [item.id] : [])),
    );
    // A tool call's first argument piece names the tool call (`callId`, the same in every attempt of its model call):
    // held to once per attempt and index.
    once(
      'tool call head',
      stream.flatMap((item) =>
        item.kind === 'tool-call-delta' && item.callId ? [`${item.call}#${item.attempt}#${item.index}`] : [],
      ),
    );
    for (const kind of ['model-start', 'model-end', 'superseded'] as const) {
      once(
        kind,
        stream.flatMap((item) => (item.kind === kind ? [`${item.call}#${item.attempt}`] : [])),
      );
    }
    // Every attempt after the first is announced superseded before its own output; a reader marks the earlier
    // attempts' output that comes after that (SupersededCalls), and shows the newest attempt's text only.
    const supersededAt = new Map<string, number>();
    const calls = new SupersededCalls();
    for (const item of stream) {
      const marked = calls.see(item);
      if (item.kind === 'superseded') {
        supersededAttempts++;
        supersededAt.set(`${item.call}#${item.attempt}`, item.offset);
      }
      if ((item.kind === 'model-start' || item.kind === 'text') && item.attempt > 1) {
        const at = supersededAt.get(`${item.call}#${item.attempt}`);
        if (at === undefined)
          say(`attempt ${item.attempt} of ${item.call} writes at ${item.offset}, not superseded first`);
      }
      if (item.kind === 'text' && !marked) {
        const newer = [...supersededAt.keys()].some((k) => {
          const [call, attempt] = k.split('#');
          return call === item.call && Number(attempt) > item.attempt;
        });
        if (newer) say(`text of superseded attempt ${item.attempt} of ${item.call} at ${item.offset} is not marked`);
      }
    }
    for (const { id, message } of agent.transcript) {
      if (message.role !== 'assistant') continue;
      const ends = stream.filter((item) => item.kind === 'model-end' && item.call === id);
      if (ends.length === 0) {
        say(`the stored reply ${id} has no model-end in the stream`);
        continue;
      }
      const shown = currentText(stream, id);
      const stored = message.content === null ? '' : textOf(message.content);
      if (shown !== stored)
        say(
          `reply ${id}: the stream shows ${JSON.stringify(shown.slice(0, 80))}, stored ${JSON.stringify(stored.slice(0, 80))}`,
        );
    }
  }
  return {
    name: 'I7 every stream whole: offsets 0..n-1, no duplicate, retried output superseded',
    passed: violations.length === 0,
    violations: limited(violations),
    items,
    gaps,
    duplicates,
    supersededAttempts,
  };
}

/**
 * I8: every steer whose Update answered is applied exactly once, where the answer says, in the order sent: one user
 * message with its text in the transcript (at the answer's message id), its context record marked `steer: true` (or
 * removed into a summary), and one `steer` item in the stream (at the answer's turn and step); the same Update sent
 * again (same id) answers the same. A steer whose Update failed is applied at most once. Counts them.
 */
export function steersOnce(agents: readonly StreamAgentOutcome[]): InvariantResult & {
  sent: number;
  answered: number;
  applied: number;
  resent: number;
  lost: number;
  duplicated: number;
} {
  const violations: string[] = [];
  let [sent, answered, applied, resent, lost, duplicated] = [0, 0, 0, 0, 0, 0];
  for (const agent of agents) {
    const say = (line: string) => violations.push(`${agent.name}: ${line}`);
    const stream = streamItems(agent);
    const summarized = new Set(
      agent.events.flatMap((e) => e.removed.filter((r) => r.replacedBy === 'summary').map((r) => r.id)),
    );
    const records = new Map(agent.context.map((r) => [r.id, r]));
    const landed: { seq: number; id: string }[] = [];
    for (const steer of agent.steers) {
      sent++;
      resent += steer.resent.length;
      const messages = agent.transcript.filter(
        (m) => m.message.role === 'user' && textOf(m.message.content) === steer.text,
      );
      const items = stream.filter((item) => item.kind === 'steer' && item.text === steer.text);
      if (messages.length > 1) {
        duplicated += messages.length - 1;
        say(`${steer.text} is in the transcript ${messages.length} times`);
      }
      if (items.length > 1) say(`${steer.text} is in the stream ${items.length} times`);
      if (messages.length > 0) {
        applied++;
        landed.push({ seq: steer.seq, id: messages[0]!.id });
      }
      for (const again of steer.resent) {
        if (steer.answered && again.answered && again.answered.messageId !== steer.answered.messageId) {
          say(`${steer.text} sent again answered ${again.answered.messageId}, first ${steer.answered.messageId}`);
        }
      }
      const result = steer.answered ?? steer.resent.find((r) => r.answered)?.answered;
      if (!result) continue; // failed: at most once (above)
      answered++;
      if (messages.length === 0) {
        lost++;
        say(`${steer.text} was answered (${result.messageId}) and is not in the transcript`);
        continue;
      }
      if (messages[0]!.id !== result.messageId)
        say(`${steer.text} is ${messages[0]!.id}, answered ${result.messageId}`);
      // A steer that came to an idle agent opened a turn: a message like any, not marked, not a steer item.
      const record = records.get(result.messageId);
      if (record && !result.opened && record.steer !== true)
        say(`${result.messageId} (${steer.text}) is not marked steer`);
      if (!record && !summarized.has(result.messageId))
        say(`${result.messageId} (${steer.text}) is nowhere in the context`);
      const want = result.opened ? 0 : 1;
      if (items.length !== want) say(`${steer.text}: ${items.length} steer items in the stream, want ${want}`);
      const item = items[0];
      if (item?.kind === 'steer' && (item.turn !== result.turn || item.step !== result.step)) {
        say(
          `${steer.text}: the stream says turn ${item.turn} step ${item.step}, the Update ${result.turn}/${result.step}`,
        );
      }
    }
    // In the order sent: by message id (the order stored) and by stream offset.
    const byId = [...landed].sort((a, b) => a.id.localeCompare(b.id)).map((l) => l.seq);
    if (byId.some((seq, i) => i > 0 && seq < byId[i - 1]!)) say(`steers applied in the order ${byId.join(', ')}`);
    const inStream = stream.flatMap((item) => {
      const seq = item.kind === 'steer' ? agent.steers.find((s) => s.text === item.text)?.seq : undefined;
      return seq === undefined ? [] : [seq];
    });
    if (inStream.some((seq, i) => i > 0 && seq < inStream[i - 1]!))
      say(`steers streamed in the order ${inStream.join(', ')}`);
  }
  return {
    name: 'I8 every steer applied exactly once, in order, in the transcript and the stream',
    passed: violations.length === 0,
    violations: limited(violations),
    sent,
    answered,
    applied,
    resent,
    lost,
    duplicated,
  };
}
