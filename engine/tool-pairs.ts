/**
 * The tool-pair invariant: no view sent to a model has a tool result without its call, or a call without its
 * result. Every view is checked before every model call; every plan's output must pass.
 */

/** The fields of a message the check needs: works on chat messages and on message metadata alike. */
export interface PairView {
  role: string;
  toolCallIds?: readonly string[];
  toolCallId?: string;
}

export interface ToolPairViolation {
  kind: 'orphan-result' | 'unanswered-call' | 'duplicate-result';
  /** The tool call id concerned. */
  id: string;
  /** Index of the message in the view. */
  index: number;
}

/** Thrown for a view that breaks the invariant; names every offending id. */
export class ToolPairError extends Error {
  readonly violations: ToolPairViolation[];
  constructor(violations: ToolPairViolation[]) {
    super(
      `tool call/result pairs broken: ${violations.map((v) => `${v.kind} ${v.id} (message ${v.index})`).join(', ')}`,
    );
    this.name = 'ToolPairError';
    this.violations = violations;
  }
}

/**
 * Every violation in `view`. A valid view answers each assistant message's calls with tool messages that follow it
 * directly (before the next non-tool message), each call exactly once.
 */
export function toolPairViolations(view: readonly PairView[]): ToolPairViolation[] {
  const violations: ToolPairViolation[] = [];
  let open = new Map<string, number>(); // call id → index of the assistant message, for the current group
  const closeGroup = () => {
    for (const [id, index] of open) violations.push({ kind: 'unanswered-call', id, index });
    open = new Map();
  };
  const answered = new Set<string>();
  view.forEach((message, index) => {
    if (message.role === 'tool') {
      const id = message.toolCallId ?? '';
      if (open.has(id)) {
        open.delete(id);
        answered.add(id);
      } else {
        violations.push({ kind: answered.has(id) ? 'duplicate-result' : 'orphan-result', id, index });
      }
      return;
    }
    closeGroup();
    for (const id of message.toolCallIds ?? []) open.set(id, index);
  });
  closeGroup();
  return violations;
}

/** Throws {@link ToolPairError} unless the view is valid. */
export function assertToolPairs(view: readonly PairView[]): void {
  const violations = toolPairViolations(view);
  if (violations.length > 0) throw new ToolPairError(violations);
}

/** The pair fields of a chat message, for checking an assembled request. */
export function pairViewOf(message: {
  role: string;
  tool_calls?: readonly { id: string }[];
  tool_call_id?: string;
}): PairView {
  return {
    role: message.role,
    ...(message.tool_calls ? { toolCallIds: message.tool_calls.map((call) => call.id) } : {}),
    ...(message.tool_call_id !== undefined ? { toolCallId: message.tool_call_id } : {}),
  };
}
