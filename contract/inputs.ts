/**
 * What the agent takes: its start input, the turn budget, and the input of each Update and Signal, with their limits
 * and the error that names a broken one ({@link InvalidInputError}). Their validators, which the workflow, the client
 * library and the CLI share, are contract/input-checks.ts's.
 */
import type { ModelOverride } from '../engine/models.ts';
import type { PolicyOverrides, StrategyName } from '../engine/policy.ts';

/** Longest user message accepted, in characters (well under Temporal's 2 MB payload limit). */
export const MAX_MESSAGE_CHARS = 200_000;

export interface AgentInput {
  agentId: string;
  model: string;
  systemPrompt?: string;
  /**
   * What one turn (one user message) may spend before it stops without a final answer: model calls, tokens, wall
   * time. Default: {@link DEFAULT_TURN_STEPS} model calls, no token or time limit.
   */
  turnBudget?: TurnBudget;
  /**
   * The step budget as agents started before `turnBudget` set it: read as `turnBudget.steps` (which wins when both
   * are given). Kept so that running agents keep their setting.
   */
  maxSteps?: number;
  /** Window, encoding and safety margin, for a model the registry does not know or to override it. */
  modelOverride?: ModelOverride;
  /** The compaction policy: a preset (default `default`) and overrides of any of its fields. */
  compaction?: PolicyOverrides & { preset?: string };
  /**
   * @deprecated The former name of `compaction`, which agents started before the rename carry: read when
   * `compaction` is absent (both at once is refused).
   */
  compression?: PolicyOverrides & { preset?: string };
  /**
   * Tools whose calls wait for a person's approval (`approveTool` / `denyTool`) before they run, by name, besides
   * those whose definition asks for it (`defineTool({ approval })`); how long a call waits, and what then.
   */
  toolApproval?: ToolApprovalSettings;
  /**
   * Sub-agents (contract/delegation.ts): the built-in `delegate` tool is on, and its children start with these
   * settings. Absent: the model does not see the tool.
   */
  delegation?: DelegationSettings;
  /**
   * Task mode, for a child agent (started by its parent's workflow): this text is its first message; once that turn
   * is done the agent closes, its outcome in its state's `task`.
   */
  task?: TaskInput;
  /** The tools the model sees besides the built-in context tools, by name (default: every tool of the worker). */
  tools?: string[];
}

/** What a child agent is started with (the parent's delegation settings, or a `delegateTo` tool's). */
export interface ChildSettings {
  /** The child's model (default: the parent's model as it is now). */
  model?: string;
  /** The child's system prompt (default contract/delegation.ts `DEFAULT_CHILD_PROMPT`). */
  systemPrompt?: string;
  /** The child's compaction policy: a preset and overrides (default: the `default` preset). */
  compaction?: PolicyOverrides & { preset?: string };
  /** The child's turn budget: its one task may spend this much (default 50 steps). */
  turnBudget?: TurnBudget;
  /** The tools the child's model sees besides the built-in context tools (default: every tool of the worker). */
  tools?: string[];
}

/** The agent input's `delegation`: the built-in `delegate` tool is on, its children started with these settings. */
export interface DelegationSettings extends ChildSettings {
  /** The most steps a call may ask for its child (`max_steps`); default: the child's `turnBudget.steps`. */
  maxStepsPerTask?: number;
}

/**
 * Which tool schemas an agent's model sees (sent with each model call and to describeModel): the built-in `delegate`
 * only with `delegate: true`; with `only`, the worker's own tools of these names (the built-in context tools always).
 * Absent: every tool of the worker but `delegate`.
 */
export interface ToolSelection {
  delegate?: boolean;
  only?: string[];
}

/** The tool selection of an agent's input: undefined (every tool but `delegate`) unless it sets `delegation` or `tools`. */
export function toolSelectionOf(input: Pick<AgentInput, 'delegation' | 'tools'>): ToolSelection | undefined {
  if (input.delegation === undefined && input.tools === undefined) return undefined;
  return {
    ...(input.delegation !== undefined ? { delegate: true } : {}),
    ...(input.tools !== undefined ? { only: input.tools } : {}),
  };
}

/** A child agent's input `task`: its one message, and who delegated it. */
export interface TaskInput {
  text: string;
  /** The parent agent's id and the tool call that delegated the task. */
  parent: string;
  callId: string;
}

