/**
 * The compaction in the background (policy `backgroundRatio`, the soft threshold): prepared and stored while the
 * agent keeps working, and committed at the next step boundary, in front of what the agent added meanwhile. One at a
 * time: compaction.ts starts it; whatever applies another compaction (a blocking one, a draft, a revert) settles it
 * first.
 */
import { condition } from '@temporalio/workflow';
import type { ApplyOutcome } from '../contract/compaction-activities.ts';
import type { CompactResult } from '../contract/results.ts';
import type { Prepared } from '../contract/state.ts';
import { commit, ended } from './compaction-pipeline.ts';
import type { Skipped } from './compaction-pipeline.ts';
import type { Conversation } from './conversation.ts';

/** A compaction running in the background, and how it ended once it has. */
export interface BackgroundJob {
  seq: number;
  outcome?: { prepared: Prepared; applied: ApplyOutcome } | Skipped | { failed: string } | { drafted: CompactResult };
}

export class BackgroundCompaction {
  private job: BackgroundJob | undefined;
  private readonly conversation: Conversation;

  constructor(conversation: Conversation) {
    this.conversation = conversation;
  }

  /** One runs, or has ended and waits to be committed: no other starts. */
  get busy(): boolean {
    return this.job !== undefined;
  }

  /** The background compaction has ended and waits to be committed (the loop wakes for it when idle). */
  get finished(): boolean {
    return this.job?.outcome !== undefined;
  }

  /** A compaction starts in the background, for `reason`: its job, whose `outcome` its runner sets. */
  begin(reason: string): BackgroundJob {
    const job: BackgroundJob = { seq: (this.conversation.state.compactions ?? 0) + 1 };
    this.job = job;
    this.conversation.backgroundStarted(job.seq, reason, new Date(Date.now()).toISOString());
    return job;
  }

  /** Commits the background compaction if it has ended (never waits): at a step boundary, or when idle. */
  async commitIfFinished(): Promise<CompactResult | undefined> {
    const outcome = this.job?.outcome;
    if (!outcome) return undefined;
    this.job = undefined;
    const conversation = this.conversation;
    conversation.backgroundEnded();
    if ('failed' in outcome) {
      // The hard trigger still compacts before any call that needs it; nothing changed.
      conversation.compactionFailed(outcome.failed);
      ended(conversation);
      return { compacted: false, reason: outcome.failed };
    }
    if ('skipped' in outcome) {
      conversation.skipped(outcome.gate);
      ended(conversation);
      return { compacted: false, reason: outcome.skipped };
    }
    if ('drafted' in outcome) return outcome.drafted; // it waits for review (Reviews.settleWaiting)
    const stale = conversation.staleFor(outcome.prepared.made);
    if (stale) {
      ended(conversation);
      return { compacted: false, reason: `background compaction ${outcome.prepared.seq} not applied: ${stale}` };
    }
    return commit(conversation, outcome.prepared, outcome.applied);
  }

  /** Waits for the background compaction, if one runs, and commits it. */
  async settle(): Promise<CompactResult | undefined> {
    if (!this.job) return undefined;
    const job = this.job;
    await condition(() => job.outcome !== undefined);
    return this.commitIfFinished();
  }
}
