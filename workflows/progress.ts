/**
 * What the agent is doing now: the turn in progress and its model call, the compaction in progress and its step.
 * Held per run, in memory only: it is not state (continue-as-new and a reopen happen only when the agent is idle, and
 * carry nothing of it), and changing it issues no command. The `progress` query, the current details and the
 * `compacting` status read it (workflows/visibility.ts).
 *
 * Pure: no Temporal API, no clock (the callers pass workflow time), so it is unit-tested alone.
 */
import type {
  AgentProgress,
  ApprovalProgress,
  CompactionProgress,
  CompactionStep,
  ReviewProgress,
  TurnProgress,
} from '../contract/progress.ts';
import type { AgentStatusAttribute, WorkflowState } from '../contract/state.ts';
import type { Trigger } from '../engine/trigger.ts';

export class Progress {
  turn: TurnProgress | undefined;
  compaction: CompactionProgress | undefined;
  /** The `AgentStatus` the workflow last upserted for a compaction or a review (visibility.ts keeps it in step). */
  statusShown: AgentStatusAttribute = 'running';
  /** The tool calls of the turn in progress waiting for approval (workflows/turn/control.ts). */
  awaitingApproval: ApprovalProgress[] = [];

  approvalsWaiting(calls: ApprovalProgress[]): void {
    this.awaitingApproval = calls;
  }

  turnBegan(turn: number, at: string): void {
    this.turn = { turn, step: 1, began: at };
  }

  /** The turn makes its `step`-th model call. */
  turnStep(step: number): void {
    if (this.turn) this.turn = { ...this.turn, step };
  }

  turnEnded(): void {
    this.turn = undefined;
  }

  /** Compaction `seq` is at `step` (from `at`, workflow time); the first step of a new one marks its beginning. */
  compactionAt(seq: number, trigger: Trigger, step: CompactionStep, at: string, spanMessages?: number): void {
    const same = this.compaction?.seq === seq ? this.compaction : undefined;
    this.compaction = {
      seq,
      trigger,
      background: trigger === 'background',
      step,
      began: same?.began ?? at,
      since: at,
      ...(spanMessages !== undefined ? { spanMessages } : {}),
    };
  }

  /** The compaction ended: committed, skipped, found stale, or failed. */
  compactionEnded(): void {
    this.compaction = undefined;
  }
}

/** The `progress` query's answer: what is going on, the counts, the last reply and compaction. */
export function progressOf(state: WorkflowState, progress: Progress, queued: number): AgentProgress {
  const reply = state.messages.findLast((m) => m.role === 'assistant' && !(m.toolCallIds?.length ?? 0));
  const lastCompaction = state.events?.at(-1);
  const until = state.cooldown?.pausedUntil;
  const review = reviewOf(state);
  return {
    agentId: state.agentId,
    status: state.status,
    turns: state.turns,
    queued,
    contextTokens: state.contextTokens,
    window: state.modelInfo?.window ?? 0,
    compactions: state.compactions ?? 0,
    ...(progress.turn ? { turn: progress.turn } : {}),
    ...(progress.compaction ? { compaction: progress.compaction } : {}),
    ...(review ? { review } : {}),
    ...(progress.awaitingApproval.length ? { awaitingApproval: progress.awaitingApproval } : {}),
    ...(reply ? { lastReply: { id: reply.id, preview: reply.preview } } : {}),
    ...(lastCompaction ? { lastCompaction } : {}),
    ...(until !== undefined && state.contextTokens < until
      ? { pausedUntil: until, ...(state.cooldown?.pausedFor ? { pausedFor: state.cooldown.pausedFor } : {}) }
      : {}),
    ...(state.lastError ? { lastError: state.lastError } : {}),
  };
}

/** The draft of an automatic compaction waiting for review, if one does (policy `review.automatic`). */
export function reviewOf(state: WorkflowState): ReviewProgress | undefined {
  const info = state.draft?.info;
  if (!info?.waits) return undefined;
  return {
    draft: info.id,
    seq: info.seq,
    tokensBefore: info.tokensBefore,
    tokensAfter: info.tokensAfter,
    until: info.waits.until,
    onTimeout: info.waits.onTimeout,
  };
}