/** Which tool calls wait for approval, for how long, and what becomes of one nobody answered. */
export interface ToolApprovalSettings {
  /** Tool names whose every call waits for approval. */
  tools?: string[];
  /** Seconds a call waits for an answer (default {@link DEFAULT_APPROVAL_SECONDS}). */
  timeoutSeconds?: number;
  /** What a call nobody answered in time becomes (default `deny`). */
  onTimeout?: 'deny' | 'approve';
}

/** How long a tool call waits for approval by default: one hour. */
export const DEFAULT_APPROVAL_SECONDS = 3_600;
/** The longest wait for approval: 30 days. */
export const MAX_APPROVAL_SECONDS = 2_592_000;

/** The agent's compaction policy as its input gives it, under its name or its former one. */
export function compactionPolicyOf(input: Pick<AgentInput, 'compaction' | 'compression'>) {
  return input.compaction ?? input.compression;
}

/**
 * A turn's budget, each part optional. A turn that reaches any of them ends without another model call: every tool
 * call already made is answered, the context stays valid, and the result says what was reached ({@link TurnStop}).
 */
export interface TurnBudget {
  /** Model calls in the turn (each step is one call and the tools it asked for). */
  steps?: number;
  /**
   * Tokens spent in the turn: per model call, the provider's reported usage (prompt + completion), or, when it
   * reports none, the request and reply as longrun counted them.
   */
  tokens?: number;
  /** Wall time since the turn began (workflow time), in seconds. */
  seconds?: number;
}

/** Model calls a turn may make when the agent sets no step budget: generous, for agents that loop over tools. */
export const DEFAULT_TURN_STEPS = 500;

/** The largest value of each budget (every budget is a positive integer up to this). */
export const TURN_BUDGET_MAX = { steps: 1_000_000, tokens: 1_000_000_000, seconds: 2_592_000 } as const;

export type TurnBudgetName = keyof typeof TURN_BUDGET_MAX;

/** The budget an agent's turns run under: its `turnBudget`, its older `maxSteps`, the default. */
export function turnBudgetOf(input: Pick<AgentInput, 'turnBudget' | 'maxSteps'>): TurnBudget & { steps: number } {
  const { tokens, seconds } = input.turnBudget ?? {};
  return {
    steps: input.turnBudget?.steps ?? input.maxSteps ?? DEFAULT_TURN_STEPS,
    ...(tokens !== undefined ? { tokens } : {}),
    ...(seconds !== undefined ? { seconds } : {}),
  };
}

/** Why a turn ended without a final answer: the budget it reached, its limit and what the turn used. */
export interface TurnStop {
  by: TurnBudgetName;
  limit: number;
  used: number;
}

/** 1000000 as 1,000,000. */
export function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

const STOP_UNITS: Record<TurnBudgetName, (n: number) => string> = {
  steps: (n) => `${grouped(n)} model call${n === 1 ? '' : 's'}`,
  tokens: (n) => `${grouped(n)} token${n === 1 ? '' : 's'}`,
  seconds: (n) => `${grouped(n)} s`,
};

/** What a budget is called in the stop message. */
const STOP_NAMES: Record<TurnBudgetName, string> = { steps: 'step', tokens: 'token', seconds: 'time' };

/**
 * The reply of a turn stopped at its budget: what was reached, and that another message continues the work. It is
 * the `SendResult`'s reply only; the context holds what the model really said.
 */
export function turnStoppedReply(stop: TurnStop): string {
  return (
    `[turn stopped at its budget] This turn reached its ${STOP_NAMES[stop.by]} budget: ` +
    `${STOP_UNITS[stop.by](stop.used)} used of ${STOP_UNITS[stop.by](stop.limit)} allowed. The model has not given ` +
    'a final answer yet; every tool call it made was answered and the conversation is intact. Send another message ' +
    '(for example "continue") to go on with the work.'
  );
}

export interface SendInput {
  text: string;
  /**
   * Optimistic concurrency: the turn this message must open (the `turns` a client read, plus one). Rejected when
   * another message came first; the count assumes every queued message's turn succeeds.
   */
  expectedTurn?: number;
}

/**
 * Input of `steer` (Update or Signal): a user message for the turn in progress, which the model sees after the
 * step's tool results, at the turn's next step boundary; on an idle agent it opens a turn as `send` does.
 */
export interface SteerInput {
  text: string;
}

/**
 * Input of `interrupt` (Update or Signal): stop the turn in progress now (the model call or tools in flight are
 * cancelled, every unanswered tool call answered as interrupted); with `text`, the next turn opens with it.
 */
