/** Plain-text tables for the CLI. `--json` prints the data itself instead. */
import { pinBudgetOf, pinnedTokensOf } from '../contract/pins.ts';
import type { PinResult, UnpinResult } from '../contract/pins.ts';
import type {
  CompactResult,
  ConfigureResult,
  InterruptResult,
  RevertResult,
  CompactionEventSummary,
  CompactionStats,
  SteerResult,
  ToolDecisionResult,
} from '../contract/results.ts';
import type { ApprovalProgress } from '../contract/progress.ts';
import { costLine, formatUsd, summaryCallNote } from '../contract/state.ts';
import type { AgentState } from '../contract/state.ts';
import type { MessageRecord } from '../contract/records.ts';
import type { AgentSummary } from '../client/reads.ts';
import { retrying } from '../client/agent-observation.ts';
import type { RetriedActivity, TaskQueuePolling } from '../client/agent-observation.ts';
import type { AgentSnapshot } from '../client/agent-reads.ts';

/** Left-aligned columns separated by two spaces; numbers right-aligned. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => String(row[i] ?? '').length)));
  const line = (cells: (string | number)[]) =>
    cells
      .map((cell, i) =>
        typeof cell === 'number' ? String(cell).padStart(widths[i]!) : String(cell).padEnd(widths[i]!),
      )
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

export function renderMessages(messages: MessageRecord[], previewChars = 80): string {
  return table(
    ['ID', 'ROLE', 'TOKENS', 'CHARS', 'PREVIEW'],
    messages.map((m) => [m.id, roleOf(m), m.tokens, m.chars + (m.callChars ?? 0), shownPreview(m, previewChars)]),
  );
}

/**
 * A message's preview as the tables show it: its text, or its tool calls (`→ read_file {"path":"a.ts"}`); a record of
 * before the calls were previewed names them by id (`→ tool calls c1, c2`).
 */
function shownPreview(message: MessageRecord, chars: number): string {
  const preview =
    message.preview === '' && message.toolCallIds?.length
      ? `→ tool calls ${message.toolCallIds.join(', ')}`
      : message.preview;
  return preview.slice(0, chars);
}

/** A message's role as the tables show it: a steer (a user message inside a turn) says so. */
function roleOf(message: MessageRecord): string {
  return message.steer ? 'user (steer)' : message.role;
}

/**
 * What `longrun state` shows besides the state: whether a worker polls the agent's task queue, the activities that
 * failed and are retried, and the time.
 */
export interface StateExtras {
  worker?: TaskQueuePolling;
  retried?: RetriedActivity[];
  /** Now, for the time a draft or a tool call waiting for approval has left (ms since the epoch). */
  now?: number;
}

export function renderState(state: AgentState, extras: StateExtras = {}): string {
  return [
    `agent    ${state.agentId}`,
    `status   ${state.shownStatus ?? state.status}`,
    `model    ${state.model}`,
    `context  ${state.contextTokens} of ${state.modelInfo?.window ?? '?'} tokens`,
    `turns    ${state.turns}`,
    `messages ${state.messages.length}`,
    ...(state.spend ? [`cost     ${costLine(state.spend).replace(/^cost: /, '')}`] : []),
    ...(state.pins?.length
      ? [
          `pins     ${state.pins.map((pin) => pin.id).join(', ')} (${pinnedTokensOf(state.pins)} of ` +
            `${pinBudgetOf(state.policy, state.modelInfo?.window ?? 0)} tokens)`,
        ]
      : []),
    ...workerLines(extras.worker),
    ...(extras.retried ?? []).map(failingLine),
    ...taskLines(state),
    ...(state.lastError !== undefined ? [`error    ${state.lastError}`] : []),
    ...draftLines(state, extras.now ?? Date.now()),
    ...approvalLines(state.awaitingApproval ?? [], state.agentId, extras.now ?? Date.now()),
    ...droppedLines(state),
    '',
    renderMessages(state.messages),
  ].join('\n');
}

/** A sub-agent's task once it ended (workflows/task-mode.ts): whose, how it ended, where its answer is. */
function taskLines(state: AgentState): string[] {
  const task = state.task;
  if (!task) return [];
  const ended = task.error !== undefined ? `failed: ${task.error}` : task.stopped ? `stopped: ${task.stopped}` : 'done';
  const answer = task.replyId !== undefined ? `, answer ${task.replyId}` : '';
  return [
    `task     sub-agent of ${task.parent}: ${ended} (${task.steps} step(s), ${task.toolCalls} tool call(s)${answer})`,
  ];
}

