/**
 * Sub-agents: what an agent delegates to a child agent workflow, and what comes back. The parent's model
 * calls the built-in `delegate` tool (on when the agent's input has `delegation`) or a team's own tool made with
 * `delegateTo` (client library); the parent's workflow starts a child of the agent workflow type on the task, in
 * "task" mode (one turn, then it closes), waits for it, and answers the call with the child's final answer and a
 * manifest, bounded to {@link DELEGATION_RESULT_TOKENS} tokens whatever the child read.
 */
import { grouped, InvalidInputError, quoted, MAX_MESSAGE_CHARS, TURN_BUDGET_MAX } from './inputs.ts';
import type { AgentInput, ChildSettings, DelegationSettings, TaskInput } from './inputs.ts';
import { AGENT_ID_PATTERN } from './keys.ts';
import { TOOL_NAME_PATTERN } from '../engine/policy.ts';

/** What a child agent in task mode keeps of its task once done (its state's `task`). */
export interface TaskOutcome {
  parent: string;
  /** Id of the stored final answer (absent when the turn failed). */
  replyId?: string;
  steps: number;
  toolCalls: number;
  /** The budget the turn reached, when it stopped without a final answer. */
  stopped?: string;
  /** Why the task failed. */
  error?: string;
}

/** What `runTool` answers for a call of a `delegateTo` tool: the child's settings (nothing run, nothing stored). */
export interface DelegateRequest {
  delegate: ChildSettings;
  /** The call's arguments, read from the stored reply (the workflow's copy of a call may come without them). */
  arguments: string;
}

/** A child's steps when neither the settings nor the call say. */
export const DEFAULT_CHILD_STEPS = 50;
/** Longest task text the model may write, in characters. */
export const MAX_TASK_CHARS = 20_000;
/**
 * Longest tool result a delegated task puts into the parent's context, in tokens (manifest and answer): with the
 * call's own message, the parent grows by at most 2,000 tokens per task.
 */
export const DELEGATION_RESULT_TOKENS = 1_500;
/** Entries of the manifest's list of tool calls, at most (the rest are counted in one line). */
export const MANIFEST_ENTRIES = 20;
/** Longest resource a manifest entry shows, in characters. */
const RESOURCE_CHARS = 80;

export const DEFAULT_CHILD_PROMPT =
  'You are a sub-agent. Do the task you are given with the tools you have, then answer with the result: what you ' +
  'found or did, briefly and precisely. Your answer is all the delegating agent will see of your work.';

/** The built-in tool's name. */
export const DELEGATE_TOOL = 'delegate';

/** Checks delegation (or child) settings; `field` names them in the error (`delegation`, `delegateTo(name)`). */
export function validateDelegation(value: unknown, field = 'delegation'): asserts value is DelegationSettings {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidInputError(
      `${field}: must be an object {model?, systemPrompt?, compaction?, turnBudget?, tools?, maxStepsPerTask?}`,
    );
  }
  const settings = value as Record<string, unknown>;
  const known = ['model', 'systemPrompt', 'compaction', 'turnBudget', 'tools', 'maxStepsPerTask'];
  for (const key of Object.keys(settings)) {
    if (!known.includes(key))
      throw new InvalidInputError(`${field}.${key}: unknown field (known: ${known.join(', ')})`);
  }
  const { model, systemPrompt, compaction, turnBudget, tools, maxStepsPerTask } = settings;
  if (model !== undefined && (typeof model !== 'string' || model.trim() === '')) {
    throw new InvalidInputError(`${field}.model: must be a non-empty string (got ${quoted(model)})`);
  }
  if (systemPrompt !== undefined && (typeof systemPrompt !== 'string' || systemPrompt.length > MAX_MESSAGE_CHARS)) {
    throw new InvalidInputError(`${field}.systemPrompt: must be a string of at most ${MAX_MESSAGE_CHARS} characters`);
  }
  if (
    compaction !== undefined &&
    (compaction === null || typeof compaction !== 'object' || Array.isArray(compaction))
  ) {
    throw new InvalidInputError(`${field}.compaction: must be an object (a preset and overrides of its fields)`);
  }
  if (turnBudget !== undefined) {
    if (turnBudget === null || typeof turnBudget !== 'object' || Array.isArray(turnBudget)) {
      throw new InvalidInputError(`${field}.turnBudget: must be an object {steps?, tokens?, seconds?}`);
    }
    for (const [name, max] of Object.entries(TURN_BUDGET_MAX)) {
      const n = (turnBudget as Record<string, unknown>)[name];
      if (n !== undefined) positive(`${field}.turnBudget.${name}`, n, max);
    }
  }
  if (tools !== undefined) {
    if (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string' || !TOOL_NAME_PATTERN.test(t))) {
      throw new InvalidInputError(`${field}.tools: must be a list of tool names (got ${quoted(tools)})`);
    }
    if (tools.includes(DELEGATE_TOOL)) {
      throw new InvalidInputError(`${field}.tools: a child cannot delegate (remove "${DELEGATE_TOOL}")`);
    }
  }
  if (maxStepsPerTask !== undefined) positive(`${field}.maxStepsPerTask`, maxStepsPerTask, TURN_BUDGET_MAX.steps);
}

