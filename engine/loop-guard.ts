/**
 * The loop guard (policy `loopGuard`; docs/compaction.md, Loop guard): its verdict on a compaction, whether the next
 * automatic attempt offloads the largest items instead of the policy's strategies, and the note for the event. The
 * verdict's shape and the growth a pause holds for are in trigger.ts, whose cooldown step takes them.
 */
import type { CompactionPolicy } from './policy.ts';
import { holdGrowth, isAutomatic } from './trigger.ts';
import type { CooldownState, LoopGuardVerdict, Trigger } from './trigger.ts';

/** What a compaction did, as the loop guard judges it. */
export interface JudgedCompaction {
  trigger: Trigger;
  /**
   * A masking pass below the trigger or a cut of a tool result over its limit: small by design and unable to loop
   * (each must find something new), neither counted nor resetting the count.
   */
  routine: boolean;
  tokensBefore: number;
  tokensAfter: number;
  /** Set when a message or turn limit fired: then a share of the messages removed counts as saved too. */
  messages?: { before: number; after: number };
}

/**
 * The loop guard's verdict on a compaction (undefined without a guard in the policy). A compaction that saved less
 * than `minSavingRatio` of the tokens it found (or grew the context) is ineffective. An automatic one adds to the
 * count of ineffective ones in a row (an effective compaction of any trigger resets it; a forced or overflow one
 * that is ineffective leaves it, as do the routine ones); at `pauseAfter`, automatic compaction pauses until the
 * context has grown by {@link holdGrowth}. An automatic compaction after a pause (the hard limit, or growth) starts
 * the count over.
 */
export function judgeCompaction(
  policy: CompactionPolicy,
  before: CooldownState,
  done: JudgedCompaction,
): LoopGuardVerdict | undefined {
  const guard = policy.loopGuard;
  if (!guard) return undefined;
  const savedShare = done.tokensBefore > 0 ? (done.tokensBefore - done.tokensAfter) / done.tokensBefore : 0;
  const messagesShare =
    done.messages && done.messages.before > 0 ? (done.messages.before - done.messages.after) / done.messages.before : 0;
  const ineffective = Math.max(savedShare, messagesShare) < guard.minSavingRatio;
  const held = {
    inARow: before.ineffective ?? 0,
    ...(before.pausedUntil !== undefined ? { pausedUntil: before.pausedUntil } : {}),
  };
  if (done.routine) return { ineffective, savedShare, ...held };
  if (!ineffective) return { ineffective, savedShare, inARow: 0 };
  if (!isAutomatic(done.trigger)) return { ineffective, savedShare, ...held };
  const previous = held.inARow >= guard.pauseAfter ? 0 : held.inARow; // resumed after a pause: start over
  const inARow = previous + 1;
  if (inARow < guard.pauseAfter) return { ineffective, savedShare, inARow };
  return {
    ineffective,
    savedShare,
    inARow,
    pausedUntil: Math.ceil(done.tokensAfter * (1 + holdGrowth(policy)) - 1e-9), // 48,000 × 1.1 is 52,800
    paused: true,
  };
}

/**
 * Whether this automatic attempt is the loop guard's: after `offloadAfter` ineffective automatic compactions in a
 * row (and before the pause), the largest items are offloaded instead of the policy's strategies.
 */
export function offloadsLargest(policy: CompactionPolicy, cooldown: CooldownState, trigger: Trigger): boolean {
  const guard = policy.loopGuard;
  const inARow = cooldown.ineffective ?? 0;
  return !!guard && isAutomatic(trigger) && inARow >= guard.offloadAfter && inARow < guard.pauseAfter;
}

/** The loop guard's note for an event: why the compaction was ineffective, and what follows. */
export function loopGuardNote(policy: CompactionPolicy, verdict: LoopGuardVerdict, done: JudgedCompaction): string {
  const guard = policy.loopGuard!;
  const percent = (share: number) => `${(100 * share).toFixed(1)}%`;
  const what =
    done.tokensAfter > done.tokensBefore
      ? `grew the context from ${done.tokensBefore} to ${done.tokensAfter} tokens`
      : `saved ${done.tokensBefore - done.tokensAfter} of ${done.tokensBefore} tokens (${percent(verdict.savedShare)})`;
  const head = `loop guard: ineffective, ${what}, less than ${percent(guard.minSavingRatio)}`;
  if (verdict.paused) {
    return (
      `${head}; ${verdict.inARow} ineffective automatic compactions in a row: automatic compaction paused until ` +
      `the context reaches ${verdict.pausedUntil} tokens (the hard limit still compacts; a forced compaction runs)`
    );
  }
  if (done.routine || !isAutomatic(done.trigger)) return head;
  if (verdict.inARow >= guard.offloadAfter) {
    return `${head}; ${verdict.inARow} in a row: the next automatic compaction offloads the largest items instead`;
  }
  return `${head}; ${verdict.inARow} in a row`;
}