/** Whether a worker polls the agent's task queue, and what to do when none does. */
function workerLines(worker: TaskQueuePolling | undefined): string[] {
  if (!worker) return [];
  if (worker.polled !== false) return [`worker   ${worker.text}`];
  return [
    `worker   ${worker.text}: nothing runs until one does ` +
      `(npm start, or a worker with LONGRUN_TASK_QUEUE=${worker.taskQueue})`,
  ];
}

/**
 * An activity that failed and is retried, as `longrun state` shows it: "failing  callModel failed 2 times, retrying in
 * 4 s (attempt 3 of 8): model gpt-4o-mini at http://127.0.0.1:8080/v1: Connection error."
 */
function failingLine(retried: RetriedActivity): string {
  const of = retried.maximumAttempts ? ` of ${retried.maximumAttempts}` : '';
  const next = retried.running
    ? `attempt ${retried.attempt}${of} running`
    : `${retrying(retried)} (attempt ${retried.attempt}${of})`;
  const times = retried.failures === 1 ? 'once' : `${retried.failures} times`;
  return `failing  ${retried.activity} failed ${times}, ${next}: ${retried.lastFailure}`;
}

/** The draft waiting for review: its id, what it does, the time it has left and what then, the commands. */
function draftLines(state: AgentState, now: number): string[] {
  const info = state.draft?.info;
  if (!info) return [];
  const tokens = `${info.tokensBefore} → ${info.tokensAfter} tokens`;
  const waits = info.waits;
  const left = waits ? Math.max(0, Math.round((Date.parse(waits.until) - now) / 1000)) : undefined;
  return [
    waits
      ? `review   ${info.id} (automatic compaction ${info.seq}, ${tokens}) waits: ${left} s left, then ` +
        `${waits.onTimeout === 'apply' ? 'applied as made' : 'discarded'} (at ${waits.until})`
      : `review   ${info.id} (compaction ${info.seq}, ${tokens}) waits for approve or discard`,
    `         approve: longrun approve ${state.agentId} ${info.id} [--summary-file F]`,
    `         discard: longrun discard ${state.agentId} ${info.id}`,
  ];
}

/** Seconds from `now` to `until` (ISO) in words: `4 min 10 s`, `12 s`; `0 s` once past. */
export function timeLeft(until: string, now: number): string {
  const left = Math.max(0, Math.round((Date.parse(until) - now) / 1000));
  return left >= 60 ? `${Math.floor(left / 60)} min ${left % 60} s` : `${left} s`;
}

/** The tool calls waiting for approval in `longrun state`: each with its time left, what then, and the commands. */
function approvalLines(calls: ApprovalProgress[], agentId: string, now: number): string[] {
  return calls.flatMap((call) => [
    `approval ${call.callId}: tool ${call.tool}(${clipped(call.arguments, 60)}) waits: ${timeLeft(call.until, now)} ` +
      `left, then ${call.onTimeout === 'approve' ? 'approved' : 'denied'} (at ${call.until})`,
    `         approve: longrun approve-tool ${agentId} ${call.callId}`,
    `         deny:    longrun deny-tool ${agentId} ${call.callId} [reason]`,
  ]);
}

/** `longrun tools`: every call waiting for approval with its arguments, time left, what then, and the commands. */
export function renderApprovals(calls: ApprovalProgress[], agentId: string, now: number): string {
  if (calls.length === 0) return `no tool call of ${agentId} awaits approval`;
  return calls
    .map((call) =>
      [
        `${call.callId}  tool ${call.tool}, waiting since ${call.since}`,
        `  arguments: ${call.arguments}`,
        `  ${timeLeft(call.until, now)} left: at ${call.until} it is ` +
          `${call.onTimeout === 'approve' ? 'approved and runs' : 'denied (the model sees it was not approved)'}`,
        `  approve: longrun approve-tool ${agentId} ${call.callId}`,
        `  deny:    longrun deny-tool ${agentId} ${call.callId} [reason]`,
      ].join('\n'),
    )
    .join('\n\n');
}

/** What `approve-tool` and `deny-tool` did. */
export function renderToolDecision(result: ToolDecisionResult, reason?: string): string {
  return result.decision === 'approved'
    ? `approved ${result.callId} (tool ${result.tool}): it runs now`
    : `denied ${result.callId} (tool ${result.tool}): the model sees that it was denied` +
        (reason !== undefined ? `, with the reason ${clipped(JSON.stringify(reason), 80)}` : '');
}