function positive(field: string, value: unknown, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new InvalidInputError(
      `${field}: ${JSON.stringify(value) ?? String(value)} is not allowed (an integer from 1 to ${grouped(max)})`,
    );
  }
}

/** Checks a `task` input (a child's). */
export function validateTask(value: unknown): asserts value is TaskInput {
  const task = value as Partial<TaskInput> | null;
  if (task === null || typeof task !== 'object' || typeof task.text !== 'string' || task.text.trim() === '') {
    throw new InvalidInputError('task: must be an object {text, parent, callId} with a non-empty text');
  }
  if (task.text.length > MAX_TASK_CHARS) {
    throw new InvalidInputError(`task.text: ${task.text.length} characters is over the limit of ${MAX_TASK_CHARS}`);
  }
  if (typeof task.parent !== 'string' || typeof task.callId !== 'string') {
    throw new InvalidInputError('task: parent and callId must be strings');
  }
}

/**
 * The child's agent id: the parent's, then `.d<turn>-<step>-<n>` (the n-th call of the step); the parent's part is
 * shortened when the whole would pass the 64 characters of an agent id.
 */
export function childAgentId(parent: string, turn: number, step: number, n: number): string {
  const suffix = `.d${turn}-${step}-${n}`;
  const id = `${parent.slice(0, 64 - suffix.length)}${suffix}`;
  if (!AGENT_ID_PATTERN.test(id)) throw new Error(`child agent id ${id} is not a valid agent id`);
  return id;
}

/** A delegate call's arguments: the task, and the steps it asks for (within the settings' limit). */
export function delegateArguments(
  args: Record<string, unknown>,
  settings: DelegationSettings,
): { task: string; steps: number } | string {
  const task = args.task;
  if (typeof task !== 'string' || task.trim() === '')
    return 'task: must be a non-empty string (what the sub-agent is to do)';
  if (task.length > MAX_TASK_CHARS) return `task: ${task.length} characters is over the limit of ${MAX_TASK_CHARS}`;
  const base = settings.turnBudget?.steps ?? DEFAULT_CHILD_STEPS;
  const max = settings.maxStepsPerTask ?? base;
  const asked = args.max_steps;
  if (asked === undefined) return { task, steps: Math.min(base, max) };
  if (typeof asked !== 'number' || !Number.isInteger(asked) || asked < 1 || asked > max) {
    return `max_steps: ${JSON.stringify(asked)} is not allowed (an integer from 1 to ${max}, this agent's maxStepsPerTask)`;
  }
  return { task, steps: asked };
}

/** One line of the manifest: a tool and the resource its calls named, and how many calls. */
export interface ManifestEntry {
  tool: string;
  resource?: string;
  calls: number;
}

