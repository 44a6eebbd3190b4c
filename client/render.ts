/** Plain-text tables for the CLI. `--json` prints the data itself instead. */
import type { AgentState, MessageRecord } from '../workflows/contract.ts';
import type { AgentSummary } from './agents.ts';

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
    ...(state.droppedSignals ? [`dropped  ${state.droppedSignals} invalid message signal(s)`] : []),
    '',
    renderMessages(state.messages),
  ].join('\n');
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