/** Where a steer landed. */
export function renderSteer(result: SteerResult): string {
  return result.opened
    ? `steer opened turn ${result.turn} (the agent was idle): message ${result.messageId}, step ${result.step}`
    : `steer landed in turn ${result.turn} at step ${result.step} (message ${result.messageId})`;
}

/** What an interrupt did. */
export function renderInterrupt(result: InterruptResult): string {
  const opens = result.opens !== undefined ? `; turn ${result.opens} opens with the text` : '';
  if (!result.interrupted) return `nothing to interrupt: ${result.reason}${opens}`;
  const where =
    result.turn !== undefined
      ? `turn ${result.turn} interrupted${result.step !== undefined ? ` at step ${result.step}` : ''}`
      : 'the turn was interrupted';
  return `${where}${opens}`;
}

/** A text cut to `max` characters, with an ellipsis. */
function clipped(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Signals the workflow dropped for invalid input, by name (a Signal cannot be rejected). */
function droppedLines(state: AgentState): string[] {
  const dropped = state.droppedSignals;
  if (!dropped) return [];
  const parts = [
    dropped.message ? `${dropped.message} message` : '',
    dropped.compact ? `${dropped.compact} compact` : '',
    dropped.steer ? `${dropped.steer} steer` : '',
    dropped.interrupt ? `${dropped.interrupt} interrupt` : '',
    dropped.earlier ? `${dropped.earlier} before they were counted by name` : '',
  ].filter(Boolean);
  return parts.length ? [`dropped  invalid signals: ${parts.join(', ')}`] : [];
}

export function renderContext(state: AgentState): string {
  const pins = state.pins ?? [];
  const pinOf = new Map(pins.filter((pin) => pin.kind === 'message').map((pin) => [pin.key, pin.id]));
  const context = table(
    ['ID', 'ROLE', 'TOKENS', 'PIN', 'REFERENCE', 'PREVIEW'],
    state.messages.map((m) => [m.id, roleOf(m), m.tokens, pinOf.get(m.key) ?? '', m.key, shownPreview(m, 60)]),
  );
  return pins.length === 0 ? context : `${context}\n\n${renderPins(state)}`;
}

/** The pins: id, what, tokens, who pinned it, and the budget they count against. */
export function renderPins(state: Pick<AgentState, 'pins' | 'policy' | 'modelInfo'>): string {
  const pins = state.pins ?? [];
  const tokens = pinnedTokensOf(pins);
  const budget = pinBudgetOf(state.policy, state.modelInfo?.window ?? 0);
  const rows = pins.map((pin) => [
    pin.id,
    pin.kind === 'text' ? 'text' : `message ${pin.messageId}`,
    pin.tokens,
    pin.by,
    pin.preview.slice(0, 60),
  ]);
  return `pins: ${pins.length} (${tokens} of ${budget} tokens of the pin budget)\n${table(['PIN', 'WHAT', 'TOKENS', 'BY', 'PREVIEW'], rows)}`;
}

/** What a pin did. */
export function renderPin(result: PinResult): string {
  const what = result.pin.kind === 'text' ? 'text' : `message ${result.pin.messageId}`;
  return (
    `pinned ${what} as ${result.pin.id} (${result.pin.tokens} tokens); pins: ${result.pins}, ` +
    `${result.pinnedTokens} of ${result.budget} tokens`
  );
}

/** What an unpin did. */
export function renderUnpin(result: UnpinResult): string {
  return `unpinned ${result.unpinned.id}; pins: ${result.pins}, ${result.pinnedTokens} of ${result.budget} tokens`;
}

export function renderAgents(agents: AgentSummary[]): string {
  if (agents.length === 0) return 'no agents';
  return table(
    ['AGENT', 'STATUS', 'MODEL', 'TURNS', 'CONTEXT', 'TASK QUEUE', 'STARTED'],
    withChildren(agents).map(({ agent: a, depth }) => [
      `${'  '.repeat(depth)}${depth > 0 ? '└ ' : ''}${a.agentId}`,
      a.status,
      a.model,
      a.turns ?? '?',
      a.contextTokens ?? '?',
      a.taskQueue,
      a.startedAt.toISOString(),
    ]),
  );
}

/**
 * The agents in their order, each sub-agent right under its parent (indented by its depth); a sub-agent whose parent
 * is not listed stays in its place.
 */
export function withChildren(agents: AgentSummary[]): { agent: AgentSummary; depth: number }[] {
  const listed = new Set(agents.map((a) => a.agentId));
  const children = new Map<string, AgentSummary[]>();
  for (const a of agents) {
    if (a.parent !== undefined && listed.has(a.parent)) children.set(a.parent, [...(children.get(a.parent) ?? []), a]);
  }
  const rows: { agent: AgentSummary; depth: number }[] = [];
  const seen = new Set<string>();
  const add = (agent: AgentSummary, depth: number) => {
    if (seen.has(agent.agentId)) return;
    seen.add(agent.agentId);
    rows.push({ agent, depth });
    for (const child of children.get(agent.agentId) ?? []) add(child, depth + 1);
  };
  for (const a of agents) if (a.parent === undefined || !listed.has(a.parent)) add(a, 0);
  for (const a of agents) add(a, 0); // (a cycle, which Temporal cannot make: listed anyway)
  return rows;
}

/** The summary column of `longrun events`: the call's cost, then how it was asked and its cached share. */
function summaryCell(e: CompactionEventSummary): string {
  const cost = e.spent ? formatUsd(e.spent.summary) : '–';
  const note = summaryCallNote(e.llm);
  return note ? `${cost} (${note})` : cost;
}

/**
 * What reverts undid, in the totals: "; 1 revert(s) put 2839 back: 0 tokens saved now" (a revert of an agent from
 * before `tokensRestored` is only counted).
 */
function revertedText(stats: CompactionStats): string {
  if (!stats.reverts) return '';
  if (stats.tokensRestored === undefined) return `, ${stats.reverts} revert(s)`;
  return (
    `; ${stats.reverts} revert(s) put ${stats.tokensRestored} back: ` +
    `${stats.tokensSaved - stats.tokensRestored} tokens saved now`
  );
}

/**
 * The estimated cost saved, in the totals, in one shape with prices and without: USD, at the policy's
 * `compaction.cost` prices, as each compaction estimated it when made (a revert does not take it back).
 */
function costSavedText(stats: CompactionStats): string {
  if (stats.costSaved === undefined) return 'cost saved: not estimated (no compaction.cost prices in the policy)';
  const when = stats.reverts ? ' when compacted, before reverts' : '';
  return `cost saved: ${formatUsd(stats.costSaved)} (estimated${when}, USD at the policy's compaction.cost prices)`;
}

/**
 * One line per compaction event, then the totals. `summary`: what its summary call cost, how it was asked (policy
 * `summary.request`) and the share of its input served from the prompt cache; `cache lost`: the cached prompt tokens
 * it invalidated, and what the next call pays more for them (engine/pricing.ts).
 */
export function renderEvents(events: CompactionEventSummary[], stats: CompactionStats): string {
  const rows = events.map((e) => [
    e.seq,
    e.at.replace('T', ' ').slice(0, 19),
    e.trigger,
    `${e.tokensBefore} → ${e.tokensAfter}`,
    `${e.messagesBefore} → ${e.messagesAfter}`,
    e.strategies.join(', '),
    e.removedCount,
    summaryCell(e),
    e.spent ? `${e.spent.cache.invalidatedTokens} (${formatUsd(e.spent.cache.nextCallCost)})` : '–',
  ]);
  const totals =
    `${stats.count} compaction(s), ${stats.tokensSaved} tokens saved` +
    revertedText(stats) +
    `, average size after ${(stats.averageSizeRatio * 100).toFixed(0)}% of before, ` +
    costSavedText(stats) +
    (stats.ineffective ? `, ${stats.ineffective} ineffective (loop guard)` : '') +
    (stats.pausedUntil !== undefined
      ? `; automatic compaction paused until the context reaches ${stats.pausedUntil} tokens`
      : '');
  if (rows.length === 0)
    return `${stats.count === 0 ? 'no compaction yet' : 'no events in the range asked for'}\n${totals}`;
  const headers = ['seq', 'at', 'trigger', 'tokens', 'messages', 'strategies', 'removed', 'summary', 'cache lost'];
  return `${table(headers, rows)}\n${totals}`;
}

/**
 * A draft for review: its id, plan, tokens, facts and summary text, the draft it replaced (`replaced`, pending until
 * this one was made), and the commands that answer it, for `agentId`, ready to paste.
 */
export function renderDraft(result: CompactResult, agentId: string, replaced?: string): string {
  const d = result.draft;
  if (!d) return `nothing to review: ${result.reason}`;
  return [
    `${d.id} (compaction ${d.seq}, not applied): ${d.tokensBefore} → ${d.tokensAfter} tokens (plan's estimate)`,
    ...(replaced && replaced !== d.id ? [`it replaces ${replaced}, which was not applied (one draft at a time)`] : []),
    `plan: ${d.steps.map((s) => `${s.strategy} (saves ${s.tokensSaved})`).join(', ')}`,
    ...(d.facts ? [`facts: ${d.facts.found} found, ${d.facts.missing} missing, ${d.facts.pinned.length} pinned`] : []),
    ...(d.summary !== undefined ? ['summary:', d.summary] : ['no summary (the plan summarizes nothing)']),
    `approve: longrun approve ${agentId} ${d.id} [--summary-file F]; discard: longrun discard ${agentId} ${d.id}`,
  ].join('\n');
}

/** What a revert did. */
export function renderRevert(result: RevertResult): string {
  const e = result.event;
  return [
    `event ${e.seq}: ${result.reason}: ${e.tokensBefore} → ${e.tokensAfter} tokens, ` +
      `${e.messagesBefore} → ${e.messagesAfter} messages`,
    ...e.notes.map((note) => `note: ${note}`),
  ].join('\n');
}

/** What a forced compaction did. */
export function renderCompaction(result: CompactResult): string {
  if (result.noGain) return `${result.reason} (--even-if-larger applies it anyway)`;
  if (!result.compacted || !result.event) return `nothing compacted: ${result.reason}`;
  const e = result.event;
  const lines = [
    `compaction ${e.seq}: ${e.tokensBefore} → ${e.tokensAfter} tokens, ${e.messagesBefore} → ${e.messagesAfter} messages`,
    `strategies: ${e.strategies.join(', ')}`,
    ...e.notes.map((note) => `note: ${note}`),
    ...(e.shortfall ? [`target not reached: ${e.shortfall}`] : []),
    `removed ${e.removedCount} message(s); the segment is stored at ${e.keys.removed}`,
  ];
  return lines.join('\n');
}

/** What `configure` did: each setting changed (from → to), and the compaction the smaller window needed first. */
export function renderConfigured(result: ConfigureResult, agentId: string): string {
  const shown = (value: string | number | undefined) =>
    value === undefined ? 'none' : typeof value === 'number' ? `${value} tokens` : quotedShort(value);
  const compaction = result.compaction;
  return [
    ...(result.changed.length === 0
      ? [`agent ${agentId}: nothing to change (model ${result.settings.model}, window ${result.settings.window})`]
      : result.changed.map((c) => `${c.setting}: ${shown(c.from)} → ${shown(c.to)}`)),
    ...(compaction?.compacted && compaction.event
      ? [
          `compacted first for the smaller window: compaction ${compaction.event.seq}, ` +
            `${compaction.event.tokensBefore} → ${compaction.event.tokensAfter} tokens`,
        ]
      : compaction
        ? [`not compacted: ${compaction.reason}`]
        : []),
  ].join('\n');
}

/** A text setting as a line shows it: quoted, its first 60 characters. */
function quotedShort(text: string): string {
  return text.length > 60
    ? `${JSON.stringify(text.slice(0, 60)).slice(0, -1)}…" (${text.length} chars)`
    : JSON.stringify(text);
}
/**
 * What Temporal knows of an agent no worker answers for (`longrun state`, `events`, `context` then): its status and
 * search attributes, why it was not asked, its pending activities.
 */
export function renderSnapshot(snapshot: AgentSnapshot, reason: string): string {
  const closed = snapshot.workflowStatus !== 'RUNNING';
  return [
    `agent    ${snapshot.agentId}`,
    `status   ${closed ? `closed (${snapshot.workflowStatus.toLowerCase()})` : (snapshot.status ?? 'running')}`,
    ...(snapshot.model ? [`model    ${snapshot.model}`] : []),
    ...(snapshot.contextTokens !== undefined
      ? [`context  about ${snapshot.contextTokens} tokens (as last shown)`]
      : []),
    ...(snapshot.compactions !== undefined ? [`compactions ${snapshot.compactions}`] : []),
    `worker   ${reason}`,
    ...snapshot.pendingActivities.map((activity) => `pending  ${activity}`),
    `started  ${snapshot.startedAt}${snapshot.closedAt ? `, closed ${snapshot.closedAt}` : ''}`,
    '',
    'This is what Temporal knows without a worker; the messages and the rest of the state need one to answer.',
  ].join('\n');
}