/** Argument names that say what a call read or wrote, first found first. */
const RESOURCE_ARGUMENTS = [
  'path',
  'file',
  'filename',
  'url',
  'uri',
  'reference',
  'key',
  'query',
  'pattern',
  'command',
];

/** What a call read or wrote, in words: its path, url, query… (the first string argument otherwise), cut short. */
export function readableResource(args: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args || '{}');
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const fields = parsed as Record<string, unknown>;
  const name =
    RESOURCE_ARGUMENTS.find((n) => typeof fields[n] === 'string') ??
    Object.keys(fields).find((n) => typeof fields[n] === 'string');
  if (name === undefined) return undefined;
  const value = String(fields[name]).replace(/\s+/g, ' ');
  return value.length > RESOURCE_CHARS ? `${value.slice(0, RESOURCE_CHARS - 1)}…` : value;
}

/** The manifest's entries from the child's tool calls, by tool and resource, most called first. */
export function manifestOf(calls: { name: string; arguments: string }[]): ManifestEntry[] {
  const entries = new Map<string, ManifestEntry>();
  for (const call of calls) {
    const resource = readableResource(call.arguments);
    const key = `${call.name}\n${resource ?? ''}`;
    const entry = entries.get(key) ?? { tool: call.name, ...(resource !== undefined ? { resource } : {}), calls: 0 };
    entry.calls++;
    entries.set(key, entry);
  }
  return [...entries.values()].sort((a, b) => b.calls - a.calls || a.tool.localeCompare(b.tool));
}

/** What the parent's context gets besides the answer: the child, its figures, what it called. */
export interface DelegationReport {
  childId: string;
  status: 'done' | 'stopped' | 'failed';
  /** The budget reached, or why it failed. */
  why?: string;
  steps: number;
  toolCalls: number;
  /** Tokens of the bodies the child stored (its messages: what it read and wrote). */
  storedTokens: number;
  /** Tokens the child's model calls spent (prompt + completion) and their cost in USD (null: price unknown). */
  spentTokens: number;
  cost: number | null;
  entries: ManifestEntry[];
}

/** The manifest as the parent's model reads it (bounded: {@link MANIFEST_ENTRIES} entries). */
export function renderManifest(report: DelegationReport): string {
  const cost = report.cost === null ? 'cost unknown' : `$${report.cost.toFixed(4)}`;
  const head =
    `[delegated to sub-agent ${report.childId}: ${report.status}${report.why ? ` (${report.why})` : ''}] ` +
    `${report.steps} step(s), ${report.toolCalls} tool call(s), ${report.spentTokens} tokens spent (${cost}); ` +
    `it stored ${report.storedTokens} tokens that stay out of this context.`;
  const shown = report.entries.slice(0, MANIFEST_ENTRIES);
  const lines = shown.map((e) => `- ${e.tool}${e.resource !== undefined ? ` ${e.resource}` : ''} ×${e.calls}`);
  const rest = report.entries.slice(MANIFEST_ENTRIES);
  if (rest.length) {
    lines.push(`- … ${rest.length} more (${rest.reduce((n, e) => n + e.calls, 0)} call(s))`);
  }
  return [head, ...(lines.length ? ['Tool calls (tool, resource, count):', ...lines] : []), 'Answer:'].join('\n');
}

/** Checks the start input's `delegation`, `task` and `tools` (with validateAgentInput: both run wherever it runs). */
export function validateDelegationInput(input: Pick<AgentInput, 'delegation' | 'task' | 'tools'>): void {
  if (input.delegation !== undefined) validateDelegation(input.delegation);
  if (input.task !== undefined) validateTask(input.task);
  const tools = input.tools as unknown;
  if (
    tools !== undefined &&
    (!Array.isArray(tools) || tools.some((t) => typeof t !== 'string' || !TOOL_NAME_PATTERN.test(t)))
  ) {
    throw new InvalidInputError(`tools: must be a list of tool names (got ${quoted(tools)})`);
  }
}
