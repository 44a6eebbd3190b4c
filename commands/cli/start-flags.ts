/**
 * What `longrun start`'s flags ask of a new agent (the table, table.ts, says what each means): the turn budget, the
 * model's window and price, the compaction policy and tool approval, each flag checked (a usage error, exit 2, names
 * it and its range) before anything connects.
 */
import { MAX_REVIEW_SECONDS } from '../../engine/policy.ts';
import { resolvePolicy } from '../../engine/presets.ts';
import { MAX_APPROVAL_SECONDS, TURN_BUDGET_MAX } from '../../contract/inputs.ts';
import type { AgentInput, ToolApprovalSettings, TurnBudget } from '../../contract/inputs.ts';
import { intFlag, priceFlag, UsageError } from './parse.ts';
import type { FlagValues } from './parse.ts';

/** The settings of a new agent its flags give (what none gives is left out: the defaults apply). */
export function startSettings(
  values: FlagValues,
): Pick<AgentInput, 'turnBudget' | 'modelOverride' | 'compaction' | 'toolApproval'> {
  const turnBudget = turnBudgetFlags(values);
  const window = intFlag('window', values.window, 1);
  const price = priceFlag(values.price);
  const compaction = {
    ...(values.preset ? { preset: values.preset } : {}),
    ...(values.background !== undefined ? { backgroundRatio: backgroundFlag(values.background) } : {}),
    ...reviewFlags(values),
    ...(values['pin-ratio'] !== undefined ? { pinRatio: ratioFlag('pin-ratio', values['pin-ratio']) } : {}),
    ...(values['budget-note'] !== undefined ? { budgetNote: onOffFlag('budget-note', values['budget-note']) } : {}),
  };
  resolvePolicy(compaction); // a bad preset or ratio: exit 2, naming it
  const toolApproval = approvalFlags(values);
  return {
    ...(turnBudget ? { turnBudget } : {}),
    ...(window !== undefined || price
      ? { modelOverride: { ...(window !== undefined ? { window } : {}), ...(price ? { price } : {}) } }
      : {}),
    ...(Object.keys(compaction).length > 0 ? { compaction } : {}),
    ...(toolApproval ? { toolApproval } : {}),
  };
}

/**
 * `--approve-tools NAME[,NAME]` (every call of these tools waits for a person's approve or deny), with
 * `--approval-timeout SECONDS` (how long a call waits) and `--on-approval-timeout deny|approve` (what then).
 */
function approvalFlags(values: FlagValues): ToolApprovalSettings | undefined {
  const raw = values['approve-tools'];
  const onTimeout = values['on-approval-timeout'];
  if (raw === undefined) {
    for (const flag of ['approval-timeout', 'on-approval-timeout'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} goes with --approve-tools NAME[,NAME]`);
    }
    return undefined;
  }
  const tools = raw.split(',').map((name) => name.trim());
  if (tools.some((name) => name === '')) {
    throw new UsageError(`--approve-tools: must be tool names separated by commas (got ${JSON.stringify(raw)})`);
  }
  const timeoutSeconds = intFlag('approval-timeout', values['approval-timeout'], 1, MAX_APPROVAL_SECONDS);
  if (onTimeout !== undefined && onTimeout !== 'deny' && onTimeout !== 'approve') {
    throw new UsageError(`--on-approval-timeout: must be deny or approve (got ${JSON.stringify(onTimeout)})`);
  }
  return {
    tools: [...new Set(tools)],
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
    ...(onTimeout ? { onTimeout } : {}),
  };
}

/** The turn budget flags of `start`, each checked against its range. */
function turnBudgetFlags(values: FlagValues): TurnBudget | undefined {
  const steps = intFlag('max-steps', values['max-steps'], 1, TURN_BUDGET_MAX.steps);
  const tokens = intFlag('max-turn-tokens', values['max-turn-tokens'], 1, TURN_BUDGET_MAX.tokens);
  const seconds = intFlag('max-turn-seconds', values['max-turn-seconds'], 1, TURN_BUDGET_MAX.seconds);
  const budget: TurnBudget = {
    ...(steps !== undefined ? { steps } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
    ...(seconds !== undefined ? { seconds } : {}),
  };
  return Object.keys(budget).length > 0 ? budget : undefined;
}

/** A share of the window such as 0.1 (the policy checks its range). */
function ratioFlag(name: string, raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) {
    throw new UsageError(`--${name}: must be a share of the window such as 0.1 (got ${JSON.stringify(raw)})`);
  }
  return value;
}

/** `on` or `off`. */
function onOffFlag(name: string, raw: string): boolean {
  if (raw !== 'on' && raw !== 'off') throw new UsageError(`--${name}: must be on or off (got ${JSON.stringify(raw)})`);
  return raw === 'on';
}

/** `--background`: a share of the window (the policy checks its range), or `off`. */
function backgroundFlag(raw: string): number | null {
  if (raw === 'off') return null;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) {
    throw new UsageError(
      `--background: must be a share of the window such as 0.7, or off (got ${JSON.stringify(raw)})`,
    );
  }
  return value;
}

/**
 * `--await-review SECONDS` (automatic compactions wait for review that long) and `--on-review-timeout apply|discard`
 * (what then; default apply): the policy's `review` (its ranges checked by the policy).
 */
function reviewFlags(values: FlagValues): {
  review?: { automatic: true; timeoutSeconds: number; onTimeout?: 'apply' | 'discard' };
} {
  const onTimeout = values['on-review-timeout'];
  if (values['await-review'] === undefined) {
    if (onTimeout !== undefined) throw new UsageError('--on-review-timeout goes with --await-review SECONDS');
    return {};
  }
  const timeoutSeconds = intFlag('await-review', values['await-review'], 1, MAX_REVIEW_SECONDS)!;
  if (onTimeout !== undefined && onTimeout !== 'apply' && onTimeout !== 'discard') {
    throw new UsageError(`--on-review-timeout: must be apply or discard (got ${JSON.stringify(onTimeout)})`);
  }
  return { review: { automatic: true, timeoutSeconds, ...(onTimeout ? { onTimeout } : {}) } };
}
