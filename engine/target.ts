/** The target a compaction aims for: by the policy's ratio, budget or pressure level, or the trigger that fired. */
import type { CompactionPolicy } from './policy.ts';
import type { ContextStats, Trigger } from './trigger.ts';

/** What a compaction aims for: tokens, and messages and turns when a count limit fired. */
export interface Target {
  tokens: number;
  /** Set when a message limit fired. */
  messages?: number;
  /** Set when a turn limit fired. */
  turns?: number;
  /** How the token target was chosen, for the event. */
  reason: string;
  /** The pressure level used (0-based), when the policy has levels. */
  level?: number;
}

/**
 * The target for a compaction. Automatic: the target ratio of the window, or the reduction of the pressure level
 * reached (escalating with consecutive compactions, round-robin through the levels); half of a count limit that
 * fired. Forced: at most half the current tokens. Overflow: half the current tokens (and at most the target ratio),
 * halved again on each further attempt.
 */
export function targetOf(
  policy: CompactionPolicy,
  window: number,
  stats: ContextStats,
  trigger: Trigger,
  consecutive: number,
  attempt = 1,
): Target {
  const byRatio = Math.floor(policy.targetRatio * window);
  const counts: { messages?: number; turns?: number } = {};
  if (policy.maxMessages !== undefined && stats.messages > policy.maxMessages) {
    counts.messages = Math.floor(policy.maxMessages / 2);
  }
  if (policy.maxTurns !== undefined && stats.turns > policy.maxTurns) {
    // Half the limit; chatgpt-on-wechat's `trim-turns` trims the oldest half of the turns there are, once.
    counts.turns = policy.strategies.includes('trim-turns')
      ? stats.turns - Math.floor(stats.turns / 2)
      : Math.max(1, Math.floor(policy.maxTurns / 2));
  }
  if (trigger === 'forced') {
    const tokens = Math.min(byRatio, Math.floor(stats.tokens / 2));
    return { tokens, ...counts, reason: `forced: min(${policy.targetRatio} × window, half of ${stats.tokens})` };
  }
  if (trigger === 'overflow') {
    // The provider says the request is over its window, whatever our count says: aim below the current tokens.
    const tokens = Math.min(Math.floor(byRatio / 2 ** (attempt - 1)), Math.floor(stats.tokens / 2 ** attempt));
    return {
      tokens,
      ...counts,
      reason: `overflow attempt ${attempt}: min(${policy.targetRatio} × window / ${2 ** (attempt - 1)}, tokens / ${2 ** attempt})`,
    };
  }
  const levels = policy.pressureLevels;
  if (levels?.length) {
    let reached = -1;
    levels.forEach((level, i) => {
      if (stats.tokens >= level.atTokens) reached = i;
    });
    if (reached >= 0) {
      const level = policy.escalate ? (reached + consecutive) % levels.length : reached;
      const reduction = levels[level]!.reduction;
      const tokens = Math.min(byRatio, Math.floor(stats.tokens / reduction));
      return { tokens, ...counts, level, reason: `pressure level ${level + 1}: ${stats.tokens} / ${reduction}` };
    }
  }
  if (policy.maxTokens !== undefined && stats.tokens > policy.maxTokens) {
    const tokens = Math.min(byRatio, Math.floor(policy.maxTokens * (policy.targetRatio / policy.triggerRatio)));
    return { tokens, ...counts, reason: `budget ${policy.maxTokens} × ${policy.targetRatio}/${policy.triggerRatio}` };
  }
  return { tokens: byRatio, ...counts, reason: `${policy.targetRatio} × window ${window}` };
}
