/**
 * The validators of what the agent takes (contract/inputs.ts): its start input and the input of each Update and
 * Signal. The workflow's validators and Signal handlers (the guard), the client library and the CLI all check with
 * these, so input the workflow would refuse is refused where it enters, with the same message (it names the field and
 * the limit: `InvalidInputError`).
 */
import { AGENT_ID_PATTERN, AGENT_ID_RULE } from './keys.ts';
import { STRATEGIES } from '../engine/policy.ts';
import {
  InvalidInputError,
  MAX_APPROVAL_SECONDS,
  MAX_INSTRUCTIONS_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_REASON_CHARS,
  SETTINGS,
  TURN_BUDGET_MAX,
  WINDOW_RANGE,
  grouped,
  quoted,
} from './inputs.ts';
import type {
  AgentInput,
  ApproveInput,
  CompactInput,
  ConfigureInput,
  DiscardInput,
  InterruptInput,
  RevertInput,
  SendInput,
  SteerInput,
  ToolApprovalSettings,
  ToolDecisionInput,
  TurnBudgetName,
} from './inputs.ts';

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
