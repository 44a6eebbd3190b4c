/**
 * What the agent takes: its start input, the turn budget, and the input of each Update and Signal, with their limits
 * and validators. The workflow's validators, its Signal handlers, the client library and the CLI all check with these,
 * so input the workflow would refuse is refused before it is sent, with the same message (it names the field and the
 * limit: {@link InvalidInputError}).
 */
import { AGENT_ID_PATTERN, AGENT_ID_RULE } from './keys.ts';
import type { ModelOverride } from '../engine/models.ts';
import { STRATEGIES } from '../engine/policy.ts';
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

/**
 * Checks a message's input (what does not depend on the agent's state): the workflow's validator, the Signal handler
 * and the client library before it signals all use this, so a message the workflow would drop is never sent.
 */
export function validateSendInput(send: SendInput): void {
  if (send === null || typeof send !== 'object') throw new InvalidInputError('send: input must be an object');
  if (typeof send.text !== 'string') throw new InvalidInputError('text: must be a string');
  if (send.text.trim() === '') throw new InvalidInputError('text: must not be empty');
  if (send.text.length > MAX_MESSAGE_CHARS) {
    throw new InvalidInputError(`text: ${send.text.length} characters is over the limit of ${MAX_MESSAGE_CHARS}`);
  }
  if (send.expectedTurn !== undefined && (!Number.isInteger(send.expectedTurn) || send.expectedTurn < 1)) {
    throw new InvalidInputError(`expectedTurn: must be a positive integer (got ${JSON.stringify(send.expectedTurn)})`);
  }
}

/** Checks a steer's input (its text, as a message's). */
export function validateSteerInput(steer: SteerInput): void {
  if (steer === null || typeof steer !== 'object')
    throw new InvalidInputError('steer: input must be an object {"text": "..."}');
  checkText('text', steer.text, true);
}

/** Checks an interrupt's input: none, or an object with an optional text (a message's limits). */
export function validateInterruptInput(request: InterruptInput | null | undefined): void {
  if (request === null || request === undefined) return;
  if (typeof request !== 'object') throw new InvalidInputError('interrupt: input must be an object {"text"?: "..."}');
  if (request.text !== undefined) checkText('text', request.text, true);
}

/** Checks `approveTool` / `denyTool` input: a call id; a reason of at most {@link MAX_REASON_CHARS} characters. */
export function validateToolDecisionInput(request: ToolDecisionInput): void {
  if (request === null || typeof request !== 'object') {
    throw new InvalidInputError('input must be an object {"callId": "...", "reason"?: "..."}');
  }
  if (typeof request.callId !== 'string' || request.callId.trim() === '' || request.callId.length > 256) {
    throw new InvalidInputError(
      `callId: must be a tool call's id, 1 to 256 characters (got ${quoted(request.callId)})`,
    );
  }
  const reason: unknown = request.reason;
  if (reason !== undefined) {
    if (typeof reason !== 'string') throw new InvalidInputError('reason: must be a string');
    if (reason.length > MAX_REASON_CHARS) {
      throw new InvalidInputError(`reason: ${reason.length} characters is over the limit of ${MAX_REASON_CHARS}`);
    }
  }
}

/** Checks a text of the user's: a string, not empty, at most {@link MAX_MESSAGE_CHARS} characters. */
function checkText(field: string, text: unknown, required: boolean): void {
  if (text === undefined && !required) return;
  if (typeof text !== 'string') throw new InvalidInputError(`${field}: must be a string`);
  if (text.trim() === '') throw new InvalidInputError(`${field}: must not be empty`);
  if (text.length > MAX_MESSAGE_CHARS) {
    throw new InvalidInputError(`${field}: ${text.length} characters is over the limit of ${MAX_MESSAGE_CHARS}`);
  }
}

/**
 * Checks an agent's input where it is not the model's or the policy's (those are checked by resolveModelInfo and
 * resolvePolicy): the turn budget and the older `maxSteps`. The client library and the CLI check before starting,
 * and the workflow fails a start with such input (ApplicationFailure `InvalidInput`) before doing anything.
 */