export interface InterruptInput {
  text?: string;
}

/**
 * Input of the `renew` Signal: hand over to a new run (continue-as-new) at the next point where that is safe, if
 * this run began before `since` (an ISO time: the start of a release's rollout, docs/operations.md). A run that
 * began later ignores it, so sending it again is harmless.
 */
export interface RenewInput {
  since: string;
}

/** Input of `approveTool` and `denyTool`: the call waiting for approval, and for a denial the reason the model sees. */
export interface ToolDecisionInput {
  callId: string;
  reason?: string;
}

/** Longest reason of a tool decision, in characters. */
export const MAX_REASON_CHARS = 4_000;

/** Input of a forced compaction (Signal or Update `compact`). */
export interface CompactInput {
  /** Instructions for the summary ("keep the failing test names"). */
  instructions?: string;
  /** Use only this strategy (default: the policy's list). */
  strategy?: StrategyName;
  /**
   * Bypass the trigger and the cooldown (default true). With `false` the request compacts only if the automatic
   * trigger fires now: "compact if due", for scripts that poke agents on a schedule.
   */
  force?: boolean;
  /**
   * Plan and summarize, but do not apply: the result carries a {@link Draft} to `approve` (optionally with an edited
   * summary) or `discard`. One draft at a time: a new one, or any compaction prepared meanwhile, replaces it.
   */
  review?: boolean;
  /**
   * Apply it even if it leaves the context larger than it found it (default false). Without it, a compaction whose
   * plan expects no gain, or whose summary and ledger as written come to more than what leaves, is not made: the
   * result says `nothing to gain (390 → ~547 tokens)` (`~`: the plan's estimate) and carries `noGain`. A draft
   * (`review: true`) is made whatever its size: approving it is the explicit choice.
   */
  evenIfLarger?: boolean;
}

/** Input of `approve`: the draft's id, and optionally the summary text to apply instead of the draft's. */
export interface ApproveInput {
  draft: string;
  /** Replaces the summary message's text; the span's must-keep facts are checked in it and the missing ones pinned. */
  summary?: string;
}

/** Input of `discard`. */
export interface DiscardInput {
  draft: string;
}

/** Input of the `revert` Update: restore the working context as it was before event `toEvent`. */
export interface RevertInput {
  /** The event (a compaction or an earlier revert) whose context before it comes back: 1 to the agent's last. */
  toEvent: number;
}

/**
 * Input of the `configure` Update: settings of a running agent to change, at least one. A new `model` without a
 * `window` takes the model's window from the registry (an unknown model needs `window`); a `window` alone keeps the
 * model. A smaller window compacts first when the context would not fit it.
 */
export interface ConfigureInput {
  model?: string;
  /** The model's window in tokens, as `modelOverride.window` at the start: 1,024 to 10,000,000. */
  window?: number;
  /** A new system prompt: sent before the next message (the context keeps the one it has, in place). */
  systemPrompt?: string;
}

/** The settings `configure` changes (and `start` compares with a running agent's). */
export const SETTINGS = ['model', 'window', 'systemPrompt'] as const;
export type SettingName = (typeof SETTINGS)[number];

/** The window's range (the model override's, engine/models.ts). */
export const WINDOW_RANGE = { min: 1_024, max: 10_000_000 } as const;

/** Longest instructions of a forced compaction, in characters. */
export const MAX_INSTRUCTIONS_CHARS = 4_000;

/** Input that breaks the contract of an Update or a Signal: the message names the field and the limit. */
export class InvalidInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidInputError';
  }
}

/** How much of a value an error message quotes, in characters. */
const QUOTED_CHARS = 64;

/**
 * A value as an error message quotes it: as JSON (control characters escaped), a long one cut to its first
 * {@link QUOTED_CHARS} characters with its length, so that a 10 KB input is not echoed back whole.
 *
 * @example quoted('a\u0007b') // '"a\\u0007b"'; quoted('x'.repeat(10_000)) // '"xxx…xxx…" (10000 characters)'
 */
export function quoted(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const head = Array.from(text).slice(0, QUOTED_CHARS).join(''); // by code point: never half a character
  if (head.length === text.length) return typeof value === 'string' ? JSON.stringify(value) : text;
  const cut = typeof value === 'string' ? `${JSON.stringify(head).slice(0, -1)}…"` : `${head}…`;
  return `${cut} (${text.length} characters)`;
}
