/**
 * Laying a policy's overrides over a base policy (a preset): nested groups field by field, `null` turning an optional
 * group off, per-tool limits merged by tool name. Validation is policy-validation.ts's; presets.ts `resolvePolicy`
 * merges, then validates.
 */
import { DEFAULT_LOOP_GUARD, DEFAULT_REVIEW } from './policy.ts';
import type { CompactionPolicy, PolicyOverrides, ReviewPolicy, ToolLimits } from './policy.ts';

/** Merges overrides into a base policy (nested groups field by field); does not validate. */
export function mergePolicy(base: CompactionPolicy, overrides: PolicyOverrides): CompactionPolicy {
  const merged = { ...base, ...overrides } as CompactionPolicy;
  if (overrides.backgroundRatio === null) delete merged.backgroundRatio;
  if (overrides.cost === null) delete merged.cost;
  if (overrides.loopGuard === null) delete merged.loopGuard;
  else if (overrides.loopGuard !== undefined) {
    merged.loopGuard = { ...(base.loopGuard ?? DEFAULT_LOOP_GUARD), ...overrides.loopGuard };
  }
  if (overrides.review === null) delete merged.review;
  else if (overrides.review !== undefined) {
    // Not an object: kept as given, for validation to refuse.
    merged.review =
      typeof overrides.review === 'object' && !Array.isArray(overrides.review)
        ? { ...(base.review ?? DEFAULT_REVIEW), ...overrides.review }
        : (overrides.review as ReviewPolicy);
  }
  merged.toolResults = { ...base.toolResults, ...overrides.toolResults };
  if (overrides.tools !== undefined) merged.tools = mergeToolLimits(base.tools, overrides.tools);
  const { fromRatio, ...mask } = { ...base.mask, ...overrides.mask };
  merged.mask =
    fromRatio === null ? { minTokens: mask.minTokens } : { ...mask, ...(fromRatio !== undefined ? { fromRatio } : {}) };
  merged.offload = { ...base.offload, ...overrides.offload };
  merged.summary = { ...base.summary, ...overrides.summary };
  merged.truncateRounds = { ...base.truncateRounds, ...overrides.truncateRounds };
  return merged;
}

/** Per-tool limits merged by name, field by field (not an object: kept as given, for validation to refuse). */
function mergeToolLimits(
  base: CompactionPolicy['tools'],
  overrides: NonNullable<PolicyOverrides['tools']>,
): CompactionPolicy['tools'] {
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides)) {
    return overrides as CompactionPolicy['tools'];
  }
  const merged: Record<string, ToolLimits> = { ...base };
  for (const [name, limits] of Object.entries(overrides)) {
    if (limits === null) delete merged[name];
    else if (typeof limits === 'object' && !Array.isArray(limits)) merged[name] = { ...base?.[name], ...limits };
    else merged[name] = limits;
  }
  return merged;
}
