/**
 * What the agent is doing now, small enough to poll: the `progress` query's answer ({@link AgentProgress}) and its
 * parts in a few words, as the current details and `longrun watch` show them.
 */
import type { CompactionEventSummary } from './results.ts';
import type { AgentStatus, ApprovalProgress } from './state.ts';

export type { ApprovalProgress } from './state.ts';
import type { Trigger } from '../engine/trigger.ts';

/** The draft of an automatic compaction waiting for review, as the `progress` query shows it. */
export interface ReviewProgress {
  draft: string;
  /** The compaction it would be. */
  seq: number;
  tokensBefore: number;
  tokensAfter: number;
  /** When it times out (workflow time, ISO), and what then becomes of it. */
  until: string;
  onTimeout: 'apply' | 'discard';
}

/** A draft waiting for review in a few words: `awaiting review of draft-2 (times out in 4 min 10 s, then applied)`. */
export function describeReview(review: ReviewProgress, nowMs?: number): string {
  const then = review.onTimeout === 'apply' ? 'applied' : 'discarded';
  if (nowMs === undefined) return `awaiting review of ${review.draft} (times out at ${review.until}, then ${then})`;
  const left = Math.max(0, Math.round((Date.parse(review.until) - nowMs) / 1000));
  const inWords = left >= 60 ? `${Math.floor(left / 60)} min ${left % 60} s` : `${left} s`;
  return `awaiting review of ${review.draft} (times out in ${inWords}, then ${then})`;
}

/**
 * The steps of a compaction as the workflow sees them: `planning` (planCompaction), `summarizing` (summarizeSpan; its
 * chunks are in the activity's heartbeat details), `applying` (applyCompaction), `ready` (a compaction made in the
 * background, stored, waiting for the next step boundary to be committed).
 */
export type CompactionStep = 'planning' | 'summarizing' | 'applying' | 'ready';

/** A compaction in progress, as the `progress` query shows it. */
export interface CompactionProgress {
  seq: number;
  trigger: Trigger;
  /** Made in the background while the agent works (the soft threshold), committed at the next step boundary. */
  background: boolean;
  step: CompactionStep;
  /** When the compaction began and when its step began (workflow time, ISO). */
  began: string;
  since: string;
  /** Summarizing: the messages of the span the summary is written from. */
  spanMessages?: number;
  /**
   * Summarizing: the chunk the summary model is on, `chunk` of `chunks` (a span larger than the summary model's
   * window is summarized in chunks). Read by the client from the summarizeSpan activity's heartbeat details (the
   * workflow cannot see inside an activity); absent in the query's own answer.
   */
  chunk?: number;
  chunks?: number;
}

/** The compaction in progress in a few words, for the current details and `longrun watch`. */
export function describeCompaction(compaction: CompactionProgress): string {
  const what = `compaction ${compaction.seq} (${compaction.trigger}${compaction.background ? ', in the background' : ''})`;
  switch (compaction.step) {
    case 'planning':
      return `${what}: planning`;
    case 'summarizing': {
      const span = compaction.spanMessages !== undefined ? ` ${compaction.spanMessages} messages` : '';
      const chunk =
        compaction.chunk !== undefined && compaction.chunks !== undefined
          ? `: chunk ${compaction.chunk} of ${compaction.chunks}`
          : '';
      return `${what}: summarizing${span}${chunk}`;
    }
    case 'applying':
      return `${what}: applying`;
    case 'ready':
      return `${what}: ready, committed at the next step boundary`;
  }
}

/** A call waiting for approval in a few words, with how to answer it. */
export function describeApproval(approval: ApprovalProgress, agentId: string): string {
  const then = approval.onTimeout === 'approve' ? 'approved' : 'denied';
  return (
    `tool ${approval.tool} (${approval.callId}) awaits approval, ${then} at ${approval.until}: ` +
    `longrun approve-tool ${agentId} ${approval.callId} | longrun deny-tool ${agentId} ${approval.callId} [reason]`
  );
}

/** The turn in progress, as the `progress` query shows it. */
export interface TurnProgress {
  turn: number;
  /** The model call the turn is on (1-based). */
  step: number;
  /** When the turn began (workflow time, ISO). */
  began: string;
}

/**
 * What the agent is doing now, small enough to poll (`longrun watch`): the turn in progress and its step, the
 * compaction in progress and its step, the counts, the last reply and the last compaction. No message content but
 * the last reply's preview (as the context query shows it).
 */
export interface AgentProgress {
  agentId: string;
  status: AgentStatus;
  /** Turns completed. */
  turns: number;
  /** Inputs (messages, compaction requests) waiting behind the one in progress. */
  queued: number;
  contextTokens: number;
  window: number;
  compactions: number;
  turn?: TurnProgress;
  compaction?: CompactionProgress;
  /** The draft of an automatic compaction waiting for review (policy `review.automatic`). */
  review?: ReviewProgress;
  /** Tool calls of the turn in progress waiting for approval (`approveTool` / `denyTool`), oldest first. */
  awaitingApproval?: ApprovalProgress[];
  /** The newest answer of the model in the context (not a tool call): its id and preview. */
  lastReply?: { id: string; preview: string };
  lastCompaction?: CompactionEventSummary;
  /** Set while the loop guard (or a discarded review: `pausedFor`) pauses automatic compaction: it resumes at this many tokens. */
  pausedUntil?: number;
  /** Why automatic compaction is paused, when not the loop guard (`draft-2 discarded`). */
  pausedFor?: string;
  /** Why the last turn or compaction failed, until one succeeds. */
  lastError?: string;
}