export function validateAgentInput(input: AgentInput): void {
  if (input === null || typeof input !== 'object') throw new InvalidInputError('agent: input must be an object');
  // The id names the workflow and every storage key of the agent: nothing that could leave its prefix.
  if (typeof input.agentId !== 'string' || !AGENT_ID_PATTERN.test(input.agentId)) {
    throw new InvalidInputError(`agentId: ${quoted(input.agentId)} ${AGENT_ID_RULE}`);
  }
  if (typeof input.model !== 'string' || input.model.trim() === '') {
    throw new InvalidInputError(`model: must be a non-empty string (got ${quoted(input.model)})`);
  }
  const prompt = input.systemPrompt as unknown;
  if (prompt !== undefined && typeof prompt !== 'string') throw new InvalidInputError('systemPrompt: must be a string');
  if (typeof prompt === 'string' && prompt.length > MAX_MESSAGE_CHARS) {
    throw new InvalidInputError(`systemPrompt: ${prompt.length} characters is over the limit of ${MAX_MESSAGE_CHARS}`);
  }
  const objects: [string, unknown, string][] = [
    ['compaction', input.compaction, 'a preset and overrides of its fields'],
    ['compression', input.compression, 'the former name of compaction'],
    ['modelOverride', input.modelOverride, '{window?, encoding?, margin?, price?}'],
  ];
  for (const [field, value, what] of objects) {
    if (value !== undefined && (value === null || typeof value !== 'object' || Array.isArray(value))) {
      throw new InvalidInputError(`${field}: must be an object (${what})`);
    }
  }
  const positive = (field: string, value: unknown, max: number) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
      throw new InvalidInputError(
        `${field}: ${JSON.stringify(value) ?? String(value)} is not allowed (an integer from 1 to ${grouped(max)})`,
      );
    }
  };
  if (input.maxSteps !== undefined) positive('maxSteps', input.maxSteps, TURN_BUDGET_MAX.steps);
  if (input.compaction !== undefined && input.compression !== undefined) {
    throw new InvalidInputError('compaction: given twice, as `compaction` and as `compression` (its former name)');
  }
  if (input.toolApproval !== undefined) validateToolApproval(input.toolApproval, positive);
  const budget = input.turnBudget as unknown;
  if (budget === undefined) return;
  if (budget === null || typeof budget !== 'object' || Array.isArray(budget)) {
    throw new InvalidInputError('turnBudget: must be an object {steps?, tokens?, seconds?}');
  }
  for (const [name, value] of Object.entries(budget)) {
    if (!(name in TURN_BUDGET_MAX)) {
      throw new InvalidInputError(
        `turnBudget.${name}: not a budget (one of ${Object.keys(TURN_BUDGET_MAX).join(', ')})`,
      );
    }
    if (value !== undefined) positive(`turnBudget.${name}`, value, TURN_BUDGET_MAX[name as TurnBudgetName]);
  }
}

function validateToolApproval(
  approval: ToolApprovalSettings,
  positive: (field: string, value: unknown, max: number) => void,
): void {
  if (approval === null || typeof approval !== 'object' || Array.isArray(approval)) {
    throw new InvalidInputError('toolApproval: must be an object {tools?, timeoutSeconds?, onTimeout?}');
  }
  const tools: unknown = approval.tools;
  if (tools !== undefined && (!Array.isArray(tools) || tools.some((name) => typeof name !== 'string' || name === ''))) {
    throw new InvalidInputError(`toolApproval.tools: must be a list of tool names (got ${quoted(tools)})`);
  }
  if (approval.timeoutSeconds !== undefined) {
    positive('toolApproval.timeoutSeconds', approval.timeoutSeconds, MAX_APPROVAL_SECONDS);
  }
  const onTimeout: unknown = approval.onTimeout;
  if (onTimeout !== undefined && onTimeout !== 'deny' && onTimeout !== 'approve') {
    throw new InvalidInputError(`toolApproval.onTimeout: must be "deny" or "approve" (got ${quoted(onTimeout)})`);
  }
}

/** Checks a compaction request's input, as {@link validateSendInput} does for messages. */
export function validateCompactInput(request: CompactInput): void {
  if (request === null || typeof request !== 'object') throw new InvalidInputError('compact: input must be an object');
  if (request.strategy !== undefined && !(STRATEGIES as readonly string[]).includes(request.strategy)) {
    throw new InvalidInputError(`strategy: ${JSON.stringify(request.strategy)} is not one of ${STRATEGIES.join(', ')}`);
  }
  if (request.instructions !== undefined && typeof request.instructions !== 'string') {
    throw new InvalidInputError('instructions: must be a string');
  }
  if (request.force !== undefined && typeof request.force !== 'boolean') {
    throw new InvalidInputError(`force: must be true or false (got ${JSON.stringify(request.force)})`);
  }
  if (request.review !== undefined && typeof request.review !== 'boolean') {
    throw new InvalidInputError(`review: must be true or false (got ${quoted(request.review)})`);
  }
  if (request.evenIfLarger !== undefined && typeof request.evenIfLarger !== 'boolean') {
    throw new InvalidInputError(`evenIfLarger: must be true or false (got ${quoted(request.evenIfLarger)})`);
  }
  if ((request.instructions?.length ?? 0) > MAX_INSTRUCTIONS_CHARS) {
    throw new InvalidInputError(
      `instructions: ${request.instructions!.length} characters is over the limit of ${MAX_INSTRUCTIONS_CHARS}`,
    );
  }
}

/**
 * Checks a revert's input: `toEvent` an integer from 1 to `lastEvent` (the agent's last event, when known; the
 * workflow's validator knows it, the client library checks the shape only).
 */
