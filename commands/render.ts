/** Plain-text tables for the CLI. `--json` prints the data itself instead. */
import type { CompactResult, RevertResult, CompactionEventSummary, CompactionStats } from '../contract/results.ts';
import type { AgentState } from '../contract/state.ts';
import type { MessageRecord } from '../contract/records.ts';
import type { AgentSummary } from '../client/reads.ts';

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
    messages.map((m) => [m.id, m.role, m.tokens, m.chars, m.preview.slice(0, previewChars)]),
  );
}

export function renderState(state: AgentState): string {
  return [
    `agent    ${state.agentId}`,
    `status   ${state.status}`,
    `model    ${state.model}`,
    `context  ${state.contextTokens} of ${state.modelInfo?.window ?? '?'} tokens`,
    `turns    ${state.turns}`,
    `messages ${state.messages.length}`,
    ...droppedLines(state),
    '',
    renderMessages(state.messages),
  ].join('\n');
}

/** Signals the workflow dropped for invalid input, by name (a Signal cannot be rejected). */
function droppedLines(state: AgentState): string[] {
  const dropped = state.droppedSignals;
  if (!dropped) return [];
  const parts = [
    dropped.message ? `${dropped.message} message` : '',
    dropped.compact ? `${dropped.compact} compact` : '',
    dropped.earlier ? `${dropped.earlier} before they were counted by name` : '',
  ].filter(Boolean);
  return parts.length ? [`dropped  invalid signals: ${parts.join(', ')}`] : [];
}

export function renderContext(state: AgentState): string {
  return table(
    ['ID', 'ROLE', 'TOKENS', 'REFERENCE', 'PREVIEW'],
    state.messages.map((m) => [m.id, m.role, m.tokens, m.key, m.preview.slice(0, 60)]),
  );
}

export function renderAgents(agents: AgentSummary[]): string {
  if (agents.length === 0) return 'no agents';
  return table(
    ['AGENT', 'STATUS', 'MODEL', 'STARTED'],
    agents.map((a) => [a.agentId, a.status || a.workflowStatus.toLowerCase(), a.model, a.startedAt.toISOString()]),
  );
}

/** One line per compaction event, then the totals. */
export function renderEvents(events: CompactionEventSummary[], stats: CompactionStats): string {
  const rows = events.map((e) => [
    e.seq,
    e.at.replace('T', ' ').slice(0, 19),
    e.trigger,
    `${e.tokensBefore} → ${e.tokensAfter}`,
    `${e.messagesBefore} → ${e.messagesAfter}`,
    e.strategies.join(', '),
    e.removedCount,
  ]);
  const totals =
    `${stats.count} compaction(s), ${stats.tokensSaved} tokens saved, ` +
    `average size after ${(stats.averageSizeRatio * 100).toFixed(0)}% of before, ` +
    (stats.costSaved !== undefined
      ? `estimated cost saved ${stats.costSaved.toFixed(4)}`
      : 'cost saved: no prices in the policy (compaction.cost)') +
    (stats.reverts ? `, ${stats.reverts} revert(s)` : '') +
    (stats.ineffective ? `, ${stats.ineffective} ineffective (loop guard)` : '') +
    (stats.pausedUntil !== undefined
      ? `; automatic compaction paused until the context reaches ${stats.pausedUntil} tokens`
      : '');
  if (rows.length === 0)
    return `${stats.count === 0 ? 'no compaction yet' : 'no events in the range asked for'}\n${totals}`;
  return `${table(['seq', 'at', 'trigger', 'tokens', 'messages', 'strategies', 'removed'], rows)}\n${totals}`;
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