export function validateRevertInput(request: RevertInput, lastEvent?: number): void {
  if (request === null || typeof request !== 'object') {
    throw new InvalidInputError('revert: input must be an object {"toEvent": n}');
  }
  const n: unknown = request.toEvent;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
    throw new InvalidInputError(`toEvent: must be an integer ≥ 1, an event's seq (got ${quoted(n)})`);
  }
  if (lastEvent !== undefined && n > lastEvent) {
    throw new InvalidInputError(
      lastEvent === 0
        ? `toEvent: ${n} is not an event of this agent (it has none yet: nothing to revert)`
        : `toEvent: ${n} is not an event of this agent (its events are 1 to ${lastEvent})`,
    );
  }
}

/**
 * Checks `approve` and `discard` input: a draft id, and an edited summary of at most {@link MAX_MESSAGE_CHARS}
 * characters, not empty. Against `pending` (the workflow's draft, when known): the id must be the pending draft's.
 */
export function validateDraftInput(
  request: ApproveInput | DiscardInput,
  pending?: { id: string } | null,
  lastDraft?: string,
): void {
  if (request === null || typeof request !== 'object') {
    throw new InvalidInputError('input must be an object {"draft": "draft-N", "summary"?: "..."}');
  }
  if (typeof request.draft !== 'string' || !/^draft-\d+$/.test(request.draft)) {
    throw new InvalidInputError(`draft: must be a draft id like "draft-1" (got ${quoted(request.draft)})`);
  }
  const summary: unknown = (request as ApproveInput).summary;
  if (summary !== undefined) {
    if (typeof summary !== 'string' || summary.trim() === '') {
      throw new InvalidInputError('summary: must be a non-empty string (the edited summary)');
    }
    if (summary.length > MAX_MESSAGE_CHARS) {
      throw new InvalidInputError(`summary: ${summary.length} characters is over the limit of ${MAX_MESSAGE_CHARS}`);
    }
  }
  if (pending === undefined) return;
  if (pending === null || pending.id !== request.draft) {
    const now = pending ? `the pending draft is ${pending.id}` : 'no draft is pending';
    const last = lastDraft ? ` (${lastDraft})` : '';
    throw new InvalidInputError(`draft: ${request.draft} is not pending: ${now}${last}`);
  }
}

/**
 * Checks the query of the compaction events (`since`, `limit`: integers ≥ 0), as the client library sends it.
 * `null` (what the temporal CLI and the UI send for no input) is no query.
 */
export function validateEventsQuery(query: { since?: number; limit?: number } | null | undefined): void {
  if (query === null || query === undefined) return;
  if (typeof query !== 'object') throw new InvalidInputError('events: query must be an object {since?, limit?}');
  for (const field of ['since', 'limit'] as const) {
    const value: unknown = query[field];
    if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < 0)) {
      throw new InvalidInputError(`${field}: must be an integer ≥ 0 (got ${quoted(value)})`);
    }
  }
}

/**
 * Checks a `configure` request's shape: at least one setting; `model` a non-empty string, `window` an integer in
 * {@link WINDOW_RANGE}, `systemPrompt` a non-empty string of at most {@link MAX_MESSAGE_CHARS} characters. Whether
 * the model is known and counted as the agent's messages are is the workflow's check (workflows/inputs.ts).
 */
export function validateConfigureInput(request: ConfigureInput): void {
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    throw new InvalidInputError('configure: input must be an object {model?, window?, systemPrompt?}');
  }
  for (const name of Object.keys(request)) {
    if (!(SETTINGS as readonly string[]).includes(name)) {
      throw new InvalidInputError(`${name}: not a setting configure changes (one of ${SETTINGS.join(', ')})`);
    }
  }
  const given = SETTINGS.filter((name) => request[name] !== undefined);
  if (given.length === 0) {
    throw new InvalidInputError(`configure: give at least one of ${SETTINGS.join(', ')}`);
  }
  if (request.model !== undefined && (typeof request.model !== 'string' || request.model.trim() === '')) {
    throw new InvalidInputError(`model: must be a non-empty string (got ${quoted(request.model)})`);
  }
  const window: unknown = request.window;
  if (
    window !== undefined &&
    (typeof window !== 'number' || !Number.isInteger(window) || window < WINDOW_RANGE.min || window > WINDOW_RANGE.max)
  ) {
    throw new InvalidInputError(
      `window: ${quoted(window)} is not allowed (an integer from ${grouped(WINDOW_RANGE.min)} to ` +
        `${grouped(WINDOW_RANGE.max)} tokens)`,
    );
  }
  const prompt: unknown = request.systemPrompt;
  if (prompt !== undefined && (typeof prompt !== 'string' || prompt.trim() === '')) {
    throw new InvalidInputError('systemPrompt: must be a non-empty string');
  }
  if (typeof prompt === 'string' && prompt.length > MAX_MESSAGE_CHARS) {
    throw new InvalidInputError(`systemPrompt: ${prompt.length} characters is over the limit of ${MAX_MESSAGE_CHARS}`);
  }
}
